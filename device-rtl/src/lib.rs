//! Device runtime for OpenMP `declare target indirect`.
//!
//! A device image that calls functions through host function pointers carries a table of
//! `{host_ptr, tgt_ptr}` pairs sorted by `host_ptr`. The host plugin installs it by writing the
//! table's device address into [`__omp_offloading_fptr_map_p`] and its length into
//! [`__omp_offloading_fptr_map_size`]; device code then calls [`__kmpc_target_translate_fptr`]
//! on a host pointer to obtain the device function to call.
//!
//! Where no table of ours is installed (a stock libomptarget from LLVM 22 on, or LLVM 18-21's GPU
//! plugins), the translation answers from the table LLVM's runtime keeps in its device
//! environment ([`environment`]), in the same layout.
//!
//! Alongside the table our plugin installs a hash index ([`index`],
//! [`__omp_offloading_fptr_index`]) that answers a hit with one probe instead of `log2(size)`
//! dependent loads; tables installed by anyone else are binary-searched as before.
//!
//! On the x86_64 device, [`dynamic_cast`] gives `dynamic_cast` the same translation for the
//! vtables it reads; on every device, [`fortran_types`] gives Fortran's `same_type_as` and
//! `extends_type_of` the same for the type descriptors they read.
//!
//! A pointer no table pairs goes to [`host_calls`], the check of calls into host code, which
//! tells a device address (its own translation) from the host program's (an error).
//!
//! The crate is freestanding (`no_std`, no allocation, no panic paths, no external calls but the
//! x86_64 device image's, to the host that loaded it: one at load time, `src/image_loaded.rs`,
//! and the check's question about a pointer no table pairs) so the
//! same source builds for `nvptx64-nvidia-cuda`, `amdgcn-amd-amdhsa` and x86_64, and the lookup
//! in [`lookup`] is ordinary Rust that the host test suite runs directly.
#![cfg_attr(not(test), no_std)]
// `linkage`: the weak globals. `portable_simd`: `u64x2`, so that probing an index slot is one
// 16-byte load of key and value.
// `core_intrinsics`: `abort`, the trap of a GPU's check of calls into host code (and of the
// panic handler, which is unreachable).
#![feature(linkage, portable_simd, core_intrinsics)]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]
#![allow(internal_features)]
#![deny(missing_docs)]

/// Only the x86_64 device has RTTI to cast with (see the module).
#[cfg(target_arch = "x86_64")]
pub mod dynamic_cast;
pub mod environment;
mod exports;
pub mod fortran_types;
pub mod host_calls;
/// Only the x86_64 device image's copy calls out (see the module).
#[cfg(all(target_arch = "x86_64", feature = "device-image"))]
mod image_loaded;
pub mod index;
/// Only the x86_64 device runs flang's kernels through this library (see the module), and only
/// the device image's copy has it.
#[cfg(all(target_arch = "x86_64", any(test, feature = "flang-kernels")))]
pub mod kernels;
pub mod lookup;

pub use environment::{DeviceEnvironment, __omp_rtl_device_environment};
pub use exports::{
    __kmpc_target_translate_fptr, __omp_offloading_fptr_index, __omp_offloading_fptr_map_p,
    __omp_offloading_fptr_map_size, __omptarget_indirect_first_key, __omptarget_indirect_last_key,
};
pub use host_calls::__omptarget_indirect_host_calls;
pub use index::{FptrIndex, IndexLookup, IndexSlot};
pub use lookup::{
    key_range_first_installed, translate, translate_first_installed, translate_first_installed_or,
    translate_in, translate_indexed, translate_or, FptrMapEntry, InstalledTable,
};

/// Freestanding builds need a panic handler even though nothing in this crate can panic: the
/// lookup uses raw pointers and unchecked arithmetic that cannot overflow. The artifact checks
/// prove the handler is unreachable (no external call remains in the PTX, and no trap but the one
/// of the check of calls into host code).
#[cfg(feature = "panic-handler")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::intrinsics::abort()
}
