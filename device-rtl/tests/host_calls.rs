//! The check of calls into host code against its layout: what a miss becomes for each kind of
//! check, and that the lookup asks only on a miss (never on a hit, never for null).

use core::ffi::c_void;
use std::cell::Cell;

use device_rtl::host_calls::{verdict, HostCalls, Verdict};
use device_rtl::{translate_first_installed_or, FptrIndex, FptrMapEntry, InstalledTable};

#[test]
fn no_check_leaves_every_miss_itself() {
    // SAFETY: no list is read.
    assert_eq!(unsafe { verdict(&HostCalls::NONE, 0x1234) }, Verdict::Itself);
}

#[test]
fn on_x86_64_a_key_outside_the_device_ranges_is_asked_of_the_host() {
    // count, then [start, end) pairs: a device image, then a runtime.
    let list: [u64; 5] = [2, 0x1000, 0x2000, 0x8000, 0x9000];
    let check = HostCalls {
        kind: HostCalls::DEVICE_RANGES,
        ranges: list.as_ptr() as u64,
        ask_host: 0xA5,
        ..HostCalls::NONE
    };
    // SAFETY: `list` is a range list, alive for the calls.
    unsafe {
        assert_eq!(verdict(&check, 0x1000), Verdict::Itself);
        assert_eq!(verdict(&check, 0x8fff), Verdict::Itself);
        assert_eq!(verdict(&check, 0x2000), Verdict::AskHost(0xA5));
        assert_eq!(verdict(&check, 0x5000), Verdict::AskHost(0xA5));
        // No answer to ask for: nothing is asked.
        assert_eq!(verdict(&HostCalls { ask_host: 0, ..check }, 0x5000), Verdict::Itself);
    }
}

#[test]
fn on_a_gpu_a_key_inside_the_host_programs_objects_traps() {
    let mut host = [[0u64; 2]; omptarget_indirect_abi::host_calls::HOST_RANGES_MAX];
    host[0] = [0x5500_0000, 0x5500_8000];
    host[1] = [0x7f00_0000, 0x7f00_1000];
    let check = HostCalls { kind: HostCalls::HOST_RANGES, record: 0x40, host, ..HostCalls::NONE };
    // SAFETY: no list is read.
    unsafe {
        assert_eq!(verdict(&check, 0x5500_0010), Verdict::Trap { record: 0x40 });
        assert_eq!(verdict(&check, 0x7f00_0fff), Verdict::Trap { record: 0x40 });
        assert_eq!(verdict(&check, 0x7f00_1000), Verdict::Itself);
        // Unused pairs are [0, 0): they hold nothing, 0 included.
        assert_eq!(verdict(&check, 0x10), Verdict::Itself);
    }
}

#[test]
fn the_lookup_asks_only_for_a_non_null_key_it_does_not_find() {
    let table =
        [FptrMapEntry { host_ptr: 0x100, tgt_ptr: 0xA00 }, FptrMapEntry { host_ptr: 0x300, tgt_ptr: 0xC00 }];
    let size = table.len() as u64;
    let asked = Cell::new(0);
    let lookup = |key: u64| {
        // SAFETY: a sorted table of `size` entries; no index, no LLVM table.
        unsafe {
            translate_first_installed_or(
                InstalledTable { table: &table.as_ptr(), size: &size },
                InstalledTable::NONE,
                &FptrIndex::NONE,
                key as *mut c_void,
                |missed| {
                    asked.set(asked.get() + 1);
                    (missed as u64 + 1) as *mut c_void
                },
            ) as u64
        }
    };
    assert_eq!((lookup(0x100), lookup(0x300), lookup(0)), (0xA00, 0xC00, 0));
    assert_eq!(asked.get(), 0);
    // Between two keys, below the first, above the last.
    assert_eq!((lookup(0x200), lookup(0x50), lookup(0x400)), (0x201, 0x51, 0x401));
    assert_eq!(asked.get(), 3);
}
