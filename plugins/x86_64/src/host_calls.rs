//! The check of calls into host code ([`host_table::host_calls`]) for this plugin's images: set
//! up in each image as it loads, forgotten as it unloads, and asked by device code about a key
//! no image pairs.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use host_table::host_calls::{HostCallCheck, LaunchGuard};
use omptarget_indirect_abi::HOST_CALLS;

use crate::{Library, STT_OBJECT};

/// This plugin's check.
static CHECK: HostCallCheck = HostCallCheck::new("x86_64");

/// The kernels' names by the address of their function in a loaded image.
static KERNEL_NAMES: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());

/// Sets up the check in `image`'s `__omptarget_indirect_host_calls`, if it has one (an image
/// of an older device library has none).
pub(crate) fn image_loaded(image: &Library) {
    let Ok(Some((global, _))) = image.own_symbol(HOST_CALLS, STT_OBJECT) else { return };
    // SAFETY: the loaded image's global of that name, a `HostCalls` (the device library's layout)
    // in its writable data; none of its kernels runs while it is being loaded.
    unsafe { CHECK.install(global, ask_host) };
}

/// Forgets `image`'s global and kernels: it is about to unload.
pub(crate) fn image_unloading(image: &Library) {
    if let Ok(Some((global, _))) = image.own_symbol(HOST_CALLS, STT_OBJECT) {
        CHECK.forget(global);
    }
    let mut names = KERNEL_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    names.retain(|&function, _| !image.holds_code(function));
}

/// Notes the name of the kernel whose function is at `function`.
pub(crate) fn kernel_found(function: u64, name: &str) {
    KERNEL_NAMES.lock().unwrap_or_else(|e| e.into_inner()).insert(function, name.to_string());
}

/// Notes the launch of the kernel at `function` until the guard drops.
pub(crate) fn launching(function: u64) -> LaunchGuard<'static> {
    CHECK.name_kernels_with(kernel_name);
    CHECK.launching(function, 0)
}

/// `void *ask_host(void *key)`: [`HostCallCheck::answer`]; never unwinds into device code (a
/// panic answers the key unchanged).
unsafe extern "C" fn ask_host(key: *mut c_void) -> *mut c_void {
    std::panic::catch_unwind(|| CHECK.answer(key as u64) as *mut c_void).unwrap_or(key)
}

/// The kernel's name, from its function's address.
fn kernel_name(function: u64) -> Option<String> {
    KERNEL_NAMES.lock().unwrap_or_else(|e| e.into_inner()).get(&function).cloned()
}
