//! libomptarget's map-type bits (`omptarget.h`'s `tgt_map_type`), as an offload call's map types
//! array and a mapper's components carry them.

/// Copy to the device at the start.
pub const TO: u64 = 0x1;
/// Copy back at the end.
pub const FROM: u64 = 0x2;
/// Copy whatever the reference count says.
pub const ALWAYS: u64 = 0x4;
/// Remove the mapping (`map(delete:)`, `target exit data`).
pub const DELETE: u64 = 0x8;
/// The entry is one of the kernel's arguments; in a mapper, the entry a structure's members
/// belong to.
pub const TARGET_PARAM: u64 = 0x20;
/// The map was not written by the user.
pub const IMPLICIT: u64 = 0x200;
/// The entry attaches the pointer at its base to the device copy of the data at its begin
/// (LLVM 22+): its size is the pointer's.
pub const ATTACH: u64 = 0x4000;
/// Where the 1-based position of the entry an entry is a member of starts.
pub const MEMBER_OF_SHIFT: u32 = 48;
