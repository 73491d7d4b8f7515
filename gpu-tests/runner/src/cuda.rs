//! The little of the CUDA driver the bundle's own kernels need, over the plugin's run-time
//! loaded [`Driver`]: device 0's primary context, device buffers and modules freed on drop.

use std::ffi::{c_void, CString};
use std::path::Path;

use cuda_driver::image::{classify, cubin_runs_on, CudaImage};
use cuda_driver::{attr, CuDevice, CuDevicePtr, DeviceBuffer, Driver, LoadedModule};
use host_table::fptr_map::{map_global_writes, FptrTable, HashIndex};
use host_table::rtl_interface::{FptrIndex, FptrMapEntry};
use plugin_core::environment::{DEVICE_ENVIRONMENT, INDIRECT_CALL_TABLE_OFFSET};

/// Errors here are plain messages: this is a test program.
pub type Result<T> = std::result::Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Device 0 with its primary context current on this thread.
pub struct Gpu {
    /// The driver table.
    pub driver: Driver,
    dev: CuDevice,
    /// Compute capability, major * 10 + minor.
    pub sm: u32,
    /// Multiprocessors.
    pub sms: u32,
    /// Whether device code may read and write pageable host memory (HMM or ATS): what
    /// `requires unified_shared_memory` needs, which libomptarget 22 does not check.
    pub pageable_memory: bool,
}

impl Gpu {
    /// Loads the driver and opens device 0; `Ok(None)` when there is no driver or no device.
    pub fn open() -> Result<Option<Gpu>> {
        let Ok(driver) = Driver::load(c"libcuda.so.1") else { return Ok(None) };
        if driver.device_count().map_err(err)? == 0 {
            return Ok(None);
        }
        let dev = driver.device(0).map_err(err)?;
        let ctx = driver.retain_primary_context(dev).map_err(err)?;
        // SAFETY: just retained; released on drop.
        unsafe { driver.set_current(ctx) }.map_err(err)?;
        let major = driver.attribute(dev, attr::COMPUTE_CAPABILITY_MAJOR).map_err(err)?;
        let minor = driver.attribute(dev, attr::COMPUTE_CAPABILITY_MINOR).map_err(err)?;
        let sms = driver.attribute(dev, attr::MULTIPROCESSOR_COUNT).map_err(err)?;
        let pageable_memory = driver.attribute(dev, attr::PAGEABLE_MEMORY_ACCESS).map_err(err)? != 0;
        Ok(Some(Gpu { driver, dev, sm: (major * 10 + minor) as u32, sms: sms as u32, pageable_memory }))
    }

    /// `(free, total)` device memory.
    pub fn memory(&self) -> Result<(usize, usize)> {
        self.driver.mem_info().map_err(err)
    }

    /// Makes, writes from the host, copies back and frees one page-locked host and one managed
    /// allocation, so that the driver's one-time setup for them is done before device memory is
    /// compared.
    pub fn warm_up_host_memory(&self) -> Result<()> {
        let mut back = [0u8; 64];
        for managed in [false, true] {
            let p = if managed { self.driver.alloc_managed(64) } else { self.driver.alloc_host(64) };
            let p = p.map_err(err)?;
            // SAFETY: 64 bytes the host addresses directly, just allocated.
            unsafe { std::ptr::write_bytes(p as *mut u8, 0x5a, 64) };
            let copied = self.driver.read(&mut back, p);
            let freed = if managed { self.driver.free(p) } else { self.driver.free_host(p) };
            copied.and(freed).map_err(err)?;
        }
        Ok(())
    }

    /// A device buffer holding `data`.
    pub fn upload<T: Copy>(&self, data: &[T]) -> Result<Buffer<'_>> {
        // SAFETY: plain-old-data `T` viewed as bytes, length from size_of_val.
        let raw =
            unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) };
        Ok(Buffer::from(DeviceBuffer::upload(&self.driver, raw).map_err(err)?))
    }

    /// `count` values of `T` read from device memory at `ptr`, memory this runner did not
    /// allocate (the plugin's own tables).
    pub fn read<T: Copy + Default>(&self, ptr: CuDevicePtr, count: usize) -> Result<Vec<T>> {
        let mut out = vec![T::default(); count];
        // SAFETY: plain-old-data `T` viewed as bytes, length from size_of_val.
        let raw = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(out.as_slice()),
            )
        };
        self.driver.read(raw, ptr).map_err(err)?;
        Ok(out)
    }

    /// An uninitialised device buffer of `bytes` bytes.
    pub fn alloc(&self, bytes: usize) -> Result<Buffer<'_>> {
        Ok(Buffer::from(DeviceBuffer::alloc(&self.driver, bytes).map_err(err)?))
    }

    /// Loads the bundle's kernel module `kernels/<module>`: its sm_90 cubin, or its PTX
    /// (JIT-compiled by the driver) when the cubin does not run on this GPU.
    pub fn load_kernels(&self, bundle: &Path, module: &str) -> Result<Module<'_>> {
        let read = |ext: &str| {
            let path = bundle.join("kernels").join(format!("{module}.{ext}"));
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        let cubin = read("sm_90.cubin")?;
        let module = match classify(&cubin) {
            Ok(CudaImage::Cubin { sm }) if cubin_runs_on(sm, self.sm) => {
                LoadedModule::load(&self.driver, &cubin)
            }
            _ => {
                let mut text = read("ptx")?;
                text.push(0);
                LoadedModule::load(&self.driver, &text)
            }
        };
        Ok(Module { gpu: self, module: module.map_err(err)? })
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let _ = self.driver.release_primary_context(self.dev);
    }
}

/// Device memory, freed on drop (the driver crate's [`DeviceBuffer`]).
pub struct Buffer<'g> {
    memory: DeviceBuffer<'g>,
    /// Device address.
    pub ptr: CuDevicePtr,
}

impl<'g> From<DeviceBuffer<'g>> for Buffer<'g> {
    fn from(memory: DeviceBuffer<'g>) -> Buffer<'g> {
        Buffer { ptr: memory.ptr(), memory }
    }
}

impl Buffer<'_> {
    /// Copies the whole buffer back as `T`s.
    pub fn download<T: Copy + Default>(&self) -> Result<Vec<T>> {
        let mut out = vec![T::default(); self.memory.len() / std::mem::size_of::<T>()];
        // SAFETY: plain-old-data `T` viewed as bytes.
        let raw = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(out.as_slice()),
            )
        };
        self.memory.read(raw).map_err(err)?;
        Ok(out)
    }
}

/// A loaded module (the driver crate's [`LoadedModule`], unloaded on drop) and its GPU.
pub struct Module<'g> {
    gpu: &'g Gpu,
    module: LoadedModule<'g>,
}

/// One kernel argument, passed by value.
pub enum Arg {
    /// A device pointer or 64-bit integer.
    U64(u64),
    /// A 32-bit integer.
    U32(u32),
}

/// A table installed in a module's globals, as the plugin installs it: the device memory it
/// points to, freed on drop.
pub struct Installed<'g> {
    /// The sorted table.
    pub table: Buffer<'g>,
    /// The hash index's slots, if one was installed (held only to be freed with the table).
    _slots: Option<Buffer<'g>>,
}

impl<'g> Module<'g> {
    /// Copies `entries` (sorted, unique keys) to the device and points the module's map globals
    /// at them; with `index`, also builds the plugin's hash index (`host_table::fptr_map`) and
    /// fills `__omp_offloading_fptr_index`, else clears it (the table alone, as any other
    /// producer installs it). An empty table clears everything.
    pub fn install(&self, entries: &[FptrMapEntry], index: bool) -> Result<Installed<'g>> {
        let gpu = self.gpu;
        let table = gpu.upload(entries)?;
        let hash =
            if index { HashIndex::build(&FptrTable::from_sorted(entries).map_err(err)?) } else { None };
        let slots = hash.as_ref().map(|(_, slots)| gpu.upload(slots)).transpose()?;
        let header = match (&hash, &slots) {
            (Some((h, _)), Some(s)) => h.header_at(table.ptr, s.ptr),
            _ => FptrIndex::NONE,
        };
        let installed = (!entries.is_empty()).then_some((table.ptr, entries.len() as u64, header));
        // The plugin's own writes, in its order.
        for (global, bytes) in map_global_writes(installed) {
            let (at, size) = self.global(global)?;
            if size != bytes.len() {
                return Err(format!("global {global} has {size} bytes, expected {}", bytes.len()));
            }
            gpu.driver.write(at, &bytes).map_err(err)?;
        }
        Ok(Installed { table, _slots: slots })
    }

    /// Copies `entries` (sorted) to the device and points the table fields of the module's
    /// `__omp_rtl_device_environment` at them (byte 24: pointer, 32: entries), as LLVM's runtime
    /// installs its table (libomptarget 22 on every device, LLVM 18-21's GPU plugins). Returns
    /// the device table, to be kept while kernels use it.
    pub fn install_in_device_environment(&self, entries: &[FptrMapEntry]) -> Result<Buffer<'g>> {
        let table = self.gpu.upload(entries)?;
        let (environment, size) = self.global(DEVICE_ENVIRONMENT)?;
        if size < 40 {
            return Err(format!("{DEVICE_ENVIRONMENT} has {size} bytes, expected 48"));
        }
        let pointer = if entries.is_empty() { 0 } else { table.ptr };
        let mut fields = pointer.to_ne_bytes().to_vec();
        fields.extend((entries.len() as u64).to_ne_bytes());
        self.gpu.driver.write(environment + INDIRECT_CALL_TABLE_OFFSET, &fields).map_err(err)?;
        Ok(table)
    }

    /// Writes `value` into the module's 8-byte global `name`.
    pub fn set_global(&self, name: &str, value: u64) -> Result<()> {
        let (ptr, size) = self.global(name)?;
        if size != 8 {
            return Err(format!("global {name} has {size} bytes, expected 8"));
        }
        self.gpu.driver.write(ptr, &value.to_ne_bytes()).map_err(err)
    }

    /// Address and size of the module's global `name`.
    pub fn global(&self, name: &str) -> Result<(CuDevicePtr, usize)> {
        let c = CString::new(name).map_err(err)?;
        let found = self.module.global(&c).map_err(err)?;
        found.ok_or_else(|| format!("no global {name}"))
    }

    /// Launches kernel `name` and waits for it.
    pub fn run(&self, name: &str, blocks: u32, threads: u32, args: &[Arg]) -> Result<()> {
        self.launch(name, blocks, threads, args)?;
        self.gpu.driver.synchronize().map_err(|e| format!("{name}: {e}"))
    }

    /// Launches kernel `name` between two CUDA events and returns the device time between them
    /// in milliseconds (the kernel alone, not the launch's host-side cost).
    pub fn run_timed(&self, name: &str, blocks: u32, threads: u32, args: &[Arg]) -> Result<f64> {
        let driver = &self.gpu.driver;
        let start = driver.event().map_err(err)?;
        let end = match driver.event() {
            Ok(end) => end,
            Err(e) => {
                // SAFETY: created above, destroyed once.
                let _ = unsafe { driver.destroy_event(start) };
                return Err(err(e));
            }
        };
        // SAFETY: live events of the current context, recorded on the default stream around the
        // launch, destroyed once below.
        let timed = unsafe {
            driver
                .record(start)
                .map_err(err)
                .and_then(|()| self.launch(name, blocks, threads, args))
                .and_then(|()| driver.record(end).map_err(err))
                .and_then(|()| driver.elapsed_ms(start, end).map_err(|e| format!("{name}: {e}")))
        };
        // SAFETY: as above.
        unsafe {
            let _ = driver.destroy_event(start);
            let _ = driver.destroy_event(end);
        }
        driver.synchronize().map_err(|e| format!("{name}: {e}"))?;
        timed.map(f64::from)
    }

    /// Launches kernel `name` on the default stream, without waiting.
    fn launch(&self, name: &str, blocks: u32, threads: u32, args: &[Arg]) -> Result<()> {
        let c = CString::new(name).map_err(err)?;
        let f = self.module.function(&c).map_err(err)?;
        let f = f.ok_or_else(|| format!("no kernel {name}"))?;
        let mut values: Vec<[u8; 8]> = args
            .iter()
            .map(|a| match a {
                Arg::U64(v) => v.to_ne_bytes(),
                Arg::U32(v) => {
                    let mut b = [0u8; 8];
                    b[..4].copy_from_slice(&v.to_ne_bytes());
                    b
                }
            })
            .collect();
        let mut params: Vec<*mut c_void> = values.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
        // SAFETY: a kernel of this module; every parameter of the bundle's kernels is at most 8
        // bytes and each pointer points to 8 bytes, so the driver never reads past a value. A
        // wrong device pointer faults on the device and comes back as an error.
        unsafe { self.gpu.driver.launch(f, blocks, threads, 0, &mut params) }.map_err(err)
    }
}
