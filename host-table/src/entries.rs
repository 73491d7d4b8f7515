//! The host's offload entries of an image, in either layout clang emits:
//! - legacy (clang 16-19, libomptarget 16): `{void *addr; char *name; size_t size; int32_t flags;
//!   int32_t reserved}`, 32 bytes;
//! - v1 (LLVM 20+): `{u64 reserved = 0; u16 version = 1; u16 kind; u32 flags; void *addr;
//!   char *name; u64 size; u64 data; void *aux_addr}`, 56 bytes.
//!
//! The first words tell them apart: an address in the legacy form (0 only for a requirement
//! entry), 0 and version 1 in v1.

use crate::error::{PluginError, Result};
use crate::rtl_interface::{
    TgtDeviceImage, OMP_DECLARE_TARGET_INDIRECT, OMP_DECLARE_TARGET_INDIRECT_VTABLE, OMP_REGISTER_REQUIRES,
};

use crate::rtl_interface::{LEGACY_ENTRY_SIZE, V1_ENTRY_SIZE};
/// Longest symbol name accepted; a longer one means the name pointer is garbage.
pub const MAX_NAME_LEN: usize = 4096;

/// One offload entry, layout-independent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadEntry {
    /// Host address of the function or global.
    pub addr: u64,
    /// Symbol name in the device image.
    pub name: String,
    /// 0 for a kernel, the size in bytes for a global.
    pub size: u64,
    /// `OMP_DECLARE_TARGET_*` flags.
    pub flags: u32,
    /// The legacy layout's `reserved` word (clang 19 puts a requirement's `OMP_REQ_*` flags
    /// there), the v1 layout's `data`.
    pub data: u64,
}

/// What an entry stands for, decided as libomptarget does: by its flags first, then its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// `#pragma omp requires` (flag `OMP_REGISTER_REQUIRES`, clang 18+): no device symbol; the
    /// `OMP_REQ_*` flags are in `data`.
    Requirement(u64),
    /// A kernel (size 0), including clang's constructor and destructor kernels.
    Kernel,
    /// A `declare target indirect` function: its device global (8 bytes) holds the device
    /// function's address.
    Indirect,
    /// A global variable, a `link` variable's reference pointer or (clang 22) a vtable.
    Global,
}

impl OffloadEntry {
    /// What the entry stands for.
    pub fn kind(&self) -> EntryKind {
        if self.flags & OMP_REGISTER_REQUIRES != 0 {
            EntryKind::Requirement(self.data)
        } else if self.size == 0 {
            EntryKind::Kernel
        } else if self.flags & OMP_DECLARE_TARGET_INDIRECT != 0
            && self.flags & OMP_DECLARE_TARGET_INDIRECT_VTABLE == 0
            && self.size == 8
        {
            EntryKind::Indirect
        } else {
            EntryKind::Global
        }
    }

    /// A `declare target indirect` function ([`EntryKind::Indirect`]).
    pub fn is_indirect(&self) -> bool {
        self.kind() == EntryKind::Indirect
    }
}

/// Parses the entry array `bytes`; `name_at` reads the NUL-terminated name at an address.
pub fn parse(bytes: &[u8], name_at: impl Fn(u64) -> Result<String>) -> Result<Vec<OffloadEntry>> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let word = |entry: &[u8], at: usize| u64::from_le_bytes(entry[at..at + 8].try_into().expect("8 bytes"));
    // A legacy requirement entry has address 0 too: v1 needs its version word as well.
    let v1 = bytes.len() >= 10 && word(bytes, 0) == 0 && bytes[8..10] == [1, 0];
    let stride = if v1 { V1_ENTRY_SIZE } else { LEGACY_ENTRY_SIZE };
    if bytes.len() % stride != 0 {
        return Err(PluginError::InvalidImage(format!(
            "offload entry table of {} bytes is not a whole number of {}-byte {} entries",
            bytes.len(),
            stride,
            if v1 { "v1" } else { "legacy" }
        )));
    }
    bytes
        .chunks_exact(stride)
        .enumerate()
        .map(|(index, entry)| {
            let (addr, name_ptr, size, flags, data) = if v1 {
                let version = u16::from_le_bytes([entry[8], entry[9]]);
                if word(entry, 0) != 0 || version != 1 {
                    return Err(PluginError::InvalidImage(format!(
                        "offload entry {index}: unknown entry version {version}"
                    )));
                }
                let flags = u32::from_le_bytes(entry[12..16].try_into().expect("4 bytes"));
                (word(entry, 16), word(entry, 24), word(entry, 32), flags, word(entry, 40))
            } else {
                let flags = u32::from_le_bytes(entry[24..28].try_into().expect("4 bytes"));
                let reserved = u32::from_le_bytes(entry[28..32].try_into().expect("4 bytes"));
                (word(entry, 0), word(entry, 8), word(entry, 16), flags, u64::from(reserved))
            };
            if name_ptr == 0 {
                return Err(PluginError::InvalidImage(format!("offload entry {index} has no name")));
            }
            let name = name_at(name_ptr)
                .map_err(|e| PluginError::InvalidImage(format!("offload entry {index}: {e}")))?;
            Ok(OffloadEntry { addr, name, size, flags, data })
        })
        .collect()
}

/// Reads the entries of `image` from host memory.
///
/// # Safety
/// `image.entries_begin..image.entries_end` must be readable host memory (or both null), and
/// each entry's name pointer must point to a readable NUL-terminated string.
pub unsafe fn of_image(image: &TgtDeviceImage) -> Result<Vec<OffloadEntry>> {
    let (begin, end) = (image.entries_begin as usize, image.entries_end as usize);
    if begin == 0 && end == 0 {
        return Ok(Vec::new());
    }
    if begin == 0 || end < begin {
        return Err(PluginError::InvalidImage(format!("bad entry range {begin:#x}..{end:#x}")));
    }
    // SAFETY: the caller guarantees the range is readable.
    let bytes = unsafe { std::slice::from_raw_parts(begin as *const u8, end - begin) };
    parse(bytes, |ptr| {
        // SAFETY: the caller guarantees names are readable C strings; the scan stops at
        // MAX_NAME_LEN bytes in any case.
        unsafe { read_c_string(ptr as *const u8) }
    })
}

/// Reads a NUL-terminated UTF-8 string of at most [`MAX_NAME_LEN`] bytes.
///
/// # Safety
/// `ptr` must be readable up to its NUL or `MAX_NAME_LEN` bytes, whichever comes first.
unsafe fn read_c_string(ptr: *const u8) -> Result<String> {
    let mut bytes = Vec::new();
    for i in 0..MAX_NAME_LEN {
        // SAFETY: within the bound the caller guarantees.
        let b = unsafe { ptr.add(i).read() };
        if b == 0 {
            return String::from_utf8(bytes)
                .map_err(|_| PluginError::InvalidImage("entry name is not UTF-8".into()));
        }
        bytes.push(b);
    }
    Err(PluginError::InvalidImage(format!("entry name longer than {MAX_NAME_LEN} bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(ptr: u64) -> Result<String> {
        Ok(format!("sym{ptr}"))
    }

    fn legacy(addr: u64, name: u64, size: u64, flags: u32) -> Vec<u8> {
        let mut e = Vec::new();
        for v in [addr, name, size] {
            e.extend_from_slice(&v.to_le_bytes());
        }
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(&0u32.to_le_bytes());
        e
    }

    fn v1(addr: u64, name: u64, size: u64, flags: u32) -> Vec<u8> {
        let mut e = vec![0u8; 8];
        e.extend_from_slice(&1u16.to_le_bytes());
        e.extend_from_slice(&1u16.to_le_bytes());
        e.extend_from_slice(&flags.to_le_bytes());
        for v in [addr, name, size, 0, 0] {
            e.extend_from_slice(&v.to_le_bytes());
        }
        e
    }

    #[test]
    fn both_layouts_parse_to_the_same_entries() {
        let want = vec![
            OffloadEntry { addr: 0x1000, name: "sym1".into(), size: 0, flags: 0, data: 0 },
            OffloadEntry { addr: 0x2000, name: "sym2".into(), size: 8, flags: 8, data: 0 },
        ];
        let old = [legacy(0x1000, 1, 0, 0), legacy(0x2000, 2, 8, 8)].concat();
        let new = [v1(0x1000, 1, 0, 0), v1(0x2000, 2, 8, 8)].concat();
        assert_eq!(parse(&old, names).unwrap(), want);
        assert_eq!(parse(&new, names).unwrap(), want);
        assert!(!want[0].is_indirect());
        assert!(want[1].is_indirect());
    }

    #[test]
    fn indirect_needs_flag_and_size_8() {
        let e = |size, flags| OffloadEntry { addr: 1, name: String::new(), size, flags, data: 0 };
        assert!(e(8, 0x08).is_indirect());
        assert!(e(8, 0x09).is_indirect());
        assert!(!e(0, 0x08).is_indirect());
        assert!(!e(4, 0x08).is_indirect());
        assert!(!e(8, 0x01).is_indirect());
    }

    #[test]
    fn every_entry_kind_clang_emits_is_told_apart() {
        let e = |size, flags, data| OffloadEntry { addr: 1, name: String::new(), size, flags, data };
        // clang 19's `requires unified_shared_memory`: address 0, empty name, size 0.
        assert_eq!(e(0, 0x10, 0x8).kind(), EntryKind::Requirement(0x8));
        assert_eq!(e(0, 0, 0).kind(), EntryKind::Kernel);
        assert_eq!(e(0, 0x02, 0).kind(), EntryKind::Kernel, "constructor kernel");
        assert_eq!(e(0, 0x04, 0).kind(), EntryKind::Kernel, "destructor kernel");
        assert_eq!(e(8, 0x08, 0).kind(), EntryKind::Indirect);
        assert_eq!(e(4, 0x00, 0).kind(), EntryKind::Global);
        assert_eq!(e(8, 0x01, 0).kind(), EntryKind::Global, "link variable's reference pointer");
        assert_eq!(e(8, 0x09, 0).kind(), EntryKind::Indirect);
        assert_eq!(e(8, 0x20, 0).kind(), EntryKind::Global, "clang 22 vtable");
        assert_eq!(e(8, 0x28, 0).kind(), EntryKind::Global, "an indirect vtable is no function");
        // The requirement's flags come from the legacy entry's reserved word and v1's data.
        let mut legacy_requires = legacy(0, 0x2081, 0, 0x10);
        legacy_requires[28..32].copy_from_slice(&0x8u32.to_le_bytes());
        assert_eq!(parse(&legacy_requires, names).unwrap()[0].kind(), EntryKind::Requirement(0x8));
        let mut v1_requires = v1(0, 1, 0, 0x10);
        v1_requires[40..48].copy_from_slice(&0x8u64.to_le_bytes());
        assert_eq!(parse(&v1_requires, names).unwrap()[0].kind(), EntryKind::Requirement(0x8));
    }

    #[test]
    fn truncated_tables_and_null_names_are_errors() {
        let old = [legacy(0x1000, 1, 0, 0), legacy(0x2000, 2, 8, 8)].concat();
        for len in 1..old.len() {
            if len % LEGACY_ENTRY_SIZE != 0 {
                assert!(parse(&old[..len], names).is_err(), "legacy cut at {len}");
            }
        }
        let new = [v1(0x1000, 1, 0, 0), v1(0x2000, 2, 8, 8)].concat();
        for len in 1..new.len() {
            if len % V1_ENTRY_SIZE != 0 {
                assert!(parse(&new[..len], names).is_err(), "v1 cut at {len}");
            }
        }
        assert!(parse(&legacy(0x1000, 0, 0, 0), names).is_err());
        let mut bad_version = v1(0x1000, 1, 0, 0);
        bad_version[8] = 7;
        assert!(parse(&bad_version, names).is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse(&bytes, names);
        }
    }
}
