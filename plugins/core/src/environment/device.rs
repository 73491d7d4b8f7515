//! The device environment global, `__omp_rtl_device_environment`: the DeviceRTL's
//! configuration, written by the plugin when it loads an image, and the copy of the
//! function-pointer table LLVM 18+'s lookup reads (clang 16 and LLVM 19+ layouts; the layout
//! itself is the ABI crate's, shared with the device library).

use crate::{PluginError, Result};

pub use omptarget_indirect_abi::DEVICE_ENVIRONMENT;
pub use omptarget_indirect_abi::{
    DeviceEnvironment, DEVICE_ENVIRONMENT_V16_SIZE, DEVICE_ENVIRONMENT_V19_SIZE,
};

/// Offset of `IndirectCallTable` in the LLVM 19+ layout (then `IndirectCallTableSize`).
pub const INDIRECT_CALL_TABLE_OFFSET: u64 =
    std::mem::offset_of!(DeviceEnvironment, indirect_call_table) as u64;

/// What a plugin writes when it loads an image on device `device_num` of `num_devices`: no
/// device-side debugging, no dynamic team memory, no indirect-call table yet (the core installs
/// it afterwards).
pub fn device_environment_at_load(
    num_devices: u32,
    device_num: u32,
    clock_frequency: u64,
    hardware_parallelism: u64,
) -> DeviceEnvironment {
    DeviceEnvironment {
        num_devices,
        device_num,
        clock_frequency,
        hardware_parallelism,
        ..DeviceEnvironment::EMPTY
    }
}

/// The bytes of `environment` for an image whose global has `size` bytes (16 or 48); any other
/// size is a DeviceRTL this plugin does not know.
pub fn device_environment_bytes(environment: &DeviceEnvironment, size: usize) -> Result<&[u8]> {
    match size {
        DEVICE_ENVIRONMENT_V16_SIZE | DEVICE_ENVIRONMENT_V19_SIZE => {
            Ok(&bytemuck::bytes_of(environment)[..size])
        }
        other => Err(PluginError::InvalidImage(format!(
            "{DEVICE_ENVIRONMENT} has {other} bytes; known layouts have {DEVICE_ENVIRONMENT_V16_SIZE} \
             (clang 16) or {DEVICE_ENVIRONMENT_V19_SIZE} (LLVM 19 and later)"
        ))),
    }
}

/// Where an image's [`DEVICE_ENVIRONMENT`] global is, and which layout its size names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvironmentGlobal {
    /// Its device address.
    pub address: u64,
    /// Its size in bytes: [`DEVICE_ENVIRONMENT_V16_SIZE`] or [`DEVICE_ENVIRONMENT_V19_SIZE`].
    pub size: usize,
}

/// `__omp_rtl_device_memory_pool`: `DeviceMemoryPoolTy {void *Ptr; u64 Size}`, where the
/// DeviceRTL's global allocator takes memory from (LLVM 18+, AMDGPU).
pub const DEVICE_MEMORY_POOL: &str = "__omp_rtl_device_memory_pool";
/// `__omp_rtl_device_memory_pool_tracker`: `DeviceMemoryPoolTrackingTy {u64 NumAllocations,
/// AllocationTotal, AllocationMin, AllocationMax}`, reset with the pool.
pub const DEVICE_MEMORY_POOL_TRACKER: &str = "__omp_rtl_device_memory_pool_tracker";

/// `DeviceMemoryPoolTy`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DeviceMemoryPool {
    /// `Ptr`: the pool's device address.
    pub ptr: u64,
    /// `Size` in bytes.
    pub size: u64,
}

/// `DeviceMemoryPoolTrackingTy`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DeviceMemoryPoolTracking {
    /// `NumAllocations`.
    pub num_allocations: u64,
    /// `AllocationTotal`.
    pub allocation_total: u64,
    /// `AllocationMin`.
    pub allocation_min: u64,
    /// `AllocationMax`.
    pub allocation_max: u64,
}

const _: () = assert!(std::mem::size_of::<DeviceMemoryPool>() == 16);
const _: () = assert!(std::mem::size_of::<DeviceMemoryPoolTracking>() == 32);

impl DeviceMemoryPoolTracking {
    /// The tracker's initial value, as LLVM's plugin writes it: no allocations, minimum `~0u32`.
    pub const AT_LOAD: DeviceMemoryPoolTracking = DeviceMemoryPoolTracking {
        num_allocations: 0,
        allocation_total: 0,
        allocation_min: u32::MAX as u64,
        allocation_max: 0,
    };
}
