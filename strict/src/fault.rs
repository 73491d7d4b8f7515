//! The report: a fault on the host program's memory while a window is open stops the program
//! with one line saying what device code did, to what, and from where. Every other fault keeps
//! its usual behaviour (the handler steps aside and the faulting instruction runs again).

use std::ffi::{c_int, c_void, CStr};
use std::sync::Once;

use crate::objects;
use crate::window;

/// The exit status of a program strict mode stopped.
pub const EXIT_STATUS: c_int = omptarget_indirect_abi::host_calls::STOP_EXIT_STATUS;

use crate::objects::PREFIX;

static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();
static mut PREVIOUS_TRAP: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();

/// The trap flag of x86 EFLAGS: the CPU raises SIGTRAP after the next instruction.
const TRAP_FLAG: i64 = 0x100;

thread_local! {
    /// Pages this thread opened for the loader's current instruction (at most a few: one
    /// instruction touches at most two pages), closed again when it has run.
    static OPENED: std::cell::Cell<[usize; 4]> = const { std::cell::Cell::new([0; 4]) };
}
static INSTALL: Once = Once::new();
/// Set by the first thread that reports a stop.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Installs the handler (once), keeping the program's own for every other fault.
pub fn install() {
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction with a valid SA_SIGINFO handler; PREVIOUS is written here
        // once, before the handler can run, and only read afterwards.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGSEGV, &action, std::ptr::addr_of_mut!(PREVIOUS).cast());
            let mut trap: libc::sigaction = std::mem::zeroed();
            trap.sa_sigaction = step_done as usize;
            trap.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut trap.sa_mask);
            libc::sigaction(libc::SIGTRAP, &trap, std::ptr::addr_of_mut!(PREVIOUS_TRAP).cast());
        }
    });
}

/// What the faulting access was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// An instruction fetch: device code called or jumped to host code.
    Call,
    /// A load.
    Read,
    /// A store.
    Write,
}

impl Access {
    /// From the fault address, the instruction pointer and the x86 page-fault error code.
    pub fn of(addr: usize, rip: usize, error: u64) -> Access {
        if addr == rip || error & 0x10 != 0 {
            Access::Call
        } else if error & 0x2 != 0 {
            Access::Write
        } else {
            Access::Read
        }
    }

    fn words(self) -> &'static str {
        match self {
            Access::Call => "call of",
            Access::Read => "read of",
            Access::Write => "write to",
        }
    }
}

/// The report line for an access of `addr` from device code at `from` (without a newline).
pub fn describe(access: Access, addr: usize, from: usize, protected: &window::Protected) -> String {
    let target = match objects::symbol_at(&protected.objects, addr) {
        Some((s, path)) => {
            let what = if s.function { "host function" } else { "host variable" };
            let offset = addr - s.start;
            let at = if offset == 0 { String::new() } else { format!("+{offset:#x}") };
            format!("{what} `{}`{at} at {addr:#x} in {path}", s.name)
        }
        None => {
            let path = objects::object_at(&protected.objects, addr).map_or("the host program", |o| &o.path);
            format!("host address {addr:#x} in {path}")
        }
    };
    let scope = if protected.unified_shared_memory {
        " (under unified_shared_memory only the host program's code is guarded)"
    } else {
        ""
    };
    format!(
        "{PREFIX}{} {target} by device code at {}{scope}: the address is the host program's; on a GPU this faults",
        access.words(),
        location(from)
    )
}

/// How long a host thread that meets the protection waits for the kernels to finish before it
/// is reported.
const HOST_THREAD_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What the loaded objects say of code address `pc`: the path of the object holding it, and the
/// dynamic symbol covering it (or the nearest before it) with its address, if any.
///
/// Found with `dl_iterate_phdr` and the object's own dynamic symbol table in memory, not with
/// `dladdr`: `dladdr` takes the loader's lock, which a `dlopen` holds while it runs the new
/// object's constructors, and a constructor that meets the protection waits for the window to
/// close, which the kernel reporting here never lets happen (the report and the `dlopen` then
/// waited for each other for ever). `dl_iterate_phdr` takes only the lock of the list of
/// objects, held for the moment an object is added. An address in the host program (closed off
/// now) is named from the window's snapshot instead.
fn loaded_at(pc: usize) -> Option<(String, Option<(String, usize)>)> {
    if pc == 0 {
        return None;
    }
    if let Some(protected) = window::protected() {
        if let Some(object) = objects::object_at(&protected.objects, pc) {
            let symbol = objects::symbol_at(&protected.objects, pc).map(|(s, _)| (s.name.clone(), s.start));
            return Some((object.path.clone(), symbol));
        }
    }
    struct Search {
        pc: usize,
        found: Option<(String, Option<(String, usize)>)>,
    }
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for a loaded object, whose program headers
        // and mapped segments are readable, and `data` is the Search below.
        unsafe {
            let search = &mut *(data as *mut Search);
            let info = &*info;
            // A protected object's program headers are in its closed first segment: reading
            // them here would fault in the handler (its addresses were looked up above).
            let closed = window::protected()
                .is_some_and(|p| objects::object_at(&p.objects, info.dlpi_phdr as usize).is_some());
            if closed {
                return 0;
            }
            let base = info.dlpi_addr as usize;
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
            let holds = headers.iter().any(|h| {
                let start = base + h.p_vaddr as usize;
                h.p_type == libc::PT_LOAD && search.pc >= start && search.pc < start + h.p_memsz as usize
            });
            if !holds {
                return 0;
            }
            let name = if info.dlpi_name.is_null() {
                ""
            } else {
                CStr::from_ptr(info.dlpi_name).to_str().unwrap_or("")
            };
            let path = if name.is_empty() {
                std::fs::read_link("/proc/self/exe").map(|p| p.display().to_string()).unwrap_or_default()
            } else {
                name.to_string()
            };
            search.found = Some((path, dynamic_symbol(base, headers, search.pc)));
            1
        }
    }
    let mut search = Search { pc, found: None };
    // SAFETY: the callback reads only what dl_iterate_phdr hands it and writes the Search.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut search as *mut Search).cast()) };
    search.found
}

/// `Elf64_Dyn`.
#[repr(C)]
struct Dynamic {
    tag: i64,
    value: u64,
}

/// The dynamic symbol of the object loaded at `base` (with program headers `headers`) that
/// covers `pc`, or the nearest function before it.
///
/// # Safety
/// `base` and `headers` must be a loaded object's (from `dl_iterate_phdr`).
unsafe fn dynamic_symbol(base: usize, headers: &[libc::Elf64_Phdr], pc: usize) -> Option<(String, usize)> {
    const DT_NULL: i64 = 0;
    const DT_HASH: i64 = 4;
    const DT_STRTAB: i64 = 5;
    const DT_SYMTAB: i64 = 6;
    const DT_GNU_HASH: i64 = 0x6fff_fef5;
    // SAFETY: the object's dynamic section, symbol and string tables and hash tables are mapped
    // where its dynamic section says (the loader made its addresses absolute, or they are
    // offsets from `base`: both are handled).
    unsafe {
        let dynamic = headers.iter().find(|h| h.p_type == libc::PT_DYNAMIC)?;
        let at = |value: u64| if (value as usize) < base { base + value as usize } else { value as usize };
        let mut entry = (base + dynamic.p_vaddr as usize) as *const Dynamic;
        let (mut symbols, mut strings, mut hash, mut gnu_hash) = (0, 0, 0, 0);
        while (*entry).tag != DT_NULL {
            match (*entry).tag {
                DT_SYMTAB => symbols = at((*entry).value),
                DT_STRTAB => strings = at((*entry).value),
                DT_HASH => hash = at((*entry).value),
                DT_GNU_HASH => gnu_hash = at((*entry).value),
                _ => {}
            }
            entry = entry.add(1);
        }
        if symbols == 0 || strings == 0 {
            return None;
        }
        let count = if hash != 0 {
            *(hash as *const u32).add(1) as usize
        } else if gnu_hash != 0 {
            gnu_hash_symbol_count(gnu_hash)
        } else {
            return None;
        };
        let table = std::slice::from_raw_parts(symbols as *const libc::Elf64_Sym, count);
        let best = table
            .iter()
            .filter(|s| s.st_value != 0 && s.st_name != 0 && s.st_shndx != 0)
            .filter(|s| base + (s.st_value as usize) <= pc)
            .filter(|s| {
                s.st_size == 0 || pc < base + (s.st_value + s.st_size) as usize || s.st_info & 0xf == 2
            })
            .max_by_key(|s| s.st_value)?;
        let name = CStr::from_ptr((strings + best.st_name as usize) as *const libc::c_char);
        Some((name.to_string_lossy().into_owned(), base + best.st_value as usize))
    }
}

/// How many symbols a `DT_GNU_HASH` table at `table` covers: one past the last chain's end.
///
/// # Safety
/// `table` must be a loaded object's GNU hash table.
unsafe fn gnu_hash_symbol_count(table: usize) -> usize {
    // SAFETY: the table's header, bloom filter, buckets and chains, as its header sizes them.
    unsafe {
        let words = table as *const u32;
        let (buckets, first, bloom) = (*words as usize, *words.add(1) as usize, *words.add(2) as usize);
        let bucket_table = words.add(4 + bloom * 2);
        let chains = bucket_table.add(buckets);
        let last = (0..buckets).map(|i| *bucket_table.add(i) as usize).max().unwrap_or(0);
        if last < first {
            return first;
        }
        let mut index = last;
        while *chains.add(index - first) & 1 == 0 {
            index += 1;
        }
        index + 1
    }
}

/// The path of the loaded object holding `pc`.
fn object_path(pc: usize) -> Option<String> {
    loaded_at(pc).map(|(object, _)| object).filter(|o| !o.is_empty())
}

/// `symbol+offset (object)` of a code address, as the dynamic loader knows it.
fn location(pc: usize) -> String {
    match loaded_at(pc) {
        Some((object, Some((name, start)))) => format!("`{name}`+{:#x} ({object})", pc - start),
        Some((object, None)) => format!("{pc:#x} ({object})"),
        None => format!("{pc:#x}"),
    }
}

extern "C" fn handler(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo and ucontext to an SA_SIGINFO handler.
    let (addr, rip, rsp, error) = unsafe {
        let gregs = &(*(context as *mut libc::ucontext_t)).uc_mcontext.gregs;
        (
            (*info).si_addr() as usize,
            gregs[libc::REG_RIP as usize] as usize,
            gregs[libc::REG_RSP as usize] as usize,
            gregs[libc::REG_ERR as usize] as u64,
        )
    };
    if let Some(protected) = window::protected().filter(|_| window::is_open()) {
        let from_loader = protected.loader.iter().any(|&(start, end)| rip >= start && rip < end);
        if from_loader {
            let page = addr & !(objects::page_size() - 1);
            let already_counted = OPENED.with(|opened| opened.get().contains(&page));
            if let Some(page) = window::open_page_for_loader(addr, already_counted) {
                // Run the loader's one instruction with the page open, then close it again
                // (`step_done`): the trap flag stops the thread right after it.
                if !already_counted {
                    OPENED.with(|opened| {
                        let mut pages = opened.get();
                        if let Some(free) = pages.iter_mut().find(|p| **p == 0) {
                            *free = page;
                        }
                        opened.set(pages);
                    });
                }
                // SAFETY: the kernel passes a valid, writable ucontext to an SA_SIGINFO handler.
                unsafe {
                    (*(context as *mut libc::ucontext_t)).uc_mcontext.gregs[libc::REG_EFL as usize] |=
                        TRAP_FLAG
                };
                return;
            }
        }
        if objects::object_at(&protected.objects, addr).is_some() {
            let access = Access::of(addr, rip, error);
            // A call's fault is at the callee: the caller is the return address the call pushed
            // (the stack is never protected).
            // SAFETY: rsp is the faulting thread's stack pointer, readable.
            let from = if access == Access::Call { unsafe { *(rsp as *const usize) } } else { rip };
            // Protection is per process: a host thread that goes on with host work while another
            // thread's kernel runs meets it too (libomp running a `nowait` region's host task,
            // libomptarget reading the program's entries for the next region). Not running a
            // kernel, and not in device code (or called from it), it waits for the window to
            // close and goes on.
            if !window::this_thread_runs_a_kernel()
                && !object_path(from).is_some_and(|p| objects::is_device_image_path(&p))
                && window::wait_until_closed(HOST_THREAD_WAIT)
            {
                return;
            }
            // One report per process: threads of one region often meet the host program
            // together; the first reports and ends the process, the others wait for that.
            if STOPPING.swap(true, std::sync::atomic::Ordering::SeqCst) {
                loop {
                    // SAFETY: async-signal-safe; the reporting thread's _exit ends this one.
                    unsafe { libc::pause() };
                }
            }
            let mut line = describe(access, addr, from, protected);
            line.push('\n');
            // SAFETY: writing a buffer to stderr, then ending the process without running
            // anything of the host program (whose code is unreachable).
            unsafe {
                libc::write(2, line.as_ptr().cast(), line.len());
                libc::_exit(EXIT_STATUS);
            }
        }
    }
    // A fault on the host program that raced with the window's closing: the memory is open
    // again, so the instruction runs again; a page closed again for the loader just as the
    // window closed gets its protection back first. When the next window opened between the
    // check above and this one (kernels of `nowait` regions start and finish back to back), the
    // instruction runs again too: it meets that window and its fault is classified as one during
    // a window (a host thread waits, device code is reported), instead of falling through to the
    // default action below, which killed the process.
    if let Some(protected) = window::protected() {
        if objects::object_at(&protected.objects, addr).is_some() {
            if !window::is_open() {
                window::reopen_page(addr);
            }
            return;
        }
    }
    // Not ours: the program's own handler, or the default action when the instruction faults
    // again.
    // SAFETY: PREVIOUS was filled by `install` before this handler could run.
    let previous = unsafe { &*std::ptr::addr_of!(PREVIOUS).cast::<libc::sigaction>() };
    if !chain(previous, signal, info, context) {
        // SAFETY: restoring the default action of a signal.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}

/// Calls the handler `previous` installed for `signal`, if it installed one (not the default
/// action, not "ignore"). Returns whether it did.
fn chain(
    previous: &libc::sigaction,
    signal: c_int,
    info: *mut libc::siginfo_t,
    context: *mut c_void,
) -> bool {
    if previous.sa_sigaction == libc::SIG_DFL || previous.sa_sigaction == libc::SIG_IGN {
        return false;
    }
    // SAFETY: a handler sigaction returned, of the type its SA_SIGINFO flag says, called with
    // what the kernel passed this handler.
    unsafe {
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let chained: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                std::mem::transmute(previous.sa_sigaction);
            chained(signal, info, context);
        } else {
            let chained: extern "C" fn(c_int) = std::mem::transmute(previous.sa_sigaction);
            chained(signal);
        }
    }
    true
}

/// SIGTRAP: the loader's instruction that ran with pages opened for it is done; they are closed
/// again and the trap flag cleared. Any other SIGTRAP goes where it went before.
extern "C" fn step_done(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let pages = OPENED.with(|opened| opened.replace([0; 4]));
    if pages.iter().any(|&p| p != 0) {
        for page in pages.into_iter().filter(|&p| p != 0) {
            window::close_page(page);
        }
        // SAFETY: the kernel passes a valid, writable ucontext to an SA_SIGINFO handler.
        unsafe {
            (*(context as *mut libc::ucontext_t)).uc_mcontext.gregs[libc::REG_EFL as usize] &= !TRAP_FLAG
        };
        return;
    }
    // SAFETY: PREVIOUS_TRAP was filled by `install` before this handler could run.
    let previous = unsafe { &*std::ptr::addr_of!(PREVIOUS_TRAP).cast::<libc::sigaction>() };
    if !chain(previous, signal, info, context) && previous.sa_sigaction == libc::SIG_DFL {
        // The trap has been taken: the default action happens only if it is raised again.
        // SAFETY: restoring the default action of a signal and raising it.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_access_is_told_from_the_fault() {
        assert_eq!(Access::of(0x1000, 0x1000, 0x14), Access::Call);
        assert_eq!(Access::of(0x1000, 0x2000, 0x10), Access::Call, "instruction fetch bit");
        assert_eq!(Access::of(0x1000, 0x2000, 0x6), Access::Write);
        assert_eq!(Access::of(0x1000, 0x2000, 0x4), Access::Read);
    }
}
