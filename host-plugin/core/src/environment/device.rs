//! The device environment global, `__omp_rtl_device_environment`: the DeviceRTL's
//! configuration, written by the plugin when it loads an image, and the copy of the
//! function-pointer table LLVM 18+'s lookup reads (clang 16 and LLVM 19 layouts).

use crate::abi::AllocKind;
use crate::backend::Backend;
use crate::{PluginError, Result};

/// `__omp_rtl_device_environment`: the DeviceRTL reads its configuration from it.
pub const DEVICE_ENVIRONMENT: &str = "__omp_rtl_device_environment";

/// clang 16's `DeviceEnvironmentTy`: `{u32 DebugKind, NumDevices, DeviceNum, DynamicMemSize}`.
pub const DEVICE_ENVIRONMENT_V16_SIZE: usize = 16;
/// LLVM 18/19's: the four u32 above, then `u64 ClockFrequency; uintptr IndirectCallTable;
/// u64 IndirectCallTableSize; u64 HardwareParallelism`.
pub const DEVICE_ENVIRONMENT_V19_SIZE: usize = 48;
/// Offset of `IndirectCallTable` in the LLVM 18/19 layout (then `IndirectCallTableSize`).
pub const INDIRECT_CALL_TABLE_OFFSET: u64 = 24;

/// The values the plugin puts in the device environment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceEnvironment {
    /// `DeviceDebugKind` (0: no device-side debugging).
    pub debug_kind: u32,
    /// `NumDevices`.
    pub num_devices: u32,
    /// `DeviceNum`.
    pub device_num: u32,
    /// `DynamicMemSize`: bytes of dynamic shared memory for `omp_alloc` in the team.
    pub dynamic_mem_size: u32,
    /// `ClockFrequency` in Hz.
    pub clock_frequency: u64,
    /// `IndirectCallTable` / `IndirectCallTableSize`: the function-pointer map (same 16-byte
    /// `{host, device}` entries LLVM's `__llvm_omp_indirect_call_lookup` searches).
    pub indirect_table: u64,
    /// Entries in `indirect_table`.
    pub indirect_table_size: u64,
    /// `HardwareParallelism`: [`crate::DeviceInfo::hardware_parallelism`].
    pub hardware_parallelism: u64,
}

impl DeviceEnvironment {
    /// What a plugin writes when it loads an image on device `device_num` of `num_devices`: no
    /// device-side debugging, no dynamic team memory, no indirect-call table yet (the core
    /// installs it afterwards).
    pub fn at_load(
        num_devices: u32,
        device_num: u32,
        clock_frequency: u64,
        hardware_parallelism: u64,
    ) -> Self {
        DeviceEnvironment {
            debug_kind: 0,
            num_devices,
            device_num,
            dynamic_mem_size: 0,
            clock_frequency,
            indirect_table: 0,
            indirect_table_size: 0,
            hardware_parallelism,
        }
    }

    /// The global's bytes for an image whose global has `size` bytes (16 or 48); any other size
    /// is a DeviceRTL this plugin does not know.
    pub fn to_bytes(&self, size: usize) -> Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(size);
        for v in [self.debug_kind, self.num_devices, self.device_num, self.dynamic_mem_size] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        match size {
            DEVICE_ENVIRONMENT_V16_SIZE => {}
            DEVICE_ENVIRONMENT_V19_SIZE => {
                for v in [
                    self.clock_frequency,
                    self.indirect_table,
                    self.indirect_table_size,
                    self.hardware_parallelism,
                ] {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
            }
            other => {
                return Err(PluginError::InvalidImage(format!(
                "{DEVICE_ENVIRONMENT} has {other} bytes; known layouts have {DEVICE_ENVIRONMENT_V16_SIZE} \
                     (clang 16) or {DEVICE_ENVIRONMENT_V19_SIZE} (LLVM 18/19)"
            )))
            }
        }
        Ok(bytes)
    }
}

/// Writes `environment` into `image`'s [`DEVICE_ENVIRONMENT`] global, if its DeviceRTL has one;
/// where it is, `(address, size)`, for [`write_indirect_call_table`].
pub fn write_device_environment<B: Backend>(
    backend: &B,
    device: i32,
    image: &B::Image,
    environment: &DeviceEnvironment,
) -> Result<Option<(u64, usize)>> {
    let Some(global) = backend.global(image, DEVICE_ENVIRONMENT)? else {
        return Ok(None);
    };
    let size = global.size.unwrap_or(0) as usize;
    backend.write(device, global.addr, &environment.to_bytes(size)?)?;
    Ok(Some((global.addr, size)))
}

/// Points LLVM 18/19's `IndirectCallTable` / `IndirectCallTableSize` fields of a device
/// environment at `table` (`(address, entries)`, `None`: cleared), so that
/// `__llvm_omp_indirect_call_lookup` sees the same map as `__kmpc_target_translate_fptr`. Images
/// without those fields (clang 16's layout, or no DeviceRTL) are left alone.
pub fn write_indirect_call_table<B: Backend>(
    backend: &B,
    device: i32,
    environment: Option<(u64, usize)>,
    table: Option<(u64, u64)>,
) -> Result<()> {
    let Some((address, DEVICE_ENVIRONMENT_V19_SIZE)) = environment else {
        return Ok(());
    };
    let (ptr, len) = table.unwrap_or((0, 0));
    let mut fields = [0u8; 16];
    fields[..8].copy_from_slice(&ptr.to_le_bytes());
    fields[8..].copy_from_slice(&len.to_le_bytes());
    backend.write(device, address + INDIRECT_CALL_TABLE_OFFSET, &fields)
}

/// `__omp_rtl_device_memory_pool`: `DeviceMemoryPoolTy {void *Ptr; u64 Size}`, where the
/// DeviceRTL's global allocator takes memory from (LLVM 18+, AMDGPU).
pub const DEVICE_MEMORY_POOL: &str = "__omp_rtl_device_memory_pool";
/// `__omp_rtl_device_memory_pool_tracker`: `DeviceMemoryPoolTrackingTy {u64 NumAllocations,
/// AllocationTotal, AllocationMin, AllocationMax}`, reset with the pool.
pub const DEVICE_MEMORY_POOL_TRACKER: &str = "__omp_rtl_device_memory_pool_tracker";

/// The tracker's initial value, as LLVM's plugin writes it: no allocations, minimum `~0u32`.
pub fn memory_pool_tracker_at_load() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[16..24].copy_from_slice(&u64::from(u32::MAX).to_le_bytes());
    bytes
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
    let Some(pool) = backend.global(image, DEVICE_MEMORY_POOL)?.filter(|_| bytes > 0) else {
        return Ok(None);
    };
    if pool.size.is_some_and(|size| size != 16) {
        return Err(PluginError::InvalidImage(format!(
            "{DEVICE_MEMORY_POOL} has {} bytes, expected 16",
            pool.size.unwrap_or(0)
        )));
    }
    let size = usize::try_from(bytes)
        .map_err(|_| PluginError::InvalidArgument(format!("memory pool of {bytes} bytes")))?;
    let ptr = backend.alloc(device, size, AllocKind::Device)?;
    let written = (|| {
        let mut value = [0u8; 16];
        value[..8].copy_from_slice(&ptr.to_le_bytes());
        value[8..].copy_from_slice(&bytes.to_le_bytes());
        backend.write(device, pool.addr, &value)?;
        match backend.global(image, DEVICE_MEMORY_POOL_TRACKER)? {
            Some(tracker) if tracker.size.is_none_or(|size| size == 32) => {
                backend.write(device, tracker.addr, &memory_pool_tracker_at_load())
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
