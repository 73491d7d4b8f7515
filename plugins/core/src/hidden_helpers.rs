//! Keeps libomp releases before 19 from crashing `nowait` target tasks (llvm-project#87117).
//!
//! libomp runs `target nowait` tasks on its hidden helper threads, whose global thread ids it
//! reserves (1 to `LIBOMP_NUM_HIDDEN_HELPER_THREADS`) and whose team it starts with the first
//! such task. Before LLVM 19 that team took its threads from the pool of idle workers when there
//! were any: after a parallel region whose threads launched target regions, the helper team is
//! made of workers with other ids, the reserved slots stay empty, and the next target task reads
//! a null thread (SIGSEGV in `__kmpc_omp_task_alloc`) or fails the assertion
//! `KMP_HIDDEN_HELPER_THREAD(gtid)`. A program of clang 19 with libomptarget 16 and LLVM 16's
//! own x86_64 plugin fails the same way: the bug is libomp's, and the project's plugins run
//! with libomp 16.
//!
//! Setting `LIBOMP_NUM_HIDDEN_HELPER_THREADS=0` avoids it, but only before libomp reads its
//! environment, which libomptarget 16 makes it do before it starts its plugins. So the plugin
//! starts the helper team itself while the process has one thread and the pool is empty, as the
//! program's first target task would: one empty target task, submitted and waited for through
//! the entry points clang calls for `target nowait` and `taskwait`. The team then holds the
//! reserved ids for the life of the process (libomp starts it once).

use std::ffi::{c_void, CStr};

use host_table::switches::{switch_from_env, HELPER_TEAM_ENV};

/// An entry point libomp has exported since release 19, the first whose hidden helper team
/// starts threads of its own: present means the bug is fixed.
const FIXED_RELEASE_MARKER: &CStr = c"__kmpc_dispatch_deinit";

/// libomp's `ident_t`, the source location its entry points take.
#[repr(C)]
struct Ident {
    reserved_1: i32,
    flags: i32,
    reserved_2: i32,
    reserved_3: i32,
    psource: *const u8,
}

// SAFETY: read-only data (a constant string), shared by every thread.
unsafe impl Sync for Ident {}

/// `KMP_IDENT_KMPC`: the location comes from a `__kmpc` caller.
const IDENT_KMPC: i32 = 2;

static LOCATION: Ident = Ident {
    reserved_1: 0,
    flags: IDENT_KMPC,
    reserved_2: 0,
    reserved_3: 0,
    psource: c";omptarget-indirect;start of the hidden helper team;0;0;;".as_ptr().cast(),
};

/// Room for libomp's `kmp_task_t` (40 bytes in every release) and more: the task has no
/// privates.
const TASK_BYTES: usize = 64;

/// libomp's `kmp_int32 (*)(kmp_int32 gtid, void *task)`: the body of the empty task.
extern "C" fn empty_task(_gtid: i32, _task: *mut c_void) -> i32 {
    0
}

type GlobalThreadNum = unsafe extern "C" fn(*const Ident) -> i32;
type TargetTaskAlloc = unsafe extern "C" fn(
    *const Ident,
    i32,
    i32,
    usize,
    usize,
    extern "C" fn(i32, *mut c_void) -> i32,
    i64,
) -> *mut c_void;
type Task = unsafe extern "C" fn(*const Ident, i32, *mut c_void) -> i32;
type Taskwait = unsafe extern "C" fn(*const Ident, i32) -> i32;

/// What [`start_team_early`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelperTeam {
    /// No libomp in the process, or one with the fix: nothing to do.
    NotNeeded,
    /// A libomp before 19: its helper team now runs, on the reserved ids.
    Started,
    /// A libomp before 19, and `OMPTARGET_INDIRECT_HELPER_TEAM=0`: left alone.
    SwitchedOff,
    /// A libomp before 19, but the process already runs other threads (a library `dlopen`ed
    /// late), among which may be pooled workers the team would take: left alone.
    TooLate,
}

/// The address of `symbol` among the objects already loaded, if any exports it.
fn lookup(symbol: &CStr) -> Option<*mut c_void> {
    // SAFETY: `dlsym` with RTLD_DEFAULT and a NUL-terminated name only looks the name up in the
    // objects already loaded.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, symbol.as_ptr()) };
    (!address.is_null()).then_some(address)
}

/// The threads of this process, from `/proc/self/task` (`usize::MAX` where it cannot be read,
/// so that nothing is started on a guess).
fn threads_in_process() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(usize::MAX, |dir| dir.count())
}

/// Decides from what libomp exports and how many threads run; starts nothing.
pub fn choose(libomp_loaded: bool, libomp_fixed: bool, threads: usize) -> HelperTeam {
    if !libomp_loaded || libomp_fixed {
        HelperTeam::NotNeeded
    } else if threads > 1 {
        HelperTeam::TooLate
    } else {
        HelperTeam::Started
    }
}

/// Starts the hidden helper team of a libomp before 19 while the process has one thread.
/// Called from `__tgt_rtl_init_plugin`, which libomptarget 16 calls from `__tgt_register_lib`,
/// itself called by the program's constructors before `main`. Starting a running team again
/// is a no-op in libomp, so each plugin of the process may call it.
pub fn start_team_early() -> HelperTeam {
    let entries = (
        lookup(c"__kmpc_global_thread_num"),
        lookup(c"__kmpc_omp_target_task_alloc"),
        lookup(c"__kmpc_omp_task"),
        lookup(c"__kmpc_omp_taskwait"),
    );
    let (Some(gtid), Some(alloc), Some(task), Some(taskwait)) = entries else {
        return HelperTeam::NotNeeded;
    };
    let mut choice = choose(true, lookup(FIXED_RELEASE_MARKER).is_some(), threads_in_process());
    if choice != HelperTeam::NotNeeded && !switch_from_env(HELPER_TEAM_ENV) {
        choice = HelperTeam::SwitchedOff;
    }
    if choice == HelperTeam::Started {
        // SAFETY: the four addresses are libomp's entry points of those names, whose C types
        // the aliases spell (kmp.h of every release since 12); the task has no shareds and no
        // privates, runs `empty_task`, and is waited for before this returns, so libomp frees
        // it. Device -1 is the initial device: no plugin is involved.
        unsafe {
            let gtid = std::mem::transmute::<*mut c_void, GlobalThreadNum>(gtid)(&LOCATION);
            let alloc = std::mem::transmute::<*mut c_void, TargetTaskAlloc>(alloc);
            let new_task = alloc(&LOCATION, gtid, 1, TASK_BYTES, 0, empty_task, -1);
            if !new_task.is_null() {
                std::mem::transmute::<*mut c_void, Task>(task)(&LOCATION, gtid, new_task);
                std::mem::transmute::<*mut c_void, Taskwait>(taskwait)(&LOCATION, gtid);
            }
        }
    }
    choice
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_libomp_without_the_fix_gets_the_early_team() {
        assert_eq!(choose(true, false, 1), HelperTeam::Started);
        assert_eq!(choose(true, true, 1), HelperTeam::NotNeeded);
        assert_eq!(choose(false, false, 1), HelperTeam::NotNeeded);
    }

    #[test]
    fn other_threads_leave_libomp_alone() {
        assert_eq!(choose(true, false, 2), HelperTeam::TooLate);
        assert_eq!(choose(true, true, 2), HelperTeam::NotNeeded);
    }
}
