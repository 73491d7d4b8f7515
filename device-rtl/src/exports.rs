//! The C ABI: the two weak globals the plugin patches and the translation function.
//!
//! ```c
//! __attribute__((weak)) struct __omp_offloading_fptr_map_ty *__omp_offloading_fptr_map_p = 0;
//! __attribute__((weak)) uint64_t __omp_offloading_fptr_map_size = 0;
//! void *__kmpc_target_translate_fptr(void *FnPtr);
//! // Ours only: filled in by this project's plugin, all zero otherwise (see `index`).
//! __attribute__((weak)) struct __omp_offloading_fptr_index_ty __omp_offloading_fptr_index = {0};
//! ```
#![allow(non_upper_case_globals)]

use core::ffi::c_void;
use core::ptr::{addr_of, null};

use crate::index::FptrIndex;
use crate::lookup::{translate_indexed, FptrMapEntry};

/// Device address of the sorted function-pointer table, written by the host plugin after it
/// loads the image. Weak and externally visible so the plugin finds it by name and so that a
/// definition elsewhere in the program (another runtime's) is the one used.
#[no_mangle]
#[linkage = "weak"]
pub static mut __omp_offloading_fptr_map_p: *const FptrMapEntry = null();

/// Number of entries at [`__omp_offloading_fptr_map_p`], written by the host plugin.
#[no_mangle]
#[linkage = "weak"]
pub static mut __omp_offloading_fptr_map_size: u64 = 0;

/// The hash index our plugin builds over the table it installs ([`FptrIndex`]); all zero, and
/// ignored, unless it names the table [`__omp_offloading_fptr_map_p`] holds.
#[no_mangle]
#[linkage = "weak"]
pub static mut __omp_offloading_fptr_index: FptrIndex = FptrIndex::NONE;

/// Returns the device function for the host function pointer `fn_ptr`.
///
/// Looks `fn_ptr` up in the table installed in [`__omp_offloading_fptr_map_p`] /
/// [`__omp_offloading_fptr_map_size`]. Returns the matching `tgt_ptr`, or `fn_ptr` unchanged
/// when it is null, when no table is installed (null pointer or size 0), or when it is not a key
/// (for example a pointer that is already a device function). Never fails, never traps,
/// terminates for every input. Uses [`__omp_offloading_fptr_index`] when it names the
/// installed table, the binary search otherwise.
///
/// # Safety
/// The globals must describe a readable table sorted by `host_ptr`, as the plugin installs it
/// (or be null / 0), and an index that names that table must be well formed.
#[no_mangle]
pub unsafe extern "C" fn __kmpc_target_translate_fptr(fn_ptr: *mut c_void) -> *mut c_void {
    // SAFETY: plain reads of the globals; the plugin writes them only while no kernel of this
    // image runs. The table's and the index's validity is this function's precondition.
    unsafe {
        let table = addr_of!(__omp_offloading_fptr_map_p).read();
        let size = &*addr_of!(__omp_offloading_fptr_map_size);
        translate_indexed(table, size, &*addr_of!(__omp_offloading_fptr_index), fn_ptr)
    }
}

/// LLVM's spelling of the translation, for programs written against upstream LLVM (its
/// DeviceRTL defines it on the GPU targets, and LLVM ships none for the x86_64 host-offload
/// device): the same contract as [`__kmpc_target_translate_fptr`], which it calls.
///
/// # Safety
/// As for [`__kmpc_target_translate_fptr`].
#[cfg(target_arch = "x86_64")]
#[no_mangle]
pub unsafe extern "C" fn __llvm_omp_indirect_call_lookup(fn_ptr: *mut c_void) -> *mut c_void {
    // SAFETY: forwarded precondition.
    unsafe { __kmpc_target_translate_fptr(fn_ptr) }
}
