//! Each kernel's configuration, read from the image: its execution mode and its
//! `KernelEnvironmentTy` (clang 19) or `_exec_mode` global (clang 16).

use crate::{PluginError, Result};

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
/// LLVM 18/19's `ConfigurationEnvironmentTy` (28 bytes; the padding byte after `ExecMode` named).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ConfigurationEnvironment {
    /// `UseGenericStateMachine`.
    pub use_generic_state_machine: u8,
    /// `MayUseNestedParallelism`.
    pub may_use_nested_parallelism: u8,
    /// `ExecMode` (`OMPTgtExecModeFlags`).
    pub exec_mode: u8,
    /// Padding.
    pub padding: u8,
    /// `MinThreads`.
    pub min_threads: i32,
    /// `MaxThreads`.
    pub max_threads: i32,
    /// `MinTeams`.
    pub min_teams: i32,
    /// `MaxTeams`.
    pub max_teams: i32,
    /// `ReductionDataSize`.
    pub reduction_data_size: i32,
    /// `ReductionBufferLength`.
    pub reduction_buffer_length: i32,
}

/// LLVM 18/19's `KernelEnvironmentTy`: the configuration, then `IdentTy *` and
/// `DynamicEnvironmentTy *` (device addresses; the 4 bytes before them named).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KernelEnvironment {
    /// `Configuration`.
    pub configuration: ConfigurationEnvironment,
    /// Padding to the pointers' alignment.
    pub padding: u32,
    /// `Ident`.
    pub ident: u64,
    /// `DynamicEnv`.
    pub dynamic_environment: u64,
}

/// `sizeof(KernelEnvironmentTy)`.
pub const KERNEL_ENVIRONMENT_SIZE: usize = 48;

const _: () = assert!(std::mem::size_of::<ConfigurationEnvironment>() == 28);
const _: () = assert!(std::mem::size_of::<KernelEnvironment>() == KERNEL_ENVIRONMENT_SIZE);
const _: () = assert!(std::mem::offset_of!(ConfigurationEnvironment, max_threads) == 8);
const _: () = assert!(std::mem::offset_of!(ConfigurationEnvironment, reduction_buffer_length) == 24);
const _: () = assert!(std::mem::offset_of!(KernelEnvironment, ident) == 32);

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
        let environment: KernelEnvironment = bytemuck::pod_read_unaligned(bytes);
        let c = environment.configuration;
        Ok(KernelConfig {
            mode: ExecMode::from_flags(c.exec_mode)?,
            max_threads: c.max_threads,
            max_teams: c.max_teams,
            reduction_data_size: c.reduction_data_size as u32,
            reduction_buffer_length: c.reduction_buffer_length as u32,
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
