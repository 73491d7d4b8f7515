//! The x86_64 device image's one call out: when the host-offload plugin loads the image (a shared
//! object it `dlopen`s into the host process), a constructor of the image tells the host side
//! where the image's table globals are, so that a runtime that fills no table for this device
//! (libomptarget 18-21: only their GPU plugins do) still gets one.
//!
//! The host side is `libomptarget-indirect-register.so`, which the configuration files of the
//! stock-runtime releases link into the program; it defines
//! `void __omptarget_indirect_x86_64_image_loaded(const void *anchor)`. The reference is weak: in
//! a program without that library (clang 19 with this project's plugins, which install the table
//! themselves) it resolves to null and the constructor does nothing. A constructor runs inside
//! `dlopen`, before the runtime can launch any kernel of the image, so the globals are written
//! while nothing reads them. GPU images have no constructors of this kind and no call out.
#![allow(non_upper_case_globals)]

use core::ffi::c_void;
use core::ptr::addr_of;

use crate::exports::__omp_offloading_fptr_map_p;

extern "C" {
    /// The registration library's function, or null (weak: see the module).
    #[linkage = "extern_weak"]
    static __omptarget_indirect_x86_64_image_loaded: *const c_void;
}

/// The host side's function: `anchor` is any address inside this image (the loader tells it which
/// shared object that is).
type ImageLoaded = unsafe extern "C" fn(anchor: *const c_void);

/// Calls the registration library's function with the address of the table pointer, if the
/// program has that library.
extern "C" fn image_loaded() {
    // SAFETY: reading the address the loader resolved for a weak reference (null when absent).
    let hook = unsafe { __omptarget_indirect_x86_64_image_loaded };
    if hook.is_null() {
        return;
    }
    // SAFETY: a non-null address of that name is the registration library's function, whose C
    // signature is `ImageLoaded`; the anchor is a global of this image, alive as long as it.
    unsafe {
        let hook = core::mem::transmute::<*const c_void, ImageLoaded>(hook);
        hook(addr_of!(__omp_offloading_fptr_map_p).cast());
    }
}

/// The constructor's entry: the loader calls each pointer of `.init_array` once the image is
/// relocated, which no linker drops (`KEEP` in every default linker script).
#[used]
#[link_section = ".init_array"]
static IMAGE_LOADED: extern "C" fn() = image_loaded;
