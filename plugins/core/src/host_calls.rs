//! The check of calls into host code on the GPUs of this project's plugins
//! ([`host_table::host_calls`]; `docs/troubleshooting.md`, "Device code called a host function").
//!
//! Each image's `__omptarget_indirect_host_calls` is given, at load, the host program's objects
//! and a word of the device's page-locked host memory ([`AllocKind::Host`]), and again before a
//! launch after the loader's list changed (a library loaded since). A kernel whose translation
//! meets a key inside them stores it in that word and traps; the launch then fails, and the key
//! is reported (host function or vtable, its object, the target region, the fix) before the
//! failure goes back to libomptarget, which ends the program.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use host_table::host_calls::{HostCallCheck, LaunchGuard};
use host_table::loaded_objects;
use host_table::rtl_interface::AllocKind;
use omptarget_indirect_abi::{HostCalls, HOST_CALLS};

use crate::Backend;

/// What one device's images hold.
#[derive(Default)]
struct DeviceChecks {
    /// The device's record word (host memory), 0 where none could be allocated.
    record: u64,
    /// The device addresses of its loaded images' check globals.
    globals: Vec<u64>,
    /// The loader's counts the globals' objects were listed at.
    listed_at: (u64, u64),
}

/// Per device.
static DEVICES: Mutex<BTreeMap<i32, DeviceChecks>> = Mutex::new(BTreeMap::new());

/// The kernels' offload-entry names by handle.
static KERNEL_NAMES: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());

/// The plugin's check, named as the plugin (one plugin per library).
fn check<B: Backend>() -> &'static HostCallCheck {
    static CHECK: OnceLock<HostCallCheck> = OnceLock::new();
    CHECK.get_or_init(|| HostCallCheck::new(B::NAME))
}

fn devices() -> std::sync::MutexGuard<'static, BTreeMap<i32, DeviceChecks>> {
    DEVICES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Gives the check to `image`, just loaded on `device` (a GPU), if its device library has the
/// global and the check is on. Never fails the load: an image without the check runs as before.
pub(crate) fn image_loaded<B: Backend>(backend: &B, device: i32, image: &B::Image) {
    let Ok(Some(global)) = backend.global(image, HOST_CALLS) else { return };
    if global.size.is_some_and(|size| size != std::mem::size_of::<HostCalls>() as u64) {
        return;
    }
    let mut devices = devices();
    let checks = devices.entry(device).or_default();
    if checks.record == 0 {
        checks.record = new_record(backend, device);
    }
    let Some(gpu) = check::<B>().gpu_check(checks.record) else { return };
    if backend.write(device, global.addr, &gpu.to_bytes()).is_ok() {
        checks.globals.push(global.addr);
        checks.listed_at = loaded_objects::generation();
    }
}

/// Forgets `image`'s global and its kernels' names (`kernels`, their handles): it is about to
/// unload from `device`.
pub(crate) fn image_unloading<B: Backend>(backend: &B, device: i32, image: &B::Image, kernels: &[u64]) {
    KERNEL_NAMES.lock().unwrap_or_else(|e| e.into_inner()).retain(|handle, _| !kernels.contains(handle));
    let Ok(Some(global)) = backend.global(image, HOST_CALLS) else { return };
    if let Some(checks) = devices().get_mut(&device) {
        checks.globals.retain(|&g| g != global.addr);
    }
}

/// Frees `device`'s record: its images are unloaded.
pub(crate) fn device_closed<B: Backend>(backend: &B, device: i32) {
    if let Some(checks) = devices().remove(&device) {
        if checks.record != 0 {
            let _ = backend.free(device, checks.record, AllocKind::Host);
        }
    }
}

/// Notes the name of the kernel whose handle is `handle`.
pub(crate) fn kernel_found(handle: u64, name: &str) {
    KERNEL_NAMES.lock().unwrap_or_else(|e| e.into_inner()).insert(handle, name.to_string());
}

/// Before a launch of the kernel `handle` on `device`: gives its images the loader's newest
/// objects if the list changed, and notes the launch (for the report) until the guard drops.
pub(crate) fn launching<B: Backend>(backend: &B, device: i32, handle: u64) -> Option<LaunchGuard<'static>> {
    {
        let mut devices = devices();
        let checks = devices.get_mut(&device).filter(|c| !c.globals.is_empty())?;
        let now = loaded_objects::generation();
        if checks.listed_at != now {
            checks.listed_at = now;
            if let Some(gpu) = check::<B>().gpu_check(checks.record) {
                for &global in &checks.globals {
                    let _ = backend.write(device, global, &gpu.to_bytes());
                }
            }
        }
    }
    let check = check::<B>();
    check.name_kernels_with(kernel_name);
    Some(check.launching(handle, 0))
}

/// A launch on `device` failed: reports the key its check recorded, if any.
pub(crate) fn launch_failed<B: Backend>(device: i32) {
    let record = devices().get(&device).map_or(0, |c| c.record);
    if record == 0 {
        return;
    }
    // SAFETY: the device's record, page-locked host memory of ours (freed only when the device
    // closes, under the same lock order), 8-aligned; the trapped kernel may have written it.
    let key = unsafe { (record as *const u64).read_volatile() };
    if key != 0 {
        check::<B>().report_recorded(key);
    }
}

/// A zeroed word of `device`'s page-locked host memory, or 0.
fn new_record<B: Backend>(backend: &B, device: i32) -> u64 {
    let Ok(word) = backend.alloc(device, 8, AllocKind::Host) else { return 0 };
    if word == 0 || word % 8 != 0 {
        let _ = backend.free(device, word, AllocKind::Host);
        return 0;
    }
    // SAFETY: a fresh 8-byte host allocation, 8-aligned, readable and writable by the host.
    unsafe { (word as *mut u64).write_volatile(0) };
    word
}

/// A kernel's name by its handle.
fn kernel_name(handle: u64) -> Option<String> {
    KERNEL_NAMES.lock().unwrap_or_else(|e| e.into_inner()).get(&handle).cloned()
}
