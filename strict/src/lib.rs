//! `libomptarget-indirect-strict.so`: strict mode for the x86_64 host-offload device.
//!
//! On x86_64 host offload, device code runs in the host process: a host function's address
//! called by device code, or a host variable read through a pointer, simply works there, where a
//! GPU faults. `LD_PRELOAD=<lib>/libomptarget-indirect-strict.so ./prog` makes the host program's
//! own code and data (the executable and its non-system libraries: [`objects`]) unreachable
//! while device code runs, so that such a program stops with one line
//! (`omptarget-indirect strict: call of host function `f` ... on a GPU this faults`) and exit
//! status [`fault::EXIT_STATUS`].
//!
//! Where the window is opened (see `docs/strict.md`):
//! - clang 19 through libomptarget 16 and this project's plugin: the plugin calls each kernel
//!   through libffi's `ffi_call`, which this library interposes;
//! - clang 21 and later through their stock libomptarget, whose host plugin carries its own libffi: it looks each
//!   kernel up with `dlsym`, which this library interposes to hand back a trampoline
//!   ([`trampoline`]) around the kernel.
//!
//! Host threads' `write` and `fwrite` from the host program's memory are given a heap copy
//! ([`host_io`]): during a window the system call would fail with `EFAULT`, which a GPU never
//! does to a host thread.
//!
//! Nothing else changes: no region is slower outside kernels, and a program built for the x86_64
//! device needs no rebuild (one built only for a GPU needs `-fopenmp-targets=x86_64-pc-linux-gnu`).

#![feature(naked_functions)]

pub mod fault;
pub mod host_io;
pub mod objects;
mod requirements;
pub mod trampoline;
pub mod window;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Defined so that a program (or a test) can tell it runs on the strict device:
/// `dlsym(RTLD_DEFAULT, "omptarget_indirect_strict_mode") != NULL`. Its value is 1.
#[no_mangle]
pub static omptarget_indirect_strict_mode: u8 = 1;

/// `void *dlsym(void *, const char *)` of the C library.
type Dlsym = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// The C library's own `dlsym`.
fn real_dlsym() -> Dlsym {
    // SAFETY: the address is the C library's dlsym, of type `Dlsym`.
    unsafe { std::mem::transmute::<usize, Dlsym>(real_dlsym_address()) }
}

/// Whether this project's x86_64 plugin is loaded: it then launches kernels through `ffi_call`
/// and needs the real kernel addresses (it checks them against the image's symbols).
fn our_plugin_launches() -> bool {
    static OURS: OnceLock<bool> = OnceLock::new();
    *OURS.get_or_init(|| {
        // SAFETY: RTLD_NOLOAD only asks whether the library is loaded; the handle is released.
        let handle = unsafe {
            libc::dlopen(c"libomptarget.rtl.x86_64.so".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD)
        };
        if handle.is_null() {
            return false;
        }
        // SAFETY: a handle of dlopen's, closed once.
        unsafe { libc::dlclose(handle) };
        true
    })
}

/// The C library's `dlsym` (0 until first needed), found with `dlvsym`, which this library does
/// not interpose.
static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);

/// The C library's `dlsym`, found once; also called by the assembly below. Aborts if there is
/// none (no program could run).
extern "C" fn real_dlsym_address() -> usize {
    let known = REAL_DLSYM.load(Ordering::Acquire);
    if known != 0 {
        return known;
    }
    let found = [c"GLIBC_2.34", c"GLIBC_2.2.5"].iter().find_map(|version| {
        // SAFETY: valid C strings; RTLD_NEXT looks past this library.
        let f = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
        (!f.is_null()).then_some(f as usize)
    });
    let real = found.unwrap_or_else(|| std::process::abort());
    REAL_DLSYM.store(real, Ordering::Release);
    real
}

/// The interposed `dlsym`. `dlsym(RTLD_NEXT, name)` looks past the object that *called* it, which
/// glibc takes from the return address: those calls jump straight to the C library's `dlsym` with
/// the caller's return address in place (libomp asks `dlsym(RTLD_NEXT, "ompt_start_tool")`; a
/// call from here would find libomp's own again). Every other call goes to `strict_dlsym`.
///
/// # Safety
/// As `dlsym(3)`.
#[naked]
#[no_mangle]
pub unsafe extern "C" fn dlsym(_handle: *mut c_void, _name: *const c_char) -> *mut c_void {
    // SAFETY: a tail jump with the caller's registers and return address untouched, after
    // loading (once) the C library's dlsym with the argument registers saved around the call.
    unsafe {
        std::arch::naked_asm!(
            "cmp rdi, -1",
            "jne {other}",
            "mov rax, qword ptr [rip + {real}]",
            "test rax, rax",
            "jnz 2f",
            "push rdi",
            "push rsi",
            "sub rsp, 8",
            "call {init}",
            "add rsp, 8",
            "pop rsi",
            "pop rdi",
            "2:",
            "jmp rax",
            other = sym strict_dlsym,
            real = sym REAL_DLSYM,
            init = sym real_dlsym_address,
        )
    }
}

/// `dlsym` for every handle but `RTLD_NEXT`: the C library's, except that a kernel of a device
/// image looked up by an offload runtime that calls kernels itself (libomptarget 22) comes back
/// as a trampoline that opens the window.
///
/// # Safety
/// As `dlsym(3)`.
unsafe extern "C" fn strict_dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    let real = real_dlsym();
    // SAFETY: the caller's handle and name, valid as dlsym(3) requires (this function's contract);
    // the caller's identity matters only for RTLD_NEXT, which never comes here.
    let found = unsafe { real(handle, name) };
    if found.is_null() || name.is_null() || handle == libc::RTLD_DEFAULT {
        return found;
    }
    // SAFETY: a non-null name is the caller's C string.
    let is_entry = unsafe { CStr::from_ptr(name) }.to_bytes().starts_with(b"__omp_offloading_");
    if !is_entry || our_plugin_launches() {
        return found;
    }
    match kernel_image(found) {
        Some(base) => {
            window::note_device_image(base);
            trampoline::stub_for(found as usize).map_or(found, |stub| stub as *mut c_void)
        }
        None => found,
    }
}

/// glibc's `RTLD_DL_SYMENT`: `dladdr1` also returns the ELF symbol.
const RTLD_DL_SYMENT: c_int = 1;

/// The load base of the object defining the function at `addr`, if `addr` starts a function.
fn kernel_image(addr: *mut c_void) -> Option<usize> {
    // SAFETY: `Dl_info` is plain C data (pointers and integers), valid all zero.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let mut symbol: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid out-pointers; RTLD_DL_SYMENT stores the ELF symbol's address.
    let found = unsafe { libc::dladdr1(addr, &mut info, &mut symbol, RTLD_DL_SYMENT) };
    if found == 0 || symbol.is_null() || info.dli_saddr != addr {
        return None;
    }
    // SAFETY: with RTLD_DL_SYMENT the pointer is the object's Elf64_Sym.
    let kind = unsafe { (*(symbol as *const libc::Elf64_Sym)).st_info } & 0xf;
    (kind == object::elf::STT_FUNC).then_some(info.dli_fbase as usize)
}

/// `ffi_call` of libffi: `void ffi_call(ffi_cif *, void (*)(void), void *rvalue, void **avalue)`.
type FfiCall = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, *mut *mut c_void);

fn real_ffi_call() -> Option<FfiCall> {
    static REAL: OnceLock<Option<usize>> = OnceLock::new();
    let found = REAL.get_or_init(|| {
        // SAFETY: valid C strings; RTLD_NEXT looks past this library.
        let f = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"ffi_call".as_ptr(), c"LIBFFI_BASE_8.0".as_ptr()) };
        let f = if f.is_null() {
            // SAFETY: the C library's dlsym with valid arguments.
            unsafe { real_dlsym()(libc::RTLD_NEXT, c"ffi_call".as_ptr()) }
        } else {
            f
        };
        (!f.is_null()).then_some(f as usize)
    });
    // SAFETY: the address is libffi's ffi_call.
    found.map(|f| unsafe { std::mem::transmute::<usize, FfiCall>(f) })
}

/// The interposed `ffi_call`: this project's x86_64 plugin (libomptarget 16) calls each kernel
/// through it; the call runs inside the window.
///
/// # Safety
/// As libffi's `ffi_call`.
#[no_mangle]
pub unsafe extern "C" fn ffi_call(
    cif: *mut c_void,
    f: *mut c_void,
    rvalue: *mut c_void,
    avalue: *mut *mut c_void,
) {
    let Some(real) = real_ffi_call() else { std::process::abort() };
    if kernel_image(f).is_none() || !our_plugin_launches() {
        // SAFETY: the caller's arguments, valid as ffi_call(3) requires (this function's contract).
        return unsafe { real(cif, f, rvalue, avalue) };
    }
    fault::install();
    window::enter();
    // SAFETY: the caller's arguments, valid as ffi_call(3) requires (this function's contract).
    unsafe { real(cif, f, rvalue, avalue) };
    window::leave();
}
