//! The launch: `__tgt_target_kernel`, defined ahead of libomptarget's so that a device's table
//! is installed before its first kernel after a registration ([`crate::device_table`]).

use std::ffi::c_void;

use crate::NAME;
use crate::{device_table, host_calls};

/// `int __tgt_target_kernel(ident_t *loc, int64_t device_id, int32_t num_teams, int32_t
/// thread_limit, void *host_ptr, KernelArgsTy *args)`: libomptarget's (the next definition),
/// after the device's table is installed if a descriptor was registered since
/// ([`device_table`]). The arguments go through untouched. Without a libomptarget behind this
/// library, says so on stderr and returns `OFFLOAD_FAIL` (-1), as libomptarget does for a launch
/// that fails.
///
/// # Safety
/// What libomptarget's `__tgt_target_kernel` requires of its arguments (clang's kernel launch).
#[no_mangle]
pub unsafe extern "C" fn __tgt_target_kernel(
    loc: *mut c_void,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *mut c_void,
) -> std::ffi::c_int {
    type LaunchFn =
        unsafe extern "C" fn(*mut c_void, i64, i32, i32, *mut c_void, *mut c_void) -> std::ffi::c_int;
    static NEXT: std::sync::OnceLock<Option<LaunchFn>> = std::sync::OnceLock::new();
    let next = *NEXT.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name; a non-null result is libomptarget's function
        // of that name, whose C signature is `LaunchFn`.
        unsafe {
            let found = libc::dlsym(libc::RTLD_NEXT, c"__tgt_target_kernel".as_ptr());
            (!found.is_null()).then(|| std::mem::transmute::<*mut c_void, LaunchFn>(found))
        }
    });
    let Some(launch) = next else {
        eprintln!(
            "omptarget-indirect ({NAME}) error: no __tgt_target_kernel after this library: link libomptarget"
        );
        return -1;
    };
    device_table::before_launch(device_id);
    let _launch = host_calls::launching(host_ptr, loc);
    // SAFETY: the caller's arguments, as received (the caller's contract).
    let status = unsafe { launch(loc, device_id, num_teams, thread_limit, host_ptr, args) };
    if status != 0 {
        host_calls::launch_failed();
    }
    status
}
