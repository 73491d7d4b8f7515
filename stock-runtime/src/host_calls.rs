//! The check of calls into host code ([`host_table::host_calls`]), on every device this library
//! gives a table:
//!
//! - the x86_64 device: set up in each image when it loads, kept current before each launch,
//!   and answered here when a kernel's translation meets a key of the host program;
//! - GPUs: each image's global is given the host program's objects and a word of page-locked
//!   host memory per device (`llvm_omp_target_alloc_host`) when the device's table is installed,
//!   and again before a launch after the loader's list changed. A kernel that meets a key inside
//!   them stores it there and traps; libomptarget then reports the failed launch and aborts the
//!   program (its `handleTargetOutcome`), before this library's `__tgt_target_kernel` returns,
//!   so the key is reported from a `SIGABRT` handler (or after a launch that returns failure),
//!   while the launch's note still names the target region.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use host_table::host_calls::HostCallCheck;
use host_table::loaded_objects;
use omptarget_indirect_abi::c_names;

use crate::device_table::{OpenMp, MAX_DEVICES};
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

/// Per device, the address of the page-locked host word its images' check stores a key in (0:
/// none allocated).
static RECORDS: [AtomicU64; MAX_DEVICES] = [const { AtomicU64::new(0) }; MAX_DEVICES];

/// Per GPU, the device addresses of its images' check globals this library wrote, and the
/// loader's counts ([`loaded_objects::generation`]) their host ranges were listed at.
type WrittenGlobals = BTreeMap<c_int, (Vec<u64>, (u64, u64))>;
static GPU_GLOBALS: Mutex<WrittenGlobals> = Mutex::new(BTreeMap::new());

/// Whether some GPU image holds a check: only then does a launch look at the loader's list.
static ON_GPUS: AtomicBool = AtomicBool::new(false);

/// Gives the check to the image global at device address `global` on `device`, a GPU, just
/// loaded there, unless the check is off. (An x86_64 image's check is set up as it loads:
/// [`image_loaded`].)
pub(crate) fn gpu_image_loaded(api: &OpenMp, device: c_int, global: u64) -> Result<(), String> {
    let record = record_of(api, device);
    let Some(check) = CHECK.gpu_check(record) else { return Ok(()) };
    api.upload(device, global, &check.to_bytes())?;
    let mut globals = GPU_GLOBALS.lock().unwrap_or_else(|e| e.into_inner());
    let (written, listed_at) = globals.entry(device).or_default();
    if !written.contains(&global) {
        written.push(global);
    }
    *listed_at = loaded_objects::generation();
    ON_GPUS.store(true, Ordering::Release);
    report_at_abort();
    Ok(())
}

/// Before a launch on `device`: if the loader's list changed since its images' checks were
/// written (a library loaded or unloaded), writes them again with the objects as they are now.
pub(crate) fn gpu_launching(api: &OpenMp, device: c_int) {
    if !ON_GPUS.load(Ordering::Acquire) {
        return;
    }
    let mut globals = GPU_GLOBALS.lock().unwrap_or_else(|e| e.into_inner());
    let Some((written, listed_at)) = globals.get_mut(&device) else { return };
    let now = loaded_objects::generation();
    if *listed_at == now {
        return;
    }
    *listed_at = now;
    let record =
        usize::try_from(device).ok().and_then(|d| RECORDS.get(d)).map_or(0, |r| r.load(Ordering::Acquire));
    let Some(check) = CHECK.gpu_check(record) else { return };
    for &global in written.iter() {
        if let Err(why) = api.upload(device, global, &check.to_bytes()) {
            host_table::diagnostics::info(
                NAME,
                format_args!("device {device}: the check of calls into host code keeps older ranges: {why}"),
            );
        }
    }
}

/// A launch returned failure: reports what the GPUs' checks recorded.
pub(crate) fn launch_failed() {
    report_records();
}

/// The devices' images are about to be unloaded: frees the records, forgets the globals.
pub(crate) fn gpu_images_unloading(api: &OpenMp) {
    GPU_GLOBALS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    ON_GPUS.store(false, Ordering::Release);
    let Some(host_memory) = api.host_memory else { return };
    for (device, record) in RECORDS.iter().enumerate() {
        let address = record.swap(0, Ordering::AcqRel);
        if address != 0 {
            // SAFETY: our allocation on that device (record_of), freed once (swapped out).
            unsafe { (host_memory.free)(address as *mut c_void, device as c_int) };
        }
    }
}

/// The record word of `device`, allocated (zero) on first use; 0 where libomptarget has no
/// page-locked host memory for it (the kernel then traps without naming the key).
fn record_of(api: &OpenMp, device: c_int) -> u64 {
    let Some(record) = usize::try_from(device).ok().and_then(|d| RECORDS.get(d)) else { return 0 };
    let address = record.load(Ordering::Acquire);
    if address != 0 {
        return address;
    }
    let Some(host_memory) = api.host_memory else { return 0 };
    // SAFETY: an allocation of 8 bytes for a valid device; freed in gpu_images_unloading.
    let word = unsafe { (host_memory.alloc)(8, device) } as *mut u64;
    if word.is_null() {
        return 0;
    }
    if !word.is_aligned() {
        // SAFETY: the allocation just made, freed once.
        unsafe { (host_memory.free)(word.cast(), device) };
        return 0;
    }
    // SAFETY: the new 8-byte, aligned host allocation.
    unsafe { word.write_volatile(0) };
    // Installs run under the device tables' lock, one device at a time: no other thread
    // allocates this device's record.
    record.store(word as u64, Ordering::Release);
    word as u64
}

/// Reports each key a GPU's check recorded (once per key; the program is ending).
fn report_records() {
    for record in &RECORDS {
        let address = record.load(Ordering::Acquire);
        if address == 0 {
            continue;
        }
        // SAFETY: a live record (freed only after it is swapped out of RECORDS), page-locked
        // host memory the device may have written before its kernel trapped.
        let key = unsafe { (address as *const u64).read_volatile() };
        if key != 0 {
            CHECK.report_recorded(key);
        }
    }
}

/// The action `SIGABRT` had before [`report_at_abort`] installed its handler.
static ABORT_ACTION: OnceLock<libc::sigaction> = OnceLock::new();

/// Installs, once, the `SIGABRT` handler that reports the records: libomptarget aborts the
/// program after a failed launch before the launch returns to this library.
fn report_at_abort() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: sigaction with a zeroed action of our handler (signal mask empty, no flags) and
        // an out-parameter for the old one.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_abort as extern "C" fn(c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGABRT, &action, &mut old) == 0 {
                let _ = ABORT_ACTION.set(old);
            }
        }
    });
}

/// The `SIGABRT` handler: reports the records, then gives the signal back to the action before
/// it. The program is aborting from libomptarget's failure path (not inside an allocator or this
/// library's locks), so the report's allocations and locks are taken as in any failed launch.
extern "C" fn on_abort(signal: c_int) {
    let _ = std::panic::catch_unwind(report_records);
    if let Some(old) = ABORT_ACTION.get() {
        // SAFETY: restores the action saved at installation. SIGABRT is blocked while this
        // handler runs, so the signal raised again stays pending until it returns, and is then
        // delivered under the old action (the default: the program ends with SIGABRT).
        unsafe {
            libc::sigaction(signal, old, std::ptr::null_mut());
            libc::raise(signal);
        }
    }
}
