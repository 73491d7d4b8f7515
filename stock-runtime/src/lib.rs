//! `libomptarget-indirect-register.so`: the host-side piece that lets the stock libomptarget of
//! every release from LLVM 21 on (the records whose runtime is `Runtime::Stock`) translate the
//! vtable pointers of host-built objects, and gives every device one table with its hash index.
//! Where releases differ, `docs/llvm.md` says.
//!
//! libomptarget builds its indirect-call table from the images' `OMP_DECLARE_TARGET_INDIRECT`
//! entries and clang's vtable entries (flag 0x20), which clang emits only for the classes of
//! objects named in map clauses, not for the vtables host-built objects reach. Nothing of this
//! project runs inside libomptarget (it links its plugins in), so the only places left are the
//! entry points the program itself calls, which this library defines ahead of libomptarget (the
//! stock releases' configuration files link it first) and passes on to libomptarget's (the next
//! definition, `dlsym(RTLD_NEXT)`). One job each:
//!
//! - [`registration`]: `__tgt_register_lib` registers a copy of the program's descriptor whose
//!   entries are followed by one indirect entry per vtable word the images define
//!   ([`host_table::vtables`]: host address of the word of the host's vtable of the same name,
//!   device symbol the word global, size 8), which libomptarget pairs in its table as it pairs an
//!   indirect function's, and by one entry per device-library global, so that libomptarget says
//!   where each image's is. A program whose images define neither, entries in the legacy layout
//!   (clang 19, whose libomptarget 16 runs this project's plugins, which pair the vtables
//!   themselves), or any failure registers the original descriptor unchanged.
//! - [`kernel_launch`]: `__tgt_target_kernel` installs a device's table before its first launch
//!   after a registration.
//! - [`device_table`]: the table of every image's pairs of one device, with the hash index, in
//!   the device library's own globals, which its translation reads first.
//! - [`x86_64_table`]: the x86_64 device's table where the release's libomptarget fills none
//!   (`Runtime::Stock::fills_x86_64_table`), installed when the image loads.
//! - [`host_calls`]: a call into host code that no image pairs is reported (function, object,
//!   target region, fix) and stops the program: on the x86_64 device before the call, on an
//!   NVIDIA GPU after the kernel trapped at it.
//! - [`fortran_maps`]: the mapper flang's polymorphic maps call, which maps an object by its
//!   dynamic type.

mod device_table;
mod fortran_maps;
mod host_calls;
mod kernel_launch;
mod registered;
mod registration;
mod x86_64_table;

pub use fortran_maps::__omptarget_indirect_map_polymorphic;
pub use kernel_launch::__tgt_target_kernel;
pub use registration::{__tgt_register_lib, __tgt_unregister_lib, read_descriptor_for_fuzzing, TgtBinDesc};
pub use x86_64_table::__omptarget_indirect_x86_64_image_loaded;

use std::ffi::c_void;

use host_table::rtl_interface::TgtBinDesc as BinDesc;

/// The name in this library's diagnostics.
const NAME: &str = "register";

/// `void (*)(__tgt_bin_desc *)`: `__tgt_register_lib` and `__tgt_unregister_lib`.
type RegisterFn = unsafe extern "C" fn(*mut BinDesc);

/// libomptarget's definition of `name` (the next one after this library's).
fn next(name: &std::ffi::CStr) -> Option<RegisterFn> {
    // SAFETY: dlsym with a NUL-terminated name; a non-null result is the function of that name,
    // whose C signature is `void (__tgt_bin_desc *)` for both names used here.
    unsafe {
        let found = libc::dlsym(libc::RTLD_NEXT, name.as_ptr());
        (!found.is_null()).then(|| std::mem::transmute::<*mut c_void, RegisterFn>(found))
    }
}
