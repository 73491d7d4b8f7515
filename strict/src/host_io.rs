//! Host threads' writes from the host program's memory while a window is open.
//!
//! A host thread that reads the host program's memory during another thread's kernel faults and
//! waits for the window to close ([`crate::fault`]); a system call given the same memory gets
//! `EFAULT` instead and fails, which a GPU never does to a host thread. The stock runtimes'
//! x86_64 plugin loads each device image by `fwrite`-ing it from the executable (where the
//! linker embedded it) to a temporary file: the first launch on one device while a kernel ran on
//! another failed with `failed to write target image to tmpfile` (1 run in about 100 of the
//! concurrency program on clang 21). `write` and `fwrite`, interposed here, keep a window from
//! opening while they run, and when one is open already and protects their buffer, copy it to
//! the heap first: the copy faults and waits like any host read, and the call is given the copy.
//! Other calls, and every call from device code (which a GPU could not make), go to the C
//! library unchanged; so do all with [`SWITCH`]`=0` (the negative control of the copies).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::window;

/// `ssize_t write(int, const void *, size_t)`.
type Write = unsafe extern "C" fn(c_int, *const c_void, usize) -> isize;
/// `size_t fwrite(const void *, size_t, size_t, FILE *)`.
type Fwrite = unsafe extern "C" fn(*const c_void, usize, usize, *mut libc::FILE) -> usize;

/// `OMPTARGET_INDIRECT_STRICT_HOST_IO=0` hands every `write` and `fwrite` to the C library
/// unchanged, as before this module: a host thread's call on the host program's memory then
/// fails during a window.
pub const SWITCH: &str = "OMPTARGET_INDIRECT_STRICT_HOST_IO";

/// Whether [`SWITCH`] turned the copies off (read once, when this library is loaded).
static OFF: AtomicBool = AtomicBool::new(false);

/// The C library's `write` and `fwrite` (0 until found).
static REAL_WRITE: AtomicUsize = AtomicUsize::new(0);
static REAL_FWRITE: AtomicUsize = AtomicUsize::new(0);

/// Reads [`SWITCH`] and finds the C library's `write` and `fwrite` when this library is loaded, so that the fault
/// handler's report (a `write`) never has to look them up in a signal handler.
#[used]
#[link_section = ".init_array"]
static FIND_AT_LOAD: extern "C" fn() = find_at_load;

extern "C" fn find_at_load() {
    OFF.store(std::env::var_os(SWITCH).is_some_and(|v| v == "0"), Ordering::Relaxed);
    next(&REAL_WRITE, c"write");
    next(&REAL_FWRITE, c"fwrite");
}

/// The definition of `name` after this library's (the C library's), found once.
fn next(slot: &AtomicUsize, name: &std::ffi::CStr) -> usize {
    let known = slot.load(Ordering::Acquire);
    if known != 0 {
        return known;
    }
    // SAFETY: valid C strings; RTLD_NEXT looks past this library, which is the caller.
    let found = unsafe { libc::dlvsym(libc::RTLD_NEXT, name.as_ptr(), c"GLIBC_2.2.5".as_ptr()) } as usize;
    // No program could run without the C library's write: as `real_dlsym_address`.
    let found = if found == 0 { std::process::abort() } else { found };
    slot.store(found, Ordering::Release);
    found
}

/// A heap copy of `len` bytes at `buffer` (reading them faults and waits while a window is open).
///
/// # Safety
/// `buffer` is valid for reads of `len` bytes.
unsafe fn heap_copy(buffer: *const c_void, len: usize) -> Vec<u8> {
    // SAFETY: the caller's buffer, readable for `len` bytes (this function's contract).
    unsafe { std::slice::from_raw_parts(buffer.cast::<u8>(), len) }.to_vec()
}

/// Runs `direct` (a host thread's call given `len` bytes at `buffer`), or, where an open window
/// protects them ([`window::unprotected_call`]), `from_copy` with a heap copy of them; calls
/// from device code, of no bytes, or with [`SWITCH`]`=0` run `direct`.
///
/// # Safety
/// `buffer` is valid for reads of `len` bytes.
unsafe fn through_open_memory<R>(
    buffer: *const c_void,
    len: usize,
    direct: impl FnOnce() -> R,
    from_copy: impl FnOnce(*const c_void) -> R,
) -> R {
    if len == 0 || OFF.load(Ordering::Relaxed) || window::this_thread_runs_a_kernel() {
        return direct();
    }
    window::unprotected_call(buffer as usize, len, direct).unwrap_or_else(|| {
        // SAFETY: readable for `len` bytes (this function's contract).
        let copy = unsafe { heap_copy(buffer, len) };
        from_copy(copy.as_ptr().cast())
    })
}

/// The interposed `write`: as the C library's, from a heap copy where an open window protects
/// the buffer ([`through_open_memory`]).
///
/// # Safety
/// As `write(2)`.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buffer: *const c_void, len: usize) -> isize {
    // SAFETY: the address is the C library's write, of type `Write`.
    let real = unsafe { std::mem::transmute::<usize, Write>(next(&REAL_WRITE, c"write")) };
    // SAFETY: the caller's arguments, or a copy of its `len` bytes, valid as write(2) requires
    // (this function's contract), and `buffer` readable for `len` bytes.
    unsafe { through_open_memory(buffer, len, || real(fd, buffer, len), |copy| real(fd, copy, len)) }
}

/// The interposed `fwrite`: as the C library's, from a heap copy where an open window protects
/// the buffer ([`through_open_memory`]).
///
/// # Safety
/// As `fwrite(3)`.
#[no_mangle]
pub unsafe extern "C" fn fwrite(
    buffer: *const c_void,
    size: usize,
    count: usize,
    stream: *mut libc::FILE,
) -> usize {
    // SAFETY: the address is the C library's fwrite, of type `Fwrite`.
    let real = unsafe { std::mem::transmute::<usize, Fwrite>(next(&REAL_FWRITE, c"fwrite")) };
    let len = size.saturating_mul(count);
    // SAFETY: the caller's arguments, or a copy of its `size * count` bytes, valid as fwrite(3)
    // requires (this function's contract), and `buffer` readable for them.
    unsafe {
        through_open_memory(
            buffer,
            len,
            || real(buffer, size, count, stream),
            |copy| real(copy, size, count, stream),
        )
    }
}
