//! The check of calls into host code on the x86_64 device ([`host_table::host_calls`]): set up
//! in each x86_64 image when it loads, kept current before each launch, and answered here when a
//! kernel's translation meets a key of the host program.

use std::ffi::{c_void, CStr};

use host_table::host_calls::HostCallCheck;
use omptarget_indirect_abi::c_names;

use crate::registered::REGISTERED;
use crate::NAME;

/// This library's check.
static CHECK: HostCallCheck = HostCallCheck::new(NAME);

/// Sets up the check in the x86_64 image `image` (its `__omptarget_indirect_host_calls`), being
/// loaded; an image without that global (an older device library) is left alone.
pub(crate) fn image_loaded(symbol: impl Fn(&CStr) -> Option<*mut c_void>) {
    let Some(global) = symbol(c_names::HOST_CALLS) else { return };
    // SAFETY: the loading image's global of that name, a `HostCalls` (the device library's
    // layout), writable (it is in the image's .data); no kernel of the image runs while it loads.
    unsafe { CHECK.install(global, ask_host) };
}

/// The images are about to be unloaded: their globals are no longer written.
pub(crate) fn unloading() {
    CHECK.forget_images();
}

/// Notes the launch of `kernel` (its host address, with clang's `ident_t *`) until the guard
/// drops, after giving the images the loader's newest objects.
pub(crate) fn launching(
    kernel: *mut c_void,
    ident: *mut c_void,
) -> host_table::host_calls::LaunchGuard<'static> {
    CHECK.name_kernels_with(kernel_name);
    CHECK.launching(kernel as u64, ident as u64)
}

/// `void *ask_host(void *key)`: the device library's question for a missed key outside its
/// ranges ([`HostCallCheck::answer`]). Returns the key (the host copy runs) or ends the program.
/// Never unwinds into device code: a panic answers the key unchanged.
unsafe extern "C" fn ask_host(key: *mut c_void) -> *mut c_void {
    std::panic::catch_unwind(|| CHECK.answer(key as u64) as *mut c_void).unwrap_or(key)
}

/// The offload entry name of the kernel at host address `kernel`, from the registered
/// descriptors.
fn kernel_name(kernel: u64) -> Option<String> {
    let registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    registered.iter().filter(|r| r.live).find_map(|r| {
        // SAFETY: a live descriptor's entries.
        let entries = unsafe { r.entries() };
        let entry = entries.iter().find(|e| e.address as u64 == kernel && !e.symbol_name.is_null())?;
        // SAFETY: the entry's NUL-terminated name, alive with the descriptor.
        Some(unsafe { CStr::from_ptr(entry.symbol_name) }.to_string_lossy().into_owned())
    })
}
