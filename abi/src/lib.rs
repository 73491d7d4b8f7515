//! The byte layouts the project shares between the device library, the host plugins and LLVM's
//! runtime, as plain `#[repr(C)]` types with size and offset assertions.
//!
//! This crate holds no code that runs on a device and exports no symbol: the plugins depend on it
//! instead of on the device library, so that no plugin exports (and no program or device image
//! binds to) a copy of the device library's globals or functions.
//!
//! ```c
//! struct __omp_offloading_fptr_map_ty { int64_t host_ptr; int64_t tgt_ptr; };   // FptrMapEntry
//! struct __omp_offloading_fptr_index_ty { ... };                                 // FptrIndex
//! struct DeviceEnvironmentTy { ... };                                            // DeviceEnvironment
//! ```
#![no_std]
#![deny(missing_docs)]

pub mod fortran;
pub mod host_calls;
pub mod map_type;

pub use host_calls::{HostCalls, RangeList};

/// One entry of the function-pointer map: `struct __omp_offloading_fptr_map_ty { int64_t
/// host_ptr; int64_t tgt_ptr; }` (16 bytes, 8-aligned).
///
/// Addresses are compared as unsigned 64-bit integers, the order in which the plugin (and LLVM's
/// `setupIndirectCallTable`) sorts them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FptrMapEntry {
    /// Address of the host version of the function: the key.
    pub host_ptr: u64,
    /// Address of the device version of the same function: the value.
    pub tgt_ptr: u64,
}

const _: () = assert!(core::mem::size_of::<FptrMapEntry>() == 16);
const _: () = assert!(core::mem::align_of::<FptrMapEntry>() == 8);

/// One slot of the index: an entry of the table, or empty (`host_ptr == 0`: key 0 is never
/// translated). 16-aligned so a probe is one 16-byte load of key and value together.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexSlot {
    /// The key, or 0 for an empty slot.
    pub host_ptr: u64,
    /// The value.
    pub tgt_ptr: u64,
}

const _: () = assert!(core::mem::size_of::<IndexSlot>() == 16);
const _: () = assert!(core::mem::align_of::<IndexSlot>() == 16);

/// The fewest keys for which the hosts give a table for the x86_64 device a hash index
/// ([`FptrIndex`]): below, the x86_64 device library scans the table, which answers a hit
/// sooner (a latency of 1.5 to 5 ns against a fixed chain of about 7 ns through the index;
/// `cargo xtask bench lookup`). GPUs get an index for every table.
pub const HOST_DEVICE_MIN_INDEXED_KEYS: usize = 4;

/// `__omp_offloading_fptr_index`: a linear-probing hash table over the installed table.
///
/// Key `k` lives in the first slot at or after `bucket(k)` (wrapping at the capacity) that holds
/// it, with no empty slot in between; at least one slot is empty. All zero (the global's initial
/// value) means no index.
///
/// ```c
/// struct __omp_offloading_fptr_index_ty {
///   uint64_t table;       // the __omp_offloading_fptr_map_p this index was built from, or 0
///   uint64_t slots;       // device address of (UINT32_MAX >> shift) + 1 slots {host, tgt}
///   uint64_t multiplier;  // bucket(k) = (uint32_t)((k * multiplier mod 2^64) >> 32) >> shift
///   uint64_t first, last; // the table's smallest and largest key
///   uint32_t shift;       // 1..=31: the capacity is 2^(32 - shift)
///   uint32_t reserved;    // 0
/// };
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FptrIndex {
    /// Device address of the sorted table this index was built from; 0 for no index.
    pub table: u64,
    /// Device address of the [`IndexSlot`]s (16-aligned).
    pub slots: u64,
    /// Odd multiplier of the multiplicative hash.
    pub multiplier: u64,
    /// Smallest key of the table.
    pub first: u64,
    /// Largest key of the table.
    pub last: u64,
    /// Right shift of the hash's 32 bits: `32 - log2(capacity)`, in `1..=31`.
    pub shift: u32,
    /// Zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<FptrIndex>() == 48);
const _: () = assert!(core::mem::align_of::<FptrIndex>() == 8);

impl FptrIndex {
    /// The all-zero index, which describes no table: the global's initial value.
    pub const NONE: FptrIndex =
        FptrIndex { table: 0, slots: 0, multiplier: 0, first: 0, last: 0, shift: 0, reserved: 0 };

    /// Number of slots minus one: `2^(32 - shift) - 1`.
    #[inline(always)]
    pub const fn mask(&self) -> u32 {
        u32::MAX.wrapping_shr(self.shift)
    }

    /// The slot where the probe for `key` starts: the top `32 - shift` bits of the upper half
    /// of `key * multiplier`'s low 64 bits (Fibonacci hashing: consecutive and evenly spaced
    /// addresses spread out).
    #[inline(always)]
    pub const fn bucket(&self, key: u64) -> u32 {
        ((key.wrapping_mul(self.multiplier) >> 32) as u32).wrapping_shr(self.shift)
    }

    /// The address of `key`'s bucket: `slots + 16 * bucket(key)` (wrapping, so that it can be
    /// computed before anything says the index is valid).
    #[inline(always)]
    pub const fn slot_address(&self, key: u64) -> u64 {
        self.slots.wrapping_add(16 * self.bucket(key) as u64)
    }

    /// Whether this index was built from the table at `table` (a non-null device address).
    #[inline(always)]
    pub fn describes(&self, table: u64) -> bool {
        self.table == table
    }
}

/// `DeviceEnvironmentTy` of LLVM 19-22 (48 bytes; LLVM 18's lacks the last field, clang 16's is
/// the first 16 bytes): the DeviceRTL's configuration, which the plugins write when they load an
/// image, and the copy of the function-pointer table that LLVM's runtimes install for
/// `__llvm_omp_indirect_call_lookup`. The table's address is an integer, as LLVM's `uintptr_t
/// IndirectCallTable` is: the whole is plain bytes the host writes and the device library reads.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceEnvironment {
    /// `DeviceDebugKind` (0: no device-side debugging).
    pub debug_kind: u32,
    /// `NumDevices`.
    pub num_devices: u32,
    /// `DeviceNum`.
    pub device_num: u32,
    /// `DynamicMemSize`: bytes of dynamic shared memory for `omp_alloc` in a team.
    pub dynamic_mem_size: u32,
    /// `ClockFrequency` in Hz.
    pub clock_frequency: u64,
    /// `IndirectCallTable`: device address of the runtime's [`FptrMapEntry`] table sorted by
    /// `host_ptr`, or 0.
    pub indirect_call_table: u64,
    /// `IndirectCallTableSize`: entries at `indirect_call_table`.
    pub indirect_call_table_size: u64,
    /// `HardwareParallelism`: warps the device runs at once.
    pub hardware_parallelism: u64,
}

/// Bytes of clang 16's `DeviceEnvironmentTy`: the four `u32` fields only.
pub const DEVICE_ENVIRONMENT_V16_SIZE: usize = 16;
/// Bytes of the `DeviceEnvironmentTy` of LLVM 19 and later.
pub const DEVICE_ENVIRONMENT_V19_SIZE: usize = 48;

const _: () = assert!(core::mem::size_of::<DeviceEnvironment>() == DEVICE_ENVIRONMENT_V19_SIZE);
const _: () =
    assert!(core::mem::offset_of!(DeviceEnvironment, dynamic_mem_size) + 4 == DEVICE_ENVIRONMENT_V16_SIZE);
const _: () = assert!(core::mem::offset_of!(DeviceEnvironment, clock_frequency) == 16);
const _: () = assert!(core::mem::offset_of!(DeviceEnvironment, indirect_call_table) == 24);
const _: () = assert!(core::mem::offset_of!(DeviceEnvironment, indirect_call_table_size) == 32);
const _: () = assert!(core::mem::offset_of!(DeviceEnvironment, hardware_parallelism) == 40);

impl DeviceEnvironment {
    /// All zero: no table (the initial value of the weak x86_64 definition).
    pub const EMPTY: DeviceEnvironment = DeviceEnvironment {
        debug_kind: 0,
        num_devices: 0,
        device_num: 0,
        dynamic_mem_size: 0,
        clock_frequency: 0,
        indirect_call_table: 0,
        indirect_call_table_size: 0,
        hardware_parallelism: 0,
    };
}

// SAFETY: each type is `#[repr(C)]` of unsigned integers only, with no padding (the size
// assertions above equal the sum of the fields), and every bit pattern is a valid value.
#[cfg(feature = "bytemuck")]
mod pod {
    use super::{DeviceEnvironment, FptrIndex, FptrMapEntry, HostCalls, IndexSlot};

    // SAFETY: see the module comment.
    unsafe impl bytemuck::Zeroable for FptrMapEntry {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Pod for FptrMapEntry {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Zeroable for IndexSlot {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Pod for IndexSlot {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Zeroable for FptrIndex {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Pod for FptrIndex {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Zeroable for DeviceEnvironment {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Pod for DeviceEnvironment {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Zeroable for HostCalls {}
    // SAFETY: see the module comment.
    unsafe impl bytemuck::Pod for HostCalls {}
}

/// Defines each symbol name once as text, and in [`c_names`] NUL-terminated for C APIs.
macro_rules! symbol_names {
    ($($(#[$doc:meta])* $name:ident = $text:literal;)*) => {
        $($(#[$doc])* pub const $name: &str = $text;)*
        /// The symbol names of the crate root, NUL-terminated (LLVM's and the loaders' C APIs).
        pub mod c_names {
            use core::ffi::CStr;
            $($(#[$doc])* pub const $name: &CStr = match CStr::from_bytes_with_nul(concat!($text, "\0").as_bytes()) {
                Ok(name) => name,
                Err(_) => panic!("a symbol name holds no NUL"),
            };)*
        }
    };
}

symbol_names! {
    /// The device library's translation: `void *__kmpc_target_translate_fptr(void *)`.
    TRANSLATE = "__kmpc_target_translate_fptr";
    /// LLVM's spelling of the same lookup (its DeviceRTL's on GPUs; the device library's on x86_64).
    LLVM_LOOKUP = "__llvm_omp_indirect_call_lookup";
    /// The device global holding the installed table's device address.
    FPTR_MAP_P = "__omp_offloading_fptr_map_p";
    /// The device global holding the installed table's length.
    FPTR_MAP_SIZE = "__omp_offloading_fptr_map_size";
    /// The device global describing the hash index over the table ([`FptrIndex`], 48 bytes);
    /// this project's device library only.
    FPTR_INDEX = "__omp_offloading_fptr_index";
    /// LLVM's device environment ([`DeviceEnvironment`]), where LLVM 18+ runtimes install their
    /// table: defined by LLVM's DeviceRTL on GPUs, weakly by the device library on x86_64.
    DEVICE_ENVIRONMENT = "__omp_rtl_device_environment";
    /// The x86_64 device library's `dynamic_cast`: the C++ runtime's `__dynamic_cast` (same
    /// signature and result) with every vtable pointer it reads translated. The pass plugin calls
    /// it in place of `__dynamic_cast` in device code that has RTTI.
    DYNAMIC_CAST = "__omptarget_indirect_dynamic_cast";
    /// The C++ runtime's `dynamic_cast` (Itanium ABI 2.9.7), which clang calls for a cast to a
    /// pointer or reference of class type.
    CXX_DYNAMIC_CAST = "__dynamic_cast";
    /// The device library's `same_type_as`: flang's runtime function of the same signature and
    /// result, reading the type descriptors through the translation. The pass plugin calls it in
    /// place of [`FLANG_SAME_TYPE_AS`] in device code.
    SAME_TYPE_AS = "__omptarget_indirect_same_type_as";
    /// flang's runtime `same_type_as`: `bool (const Descriptor &a, const Descriptor &b)`.
    FLANG_SAME_TYPE_AS = "_FortranASameTypeAs";
    /// The device library's `extends_type_of`, as [`SAME_TYPE_AS`] for [`FLANG_EXTENDS_TYPE_OF`].
    EXTENDS_TYPE_OF = "__omptarget_indirect_extends_type_of";
    /// flang's runtime `extends_type_of`: `bool (const Descriptor &a, const Descriptor &mold)`.
    FLANG_EXTENDS_TYPE_OF = "_FortranAExtendsTypeOf";
    /// The registration library's mapper of a polymorphic Fortran object, with a mapper's
    /// signature (`void (void *handle, void *base, void *begin, int64_t size, int64_t type, void
    /// *name)`) and the object's descriptor for `base`: it maps the object's dynamic type's
    /// components, its allocatable components' data with them. The pass plugin gives it to the
    /// map entries of polymorphic objects in flang's host modules.
    MAP_POLYMORPHIC = "__omptarget_indirect_map_polymorphic";
    /// libomptarget's `void __tgt_push_mapper_component(void *handle, void *base, void *begin,
    /// int64_t size, int64_t type, void *name)`: a mapper's one component.
    PUSH_MAPPER_COMPONENT = "__tgt_push_mapper_component";
    /// libomptarget's `int64_t __tgt_mapper_num_components(void *handle)`: the components pushed
    /// so far.
    MAPPER_NUM_COMPONENTS = "__tgt_mapper_num_components";
    /// The device global through which the host sets up the check of calls into host code
    /// ([`HostCalls`], 160 bytes); this project's device library only.
    HOST_CALLS = "__omptarget_indirect_host_calls";
}

/// Whether `name` is a dispatch table the host and the device each define and pair word by word
/// ([`VTABLE_WORD_PREFIX`]): a C++ vtable or construction vtable (`_ZTV*`, `_ZTC*`), or the type
/// descriptor flang defines for a Fortran derived type (`_QM<module>EXdtX<type>`, or `_QF...`
/// for a type declared in a procedure), whose first word leads to the type's binding table.
pub fn is_dispatch_table(name: &[u8]) -> bool {
    name.starts_with(b"_ZTV") || name.starts_with(b"_ZTC") || is_fortran_type_descriptor(name)
}

/// Whether `name` is flang's type descriptor of a derived type: `_Q` (flang's prefix), a scope,
/// then `EXdtX` and the type's name.
pub fn is_fortran_type_descriptor(name: &[u8]) -> bool {
    const MARK: &[u8] = b"EXdtX";
    name.starts_with(b"_Q")
        && name
            .windows(MARK.len())
            .position(|w| w == MARK)
            .is_some_and(|at| at > 2 && at + MARK.len() < name.len())
}

/// Prefix of the device globals through which the host learns where the device keeps each word
/// of a dispatch table ([`is_dispatch_table`]). The pass plugin defines, in every device module,
/// for every word `k` (byte offset `8 * k`) of every vtable, construction vtable or Fortran type
/// descriptor the module defines with external linkage, a constant 8-byte global
/// `<prefix><k>_<table symbol>` that holds the device address of that word. The plugins pair it with the same word of the host's vtable of
/// the same name, so that a vtable pointer a host-built object carries (any address point,
/// primary or secondary) translates like a function address.
pub const VTABLE_WORD_PREFIX: &str = "__omptarget_indirect_vtable_";

/// The stem of the stub the pass plugin puts in a Fortran binding slot whose procedure has no
/// device copy: the stub is named `<stem>.<type>.<binding>` (NVPTX spells the dots `_$_`), and the
/// GPU image checks tell such slots by it.
pub const UNBOUND_BINDING_STUB: &str = "__omptarget_indirect_unbound";

/// Vendor compilers built on LLVM, by what their `clang --version` prints on its first line (in
/// `clang::getClangFullVersion()`): (the text, matched anywhere in the line; the vendor's name
/// for messages). Their patches and runtimes are their own: the install refuses them by name
/// (`packaging`'s `llvm_identity`), and the frontend plugin stays inactive in them (its build
/// passes the texts to the C++ source).
pub const VENDOR_COMPILERS: [(&str, &str); 5] = [
    ("AOMP", "AMD's AOMP"),
    ("AMD clang", "ROCm's LLVM (amdclang)"),
    ("Cray clang", "Cray CCE"),
    ("Intel(R)", "Intel's oneAPI compiler (icx)"),
    ("Apple clang", "Apple's clang"),
];

/// Name prefixes of the OpenMP runtime's own functions (libomp's, libomptarget's, the GPU
/// DeviceRTL's): never the program's. The pass plugin leaves the indirect calls in them alone and
/// takes them as defined on every device; the frontend plugin takes a body-less `extern "C"`
/// declaration of such a name as the runtime's (its build passes this list to the C++ source).
/// The program's kernels and outlined regions (`__omp_offloading_*`, `__omp_outlined*`) are not
/// the runtime's: [`is_openmp_runtime_function`].
pub const OPENMP_RUNTIME_PREFIXES: [&str; 7] =
    ["__kmpc_", "__llvm_omp_", "__omp_", "__tgt_", "omp_", "ompx_", "_ZN4ompx"];

/// Whether `name` is a function of the OpenMP runtime ([`OPENMP_RUNTIME_PREFIXES`]) rather than
/// of the program (its kernels and outlined regions start `__omp_offloading_`, `__omp_outlined`).
pub fn is_openmp_runtime_function(name: &[u8]) -> bool {
    if name.starts_with(b"__omp_offloading_") || name.starts_with(b"__omp_outlined") {
        return false;
    }
    OPENMP_RUNTIME_PREFIXES.iter().any(|prefix| name.starts_with(prefix.as_bytes()))
}

/// Whether a loaded object's path (as the dynamic loader names it) is an x86_64 device image
/// rather than a part of the host program: this project's x86_64 plugin loads images from memory
/// files (`/proc/self/fd/N`, `/memfd:`), libomptarget 22 from `/tmp/tmpfile_XXXXXX`, libomptarget
/// 23 from `/tmp/tmpfile-XXXXXX.tmp`.
pub fn is_device_image_path(path: &str) -> bool {
    path.starts_with("/proc/self/fd/")
        || path.starts_with("/memfd:")
        || path
            .rsplit('/')
            .next()
            .is_some_and(|file| file.starts_with("tmpfile_") || file.starts_with("tmpfile-"))
}

/// The word index and the vtable symbol a [`VTABLE_WORD_PREFIX`] global names, or None when
/// `name` is not such a global (no prefix, no decimal index, no `_`, or a name that is no
/// dispatch table's: [`is_dispatch_table`]).
pub fn vtable_word(name: &str) -> Option<(u64, &str)> {
    let rest = name.strip_prefix(VTABLE_WORD_PREFIX)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let vtable = rest[digits..].strip_prefix('_')?;
    if digits == 0 || digits > 9 || !is_dispatch_table(vtable.as_bytes()) {
        return None;
    }
    Some((rest[..digits].parse().ok()?, vtable))
}

/// The name of the [`VTABLE_WORD_PREFIX`] global of word `index` of `vtable`, into `out`
/// (no allocation: `core::fmt::Write`).
pub fn write_vtable_word(out: &mut impl core::fmt::Write, index: u64, vtable: &str) -> core::fmt::Result {
    write!(out, "{VTABLE_WORD_PREFIX}{index}_{vtable}")
}

/// The section in which host compiles (the pass plugin, in host modules of OpenMP programs) record
/// where each vtable and construction vtable they define with external linkage is, so that the
/// host side pairs vtables without symbol names: stripped executables, `-fvisibility=hidden`,
/// shared libraries. Allocated (the loader applies its relocations) and retained
/// (`SHF_GNU_RETAIN`); the linker concatenates every object's records, 8-aligned, zero padding
/// between them. Found through the loaded object's section headers (which `strip` keeps) and read
/// from memory.
pub const HOST_VTABLES_SECTION: &str = "omptarget_indirect_vtables";

/// A zero 8-byte global that every device module compiled with the pass plugin defines, and that
/// each host object recording vtables ([`HOST_VTABLES_SECTION`]) gives an offload entry (flags 0,
/// size 8, one per shared object: hidden, in a COMDAT group). libomptarget loads no image whose
/// program or library registers no entry: a class library with no OpenMP in it has none of its
/// own, yet its image holds the device copies of its classes.
pub const IMAGE_ANCHOR: &str = "__omptarget_indirect_image_anchor";

/// First word of a [`HostVtableRecord`]: `"OIVT"` read as a little-endian `u32`.
pub const HOST_VTABLE_MAGIC: u32 = u32::from_le_bytes(*b"OIVT");

/// The fixed part of one record of [`HOST_VTABLES_SECTION`], followed by the vtable's symbol,
/// NUL-terminated and zero-padded so that `length` is a multiple of 8.
///
/// ```c
/// struct { uint32_t magic; uint32_t length; const void *vtable; uint64_t size; char name[]; };
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostVtableRecord {
    /// [`HOST_VTABLE_MAGIC`].
    pub magic: u32,
    /// Bytes of the whole record, name and padding included (a multiple of 8).
    pub length: u32,
    /// The host address of the vtable (relocated by the loader).
    pub vtable: u64,
    /// The vtable's size in bytes (8 per word).
    pub size: u64,
}

const _: () = assert!(core::mem::size_of::<HostVtableRecord>() == 24);

/// One vtable a [`HOST_VTABLES_SECTION`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostVtable<'a> {
    /// Its host address.
    pub address: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its symbol (`_ZTV*` or `_ZTC*`).
    pub name: &'a str,
}

/// The vtables the bytes of a [`HOST_VTABLES_SECTION`] record, in order. Zero words between
/// records (the linker's alignment padding) are skipped; the walk stops at the first thing that is
/// not a well-formed record (a wrong magic, a length that is not a multiple of 8 or runs past the
/// end, a name that is not NUL-terminated UTF-8 naming a vtable), so bad bytes yield no vtable.
pub fn host_vtables(bytes: &[u8]) -> impl Iterator<Item = HostVtable<'_>> {
    let mut at = 0usize;
    core::iter::from_fn(move || loop {
        let word = |offset: usize| -> Option<u64> {
            let bytes: [u8; 8] = bytes.get(offset..offset.checked_add(8)?)?.try_into().ok()?;
            Some(u64::from_le_bytes(bytes))
        };
        let first = word(at)?;
        if first == 0 {
            at += 8;
            continue;
        }
        let (magic, length) = (first as u32, (first >> 32) as usize);
        let header = core::mem::size_of::<HostVtableRecord>();
        if magic != HOST_VTABLE_MAGIC || length <= header || length % 8 != 0 {
            at = bytes.len();
            return None;
        }
        let (Some(address), Some(size), Some(record)) =
            (word(at + 8), word(at + 16), bytes.get(at..at.checked_add(length)?))
        else {
            at = bytes.len();
            return None;
        };
        let name = &record[header..];
        let name = name.iter().position(|&b| b == 0).and_then(|end| core::str::from_utf8(&name[..end]).ok());
        match name {
            Some(name) if is_dispatch_table(name.as_bytes()) => {
                at += length;
                return Some(HostVtable { address, size, name });
            }
            _ => {
                at = bytes.len();
                return None;
            }
        }
    })
}

#[cfg(test)]
mod host_vtable_tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn record(address: u64, size: u64, name: &str) -> Vec<u8> {
        let length = (24 + name.len() + 1).div_ceil(8) * 8;
        let mut out = Vec::new();
        out.extend(HOST_VTABLE_MAGIC.to_le_bytes());
        out.extend((length as u32).to_le_bytes());
        out.extend(address.to_le_bytes());
        out.extend(size.to_le_bytes());
        out.extend(name.as_bytes());
        out.resize(length, 0);
        out
    }

    #[test]
    fn records_and_padding_are_read_in_order() {
        let mut bytes = record(0x1000, 40, "_ZTV6Circle");
        bytes.extend([0u8; 16]);
        bytes.extend(record(0x2000, 96, "_ZTC1D0_1B"));
        let found: Vec<_> = host_vtables(&bytes).collect();
        assert_eq!(
            found,
            [
                HostVtable { address: 0x1000, size: 40, name: "_ZTV6Circle" },
                HostVtable { address: 0x2000, size: 96, name: "_ZTC1D0_1B" }
            ]
        );
    }

    #[test]
    fn bad_bytes_end_the_walk() {
        let good = record(0x1000, 40, "_ZTV6Circle");
        let mut wrong_magic = good.clone();
        wrong_magic[0] ^= 1;
        let mut too_long = good.clone();
        too_long[4] = 200;
        let mut odd_length = good.clone();
        odd_length[4] = 41;
        let mut no_nul = good.clone();
        for b in &mut no_nul[24..] {
            *b = b'x';
        }
        let not_a_vtable = record(0x1000, 40, "_ZTI6Circle");
        let truncated = &good[..20];
        for bad in [&wrong_magic[..], &too_long, &odd_length, &no_nul, &not_a_vtable, truncated] {
            let mut bytes = bad.to_vec();
            bytes.extend(&good);
            assert_eq!(host_vtables(&bytes).count(), 0, "{bad:?}");
        }
        assert_eq!(host_vtables(&[]).count(), 0);
        assert_eq!(host_vtables(&[0u8; 13]).count(), 0);
    }
}

#[cfg(test)]
mod vtable_word_tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        assert_eq!(vtable_word("__omptarget_indirect_vtable_3__ZTV6Square"), Some((3, "_ZTV6Square")));
        assert_eq!(vtable_word("__omptarget_indirect_vtable_0__ZTC1D0_1B"), Some((0, "_ZTC1D0_1B")));
        assert_eq!(
            vtable_word("__omptarget_indirect_vtable_2__QMshapesEXdtXsquare"),
            Some((2, "_QMshapesEXdtXsquare"))
        );
        for other in [
            "__omptarget_indirect_vtable__ZTV1A",
            "__omptarget_indirect_vtable_1_ZTV1A",
            "__omptarget_indirect_vtable_1__ZTI1A",
            "__omptarget_indirect_vtable_1234567890__ZTV1A",
            "__omptarget_indirect_vtable_x__ZTV1A",
            "_ZTV1A",
        ] {
            assert_eq!(vtable_word(other), None, "{other}");
        }
    }
}

#[cfg(test)]
mod dispatch_table_tests {
    use super::is_dispatch_table;

    #[test]
    fn vtables_and_fortran_type_descriptors_are_dispatch_tables() {
        for name in ["_ZTV6Square", "_ZTC1D0_1B", "_QMshapesEXdtXsquare", "_QFmainEXdtXlocal_t"] {
            assert!(is_dispatch_table(name.as_bytes()), "{name}");
        }
        // Type info, a binding table, a component table, a procedure, a bare mark.
        for name in
            ["_ZTI6Square", "_QMshapesEXvXsquare", "_QMshapesEXcXsquare", "_QMshapesPsquare_area", "_QEXdtX"]
        {
            assert!(!is_dispatch_table(name.as_bytes()), "{name}");
        }
    }
}

#[cfg(test)]
mod symbol_name_tests {
    #[test]
    fn the_c_names_are_the_names() {
        for (text, c) in [
            (super::TRANSLATE, super::c_names::TRANSLATE),
            (super::LLVM_LOOKUP, super::c_names::LLVM_LOOKUP),
            (super::FPTR_MAP_P, super::c_names::FPTR_MAP_P),
            (super::FPTR_MAP_SIZE, super::c_names::FPTR_MAP_SIZE),
            (super::FPTR_INDEX, super::c_names::FPTR_INDEX),
            (super::DEVICE_ENVIRONMENT, super::c_names::DEVICE_ENVIRONMENT),
            (super::DYNAMIC_CAST, super::c_names::DYNAMIC_CAST),
            (super::CXX_DYNAMIC_CAST, super::c_names::CXX_DYNAMIC_CAST),
            (super::SAME_TYPE_AS, super::c_names::SAME_TYPE_AS),
            (super::FLANG_SAME_TYPE_AS, super::c_names::FLANG_SAME_TYPE_AS),
            (super::EXTENDS_TYPE_OF, super::c_names::EXTENDS_TYPE_OF),
            (super::FLANG_EXTENDS_TYPE_OF, super::c_names::FLANG_EXTENDS_TYPE_OF),
            (super::HOST_CALLS, super::c_names::HOST_CALLS),
        ] {
            assert_eq!(c.to_str(), Ok(text));
        }
    }
}

#[cfg(test)]
mod runtime_name_tests {
    use super::is_openmp_runtime_function;

    #[test]
    fn the_runtimes_functions_are_told_from_the_programs_kernels() {
        for name in ["__kmpc_target_init", "omp_get_thread_num", "__tgt_target_kernel", "_ZN4ompx5stateE"] {
            assert!(is_openmp_runtime_function(name.as_bytes()), "{name}");
        }
        for name in ["__omp_offloading_fd00_1_main_l7", "__omp_outlined__1", "twice", "_Z3fooi"] {
            assert!(!is_openmp_runtime_function(name.as_bytes()), "{name}");
        }
    }
}
