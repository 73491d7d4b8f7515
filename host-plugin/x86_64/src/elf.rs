//! What the x86_64 plugin asks the dynamic loader about a loaded image's symbols (the image
//! itself is checked before loading by `validate`).

use std::ffi::c_void;

#[repr(C)]
struct Elf64Sym {
    st_name: u32,
    st_info: u8,
    st_other: u8,
    st_shndx: u16,
    st_value: u64,
    st_size: u64,
}

const RTLD_DL_SYMENT: libc::c_int = 1;

extern "C" {
    // glibc: like dladdr, and with RTLD_DL_SYMENT also the ELF symbol table entry.
    fn dladdr1(
        addr: *const c_void,
        info: *mut libc::Dl_info,
        extra: *mut *mut c_void,
        flags: libc::c_int,
    ) -> libc::c_int;
}

/// `STT_OBJECT`: a data object.
pub const STT_OBJECT: u8 = 1;
/// `STT_FUNC`: a function.
pub const STT_FUNC: u8 = 2;

/// What the dynamic loader knows of the symbol at `addr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSymbol {
    /// `ELF64_ST_TYPE(st_info)`.
    pub kind: u8,
    /// `st_size`.
    pub size: u64,
    /// The path of the object that defines it (`dli_fname`), as it was loaded.
    pub object: std::ffi::CString,
}

/// The symbol that starts exactly at `addr` in a loaded object, if the loader knows one.
pub fn symbol_at(addr: *mut c_void) -> Option<LoadedSymbol> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let mut sym: *mut c_void = std::ptr::null_mut();
    // SAFETY: out-pointers are valid; dladdr1 only reads the loader's tables.
    let found = unsafe { dladdr1(addr, info.as_mut_ptr(), &mut sym, RTLD_DL_SYMENT) };
    if found == 0 || sym.is_null() {
        return None;
    }
    // SAFETY: dladdr1 succeeded, so `info` is filled.
    let info = unsafe { info.assume_init() };
    if info.dli_saddr != addr {
        return None;
    }
    // SAFETY: with RTLD_DL_SYMENT, `sym` points to the object's Elf64_Sym for `addr`.
    let sym = unsafe { &*(sym as *const Elf64Sym) };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a non-null dli_fname is the loaded object's NUL-terminated name.
    let object = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_owned();
    Some(LoadedSymbol { kind: sym.st_info & 0xf, size: sym.st_size, object })
}
