//! What flang's kernels need from a device runtime on the x86_64 device.
//!
//! clang compiles an x86_64 target region as host code: the kernel calls the host's OpenMP
//! runtime (libomp) for teams and threads. flang builds every target region the way it builds a
//! GPU kernel (LLVM's OpenMPIRBuilder): `__kmpc_target_init` / `__kmpc_target_deinit` around the
//! body, `__kmpc_parallel_60` (`_51` before LLVM 22) for a parallel region,
//! `__kmpc_*_static_loop_*` for worksharing loops, and `omp_is_initial_device` called, not
//! folded. LLVM ships these in its GPU DeviceRTL
//! only, so flang's x86_64 images do not link. Here they are, mapped onto libomp, which runs the
//! kernel's threads on this device:
//!
//! - The offload runtime calls a kernel on one host thread: that thread is the initial thread
//!   of the one team (`__kmpc_target_init` returns -1: run the user code).
//! - A parallel region is libomp's (`__kmpc_fork_call`), whose threads are the team's.
//! - A `distribute` loop gives every iteration to the one team; a `for` loop splits the
//!   iterations among the parallel region's threads (`omp_get_thread_num`), statically, in chunks
//!   of the given size (1 when none is given), round robin, as LLVM's DeviceRTL does.
//! - `omp_is_initial_device` answers 0 in device code (the image's own definition, hidden, so
//!   the host's libomp does not answer for it).
//! - Variables a kernel shares with a parallel region's threads (`__kmpc_alloc_shared`) live on
//!   the C library's heap.

use core::ffi::c_void;

/// libomp's `ident_t`, only passed through.
type Ident = c_void;

extern "C" {
    // libomp's, which the host program has loaded; weak, so that an image without libomp (and
    // the host tests) still links, and a region then stops the program instead of jumping to 0.
    #[linkage = "extern_weak"]
    static __kmpc_fork_call: Option<unsafe extern "C" fn(*mut Ident, i32, *mut c_void, ...)>;
    #[linkage = "extern_weak"]
    static __kmpc_push_num_threads: Option<unsafe extern "C" fn(*mut Ident, i32, i32)>;
    #[linkage = "extern_weak"]
    static omp_get_thread_num: Option<unsafe extern "C" fn() -> i32>;
    // The C library's, which the host program has loaded (weak, as above).
    #[linkage = "extern_weak"]
    static malloc: Option<unsafe extern "C" fn(usize) -> *mut c_void>;
    #[linkage = "extern_weak"]
    static free: Option<unsafe extern "C" fn(*mut c_void)>;
}

/// Stops the program: what a device does on a kernel it cannot run.
fn trap() -> ! {
    // SAFETY: `ud2` raises SIGILL and never returns.
    unsafe { core::arch::asm!("ud2", options(noreturn, nomem, nostack)) }
}

// The image's calls of `omp_is_initial_device` bind to the definition below, not to the host
// libomp's that the dynamic loader would find first.
core::arch::global_asm!(".hidden omp_is_initial_device");

/// Device code runs on a device: 0. (Hidden: only the image's own device code calls it.)
#[no_mangle]
pub extern "C" fn omp_is_initial_device() -> i32 {
    0
}

/// Starts a kernel: returns -1, "run the user code", to the one thread the offload runtime
/// calls the kernel on. The kernel and launch environments are not needed on this device.
#[no_mangle]
pub extern "C" fn __kmpc_target_init(
    _kernel_environment: *const c_void,
    _launch_environment: *const c_void,
) -> i32 {
    -1
}

/// Ends a kernel: nothing to do.
#[no_mangle]
pub extern "C" fn __kmpc_target_deinit() {}

/// The thread's number in its team, as a GPU numbers the threads of a block: the parallel
/// region's thread number (libomp's), 0 outside one, where the kernel runs on one thread. (The
/// optimizer's guards of a kernel's sequential code, flang 23, ask it.)
#[no_mangle]
pub extern "C" fn __kmpc_get_hardware_thread_id_in_block() -> i32 {
    // SAFETY: reading the address of a weak symbol, null when nothing defines it.
    let thread_num = unsafe { omp_get_thread_num };
    // SAFETY: libomp's `omp_get_thread_num`, callable from any thread.
    thread_num.map_or(0, |f| unsafe { f() })
}

/// Memory a kernel's variable shares with the threads of a parallel region (flang 23 places
/// such variables here): on this device the C library's heap, which every thread reads. Stops
/// the program when there is none (as a device out of shared memory does).
#[no_mangle]
pub extern "C" fn __kmpc_alloc_shared(bytes: u64) -> *mut c_void {
    // SAFETY: reading the address of a weak symbol, null when nothing defines it.
    let allocate = unsafe { malloc };
    let memory = match allocate {
        // SAFETY: the C library's `malloc`, which takes any size.
        Some(allocate) => unsafe { allocate(bytes.max(1) as usize) },
        None => core::ptr::null_mut(),
    };
    if memory.is_null() {
        trap();
    }
    memory
}

/// Releases what [`__kmpc_alloc_shared`] gave (`bytes` is the size it was asked for).
///
/// # Safety
/// `memory` comes from [`__kmpc_alloc_shared`] and is released once.
#[no_mangle]
pub unsafe extern "C" fn __kmpc_free_shared(memory: *mut c_void, _bytes: u64) {
    // SAFETY: reading the address of a weak symbol, null when nothing defines it.
    let release = unsafe { free };
    if let Some(release) = release {
        // SAFETY: the caller's contract: memory from `malloc`, released once.
        unsafe { release(memory) }
    }
}

/// The most arguments a parallel region of flang's passes (it packs what it shares into one
/// struct, so one); more stop the program rather than call the region wrongly.
const MAX_PARALLEL_ARGS: i64 = 16;

/// Runs the outlined parallel region `region` on a team of libomp's threads (`num_threads`
/// of them when positive, libomp's default otherwise; one when `if_expr` is 0), each called as
/// `region(&gtid, &btid, args[0], ..., args[nargs - 1])`. `proc_bind`, `wrapper` (the GPU's
/// generic-mode entry) and `strict` are not used: libomp's own binding applies.
///
/// # Safety
/// As LLVM's DeviceRTL: `region` is an outlined region taking `nargs` pointer arguments after
/// the two thread ids, and `args` holds `nargs` pointers. More than 16 arguments stop the
/// program (a trap).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __kmpc_parallel_60(
    ident: *mut Ident,
    gtid: i32,
    if_expr: i32,
    num_threads: i32,
    _proc_bind: i32,
    region: *mut c_void,
    _wrapper: *mut c_void,
    args: *const *mut c_void,
    nargs: i64,
    _strict: i32,
) {
    // SAFETY: reads of weak function addresses (None where undefined).
    let libomp = unsafe { (__kmpc_fork_call, __kmpc_push_num_threads) };
    let (Some(fork), Some(push_num_threads)) = libomp else { trap() };
    if !(0..=MAX_PARALLEL_ARGS).contains(&nargs) || region.is_null() {
        trap();
    }
    let threads = if if_expr == 0 { 1 } else { num_threads };
    if threads > 0 {
        // SAFETY: `gtid` is the calling thread's libomp id, as the kernel obtained it.
        unsafe { push_num_threads(ident, gtid, threads) };
    }
    // SAFETY: `args` holds `nargs` pointers (the precondition), and only those are read; the
    // padding after them is null.
    let arg = |i: i64| if i < nargs { unsafe { *args.add(i as usize) } } else { core::ptr::null_mut() };
    // SAFETY: libomp calls `region` on each thread with the thread ids and its first `nargs`
    // variadic arguments (it reads no more), the calling convention of an outlined region
    // (precondition).
    unsafe {
        fork(
            ident,
            nargs as i32,
            region,
            arg(0),
            arg(1),
            arg(2),
            arg(3),
            arg(4),
            arg(5),
            arg(6),
            arg(7),
            arg(8),
            arg(9),
            arg(10),
            arg(11),
            arg(12),
            arg(13),
            arg(14),
            arg(15),
        )
    }
}

/// [`__kmpc_parallel_60`] as LLVM 21 and earlier name it, without the `strict` argument: what
/// flang 21's kernels call.
///
/// # Safety
/// As for [`__kmpc_parallel_60`].
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __kmpc_parallel_51(
    ident: *mut Ident,
    gtid: i32,
    if_expr: i32,
    num_threads: i32,
    proc_bind: i32,
    region: *mut c_void,
    wrapper: *mut c_void,
    args: *const *mut c_void,
    nargs: i64,
) {
    // SAFETY: the caller's contract is `__kmpc_parallel_60`'s; `strict` is not read.
    unsafe {
        __kmpc_parallel_60(ident, gtid, if_expr, num_threads, proc_bind, region, wrapper, args, nargs, 0)
    }
}

/// The iteration counts the loop entry points take.
trait Count: Copy {
    fn to_u64(self) -> u64;
    fn from_u64(value: u64) -> Self;
}

macro_rules! count {
    ($($t:ty),*) => {$(
        impl Count for $t {
            fn to_u64(self) -> u64 {
                // Negative counts and chunks (which no compiler passes) count as none.
                if (self as i128) < 0 { 0 } else { self as u64 }
            }
            fn from_u64(value: u64) -> Self {
                value as $t
            }
        }
    )*};
}
count!(i32, u32, i64, u64);

/// Calls `body(iv, arg)` for this thread's share of `0..iterations` when `threads` threads split
/// them: chunks of `chunk` iterations (1 when 0), dealt round robin, thread `thread` taking
/// chunks `thread`, `thread + threads`, ....
///
/// LLVM 22's entry points add a hint that there are at least as many threads as iterations
/// (`one_iteration_per_thread`); it is never read: the dealing above then ends after one chunk
/// anyway, and LLVM 21's entry points, which flang 21 calls, end before that argument.
///
/// # Safety
/// `body` must be a loop body the compiler outlined for `arg`.
unsafe fn share<T: Count>(
    body: unsafe extern "C" fn(T, *mut c_void),
    arg: *mut c_void,
    iterations: u64,
    threads: u64,
    thread: u64,
    chunk: u64,
) {
    let (threads, chunk) = (threads.max(1), chunk.max(1));
    let mut start = thread.saturating_mul(chunk);
    while start < iterations {
        for iv in start..iterations.min(start.saturating_add(chunk)) {
            // SAFETY: an iteration of the loop `body` was outlined from (precondition).
            unsafe { body(T::from_u64(iv), arg) };
        }
        start = start.saturating_add(threads.saturating_mul(chunk));
    }
}

/// [`share`] for the calling thread of the current parallel region's `threads` threads.
///
/// # Safety
/// As for [`share`].
unsafe fn share_among_threads<T: Count>(
    body: unsafe extern "C" fn(T, *mut c_void),
    arg: *mut c_void,
    iterations: T,
    threads: T,
    chunk: T,
) {
    let (iterations, threads, chunk) = (iterations.to_u64(), threads.to_u64(), chunk.to_u64());
    // SAFETY: the precondition.
    unsafe { share(body, arg, iterations, threads, this_thread(), chunk) }
}

/// The calling thread's number in the current parallel region (0 outside one).
fn this_thread() -> u64 {
    // SAFETY: a read of a weak function address, then libomp's query, callable from any thread.
    let thread = unsafe { omp_get_thread_num.map_or(0, |number| number()) };
    thread.max(0) as u64
}

macro_rules! loop_entries {
    ($t:ty, $distribute_for:ident, $distribute:ident, $for_loop:ident) => {
        /// `distribute parallel do` of `num_iters` iterations: the one team takes them all and
        /// its threads split them ([`share`]); the block chunk is moot with one team.
        ///
        /// # Safety
        /// `body` is a loop body outlined for `arg`; called by each thread of the region.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $distribute_for(
            _loc: *mut Ident,
            body: unsafe extern "C" fn($t, *mut c_void),
            arg: *mut c_void,
            num_iters: $t,
            num_threads: $t,
            _block_chunk: $t,
            thread_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            // SAFETY: the precondition.
            unsafe { share_among_threads(body, arg, num_iters, num_threads, thread_chunk) }
        }

        /// `distribute` of `num_iters` iterations: the one team runs them all.
        ///
        /// # Safety
        /// `body` is a loop body outlined for `arg`.
        #[no_mangle]
        pub unsafe extern "C" fn $distribute(
            _loc: *mut Ident,
            body: unsafe extern "C" fn($t, *mut c_void),
            arg: *mut c_void,
            num_iters: $t,
            _block_chunk: $t,
            _one_iteration_per_team: u8,
        ) {
            // SAFETY: the precondition.
            unsafe { share(body, arg, num_iters.to_u64(), 1, 0, 0) }
        }

        /// Worksharing `do` of `num_iters` iterations among the region's `num_threads`.
        ///
        /// # Safety
        /// `body` is a loop body outlined for `arg`; called by each thread of the region.
        #[no_mangle]
        pub unsafe extern "C" fn $for_loop(
            _loc: *mut Ident,
            body: unsafe extern "C" fn($t, *mut c_void),
            arg: *mut c_void,
            num_iters: $t,
            num_threads: $t,
            thread_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            // SAFETY: the precondition.
            unsafe { share_among_threads(body, arg, num_iters, num_threads, thread_chunk) }
        }
    };
}

loop_entries!(
    i32,
    __kmpc_distribute_for_static_loop_4,
    __kmpc_distribute_static_loop_4,
    __kmpc_for_static_loop_4
);
loop_entries!(
    u32,
    __kmpc_distribute_for_static_loop_4u,
    __kmpc_distribute_static_loop_4u,
    __kmpc_for_static_loop_4u
);
loop_entries!(
    i64,
    __kmpc_distribute_for_static_loop_8,
    __kmpc_distribute_static_loop_8,
    __kmpc_for_static_loop_8
);
loop_entries!(
    u64,
    __kmpc_distribute_for_static_loop_8u,
    __kmpc_distribute_static_loop_8u,
    __kmpc_for_static_loop_8u
);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

    unsafe extern "C" fn record(iv: u64, _arg: *mut c_void) {
        SEEN.lock().unwrap().push(iv);
    }

    fn shares(iterations: u64, threads: u64, chunk: u64) -> Vec<Vec<u64>> {
        (0..threads)
            .map(|thread| {
                SEEN.lock().unwrap().clear();
                // SAFETY: `record` ignores its argument.
                unsafe { share::<u64>(record, core::ptr::null_mut(), iterations, threads, thread, chunk) };
                SEEN.lock().unwrap().clone()
            })
            .collect()
    }

    #[test]
    fn the_threads_shares_cover_every_iteration_once() {
        let _serial = SEEN.lock().map(drop);
        for (iterations, threads, chunk) in
            [(0, 3, 0), (1, 4, 0), (64, 4, 0), (10, 3, 4), (7, 8, 2), (100, 1, 0)]
        {
            let shares = shares(iterations, threads, chunk);
            let mut all: Vec<u64> = shares.concat();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..iterations).collect::<Vec<_>>(),
                "{iterations} over {threads}, chunk {chunk}"
            );
        }
        // Round robin, chunk by chunk.
        assert_eq!(shares(10, 3, 2), [vec![0, 1, 6, 7], vec![2, 3, 8, 9], vec![4, 5]]);
        // One chunk each where there are enough threads: what LLVM 22's hint, never read, says.
        assert_eq!(shares(3, 4, 0), [vec![0], vec![1], vec![2], vec![]]);
    }
}
