//! LLVM's device environment, `__omp_rtl_device_environment`: where the runtimes of LLVM 18 and
//! later install their own function-pointer table, the fallback of the translation when no
//! table of ours is installed.
//!
//! ```c
//! struct DeviceEnvironmentTy {          // LLVM 19-22 (LLVM 18: without HardwareParallelism)
//!   uint32_t DeviceDebugKind, NumDevices, DeviceNum, DynamicMemSize;
//!   uint64_t ClockFrequency;
//!   uintptr_t IndirectCallTable;        // offset 24: {host, device} pairs sorted by host
//!   uint64_t IndirectCallTableSize;     // offset 32: entries
//!   uint64_t HardwareParallelism;
//! };
//! ```
//!
//! Who fills the table: LLVM 18-21's CUDA and AMDGPU plugins, and from LLVM 22 on libomptarget for
//! every device, x86_64 host offload included, but only in an image that defines the global. On
//! the GPU targets LLVM's DeviceRTL defines it (in the constant address space) and this crate
//! only refers to it; the x86_64 host-offload device has no DeviceRTL, so this crate defines it
//! there, weak and zero, for libomptarget (22 and later) to find and fill.
#![allow(non_upper_case_globals)]

pub use omptarget_indirect_abi::DeviceEnvironment;

/// The x86_64 definition: weak, so that any other definition in the image is the one used, and
/// exported from the device image's shared object, where libomptarget (22 and later) looks it up
/// by name.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[no_mangle]
#[linkage = "weak"]
pub static mut __omp_rtl_device_environment: DeviceEnvironment = DeviceEnvironment::EMPTY;

#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
extern "C" {
    /// Defined by LLVM's DeviceRTL, which clang links into every OpenMP GPU image.
    pub static __omp_rtl_device_environment: DeviceEnvironment;
}
