//! The check of calls into host code: the layout through which the host tells the device
//! library which addresses are the host program's, so that a pointer the table does not pair is
//! told apart from one that is already a device address (`docs/troubleshooting.md`, "Device
//! code called a host function").
//!
//! ```c
//! struct __omptarget_indirect_host_calls_ty {
//!   uint64_t kind;      // 0: no check (the global's initial value); HostCalls::DEVICE_RANGES; HostCalls::HOST_RANGES
//!   uint64_t ranges;    // address of a struct __omptarget_indirect_ranges_ty, or 0
//!   uint64_t ask_host;  // DEVICE_RANGES: void *(*)(void *key), the host's answer for a key outside the ranges
//!   uint64_t record;    // HOST_RANGES: address of a host-visible uint64_t where the first such key is stored, or 0
//!   uint64_t host[8][2]; // HOST_RANGES: the host program's [start, end) ranges, unused ones [0, 0)
//! };
//! struct __omptarget_indirect_ranges_ty { uint64_t count; uint64_t range[][2]; }; // [start, end)
//! ```

/// `__omptarget_indirect_host_calls`: what the device library does with a key the table does not
/// pair (a miss), after the lookup found none. All zero: nothing (the miss translates to itself,
/// as without a check).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCalls {
    /// [`HostCalls::DEVICE_RANGES`], [`HostCalls::HOST_RANGES`], or 0 (no check).
    pub kind: u64,
    /// For [`HostCalls::DEVICE_RANGES`]: address of a [`RangeList`], `count` then that many
    /// `[start, end)` pairs.
    pub ranges: u64,
    /// For [`HostCalls::DEVICE_RANGES`]: `void *(*)(void *key)`, called with a missed key outside
    /// every range; what it returns is the translation (it may also end the program).
    pub ask_host: u64,
    /// For [`HostCalls::HOST_RANGES`]: address of a `uint64_t` the host reads after a failed
    /// launch, where the device stores the first missed key inside a range before it traps; 0
    /// for none (the device traps without storing).
    pub record: u64,
    /// For [`HostCalls::HOST_RANGES`]: the host program's objects, `[start, end)` each (unused
    /// pairs `[0, 0)`). Held here, a fixed number, so that a GPU checks them without a loop or
    /// another load (a loop's registers would count against the whole lookup); a program with
    /// more objects than pairs has the rest unchecked, never another address taken for them.
    pub host: [[u64; 2]; HOST_RANGES_MAX],
}

/// How many of the host program's objects a GPU's check holds ([`HostCalls::host`]).
pub const HOST_RANGES_MAX: usize = 8;

const _: () = assert!(core::mem::size_of::<HostCalls>() == 32 + 16 * HOST_RANGES_MAX);

impl HostCalls {
    /// The x86_64 device, which runs in the host process: the ranges hold the addresses device
    /// code may call (the device images and the runtimes they link), searched in order, and
    /// any other missed key is given to `ask_host`, which knows every loaded object.
    pub const DEVICE_RANGES: u64 = 1;
    /// A GPU: [`HostCalls::host`] holds the host program's objects; a missed key inside one is
    /// stored in `record` and the kernel traps.
    pub const HOST_RANGES: u64 = 2;

    /// No check: the global's initial value.
    pub const NONE: HostCalls =
        HostCalls { kind: 0, ranges: 0, ask_host: 0, record: 0, host: [[0; 2]; HOST_RANGES_MAX] };

    /// The global's bytes as a device reads them (little-endian words in field order), for a
    /// host that copies it into device memory.
    pub fn to_bytes(&self) -> [u8; core::mem::size_of::<HostCalls>()] {
        let mut bytes = [0u8; core::mem::size_of::<HostCalls>()];
        let words = [self.kind, self.ranges, self.ask_host, self.record];
        let host = self.host.iter().flatten();
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(words.iter().chain(host)) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// The header of a range list: `count` `[start, end)` pairs follow it (8-aligned).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeList {
    /// Number of `[start, end)` pairs after this header.
    pub count: u64,
}

/// Environment variable that says what the x86_64 device does at a call into host code: `stop`
/// (the default) reports it and ends the program with [`STOP_EXIT_STATUS`] as a GPU's fault
/// would, `report` reports it once per function and runs the host copy, `off` checks nothing
/// (the host copy runs, as without the check).
pub const HOST_CALLS_ENV: &str = "OMPTARGET_INDIRECT_HOST_CALLS";

/// The exit status of a program stopped at a call into host code (the strict device's too).
pub const STOP_EXIT_STATUS: i32 = 70;

/// The words every report of a call into host code holds, after the reporter's prefix.
pub const REPORT_WORDS: &str = "device code called";

/// Whether an object of the process at `path` (as the loader names it) is part of the host
/// program, whose code and data a device cannot reach: the program's own libraries, wherever the
/// user keeps them, but not the runtimes (the C, C++ and Fortran runtimes in the system's
/// library directories, libomp, libomptarget, this project's libraries), the loader, the vDSO or
/// an x86_64 device image. The main executable always is (its path is the caller's to tell).
pub fn is_host_program_library(path: &str) -> bool {
    /// Directories of system and runtime libraries.
    const SYSTEM_DIRS: [&str; 5] = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/local/lib/"];
    /// Libraries of the offload runtime and of this project, wherever they are.
    const RUNTIME_PREFIXES: [&str; 5] = ["libomptarget", "libomp.so", "libffi", "libLLVM", "ld-linux"];
    if path.is_empty() || path.starts_with("linux-vdso") || crate::is_device_image_path(path) {
        return false;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    if RUNTIME_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return false;
    }
    !SYSTEM_DIRS.iter().any(|d| path.starts_with(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_are_the_fields_in_order_as_the_device_reads_them() {
        let mut check = HostCalls { kind: HostCalls::HOST_RANGES, record: 0x1234, ..HostCalls::NONE };
        check.host[0] = [0x10, 0x20];
        check.host[7] = [0x70, 0x80];
        let bytes = check.to_bytes();
        // SAFETY: HostCalls is repr(C), u64 words only, no padding: its memory is its bytes.
        let memory: [u8; 160] = unsafe { core::mem::transmute(check) };
        assert_eq!(bytes, memory);
        assert_eq!(bytes[24..32], 0x1234u64.to_le_bytes());
        assert_eq!(bytes[144..152], 0x70u64.to_le_bytes());
    }
}
