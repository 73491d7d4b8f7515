//! A launch: the geometry (teams and threads within the device's limits) and the kernel launch
//! environment a clang 19 kernel's leading `dyn_ptr` argument points to.

use super::kernel::{ExecMode, KernelConfig};

/// LLVM 19's `KernelLaunchEnvironmentTy`.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KernelLaunchEnvironment {
    /// `ReductionCnt`.
    pub reduction_count: u32,
    /// `ReductionIterCnt`.
    pub reduction_iteration_count: u32,
    /// `ReductionBuffer`: device address.
    pub reduction_buffer: u64,
}

/// `sizeof(KernelLaunchEnvironmentTy)`.
pub const KERNEL_LAUNCH_ENVIRONMENT_SIZE: usize = 16;

const _: () = assert!(std::mem::size_of::<KernelLaunchEnvironment>() == KERNEL_LAUNCH_ENVIRONMENT_SIZE);
const _: () = assert!(std::mem::offset_of!(KernelLaunchEnvironment, reduction_buffer) == 8);

/// The `dyn_ptr` LLVM 19's plugins pass to a kernel that needs no launch environment
/// (`reinterpret_cast<KernelLaunchEnvironmentTy *>(~0)`): the DeviceRTL never reads it then.
pub const NO_LAUNCH_ENVIRONMENT: u64 = u64::MAX;

/// A fresh `KernelLaunchEnvironmentTy` (counters 0) pointing at `reduction_buffer`.
pub fn kernel_launch_environment(reduction_buffer: u64) -> [u8; KERNEL_LAUNCH_ENVIRONMENT_SIZE] {
    bytemuck::cast(KernelLaunchEnvironment {
        reduction_count: 0,
        reduction_iteration_count: 0,
        reduction_buffer,
    })
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

impl DeviceLimits {
    /// These limits for a kernel that runs with at most `kernel_max_threads` threads per block
    /// (as LLVM's CUDA plugin lowers its block limit to `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub fn for_kernel(self, kernel_max_threads: Option<u32>) -> DeviceLimits {
        let max_threads_per_block = kernel_max_threads
            .map_or(self.max_threads_per_block, |k| self.max_threads_per_block.min(k.max(1)));
        DeviceLimits { max_threads_per_block, ..self }
    }
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
