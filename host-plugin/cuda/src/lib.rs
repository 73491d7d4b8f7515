//! `libomptarget.rtl.cuda.so`: the CUDA plugin. The driver (`libcuda.so.1`) is loaded at run
//! time ([`driver`]); without it, or without a GPU, the plugin reports 0 devices. Images are
//! cubins or PTX loaded with `cuModuleLoadDataEx` into each device's primary context; the
//! DeviceRTL's device environment is initialised at load, kernels launch with the geometry and
//! arguments LLVM's own CUDA plugin gives them ([`environment`]), and the function-pointer map
//! is installed by the core, also into LLVM 18+'s indirect-call table fields.
#![deny(missing_docs)]

pub mod driver;
pub mod image;

use std::ffi::c_void;
use std::sync::Mutex;

use driver::{attr, CuDevice, CuHandle, Driver};
use image::CudaImage;
use plugin_core::environment::{
    launch_geometry, read_kernel_config, with_kernel_arguments, write_device_environment,
    write_indirect_call_table, DeviceEnvironment, DeviceLimits, KernelConfig,
};
use plugin_core::image::DeviceImage;
use plugin_core::vendor_library::symbol_name;
use plugin_core::{Backend, DeviceSymbol, LaunchParams, PluginError, Result};

/// Threads per block without a `thread_limit` (LLVM's NVPTX `GV_Default_WG_Size`).
const DEFAULT_THREADS: u32 = 128;

/// One GPU.
struct Gpu {
    dev: CuDevice,
    /// Compute capability as major * 10 + minor.
    sm: u32,
    limits: DeviceLimits,
    clock_hz: u64,
    hardware_parallelism: u64,
    /// The retained primary context, from `init_device` on.
    context: Mutex<Option<usize>>,
}

/// The CUDA backend.
pub struct Cuda {
    driver: Driver,
    gpus: Vec<Gpu>,
}

/// A kernel: the function and what its environment says about launching it.
pub struct Kernel {
    function: usize,
    config: KernelConfig,
}

/// A module loaded on one device.
pub struct Module {
    handle: usize,
    device: i32,
    /// `(address, size)` of the DeviceRTL's device environment, if the image has one.
    environment: Option<(u64, usize)>,
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
            gpus.push(Gpu {
                dev,
                sm: get(attr::COMPUTE_CAPABILITY_MAJOR)? * 10 + get(attr::COMPUTE_CAPABILITY_MINOR)?,
                limits: DeviceLimits {
                    max_threads_per_block: get(attr::MAX_THREADS_PER_BLOCK)?,
                    max_blocks: get(attr::MAX_GRID_DIM_X)?,
                    warp_size: get(attr::WARP_SIZE)?,
                    multiprocessors,
                    default_threads: DEFAULT_THREADS,
                },
                clock_hz: get(attr::CLOCK_RATE)? as u64 * 1000,
                hardware_parallelism: multiprocessors as u64
                    * get(attr::MAX_THREADS_PER_MULTIPROCESSOR)? as u64,
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
        let mut module = Module { handle: handle as usize, device, environment: None };
        if let Err(err) = self.init_environment(gpu, &mut module) {
            // SAFETY: loaded above, unloaded once on this failure path.
            let _ = unsafe { self.driver.unload_module(handle) };
            return Err(err);
        }
        Ok(module)
    }

    fn unload_image(&self, device: i32, module: Module) -> Result<()> {
        self.enter(device)?;
        // SAFETY: a `Module` owns its loaded handle; the core unloads each module once.
        unsafe { self.driver.unload_module(module.handle as CuHandle) }
    }

    fn kernel(&self, module: &Module, kernel: &str) -> Result<Option<Kernel>> {
        self.enter(module.device)?;
        // SAFETY: a `Module` holds a loaded handle until unloaded.
        let Some(function) =
            (unsafe { self.driver.function(module.handle as CuHandle, &symbol_name(kernel)?) })?
        else {
            return Ok(None);
        };
        let config = read_kernel_config(self, module.device, module, kernel)?;
        Ok(Some(Kernel { function: function as usize, config }))
    }

    fn global(&self, module: &Module, symbol: &str) -> Result<Option<DeviceSymbol>> {
        self.enter(module.device)?;
        // SAFETY: a `Module` holds a loaded handle until unloaded.
        let found = unsafe { self.driver.global(module.handle as CuHandle, &symbol_name(symbol)?) }?;
        Ok(found.map(|(addr, size)| DeviceSymbol { addr, size: Some(size as u64), writable: true }))
    }

    fn alloc(&self, device: i32, size: usize, _kind: i32) -> Result<u64> {
        self.enter(device)?;
        // Every allocation kind is device memory; a 0-byte request still gets a unique pointer.
        self.driver.alloc(size.max(1))
    }

    fn free(&self, device: i32, ptr: u64, _kind: i32) -> Result<()> {
        self.enter(device)?;
        self.driver.free(ptr)
    }

    fn write(&self, device: i32, dst: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.enter(device)?;
        self.driver.write(dst, src)
    }

    fn read(&self, device: i32, dst: &mut [u8], src: u64) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.enter(device)?;
        self.driver.read(dst, src)
    }

    fn launch(&self, device: i32, kernel: &Kernel, launch: &LaunchParams<'_>) -> Result<()> {
        let gpu = self.enter(device)?;
        let ka = launch.kernel_args;
        let (blocks, threads) =
            launch_geometry(&kernel.config, &gpu.limits, ka.num_teams[0], ka.thread_limit[0], ka.tripcount);
        with_kernel_arguments(self, device, launch, &kernel.config, |args| {
            let mut values = args.to_vec();
            let mut params: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
            // SAFETY: a kernel of a loaded module (the core's registry says so) with one
            // parameter pointer per kernel argument, as libomptarget passes them.
            unsafe {
                self.driver.launch(
                    kernel.function as CuHandle,
                    blocks,
                    threads,
                    ka.dyn_cgroup_mem,
                    &mut params,
                )
            }?;
            self.driver.synchronize()
        })
    }

    fn map_installed(&self, device: i32, module: &Module, table: Option<(u64, u64)>) -> Result<()> {
        write_indirect_call_table(self, device, module.environment, table)
    }
}

impl Cuda {
    /// Writes the device environment of a freshly loaded module, if its DeviceRTL has one.
    fn init_environment(&self, gpu: &Gpu, module: &mut Module) -> Result<()> {
        let env = DeviceEnvironment::at_load(
            self.gpus.len() as u32,
            module.device as u32,
            gpu.clock_hz,
            gpu.hardware_parallelism,
        );
        module.environment = write_device_environment(self, module.device, module, &env)?;
        Ok(())
    }

    /// (free, total) bytes of device memory on `device` (the GPU tests compare them around a
    /// run to find leaks).
    pub fn memory_info(&self, device: i32) -> Result<(usize, usize)> {
        self.enter(device)?;
        self.driver.mem_info()
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
