//! What the x86_64 plugin needs to know of ELF: is it a shared object for x86_64, and how big
//! is a symbol the dynamic loader found.

use std::ffi::c_void;

use plugin_core::{PluginError, Result};

const EM_X86_64: u16 = 62;
const ET_DYN: u16 = 3;

/// Accepts a 64-bit little-endian x86_64 ELF shared object, or says what it is instead.
pub fn check_x86_64_shared_object(bytes: &[u8]) -> Result<()> {
    let bad = |why: String| Err(PluginError::InvalidImage(why));
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return bad("not an ELF file".into());
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return bad("not a 64-bit little-endian ELF file".into());
    }
    let e_type = u16::from_le_bytes([bytes[16], bytes[17]]);
    let e_machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    if e_machine != EM_X86_64 {
        return bad(format!("ELF machine {e_machine}, not x86_64 ({EM_X86_64})"));
    }
    if e_type != ET_DYN {
        return bad(format!("ELF type {e_type}, not a shared object ({ET_DYN})"));
    }
    Ok(())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn header(class: u8, e_type: u16, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = 1;
        h[16..18].copy_from_slice(&e_type.to_le_bytes());
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h
    }

    #[test]
    fn accepts_only_x86_64_shared_objects() {
        assert!(check_x86_64_shared_object(&header(2, ET_DYN, EM_X86_64)).is_ok());
        assert!(check_x86_64_shared_object(&header(2, 1, EM_X86_64)).is_err());
        assert!(check_x86_64_shared_object(&header(2, ET_DYN, 224)).unwrap_err().to_string().contains("224"));
        assert!(check_x86_64_shared_object(&header(1, ET_DYN, EM_X86_64)).is_err());
        assert!(check_x86_64_shared_object(b"\x7fELF").is_err());
        assert!(check_x86_64_shared_object(b"").is_err());
    }
}
