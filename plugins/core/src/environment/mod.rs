//! What LLVM's DeviceRTL in a GPU image (CUDA or AMDGPU) expects from the plugin, one concern
//! per module: the device environment global ([`device`]), each kernel's configuration
//! ([`kernel`]), and a launch's geometry and kernel launch environment ([`launch`]). Layouts are
//! those of clang/DeviceRTL 19 (`DeviceEnvironmentTy`, `KernelEnvironmentTy`,
//! `KernelLaunchEnvironmentTy` in `offload/include/Shared/Environment.h`, checked against the IR
//! clang 19 emits) and clang 16 (docs/llvm.md).

pub mod device;
pub mod kernel;
pub mod launch;

pub use device::*;
pub use kernel::*;
pub use launch::*;

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
            indirect_call_table: 0x7000_0000_1000,
            indirect_call_table_size: 3,
            hardware_parallelism: 132 * 64,
        };
        let old = device_environment_bytes(&env, 16).unwrap();
        assert_eq!(old, [0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        let new = device_environment_bytes(&env, 48).unwrap();
        assert_eq!(&new[..16], old);
        assert_eq!(u64::from_le_bytes(new[16..24].try_into().unwrap()), 1_755_000_000);
        let at = INDIRECT_CALL_TABLE_OFFSET as usize;
        assert_eq!(u64::from_le_bytes(new[at..at + 8].try_into().unwrap()), 0x7000_0000_1000);
        assert_eq!(u64::from_le_bytes(new[at + 8..at + 16].try_into().unwrap()), 3);
        assert_eq!(u64::from_le_bytes(new[40..48].try_into().unwrap()), 132 * 64);
        assert!(device_environment_bytes(&env, 24).is_err());
    }

    #[test]
    fn memory_pool_tracker_starts_empty_with_the_largest_minimum() {
        let tracker = bytemuck::bytes_of(&DeviceMemoryPoolTracking::AT_LOAD);
        let field = |i: usize| u64::from_le_bytes(tracker[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!([field(0), field(1), field(2), field(3)], [0, 0, u32::MAX as u64, 0]);
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
        // A kernel compiled for fewer threads per block (maxntid) lowers the limit, never raises it.
        assert_eq!(launch_geometry(&spmd, &H100.for_kernel(Some(256)), 0, 4096, 0).1, 256);
        assert_eq!(launch_geometry(&spmd, &H100.for_kernel(Some(256)), 0, 64, 0).1, 64);
        assert_eq!(launch_geometry(&spmd, &H100.for_kernel(Some(4096)), 0, 4096, 0).1, 1024);
        assert_eq!(launch_geometry(&spmd, &H100.for_kernel(None), 0, 4096, 0).1, 1024);
        // num_teams honoured up to the limits.
        assert_eq!(launch_geometry(&spmd, &H100, 7, 0, 1_000_000).0, 7);
        let capped = KernelConfig { max_teams: 4, ..spmd };
        assert_eq!(launch_geometry(&capped, &H100, 100, 0, 0).0, 4);
    }
}
