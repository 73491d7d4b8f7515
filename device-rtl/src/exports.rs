//! The C ABI: the two weak globals the plugin patches and the translation function, which falls
//! back to LLVM's own table ([`crate::environment`]).
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

use crate::environment::__omp_rtl_device_environment;
use crate::host_calls::untranslated;
use crate::index::FptrIndex;
use crate::lookup::{
    key_range_first_installed, translate_first_installed, translate_first_installed_or, FptrMapEntry,
    InstalledTable,
};

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
/// [`__omp_offloading_fptr_map_size`] (this project's plugins install it), or, while that pointer
/// is null, in the table LLVM's runtime installs in `__omp_rtl_device_environment`
/// ([`crate::environment`]; libomptarget fills it on every device from LLVM 22 on, LLVM 18-21 on
/// the GPUs).
/// Returns the matching `tgt_ptr`, or `fn_ptr` unchanged when it is null, when neither table is
/// installed (null pointer or size 0), or when it is not a key (for example a pointer that is
/// already a device function). A pointer that is not a key is first given to the check of calls
/// into host code the host may have set up ([`crate::host_calls`]): one into the host program
/// stops the program on the x86_64 device (the host reports it) and traps on an NVIDIA GPU; with
/// no check set up (the global all zero, as any other runtime leaves it) it comes back unchanged.
/// Otherwise never fails, terminates for every input (LLVM's own lookup over the same table does
/// not for a pointer between two keys). Uses [`__omp_offloading_fptr_index`] when it names the
/// table searched, the binary search otherwise.
///
/// # Safety
/// The globals must describe readable tables sorted by `host_ptr`, as the runtimes install them
/// (or be null / 0), and an index that names the table must be well formed.
#[no_mangle]
pub unsafe extern "C" fn __kmpc_target_translate_fptr(fn_ptr: *mut c_void) -> *mut c_void {
    // SAFETY: the tables' and the index's validity is this function's precondition, and the
    // check's global is the host's to keep valid (`host_calls`).
    unsafe {
        let (ours, llvm, index) = installed();
        translate_first_installed_or(ours, llvm, index, fn_ptr, |missed| untranslated(missed))
    }
}

/// [`__kmpc_target_translate_fptr`], inlined into the library's own callers (a GPU's copy of the
/// library keeps no call and no stack).
///
/// # Safety
/// As for [`__kmpc_target_translate_fptr`].
#[inline(always)]
pub(crate) unsafe fn translate_installed(fn_ptr: *mut c_void) -> *mut c_void {
    // SAFETY: the tables' and the index's validity is this function's precondition.
    unsafe {
        let (ours, llvm, index) = installed();
        translate_first_installed(ours, llvm, index, fn_ptr)
    }
}

/// The two tables the runtimes may install (this project's globals, then LLVM's device
/// environment) and our index, as [`translate_first_installed`] and [`key_range_first_installed`]
/// take them.
///
/// # Safety
/// Plain reads of the globals: the runtimes write them only while no kernel of this image runs.
#[inline(always)]
unsafe fn installed(
) -> (InstalledTable<'static, *const FptrMapEntry>, InstalledTable<'static, u64>, &'static FptrIndex) {
    // SAFETY: references to statics, read while no runtime writes them (the caller's guarantee).
    unsafe {
        let environment = &*addr_of!(__omp_rtl_device_environment);
        (
            InstalledTable {
                table: &*addr_of!(__omp_offloading_fptr_map_p),
                size: &*addr_of!(__omp_offloading_fptr_map_size),
            },
            InstalledTable {
                table: &environment.indirect_call_table,
                size: &environment.indirect_call_table_size,
            },
            &*addr_of!(__omp_offloading_fptr_index),
        )
    }
}

/// The smallest key of the table [`__kmpc_target_translate_fptr`] searches now (`u64::MAX`
/// when no table is installed): a pointer below it, or above [`__omptarget_indirect_last_key`],
/// translates to itself. The pass plugin calls both once per function that caches translations
/// in a loop and skips the lookup for pointers outside the range (objects built in device code).
///
/// # Safety
/// As for [`__kmpc_target_translate_fptr`].
#[no_mangle]
pub unsafe extern "C" fn __omptarget_indirect_first_key() -> u64 {
    // SAFETY: as for __kmpc_target_translate_fptr.
    unsafe { installed_key_range().0 }
}

/// The largest key of the table [`__kmpc_target_translate_fptr`] searches now (0 when no table
/// is installed); see [`__omptarget_indirect_first_key`].
///
/// # Safety
/// As for [`__kmpc_target_translate_fptr`].
#[no_mangle]
pub unsafe extern "C" fn __omptarget_indirect_last_key() -> u64 {
    // SAFETY: as for __kmpc_target_translate_fptr.
    unsafe { installed_key_range().1 }
}

/// [`key_range_first_installed`] of the globals [`__kmpc_target_translate_fptr`] reads.
///
/// # Safety
/// As for [`__kmpc_target_translate_fptr`].
#[inline(always)]
unsafe fn installed_key_range() -> (u64, u64) {
    // SAFETY: as for __kmpc_target_translate_fptr.
    unsafe {
        let (ours, llvm, index) = installed();
        key_range_first_installed(ours, llvm, index)
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
    // SAFETY: the same globals are read, under the same precondition.
    unsafe { __kmpc_target_translate_fptr(fn_ptr) }
}
