//! The strict window: while at least one kernel runs, every segment of the host program is
//! inaccessible (under `requires unified_shared_memory`, only its code). The first kernel to
//! start closes the host program off, the last one to finish opens it again, so kernels that run
//! at the same time (`nowait`, several host threads) never reopen it under each other.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::objects::{self, Object};

/// What the fault handler reads: the protected objects of the current window, published before
/// their segments are protected and kept (never freed) for the life of the process.
static PROTECTED: AtomicPtr<Protected> = AtomicPtr::new(std::ptr::null_mut());

/// The objects a window protects.
pub struct Protected {
    /// The host program's objects.
    pub objects: Vec<Object>,
    /// Whether the program requires unified shared memory (only code is protected).
    pub unified_shared_memory: bool,
    /// The dynamic loader's code.
    pub loader: Vec<(usize, usize)>,
}

impl Protected {
    /// Whether a window closes `segment` off: every segment, or only code under
    /// `unified_shared_memory`.
    fn guards(&self, segment: &objects::Segment) -> bool {
        !(self.unified_shared_memory && segment.prot & libc::PROT_EXEC == 0)
    }
}

struct Window {
    /// The snapshot in force, and the loader's load count when it was taken.
    protected: Option<(&'static Protected, u64)>,
    /// Load bases of the device images kernels were seen in.
    device_images: Vec<usize>,
}

static WINDOW: Mutex<Window> = Mutex::new(Window { protected: None, device_images: Vec::new() });

/// The protected objects, for the fault handler (`None` before the first window).
pub fn protected() -> Option<&'static Protected> {
    // SAFETY: the pointer is null or a leaked `Box<Protected>`, never freed.
    unsafe { PROTECTED.load(Ordering::Acquire).as_ref() }
}

/// Whether a window is open now, for the fault handler (racy by nature: a fault during a window
/// is classified while the segments are still protected, since the faulting kernel has not left).
pub fn is_open() -> bool {
    RUNNING.load(Ordering::Acquire) > 0
}

/// Kernels running now: changed under the `WINDOW` lock, read by the fault handler without it.
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Records that the object loaded at `base` is a device image (never protected).
pub fn note_device_image(base: usize) {
    let mut window = WINDOW.lock().unwrap_or_else(|e| e.into_inner());
    if !window.device_images.contains(&base) {
        window.device_images.push(base);
        // The next window takes a new snapshot without it.
        window.protected = None;
    }
}

thread_local! {
    /// Kernels this thread is running (it entered a window and has not left it).
    static IN_KERNEL: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether the calling thread is running a kernel (safe in the fault handler: a `const`
/// thread-local without destructor).
pub fn this_thread_runs_a_kernel() -> bool {
    IN_KERNEL.with(|k| k.get() > 0)
}

/// Waits, up to `limit`, until no kernel runs; returns whether none does (for a host thread that
/// met the protection while running host code: it may go on once the window closes).
pub fn wait_until_closed(limit: std::time::Duration) -> bool {
    let step = libc::timespec { tv_sec: 0, tv_nsec: 200_000 };
    let steps = limit.as_micros() / 200;
    for _ in 0..steps {
        if !is_open() {
            return true;
        }
        // SAFETY: nanosleep with a valid duration (async-signal-safe).
        unsafe { libc::nanosleep(&step, std::ptr::null_mut()) };
    }
    !is_open()
}

/// A kernel starts: the first one closes the host program off. The caller has installed the
/// fault handler (`fault::install`) that reports touches of it.
pub fn enter() {
    IN_KERNEL.with(|k| k.set(k.get() + 1));
    let mut window = WINDOW.lock().unwrap_or_else(|e| e.into_inner());
    if RUNNING.load(Ordering::Acquire) == 0 {
        let loaded = loaded_objects();
        let snapshot = match window.protected {
            Some((snapshot, count)) if count == loaded => snapshot,
            _ => {
                let fresh: &'static Protected = Box::leak(Box::new(Protected {
                    objects: objects::host_program(&window.device_images),
                    unified_shared_memory: crate::requirements::unified_shared_memory(),
                    loader: objects::loader_code(),
                }));
                window.protected = Some((fresh, loaded));
                if std::env::var("LIBOMPTARGET_INFO")
                    .is_ok_and(|v| v.trim().parse::<i64>().is_ok_and(|n| n != 0))
                {
                    let segments: usize = fresh.objects.iter().map(|o| o.segments.len()).sum();
                    eprintln!(
                        "{}info: protecting {segments} segments of {} objects of the host program{}",
                        crate::objects::PREFIX,
                        fresh.objects.len(),
                        if fresh.unified_shared_memory { " (code only: unified_shared_memory)" } else { "" }
                    );
                }
                fresh
            }
        };
        PROTECTED.store(snapshot as *const Protected as *mut Protected, Ordering::Release);
        // Sequentially consistent with `unprotected_call`'s look at it: either a host thread's
        // system call sees this window and keeps off its memory, or the wait sees the call.
        RUNNING.store(1, Ordering::SeqCst);
        wait_for_host_calls();
        protect(snapshot, true);
    } else {
        RUNNING.fetch_add(1, Ordering::AcqRel);
    }
}

/// Host threads' system calls in progress that [`unprotected_call`] let run on memory a window
/// protects: a window opening waits for them.
static HOST_CALLS: AtomicUsize = AtomicUsize::new(0);

/// The longest a window's opening waits for [`HOST_CALLS`]: a call that blocks longer (a write
/// to a full pipe that only the kernel's own thread drains) must not hold the kernel forever;
/// it then fails with `EFAULT` as it would without the wait.
const HOST_CALLS_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

fn wait_for_host_calls() {
    let started = std::time::Instant::now();
    while HOST_CALLS.load(Ordering::SeqCst) > 0 && started.elapsed() < HOST_CALLS_WAIT {
        // SAFETY: sched_yield takes no arguments.
        unsafe { libc::sched_yield() };
    }
}

/// Runs `call`, a host thread's system call given `len` bytes at `buffer`, unless a window
/// open now protects them: then returns `None`, and the caller copies them (the copy waits for
/// the window to close, as any host read) and calls with the copy. No window opens while
/// `call` runs (a system call given protected memory fails with `EFAULT`, where a host thread
/// of a GPU program never does).
pub fn unprotected_call<R>(buffer: usize, len: usize, call: impl FnOnce() -> R) -> Option<R> {
    HOST_CALLS.fetch_add(1, Ordering::SeqCst);
    let protected_now = RUNNING.load(Ordering::SeqCst) > 0
        && protected().is_some_and(|snapshot| {
            let end = buffer.saturating_add(len);
            snapshot
                .objects
                .iter()
                .flat_map(|o| &o.segments)
                .any(|s| snapshot.guards(s) && buffer < s.end && end > s.start)
        });
    let result = (!protected_now).then(call);
    HOST_CALLS.fetch_sub(1, Ordering::SeqCst);
    result
}

/// A kernel finished: the last one opens the host program again.
pub fn leave() {
    IN_KERNEL.with(|k| k.set(k.get().saturating_sub(1)));
    let _window = WINDOW.lock().unwrap_or_else(|e| e.into_inner());
    let running = RUNNING.load(Ordering::Acquire).saturating_sub(1);
    if running == 0 {
        // The snapshot the window closed, not the one in force: a device image loaded while
        // kernels ran (`note_device_image`) drops that one, and the program's memory would stay
        // closed after the window (a thread then faulted on it without end).
        if let Some(snapshot) = protected() {
            protect(snapshot, false);
        }
    }
    // After reopening: a host thread waiting for the window to close goes on to open memory.
    RUNNING.store(running, Ordering::Release);
}

/// Closes (`on`) or reopens the host program's segments. Each `mprotect` costs about a
/// microsecond (most of it the TLB shootdown), so calls are merged: closing takes one call per
/// run of adjacent segments (an object's segments are one mapping span), reopening one per run
/// of adjacent segments with the same protection.
fn protect(snapshot: &Protected, on: bool) {
    for object in &snapshot.objects {
        let mut run: Option<(usize, usize, libc::c_int)> = None;
        let guarded = object.segments.iter().filter(|s| snapshot.guards(s));
        for s in guarded {
            let prot = if on { libc::PROT_NONE } else { s.prot };
            run = match run {
                Some((start, end, p)) if end == s.start && p == prot => Some((start, s.end, p)),
                Some(done) => {
                    apply(done);
                    Some((s.start, s.end, prot))
                }
                None => Some((s.start, s.end, prot)),
            };
        }
        if let Some(done) = run {
            apply(done);
        }
    }
}

fn apply((start, end, prot): (usize, usize, libc::c_int)) {
    // SAFETY: page-aligned ranges of mapped segments of loaded objects; only this library
    // changes their protection, always back to what the loader gave them.
    unsafe { libc::mprotect(start as *mut libc::c_void, end - start, prot) };
}

/// A page opened for the dynamic loader, and how many threads' instructions are using it.
struct LoaderPage {
    page: AtomicUsize,
    users: AtomicUsize,
}

/// Pages opened for the loader's instructions now. Threads of one program often meet the same
/// page together (every host thread's first call of a library function during a window reads
/// the same symbol table): a page stays open until the last of them has run its instruction,
/// so that no thread closes it under another's instruction, which then faults again, reopens
/// it and closes it under a third (16 threads then made no progress for minutes). More slots
/// than threads can use at once: each thread holds at most the few pages one instruction
/// touches.
static LOADER_PAGES: [LoaderPage; 256] =
    [const { LoaderPage { page: AtomicUsize::new(0), users: AtomicUsize::new(0) } }; 256];

/// Held while a thread counts a page's users and changes its protection, so that the count and
/// the protection change together (a spin lock: the fault handler may not block on a mutex).
static LOADER_LOCK: AtomicBool = AtomicBool::new(false);

fn with_loader_lock<R>(body: impl FnOnce() -> R) -> R {
    while LOADER_LOCK.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        // SAFETY: sched_yield takes no arguments and is async-signal-safe.
        unsafe { libc::sched_yield() };
    }
    let result = body();
    LOADER_LOCK.store(false, Ordering::Release);
    result
}

/// The page holding `addr` in a protected segment that is not code, opened again with the
/// segment's own protection: for the dynamic loader, which reads the host program's symbol
/// tables (in its first segment and in RELRO) when a library function is first called during a
/// window. The caller lets that one instruction run and then closes the page ([`close_page`]):
/// opening it for the rest of the window would let device code read what shares the page (a
/// vtable in RELRO). `already_counted`: the calling thread opened this page for the same
/// instruction before, and a window that opened since closed it again. Returns the page's
/// start, or None when `addr` is in no such segment (or every slot is taken).
pub fn open_page_for_loader(addr: usize, already_counted: bool) -> Option<usize> {
    let snapshot = protected()?;
    let page = addr & !(crate::objects::page_size() - 1);
    let segment = snapshot
        .objects
        .iter()
        .flat_map(|o| &o.segments)
        .find(|s| addr >= s.start && addr < s.end && s.prot & libc::PROT_EXEC == 0)?;
    with_loader_lock(|| {
        if !already_counted {
            let slot = LOADER_PAGES
                .iter()
                .find(|slot| slot.page.load(Ordering::Relaxed) == page)
                .or_else(|| LOADER_PAGES.iter().find(|slot| slot.users.load(Ordering::Relaxed) == 0))?;
            slot.page.store(page, Ordering::Relaxed);
            slot.users.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: a page of a mapped segment of a loaded object, given back what the loader
        // gave it.
        let opened =
            unsafe { libc::mprotect(page as *mut libc::c_void, crate::objects::page_size(), segment.prot) };
        (opened == 0).then_some(page)
    })
}

/// The calling thread's loader instruction is done with `page` ([`open_page_for_loader`]): the
/// last thread using it protects it again, if the window is still open (when it closed
/// meanwhile, leaving it open is what closing did to every page).
pub fn close_page(page: usize) {
    with_loader_lock(|| {
        let slot = LOADER_PAGES.iter().find(|slot| slot.page.load(Ordering::Relaxed) == page);
        let last = match slot {
            Some(slot) => {
                let left = slot.users.load(Ordering::Relaxed).saturating_sub(1);
                slot.users.store(left, Ordering::Relaxed);
                if left == 0 {
                    slot.page.store(0, Ordering::Relaxed);
                }
                left == 0
            }
            None => true,
        };
        if last && is_open() {
            // SAFETY: a page of a protected segment, protected again as the open window has it.
            unsafe {
                libc::mprotect(page as *mut libc::c_void, crate::objects::page_size(), libc::PROT_NONE)
            };
        }
    });
}

/// Gives the page holding `addr` back the protection of its segment, if it is one of the host
/// program's: a page [`close_page`] protected again just as the window closed, found by the next
/// host access after it.
pub fn reopen_page(addr: usize) {
    let Some(snapshot) = protected() else { return };
    if let Some(segment) =
        snapshot.objects.iter().flat_map(|o| &o.segments).find(|s| addr >= s.start && addr < s.end)
    {
        let page = addr & !(crate::objects::page_size() - 1);
        // SAFETY: as in `open_page_for_loader`.
        unsafe { libc::mprotect(page as *mut libc::c_void, crate::objects::page_size(), segment.prot) };
    }
}

/// The loader's count of objects loaded and unloaded so far (`dlpi_adds + dlpi_subs`): a new
/// snapshot is taken when it changes. Read from the first object alone, so each window pays for
/// one callback, not one per loaded object.
fn loaded_objects() -> u64 {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _: usize,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info (whose size covers the counters, glibc
        // 2.4+) and `data` is the u64 below.
        unsafe { *(data as *mut u64) = (*info).dlpi_adds.wrapping_add((*info).dlpi_subs) };
        1
    }
    let mut generation = 0u64;
    // SAFETY: the callback only reads the counters and stops the walk.
    unsafe { libc::dl_iterate_phdr(Some(first), &mut generation as *mut u64 as *mut libc::c_void) };
    generation
}
