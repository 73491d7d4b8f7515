//! What LLVM's DeviceRTL in a GPU image (CUDA or AMDGPU) expects from the plugin: the device
//! environment global, each kernel's configuration, the launch geometry, and the kernel launch
//! environment its leading `dyn_ptr` argument points to. Layouts are those of clang/DeviceRTL 19
//! (`DeviceEnvironmentTy`, `KernelEnvironmentTy`, `KernelLaunchEnvironmentTy` in
//! `offload/include/Shared/Environment.h`, checked against the IR clang 19 emits) and clang 16.

use crate::backend::{Backend, LaunchParams};
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
    /// `HardwareParallelism`: multiprocessors x threads per multiprocessor.
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

/// `OMPTgtExecModeFlags`: how the DeviceRTL runs a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecMode {
    /// `OMP_TGT_EXEC_MODE_GENERIC` (1): one main thread, workers wait in a state machine; the
    /// main thread lives in an extra warp.
    Generic,
    /// `OMP_TGT_EXEC_MODE_SPMD` (2): every thread runs the region.
    Spmd,
    /// `OMP_TGT_EXEC_MODE_GENERIC_SPMD` (3): generic code the compiler made SPMD.
    GenericSpmd,
}

impl ExecMode {
    /// Decodes the flag byte.
    pub fn from_flags(flags: u8) -> Result<ExecMode> {
        match flags {
            1 => Ok(ExecMode::Generic),
            2 => Ok(ExecMode::Spmd),
            3 => Ok(ExecMode::GenericSpmd),
            other => Err(PluginError::InvalidImage(format!("unknown kernel execution mode {other}"))),
        }
    }
}

/// Suffix of clang 18+'s per-kernel `KernelEnvironmentTy` global.
pub const KERNEL_ENVIRONMENT_SUFFIX: &str = "_kernel_environment";
/// Suffix of clang 16's per-kernel `i8` execution-mode global.
pub const EXEC_MODE_SUFFIX: &str = "_exec_mode";
/// `sizeof(KernelEnvironmentTy)`: `ConfigurationEnvironmentTy {u8 UseGenericStateMachine,
/// u8 MayUseNestedParallelism, u8 ExecMode, i32 MinThreads, MaxThreads, MinTeams, MaxTeams,
/// ReductionDataSize, ReductionBufferLength}` (28 bytes), then `IdentTy *`, `DynamicEnvironmentTy *`.
pub const KERNEL_ENVIRONMENT_SIZE: usize = 48;

/// What the launch needs from a kernel's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelConfig {
    /// Execution mode.
    pub mode: ExecMode,
    /// `MaxThreads` (> 0: the kernel was compiled for at most that many threads per block).
    pub max_threads: i32,
    /// `MaxTeams` (> 0: at most that many blocks).
    pub max_teams: i32,
    /// `ReductionDataSize`: bytes of one team's reduction data (0: no cross-team reduction).
    pub reduction_data_size: u32,
    /// `ReductionBufferLength`: teams the reduction buffer holds.
    pub reduction_buffer_length: u32,
}

impl KernelConfig {
    /// Reads a `KernelEnvironmentTy` copied from the device.
    pub fn from_kernel_environment(bytes: &[u8]) -> Result<KernelConfig> {
        if bytes.len() != KERNEL_ENVIRONMENT_SIZE {
            return Err(PluginError::InvalidImage(format!(
                "kernel environment has {} bytes, expected {KERNEL_ENVIRONMENT_SIZE}",
                bytes.len()
            )));
        }
        let i32_at = |o: usize| i32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        Ok(KernelConfig {
            mode: ExecMode::from_flags(bytes[2])?,
            max_threads: i32_at(8),
            max_teams: i32_at(16),
            reduction_data_size: i32_at(20) as u32,
            reduction_buffer_length: i32_at(24) as u32,
        })
    }

    /// clang 16's kernels carry only the mode.
    pub fn from_exec_mode(flags: u8) -> Result<KernelConfig> {
        Ok(KernelConfig { mode: ExecMode::from_flags(flags)?, ..KernelConfig::NOT_OPENMP })
    }

    /// A kernel without an OpenMP environment (a CUDA, HIP or Rust kernel): every thread runs it.
    pub const NOT_OPENMP: KernelConfig = KernelConfig {
        mode: ExecMode::Spmd,
        max_threads: -1,
        max_teams: -1,
        reduction_data_size: 0,
        reduction_buffer_length: 0,
    };

    /// Bytes of the cross-team reduction buffer the launch must provide, if any.
    pub fn reduction_buffer_size(&self) -> Option<u64> {
        let size = self.reduction_data_size as u64 * self.reduction_buffer_length as u64;
        (size > 0).then_some(size)
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

/// `sizeof(KernelLaunchEnvironmentTy)` in LLVM 19: `{u32 ReductionCnt, u32 ReductionIterCnt,
/// void *ReductionBuffer}`.
pub const KERNEL_LAUNCH_ENVIRONMENT_SIZE: usize = 16;

/// The `dyn_ptr` LLVM 19's plugins pass to a kernel that needs no launch environment
/// (`reinterpret_cast<KernelLaunchEnvironmentTy *>(~0)`): the DeviceRTL never reads it then.
pub const NO_LAUNCH_ENVIRONMENT: u64 = u64::MAX;

/// A fresh `KernelLaunchEnvironmentTy` (counters 0) pointing at `reduction_buffer`.
pub fn kernel_launch_environment(reduction_buffer: u64) -> [u8; KERNEL_LAUNCH_ENVIRONMENT_SIZE] {
    let mut bytes = [0u8; KERNEL_LAUNCH_ENVIRONMENT_SIZE];
    bytes[8..].copy_from_slice(&reduction_buffer.to_le_bytes());
    bytes
}

/// `TARGET_ALLOC_DEVICE`: the allocation kind of the launch's own buffers.
const TARGET_ALLOC_DEVICE: i32 = 0;

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
    let buffer = backend.alloc(device, size, TARGET_ALLOC_DEVICE)?;
    let result = (|| {
        let environment = backend.alloc(device, KERNEL_LAUNCH_ENVIRONMENT_SIZE, TARGET_ALLOC_DEVICE)?;
        let result = backend.write(device, environment, &kernel_launch_environment(buffer)).and_then(|()| {
            args.push(environment);
            args.extend_from_slice(launch.args);
            run(&args)
        });
        backend.free(device, environment, TARGET_ALLOC_DEVICE).and(result)
    })();
    backend.free(device, buffer, TARGET_ALLOC_DEVICE).and(result)
}

/// Device limits the launch geometry respects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    /// `MAX_THREADS_PER_BLOCK`.
    pub max_threads_per_block: u32,
    /// `MAX_GRID_DIM_X`.
    pub max_blocks: u32,
    /// `WARP_SIZE`.
    pub warp_size: u32,
    /// Multiprocessors (CUDA) or compute units (AMDGPU).
    pub multiprocessors: u32,
    /// Threads per block when the program gives no `thread_limit` (LLVM's `GV_Default_WG_Size`:
    /// 128 on CUDA, 256 on AMDGPU).
    pub default_threads: u32,
}

/// (blocks, threads per block) for a launch, following LLVM's generic plugin
/// (`GenericKernelTy::getNumThreads` / `getNumBlocks`): an explicit `thread_limit` gains one warp
/// in generic mode (the main thread's); `num_teams` is honoured up to the device limit; otherwise
/// the loop trip count sizes the grid, capped at a default of blocks per multiprocessor.
pub fn launch_geometry(
    config: &KernelConfig,
    limits: &DeviceLimits,
    num_teams: u32,
    thread_limit: u32,
    tripcount: u64,
) -> (u32, u32) {
    let mut max_threads = limits.max_threads_per_block.max(1);
    if config.max_threads > 0 {
        max_threads = max_threads.min(config.max_threads as u32);
    }
    let requested = if thread_limit > 0 {
        let extra = if config.mode == ExecMode::Generic { limits.warp_size } else { 0 };
        thread_limit.saturating_add(extra)
    } else {
        limits.default_threads.max(1)
    };
    let threads = requested.min(max_threads).max(1);

    let mut block_limit = limits.max_blocks.max(1);
    if config.max_teams > 0 {
        block_limit = block_limit.min(config.max_teams as u32);
    }
    if num_teams > 0 {
        return (num_teams.min(block_limit), threads);
    }
    let default_blocks = limits.multiprocessors.max(1).saturating_mul(4);
    let from_tripcount = if tripcount == 0 {
        u64::MAX
    } else {
        match config.mode {
            ExecMode::Generic => tripcount,
            ExecMode::Spmd | ExecMode::GenericSpmd => tripcount.div_ceil(threads as u64),
        }
    };
    let blocks = from_tripcount.min(default_blocks as u64).min(block_limit as u64).max(1);
    (blocks as u32, threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: DeviceLimits = DeviceLimits {
        max_threads_per_block: 1024,
        max_blocks: i32::MAX as u32,
        warp_size: 32,
        multiprocessors: 132,
        default_threads: 128,
    };

    #[test]
    fn device_environment_layouts() {
        let env = DeviceEnvironment {
            debug_kind: 0,
            num_devices: 2,
            device_num: 1,
            dynamic_mem_size: 0,
            clock_frequency: 1_755_000_000,
            indirect_table: 0x7000_0000_1000,
            indirect_table_size: 3,
            hardware_parallelism: 132 * 2048,
        };
        let old = env.to_bytes(16).unwrap();
        assert_eq!(old, [0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        let new = env.to_bytes(48).unwrap();
        assert_eq!(&new[..16], &old[..]);
        assert_eq!(u64::from_le_bytes(new[16..24].try_into().unwrap()), 1_755_000_000);
        let at = INDIRECT_CALL_TABLE_OFFSET as usize;
        assert_eq!(u64::from_le_bytes(new[at..at + 8].try_into().unwrap()), 0x7000_0000_1000);
        assert_eq!(u64::from_le_bytes(new[at + 8..at + 16].try_into().unwrap()), 3);
        assert_eq!(u64::from_le_bytes(new[40..48].try_into().unwrap()), 132 * 2048);
        assert!(env.to_bytes(24).is_err());
    }

    #[test]
    fn kernel_environment_as_clang_19_emits_it() {
        // { i8 1, i8 0, i8 1, i32 1, i32 128, i32 -1, i32 -1, i32 0, i32 0 }, ptr, ptr
        let mut bytes = vec![1u8, 0, 1, 0];
        for v in [1i32, 128, -1, -1, 0, 0, 0] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&[0xaa; 16]);
        assert_eq!(bytes.len(), KERNEL_ENVIRONMENT_SIZE);
        let config = KernelConfig::from_kernel_environment(&bytes).unwrap();
        assert_eq!(
            config,
            KernelConfig {
                mode: ExecMode::Generic,
                max_threads: 128,
                max_teams: -1,
                reduction_data_size: 0,
                reduction_buffer_length: 0
            }
        );
        assert_eq!(config.reduction_buffer_size(), None);
        bytes[2] = 7;
        assert!(KernelConfig::from_kernel_environment(&bytes).is_err());
        assert!(KernelConfig::from_kernel_environment(&bytes[..40]).is_err());
    }

    #[test]
    fn kernel_environment_with_a_teams_reduction() {
        // What clang 19 emits for `target teams distribute parallel for reduction(+: sum)` with a
        // `double sum`: { i8 0, i8 0, i8 2, i32 1, i32 256, i32 1, i32 -1, i32 8, i32 1024 }.
        let mut bytes = vec![0u8, 0, 2, 0];
        for v in [1i32, 256, 1, -1, 8, 1024] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&[0; 20]);
        let config = KernelConfig::from_kernel_environment(&bytes).unwrap();
        assert_eq!((config.reduction_data_size, config.reduction_buffer_length), (8, 1024));
        assert_eq!(config.reduction_buffer_size(), Some(8 * 1024));
        assert_eq!(KernelConfig { reduction_buffer_length: 0, ..config }.reduction_buffer_size(), None);
        let kle = kernel_launch_environment(0x7f00_1234_5000);
        assert_eq!(kle[..8], [0; 8], "ReductionCnt and ReductionIterCnt start at 0");
        assert_eq!(u64::from_le_bytes(kle[8..].try_into().unwrap()), 0x7f00_1234_5000);
    }

    #[test]
    fn geometry_follows_the_clauses_and_the_limits() {
        let spmd = KernelConfig::NOT_OPENMP;
        let generic = KernelConfig { mode: ExecMode::Generic, max_threads: 128, ..KernelConfig::NOT_OPENMP };
        // Defaults.
        assert_eq!(launch_geometry(&spmd, &H100, 0, 0, 0), (528, 128));
        // Trip count sizes SPMD grids in blocks of threads, generic grids one team per iteration.
        assert_eq!(launch_geometry(&spmd, &H100, 0, 0, 1000), (8, 128));
        assert_eq!(launch_geometry(&generic, &H100, 0, 0, 3), (3, 128));
        // thread_limit gets the main thread's warp in generic mode, capped by the kernel's max.
        assert_eq!(launch_geometry(&generic, &H100, 0, 64, 0).1, 96);
        assert_eq!(launch_geometry(&generic, &H100, 0, 512, 0).1, 128);
        assert_eq!(launch_geometry(&spmd, &H100, 0, 4096, 0).1, 1024);
        // num_teams honoured up to the limits.
        assert_eq!(launch_geometry(&spmd, &H100, 7, 0, 1_000_000).0, 7);
        let capped = KernelConfig { max_teams: 4, ..spmd };
        assert_eq!(launch_geometry(&capped, &H100, 100, 0, 0).0, 4);
    }
}
