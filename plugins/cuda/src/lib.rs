//! `libomptarget.rtl.cuda.so`: the CUDA plugin. The driver (`libcuda.so.1`) is loaded at run
//! time (the `cuda-driver` crate); without it, or without a GPU, the plugin reports 0 devices. Images are
//! cubins or PTX loaded with `cuModuleLoadDataEx` into each device's primary context. What the
//! DeviceRTL needs (device environment, kernel configuration, launch geometry and environment)
//! the core computes from [`Backend::device_info`] as LLVM's CUDA plugin does; this crate gives
//! it the device's attributes and each kernel's own thread limit, allocates the three kinds of
//! memory, and launches.
#![deny(missing_docs)]

use std::ffi::c_void;
use std::sync::Mutex;

use cuda_driver::image::{self, CudaImage};
use cuda_driver::{attr, CuDevice, CuHandle, Driver};
use host_table::image::DeviceImage;
use host_table::rtl_interface::AllocKind;
use plugin_core::environment::DeviceLimits;
use plugin_core::symbol_name;
use plugin_core::{Backend, DeviceInfo, DeviceSymbol, Launch, PluginError, Result};

/// Threads per block without a `thread_limit` (LLVM's NVPTX `GV_Default_WG_Size`).
const DEFAULT_THREADS: u32 = 128;

/// One GPU.
struct Gpu {
    dev: CuDevice,
    /// Compute capability as major * 10 + minor.
    sm: u32,
    info: DeviceInfo,
    /// The retained primary context, from `init_device` on.
    context: Mutex<Option<usize>>,
}

/// The CUDA backend.
pub struct Cuda {
    driver: Driver,
    gpus: Vec<Gpu>,
}

/// A kernel: the function and the most threads per block it can run with.
pub struct Kernel {
    function: usize,
    max_threads: u32,
}

/// A module loaded on one device.
pub struct Module {
    handle: usize,
    device: i32,
}

/// `HardwareParallelism` as LLVM's CUDA plugin computes it: multiprocessors x the warps one
/// multiprocessor holds (not x its threads: the DeviceRTL sizes per-warp resources with it).
pub fn hardware_parallelism(multiprocessors: u32, threads_per_multiprocessor: u32, warp_size: u32) -> u64 {
    multiprocessors as u64 * (threads_per_multiprocessor / warp_size.max(1)) as u64
}

impl Cuda {
    /// Makes `device`'s primary context current on this thread, retaining it on first use.
    fn enter(&self, device: i32) -> Result<&Gpu> {
        let gpu = &self.gpus[device as usize];
        let mut context = gpu.context.lock().unwrap_or_else(|e| e.into_inner());
        let ctx = match *context {
            Some(ctx) => ctx as CuHandle,
            None => {
                let ctx = self.driver.retain_primary_context(gpu.dev)?;
                *context = Some(ctx as usize);
                ctx
            }
        };
        // SAFETY: `ctx` was retained above and is released only on drop.
        unsafe { self.driver.set_current(ctx) }?;
        Ok(gpu)
    }
}

impl Backend for Cuda {
    type Image = Module;
    type Kernel = Kernel;
    const NAME: &'static str = "cuda";

    fn init() -> Result<Self> {
        let driver = Driver::load(c"libcuda.so.1")?;
        let count = driver.device_count()?;
        let mut gpus = Vec::new();
        for ordinal in 0..count {
            let dev = driver.device(ordinal)?;
            let get = |a| driver.attribute(dev, a).map(|v| v.max(0) as u32);
            let multiprocessors = get(attr::MULTIPROCESSOR_COUNT)?;
            let warp_size = get(attr::WARP_SIZE)?;
            gpus.push(Gpu {
                dev,
                sm: get(attr::COMPUTE_CAPABILITY_MAJOR)? * 10 + get(attr::COMPUTE_CAPABILITY_MINOR)?,
                info: DeviceInfo {
                    limits: DeviceLimits {
                        max_threads_per_block: get(attr::MAX_THREADS_PER_BLOCK)?,
                        max_blocks: get(attr::MAX_GRID_DIM_X)?,
                        warp_size,
                        multiprocessors,
                        default_threads: DEFAULT_THREADS,
                    },
                    clock_hz: get(attr::CLOCK_RATE)? as u64 * 1000,
                    hardware_parallelism: hardware_parallelism(
                        multiprocessors,
                        get(attr::MAX_THREADS_PER_MULTIPROCESSOR)?,
                        warp_size,
                    ),
                    // CUDA's DeviceRTL allocates from the driver's heap, as with LLVM's plugin.
                    memory_pool_bytes: 0,
                },
                context: Mutex::new(None),
            });
        }
        Ok(Cuda { driver, gpus })
    }

    fn device_count(&self) -> i32 {
        self.gpus.len() as i32
    }

    fn check_image(&self, image: &DeviceImage<'_>, _arch: Option<&str>) -> Result<()> {
        if let Some(triple) = image.triple.as_deref().filter(|t| !t.starts_with("nvptx64")) {
            return Err(PluginError::InvalidImage(format!("packaged for {triple}, not nvptx64")));
        }
        match image::classify(image.bytes)? {
            CudaImage::Ptx => Ok(()),
            CudaImage::Cubin { sm } => {
                if self.gpus.iter().any(|g| image::cubin_runs_on(sm, g.sm)) {
                    Ok(())
                } else {
                    let have: Vec<String> = self.gpus.iter().map(|g| format!("sm_{}", g.sm)).collect();
                    Err(PluginError::InvalidImage(format!(
                        "cubin for sm_{sm} runs on none of the devices ({})",
                        have.join(", ")
                    )))
                }
            }
        }
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.enter(device).map(drop)
    }

    fn device_info(&self, device: i32) -> Option<DeviceInfo> {
        Some(self.gpus[device as usize].info)
    }

    fn load_image(&self, device: i32, bytes: &[u8]) -> Result<Module> {
        let gpu = self.enter(device)?;
        let handle = match image::classify(bytes)? {
            CudaImage::Cubin { sm } if !image::cubin_runs_on(sm, gpu.sm) => {
                return Err(PluginError::InvalidImage(format!(
                    "cubin for sm_{sm} on an sm_{} device",
                    gpu.sm
                )))
            }
            CudaImage::Cubin { .. } => self.driver.load_module(bytes)?,
            // The driver reads PTX up to its NUL.
            CudaImage::Ptx => self.driver.load_module(&[bytes, &[0]].concat())?,
        };
        Ok(Module { handle: handle as usize, device })
    }

    fn unload_image(&self, device: i32, module: Module) -> Result<()> {
        self.enter(device)?;
        // SAFETY: a `Module` owns its loaded handle; the core unloads each module once.
        Ok(unsafe { self.driver.unload_module(module.handle as CuHandle) }?)
    }

    fn kernel(&self, module: &Module, kernel: &str) -> Result<Option<Kernel>> {
        self.enter(module.device)?;
        let function =
            // SAFETY: a `Module` holds a loaded handle until unloaded.
            unsafe { self.driver.function(module.handle as CuHandle, &symbol_name(kernel)?) };
        let Some(function) = function? else {
            return Ok(None);
        };
        // SAFETY: a function of the loaded module.
        let max_threads = unsafe { self.driver.max_threads_per_block(function) }?;
        Ok(Some(Kernel { function: function as usize, max_threads }))
    }

    fn kernel_max_threads(&self, kernel: &Kernel) -> Option<u32> {
        Some(kernel.max_threads).filter(|&n| n > 0)
    }

    fn global(&self, module: &Module, symbol: &str) -> Result<Option<DeviceSymbol>> {
        self.enter(module.device)?;
        // SAFETY: a `Module` holds a loaded handle until unloaded.
        let found = unsafe { self.driver.global(module.handle as CuHandle, &symbol_name(symbol)?) }?;
        Ok(found.map(|(addr, size)| DeviceSymbol { addr, size: Some(size as u64), writable: true }))
    }

    fn alloc(&self, device: i32, size: usize, kind: AllocKind) -> Result<u64> {
        self.enter(device)?;
        let size = size.max(1);
        match kind {
            AllocKind::Device => Ok(self.driver.alloc(size)?),
            AllocKind::Host => Ok(self.driver.alloc_host(size)?),
            AllocKind::Shared => Ok(self.driver.alloc_managed(size)?),
        }
    }

    fn free(&self, device: i32, ptr: u64, kind: AllocKind) -> Result<()> {
        self.enter(device)?;
        match kind {
            AllocKind::Device | AllocKind::Shared => Ok(self.driver.free(ptr)?),
            AllocKind::Host => Ok(self.driver.free_host(ptr)?),
        }
    }

    fn write(&self, device: i32, dst: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.enter(device)?;
        Ok(self.driver.write(dst, src)?)
    }

    fn read(&self, device: i32, dst: &mut [u8], src: u64) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.enter(device)?;
        Ok(self.driver.read(dst, src)?)
    }

    fn launch(&self, device: i32, kernel: &Kernel, launch: &Launch<'_>) -> Result<()> {
        self.enter(device)?;
        let mut values = launch.args.to_vec();
        let mut params: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
        // SAFETY: a kernel of a loaded module (the core's registry says so) with one parameter
        // pointer per kernel argument, as libomptarget passes them.
        unsafe {
            self.driver.launch(
                kernel.function as CuHandle,
                launch.blocks,
                launch.threads,
                launch.dynamic_shared_bytes,
                &mut params,
            )
        }?;
        Ok(self.driver.synchronize()?)
    }
}

impl Cuda {
    /// (free, total) bytes of device memory on `device` (the GPU tests compare them around a
    /// run to find leaks).
    pub fn memory_info(&self, device: i32) -> Result<(usize, usize)> {
        self.enter(device)?;
        Ok(self.driver.mem_info()?)
    }
}

impl Drop for Cuda {
    fn drop(&mut self) {
        for gpu in &self.gpus {
            if gpu.context.lock().unwrap_or_else(|e| e.into_inner()).take().is_some() {
                let _ = self.driver.release_primary_context(gpu.dev);
            }
        }
    }
}

// SAFETY: the handles inside are driver objects usable from any thread once a context is
// current, which every method makes sure of.
unsafe impl Send for Module {}

plugin_core::export_plugin!(Cuda);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardware_parallelism_counts_warps_as_llvm_does() {
        // H100 SXM: 132 SMs of 2048 threads, warps of 32.
        assert_eq!(hardware_parallelism(132, 2048, 32), 132 * 64);
        // A100: 108 SMs; sm_86 parts hold 1536 threads per SM.
        assert_eq!(hardware_parallelism(108, 2048, 32), 6912);
        assert_eq!(hardware_parallelism(84, 1536, 32), 84 * 48);
        assert_eq!(hardware_parallelism(1, 2048, 0), 2048, "a zero warp size does not divide by 0");
    }
}
