//! What the plugin reads and writes of a DeviceRTL's state on the device, through the backend:
//! the device environment and memory pool of a loaded image, the table fields LLVM's lookup
//! reads, a kernel's configuration, and a launch's argument buffer. The layouts and the values
//! are [`crate::environment`]'s.

use crate::backend::{Backend, LaunchParams};
use crate::environment::*;
use crate::{PluginError, Result};
use host_table::rtl_interface::AllocKind;

/// Writes `environment` into `image`'s [`DEVICE_ENVIRONMENT`] global, if its DeviceRTL has one;
/// where it is, for [`write_indirect_call_table`].
pub fn write_device_environment<B: Backend>(
    backend: &B,
    device: i32,
    image: &B::Image,
    environment: &DeviceEnvironment,
) -> Result<Option<EnvironmentGlobal>> {
    let Some(global) = backend.global(image, DEVICE_ENVIRONMENT)? else {
        return Ok(None);
    };
    let size = global.size.unwrap_or(0) as usize;
    backend.write(device, global.addr, device_environment_bytes(environment, size)?)?;
    Ok(Some(EnvironmentGlobal { address: global.addr, size }))
}

/// Points LLVM 19+'s `IndirectCallTable` / `IndirectCallTableSize` fields of a device
/// environment at `table` (`(address, entries)`, `None`: cleared), so that
/// `__llvm_omp_indirect_call_lookup` sees the same map as `__kmpc_target_translate_fptr`. Images
/// without those fields (clang 16's layout, or no DeviceRTL) are left alone.
pub fn write_indirect_call_table<B: Backend>(
    backend: &B,
    device: i32,
    environment: Option<EnvironmentGlobal>,
    table: Option<(u64, u64)>,
) -> Result<()> {
    let Some(EnvironmentGlobal { address, size: DEVICE_ENVIRONMENT_V19_SIZE }) = environment else {
        return Ok(());
    };
    let (ptr, len) = table.unwrap_or((0, 0));
    backend.write(device, address + INDIRECT_CALL_TABLE_OFFSET, bytemuck::bytes_of(&[ptr, len]))
}

/// Gives `image` a memory pool of `bytes` bytes, if its DeviceRTL has the pool global (16
/// bytes): allocates the device memory, writes `{ptr, size}` and resets the tracker. Returns the
/// pool's address, which the caller frees when the image is unloaded (each image gets its own:
/// the allocator's state lives in the image, so two images must not share one).
pub fn give_memory_pool<B: Backend>(
    backend: &B,
    device: i32,
    image: &B::Image,
    bytes: u64,
) -> Result<Option<u64>> {
    if bytes == 0 {
        return Ok(None);
    }
    let Some(pool) = backend.global(image, DEVICE_MEMORY_POOL)? else {
        return Ok(None);
    };
    let expected = std::mem::size_of::<DeviceMemoryPool>() as u64;
    if pool.size.is_some_and(|size| size != expected) {
        return Err(PluginError::InvalidImage(format!(
            "{DEVICE_MEMORY_POOL} has {} bytes, expected {expected}",
            pool.size.unwrap_or(0)
        )));
    }
    let size = usize::try_from(bytes)
        .map_err(|_| PluginError::InvalidArgument(format!("memory pool of {bytes} bytes")))?;
    let ptr = backend.alloc(device, size, AllocKind::Device)?;
    let written = (|| {
        backend.write(device, pool.addr, bytemuck::bytes_of(&DeviceMemoryPool { ptr, size: bytes }))?;
        let tracker_size = std::mem::size_of::<DeviceMemoryPoolTracking>() as u64;
        match backend.global(image, DEVICE_MEMORY_POOL_TRACKER)? {
            Some(tracker) if tracker.size.is_none_or(|size| size == tracker_size) => {
                backend.write(device, tracker.addr, bytemuck::bytes_of(&DeviceMemoryPoolTracking::AT_LOAD))
            }
            _ => Ok(()),
        }
    })();
    match written {
        Ok(()) => Ok(Some(ptr)),
        Err(err) => {
            let _ = backend.free(device, ptr, AllocKind::Device);
            Err(err)
        }
    }
}

/// Reads kernel `kernel`'s configuration from `image`: clang 18+'s `<kernel>_kernel_environment`,
/// else clang 16's `<kernel>_exec_mode`, else [`KernelConfig::NOT_OPENMP`].
pub fn read_kernel_config<B: Backend>(
    backend: &B,
    device: i32,
    image: &B::Image,
    kernel: &str,
) -> Result<KernelConfig> {
    let name = format!("{kernel}{KERNEL_ENVIRONMENT_SUFFIX}");
    if let Some(global) = backend.global(image, &name)? {
        if global.size.is_some_and(|size| size != KERNEL_ENVIRONMENT_SIZE as u64) {
            return Err(PluginError::InvalidImage(format!(
                "{name} has {} bytes, expected {KERNEL_ENVIRONMENT_SIZE}",
                global.size.unwrap_or(0)
            )));
        }
        let mut bytes = [0u8; KERNEL_ENVIRONMENT_SIZE];
        backend.read(device, &mut bytes, global.addr)?;
        return KernelConfig::from_kernel_environment(&bytes);
    }
    if let Some(global) = backend.global(image, &format!("{kernel}{EXEC_MODE_SUFFIX}"))? {
        let mut mode = [0u8; 1];
        backend.read(device, &mut mode, global.addr)?;
        return KernelConfig::from_exec_mode(mode[0]);
    }
    Ok(KernelConfig::NOT_OPENMP)
}

/// Runs `run` with the kernel's complete argument list: for clang 19 kernels first `dyn_ptr`,
/// then `launch.args`. As LLVM 19's `GenericKernelTy::getKernelLaunchEnvironment` does, a kernel
/// with a cross-team reduction gets a launch environment and a reduction buffer in device memory
/// (freed once `run`, which must complete the kernel, returns); any other gets
/// [`NO_LAUNCH_ENVIRONMENT`].
pub fn with_kernel_arguments<B: Backend>(
    backend: &B,
    device: i32,
    launch: &LaunchParams<'_>,
    config: &KernelConfig,
    run: impl FnOnce(&[u64]) -> Result<()>,
) -> Result<()> {
    let mut args = Vec::with_capacity(launch.args.len() + 1);
    let reduction = config.reduction_buffer_size().filter(|_| launch.wants_dyn_ptr());
    let Some(buffer_size) = reduction else {
        if launch.wants_dyn_ptr() {
            args.push(NO_LAUNCH_ENVIRONMENT);
        }
        args.extend_from_slice(launch.args);
        return run(&args);
    };
    let size = usize::try_from(buffer_size)
        .map_err(|_| PluginError::InvalidImage(format!("reduction buffer of {buffer_size} bytes")))?;
    let buffer = backend.alloc(device, size, AllocKind::Device)?;
    let result = (|| {
        let environment = backend.alloc(device, KERNEL_LAUNCH_ENVIRONMENT_SIZE, AllocKind::Device)?;
        let result = backend.write(device, environment, &kernel_launch_environment(buffer)).and_then(|()| {
            args.push(environment);
            args.extend_from_slice(launch.args);
            run(&args)
        });
        backend.free(device, environment, AllocKind::Device).and(result)
    })();
    backend.free(device, buffer, AllocKind::Device).and(result)
}
