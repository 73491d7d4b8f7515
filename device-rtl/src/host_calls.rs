//! The check of calls into host code: what a pointer the table does not pair translates to.
//!
//! A miss is legitimate when the pointer already is a device address (an object built in device
//! code, a function whose address device code took). It is the program's mistake when the
//! pointer is the host program's: a function not declared `indirect`, a vtable of a class whose
//! library was compiled without offloading. A GPU then jumps to a host address (an illegal
//! address or instruction, with no word of which function), and the x86_64 device runs the host
//! copy as if nothing were wrong. The host describes in [`__omptarget_indirect_host_calls`]
//! which addresses are which ([`HostCalls`]); this module reads it only after a lookup missed,
//! so that a hit costs nothing more:
//!
//! - the x86_64 device ([`HostCalls::DEVICE_RANGES`]): a key inside the ranges (the device
//!   images, the runtimes they link) is its own translation; any other key is given to the
//!   host's `ask_host`, which names the function, its object and the target region, and stops
//!   the program (or, as asked, lets the host copy run);
//! - an NVIDIA GPU ([`HostCalls::HOST_RANGES`]): a key inside the host program's objects is
//!   stored in the host-visible `record` (the first one only) and the kernel traps, so that no
//!   wrong result is computed and the host can name it after the launch (the registration
//!   library and the project's GPU plugins set it up).
//! - AMD GPUs: no check (the AMD definition of `untranslated` says why).
#![allow(non_upper_case_globals)]

use core::ffi::c_void;
#[cfg(not(target_arch = "amdgpu"))]
use core::ptr::addr_of;

pub use omptarget_indirect_abi::{HostCalls, RangeList};

/// Set by the host when it installs the table (all zero: no check, a miss translates to
/// itself). Weak and externally visible, as the table's globals are.
#[no_mangle]
#[linkage = "weak"]
pub static mut __omptarget_indirect_host_calls: HostCalls = HostCalls::NONE;

/// The host's answer for a key on the x86_64 device: `void *(*)(void *key)`.
pub type AskHost = unsafe extern "C" fn(*mut c_void) -> *mut c_void;

/// AMD GPUs: no check. A miss translates to itself, as before. The check costs their lookup's
/// hit path either way: inlined, its divergent branch adds exec-mask flow blocks that every hit
/// runs (gfx90a: 56 instructions to 71); out of line, the call makes the lookup save registers
/// and keep a stack frame on every path.
///
/// # Safety
/// None: the key is returned.
#[cfg(target_arch = "amdgpu")]
#[inline(always)]
pub(crate) unsafe fn untranslated(fn_ptr: *mut c_void) -> *mut c_void {
    fn_ptr
}

/// What the check makes of a missed key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The key is its own translation (a device address, or no check is set up).
    Itself,
    /// The host answers: call `ask_host` (the x86_64 device).
    AskHost(u64),
    /// The key is the host program's: record it (at `record`, when not 0) and trap (a GPU).
    Trap {
        /// Where to store the key.
        record: u64,
    },
}

/// What `check` makes of the missed, non-zero `key`.
///
/// # Safety
/// With [`HostCalls::DEVICE_RANGES`], a non-zero `check.ranges` must be the address of a
/// readable [`RangeList`] and its pairs.
#[inline(always)]
pub unsafe fn verdict(check: &HostCalls, key: u64) -> Verdict {
    match check.kind {
        // Only the x86_64 device runs in the host's process (a GPU's lookup keeps no loop).
        #[cfg(target_arch = "x86_64")]
        HostCalls::DEVICE_RANGES if check.ask_host != 0 => {
            // SAFETY: the list is readable (this function's precondition).
            let inside = check.ranges != 0 && unsafe { ranges_hold(check.ranges, key) };
            if inside {
                Verdict::Itself
            } else {
                Verdict::AskHost(check.ask_host)
            }
        }
        HostCalls::HOST_RANGES if check.host.iter().any(|&[start, end]| start <= key && key < end) => {
            Verdict::Trap { record: check.record }
        }
        _ => Verdict::Itself,
    }
}

/// Whether one of the `[start, end)` pairs of the [`RangeList`] at `list` holds `key`, searched
/// in order (the x86_64 host puts the device images first: the keys of objects built in device
/// code fall in the first pairs).
///
/// # Safety
/// `list` is the address of a readable [`RangeList`] followed by its `count` pairs.
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
unsafe fn ranges_hold(list: u64, key: u64) -> bool {
    let header = list as *const RangeList;
    // SAFETY: the header is readable; the host writes a list completely before it publishes its
    // address, and never changes a published one.
    let count = unsafe { (*header).count };
    // SAFETY: the pairs follow the 8-byte header.
    let pairs = unsafe { header.add(1).cast::<[u64; 2]>() };
    let mut i = 0;
    while i < count {
        // SAFETY: `i < count`, so the pair is in the list.
        let [start, end] = unsafe { *pairs.add(i as usize) };
        if start <= key && key < end {
            return true;
        }
        i += 1;
    }
    false
}

/// The translation of the missed key `fn_ptr` under the installed check: itself, the host's
/// answer (x86_64), or a trap after recording it (NVIDIA GPUs). Cold and out of line, so that
/// the lookup's hit path and registers stay as they were (inlined, it took 36 registers on
/// sm_90 instead of 24).
///
/// # Safety
/// As for `__kmpc_target_translate_fptr`: the host writes the global before a kernel runs.
#[cold]
#[inline(never)]
#[cfg(not(target_arch = "amdgpu"))]
pub(crate) unsafe fn untranslated(fn_ptr: *mut c_void) -> *mut c_void {
    // SAFETY: a read of the global, written by the host only while no kernel of this image runs;
    // its list is readable (the host's contract).
    let verdict = unsafe { verdict(&*addr_of!(__omptarget_indirect_host_calls), fn_ptr as u64) };
    match verdict {
        Verdict::Itself => fn_ptr,
        #[cfg(target_arch = "x86_64")]
        Verdict::AskHost(ask_host) => {
            // SAFETY: a non-zero `ask_host` is the host's function of that signature (the
            // layout's contract), in this process (only the x86_64 device sets it).
            unsafe { core::mem::transmute::<u64, AskHost>(ask_host)(fn_ptr) }
        }
        // A GPU cannot call the host: no GPU's host sets `DEVICE_RANGES`, and a call through a
        // pointer would cost the whole lookup a stack frame.
        #[cfg(not(target_arch = "x86_64"))]
        Verdict::AskHost(_) => fn_ptr,
        Verdict::Trap { record } => {
            if record != 0 {
                // SAFETY: a non-zero `record` is a host-visible, 8-aligned word this device may
                // write (the layout's contract).
                let slot = unsafe { core::sync::atomic::AtomicU64::from_ptr(record as *mut u64) };
                // The first key only. The host reads the word after the launch failed.
                let relaxed = core::sync::atomic::Ordering::Relaxed;
                let _ = slot.compare_exchange(0, fn_ptr as u64, relaxed, relaxed);
                // The store must reach host memory before the trap ends the kernel: `membar.sys`
                // (CUDA's `__threadfence_system`), written out because LLVM 19's NVPTX selects no
                // system-scope fence for sm_70's PTX 6.
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: a memory barrier; it reads and writes nothing itself.
                unsafe {
                    core::arch::asm!("membar.sys;", options(nostack, preserves_flags))
                };
            }
            core::intrinsics::abort()
        }
    }
}
