//! C types of the libomptarget 16 plugin interface (`omptarget.h`, `Shared/APITypes.h`).

use std::ffi::{c_char, c_void};

pub use omptarget_indirect_abi::{FptrIndex, FptrMapEntry};

/// Return value of a successful `__tgt_rtl_*` call.
pub const OFFLOAD_SUCCESS: i32 = 0;
/// Return value of a failed `__tgt_rtl_*` call.
pub const OFFLOAD_FAIL: i32 = !0;

/// What memory `__tgt_rtl_data_alloc` is asked for (libomptarget's `TargetAllocTy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocKind {
    /// `TARGET_ALLOC_DEVICE` (0), `TARGET_ALLOC_DEFAULT` (3) and LLVM 19's
    /// `TARGET_ALLOC_DEVICE_NON_BLOCKING` (4): device memory.
    Device,
    /// `TARGET_ALLOC_HOST` (1): page-locked host memory the device can access.
    Host,
    /// `TARGET_ALLOC_SHARED` (2): memory host and device both address (managed).
    Shared,
}

impl AllocKind {
    /// Decodes libomptarget's kind; an error for a value no libomptarget passes.
    pub fn from_raw(kind: i32) -> Result<AllocKind, String> {
        match kind {
            0 | 3 | 4 => Ok(AllocKind::Device),
            1 => Ok(AllocKind::Host),
            2 => Ok(AllocKind::Shared),
            other => Err(format!("unknown allocation kind {other}")),
        }
    }
}

/// Entry flag of `declare target indirect` functions (LLVM's `OMP_DECLARE_TARGET_INDIRECT`,
/// Intel's `OMP_DECLARE_TARGET_FPTR`).
pub const OMP_DECLARE_TARGET_INDIRECT: u32 = 0x08;
/// Entry flag of a `declare target link` variable's reference pointer.
pub const OMP_DECLARE_TARGET_LINK: u32 = 0x01;
/// Entry flag of a `#pragma omp requires` entry (clang 18+), whose data word holds `OMP_REQ_*`.
pub const OMP_REGISTER_REQUIRES: u32 = 0x10;
/// Entry flag of a vtable of a `declare target` class (clang 22; LLVM's
/// `OMP_DECLARE_TARGET_INDIRECT_VTABLE`).
pub const OMP_DECLARE_TARGET_INDIRECT_VTABLE: u32 = 0x20;
/// `OMP_REQ_NONE`: `requires` with no clause that matters to devices.
pub const OMP_REQ_NONE: u64 = 0x001;
/// `OMP_REQ_REVERSE_OFFLOAD`.
pub const OMP_REQ_REVERSE_OFFLOAD: u64 = 0x002;
/// `OMP_REQ_UNIFIED_ADDRESS`.
pub const OMP_REQ_UNIFIED_ADDRESS: u64 = 0x004;
/// `OMP_REQ_UNIFIED_SHARED_MEMORY`.
pub const OMP_REQ_UNIFIED_SHARED_MEMORY: u64 = 0x008;
/// `OMP_REQ_DYNAMIC_ALLOCATORS`.
pub const OMP_REQ_DYNAMIC_ALLOCATORS: u64 = 0x010;

pub use omptarget_indirect_abi::{FPTR_INDEX, FPTR_MAP_P, FPTR_MAP_SIZE};

/// `struct __tgt_offload_entry` as clang 16-19 emit it and libomptarget 16 reads it (32 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TgtOffloadEntry {
    /// Host address of the function or global.
    pub addr: *mut c_void,
    /// Symbol name in the device image.
    pub name: *mut c_char,
    /// 0 for functions, the size in bytes for globals.
    pub size: usize,
    /// `OMP_DECLARE_TARGET_*` flags.
    pub flags: i32,
    /// Reserved, 0.
    pub reserved: i32,
}

/// An offload entry in LLVM 20+'s layout (`llvm::offloading::EntryTy`, 56 bytes), which clang 20+
/// emit and libomptarget 20+ read ([`crate::entries`] parses either layout).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TgtOffloadEntryV1 {
    /// 0 (the legacy layout's address is never 0 but for a requirement).
    pub reserved: u64,
    /// 1.
    pub version: u16,
    /// `OFK_OpenMP` ([`OFFLOAD_KIND_OPENMP`]) for OpenMP's entries.
    pub kind: u16,
    /// `OMP_DECLARE_TARGET_*` flags.
    pub flags: u32,
    /// Host address of the function or global.
    pub address: *mut c_void,
    /// Symbol name in the device image.
    pub symbol_name: *const c_char,
    /// 0 for kernels, the size in bytes for globals.
    pub size: u64,
    /// A requirement's `OMP_REQ_*` flags, else 0.
    pub data: u64,
    /// Auxiliary address, unused by OpenMP.
    pub aux_addr: *mut c_void,
}

/// Size of a legacy entry ([`TgtOffloadEntry`]).
pub const LEGACY_ENTRY_SIZE: usize = 32;
/// Size of a v1 entry ([`TgtOffloadEntryV1`]).
pub const V1_ENTRY_SIZE: usize = 56;

const _: () = assert!(std::mem::size_of::<TgtOffloadEntryV1>() == V1_ENTRY_SIZE);
const _: () = assert!(std::mem::size_of::<TgtOffloadEntry>() == LEGACY_ENTRY_SIZE);

/// `OFK_OpenMP` of `llvm::object::OffloadKind`: the kind of OpenMP's v1 entries.
pub const OFFLOAD_KIND_OPENMP: u16 = 1;

/// `struct __tgt_bin_desc`: what the program's registration code hands `__tgt_register_lib`.
#[repr(C)]
#[derive(Debug)]
pub struct TgtBinDesc {
    /// Number of device images.
    pub num_device_images: i32,
    /// The images.
    pub device_images: *mut TgtDeviceImage,
    /// The host's offload entries (either layout).
    pub host_entries_begin: *mut TgtOffloadEntry,
    /// One past the last host entry.
    pub host_entries_end: *mut TgtOffloadEntry,
}

/// `struct __tgt_device_image`.
#[repr(C)]
#[derive(Debug)]
pub struct TgtDeviceImage {
    /// First byte of the device image.
    pub image_start: *mut c_void,
    /// One past its last byte.
    pub image_end: *mut c_void,
    /// The host's offload entries for this image (either entry layout).
    pub entries_begin: *mut TgtOffloadEntry,
    /// One past the last entry.
    pub entries_end: *mut TgtOffloadEntry,
}

/// `struct __tgt_target_table`: the device's entries, parallel to the host's.
#[repr(C)]
#[derive(Debug)]
pub struct TgtTargetTable {
    /// First device entry.
    pub entries_begin: *mut TgtOffloadEntry,
    /// One past the last.
    pub entries_end: *mut TgtOffloadEntry,
}

/// `struct __tgt_async_info`.
#[repr(C)]
#[derive(Debug)]
pub struct TgtAsyncInfo {
    /// Backend queue (stream), null until one is assigned.
    pub queue: *mut c_void,
}

/// `struct __tgt_image_info`.
#[repr(C)]
#[derive(Debug)]
pub struct TgtImageInfo {
    /// Target architecture the image was built for ("" for x86_64), or null.
    pub arch: *const c_char,
}

/// `struct KernelArgsTy` (version 2 from clang 16, 3 from clang 19; same layout).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgs {
    /// 2: clang 16; 3: clang 19, whose kernels take a leading `dyn_ptr` argument.
    pub version: u32,
    /// Number of arguments in `ptrs` (not counting `dyn_ptr`).
    pub num_args: u32,
    /// Base pointers of the mapped arguments.
    pub base_ptrs: *mut *mut c_void,
    /// Arguments.
    pub ptrs: *mut *mut c_void,
    /// Sizes of the mapped arguments.
    pub sizes: *mut i64,
    /// Map types.
    pub map_types: *mut i64,
    /// Map names, may be null.
    pub map_names: *mut *mut c_void,
    /// User-defined mappers, may be null.
    pub mappers: *mut *mut c_void,
    /// Loop trip count, 0 if unknown.
    pub tripcount: u64,
    /// Flags (bit 0: `NoWait`).
    pub flags: u64,
    /// Teams in each dimension; 0 means the default.
    pub num_teams: [u32; 3],
    /// Threads per team in each dimension; 0 means the default.
    pub thread_limit: [u32; 3],
    /// Dynamic shared memory per team in bytes.
    pub dyn_cgroup_mem: u32,
}

const _: () = assert!(std::mem::size_of::<TgtOffloadEntry>() == 32);
const _: () = assert!(std::mem::size_of::<KernelArgs>() == 104);
