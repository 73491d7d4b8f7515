//! The lookup against an ordered-map oracle, the C-ABI entry point, and the edge cases that
//! other implementations get wrong.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ptr::{addr_of_mut, null, null_mut};
use std::sync::Mutex;

use device_rtl::{
    key_range_first_installed, DeviceEnvironment, FptrIndex, FptrMapEntry, InstalledTable,
    __kmpc_target_translate_fptr, __omp_offloading_fptr_map_p, __omp_offloading_fptr_map_size,
    __omp_rtl_device_environment, __omptarget_indirect_first_key, __omptarget_indirect_last_key, translate,
    translate_first_installed, translate_in,
};
use proptest::prelude::*;

fn table(pairs: &[(u64, u64)]) -> Vec<FptrMapEntry> {
    pairs.iter().map(|&(host_ptr, tgt_ptr)| FptrMapEntry { host_ptr, tgt_ptr }).collect()
}

/// What the lookup must answer: the first entry (in table order) with the key, else the key.
struct Oracle(BTreeMap<u64, u64>);

impl Oracle {
    fn new(table: &[FptrMapEntry]) -> Self {
        let mut map = BTreeMap::new();
        for e in table {
            map.entry(e.host_ptr).or_insert(e.tgt_ptr);
        }
        Oracle(map)
    }

    fn translate(&self, key: u64) -> u64 {
        if key == 0 {
            return 0;
        }
        self.0.get(&key).copied().unwrap_or(key)
    }
}

#[test]
fn keys_strictly_between_entries_terminate_and_pass_through() {
    // LLVM's DeviceRTL loops forever on exactly these keys.
    let t = table(&[(100, 1), (200, 2), (300, 3), (400, 4)]);
    for key in [150, 250, 350, 101, 399] {
        assert_eq!(translate_in(&t, key), key);
    }
    for (key, want) in [(100, 1), (200, 2), (300, 3), (400, 4)] {
        assert_eq!(translate_in(&t, key), want);
    }
}

#[test]
fn outside_the_range_and_extremes_pass_through() {
    let t = table(&[(100, 1), (200, 2)]);
    for key in [1, 99, 201, u64::MAX] {
        assert_eq!(translate_in(&t, key), key);
    }
    assert_eq!(translate_in(&t, 0), 0);
    let top = table(&[(u64::MAX - 1, 7), (u64::MAX, 9)]);
    assert_eq!(translate_in(&top, u64::MAX), 9);
    assert_eq!(translate_in(&top, u64::MAX - 1), 7);
    assert_eq!(translate_in(&top, u64::MAX - 2), u64::MAX - 2);
}

#[test]
fn null_key_null_table_and_empty_table_pass_through() {
    let t = table(&[(0, 5), (10, 6)]);
    // A null pointer is never translated, even when the table has a 0 key.
    assert_eq!(translate_in(&t, 0), 0);
    assert_eq!(translate_in(&[], 10), 10);
    // SAFETY: a null table is never read.
    unsafe {
        assert_eq!(translate(null(), 0, 10 as *mut c_void), 10 as *mut c_void);
        assert_eq!(translate(null(), 1 << 40, 10 as *mut c_void), 10 as *mut c_void);
        assert_eq!(translate(t.as_ptr(), 2, null_mut()), null_mut());
    }
}

#[test]
fn single_entry_table() {
    let t = table(&[(42, 4200)]);
    assert_eq!(translate_in(&t, 42), 4200);
    assert_eq!(translate_in(&t, 41), 41);
    assert_eq!(translate_in(&t, 43), 43);
}

#[test]
fn duplicate_keys_answer_the_first_entry() {
    let t = table(&[(10, 1), (20, 2), (20, 3), (20, 4), (30, 5)]);
    assert_eq!(translate_in(&t, 20), 2);
    let all_same = table(&[(7, 1); 9]);
    assert_eq!(translate_in(&all_same, 7), 1);
    assert_eq!(translate_in(&all_same, 8), 8);
}

/// A table longer than 2^32 entries, sparse in memory: the untouched pages read as zero keys
/// (sorted first), the real entries sit at the end. A lookup that truncates the length or an
/// index to 32 bits searches the wrong range and misses them.
#[test]
fn tables_longer_than_u32_max_work() {
    const LEN: u64 = (1 << 32) + 7;
    let bytes = (LEN as usize) * std::mem::size_of::<FptrMapEntry>();
    // SAFETY: anonymous private mapping, no reservation; only the pages the search touches are
    // ever backed.
    let base = unsafe {
        libc::mmap(
            null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    assert_ne!(base, libc::MAP_FAILED, "cannot map a 64 GiB sparse table");
    let entries = base as *mut FptrMapEntry;
    let tail = [(1 << 32, 0x1000, 0xA), (LEN - 3, 0x2000, 0xB), (LEN - 1, 0x3000, 0xC)];
    for &(index, host_ptr, tgt_ptr) in &tail {
        // SAFETY: every index is below LEN, inside the mapping.
        unsafe { entries.add(index as usize).write(FptrMapEntry { host_ptr, tgt_ptr }) };
    }
    // Entries between the written ones must stay sorted: fill the gaps after 1 << 32.
    for index in (1u64 << 32) + 1..LEN - 3 {
        // SAFETY: inside the mapping.
        unsafe { entries.add(index as usize).write(FptrMapEntry { host_ptr: 0x1000, tgt_ptr: 0xA }) };
    }
    // SAFETY: inside the mapping.
    unsafe { entries.add((LEN - 2) as usize).write(FptrMapEntry { host_ptr: 0x2000, tgt_ptr: 0xB }) };
    for (key, want) in [(0x1000u64, 0xAu64), (0x2000, 0xB), (0x3000, 0xC), (0x1800, 0x1800), (0x3001, 0x3001)]
    {
        // SAFETY: LEN readable entries, sorted.
        let got = unsafe { translate(entries, LEN, key as *mut c_void) } as u64;
        assert_eq!(got, want, "key {key:#x}");
    }
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(base, bytes) };
}

/// The exported globals are process-wide; tests that install a table take this lock.
static GLOBALS: Mutex<()> = Mutex::new(());

fn with_installed<R>(t: &[FptrMapEntry], size: u64, f: impl FnOnce() -> R) -> R {
    let _guard = GLOBALS.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the lock serialises every writer and reader of the globals in this test binary.
    unsafe {
        *addr_of_mut!(__omp_offloading_fptr_map_p) = if t.is_empty() { null() } else { t.as_ptr() };
        *addr_of_mut!(__omp_offloading_fptr_map_size) = size;
    }
    let result = f();
    // SAFETY: as above.
    unsafe {
        *addr_of_mut!(__omp_offloading_fptr_map_p) = null();
        *addr_of_mut!(__omp_offloading_fptr_map_size) = 0;
    }
    result
}

fn call(key: u64) -> u64 {
    // SAFETY: the installed table outlives the call (see with_installed).
    unsafe { __kmpc_target_translate_fptr(key as *mut c_void) as u64 }
}

#[test]
fn exported_function_reads_the_globals() {
    assert_eq!(with_installed(&[], 0, || call(100)), 100);
    let t = table(&[(100, 1), (200, 2), (300, 3), (400, 4)]);
    with_installed(&t, 4, || {
        assert_eq!(call(300), 3);
        assert_eq!(call(250), 250);
        assert_eq!(call(0), 0);
    });
    // A size of 0 disables a table that is still pointed to.
    with_installed(&t, 0, || assert_eq!(call(300), 300));
    // A null table with a size is ignored, not read.
    with_installed(&[], 4, || assert_eq!(call(300), 300));
}

/// Installs `t` as LLVM's runtime does (the device environment's two fields), with no table of
/// ours, runs `f`, and clears it again.
fn with_llvm_table<R>(t: &[FptrMapEntry], f: impl FnOnce() -> R) -> R {
    let _guard = GLOBALS.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the lock serialises every writer and reader of the globals in this test binary.
    unsafe {
        let environment = &mut *addr_of_mut!(__omp_rtl_device_environment);
        environment.indirect_call_table = if t.is_empty() { 0 } else { t.as_ptr() as u64 };
        environment.indirect_call_table_size = t.len() as u64;
    }
    let result = f();
    // SAFETY: as above.
    unsafe { *addr_of_mut!(__omp_rtl_device_environment) = DeviceEnvironment::EMPTY };
    result
}

#[test]
fn without_our_table_llvms_table_answers() {
    let t = table(&[(100, 1), (200, 2), (300, 3), (400, 4)]);
    with_llvm_table(&t, || {
        assert_eq!((call(100), call(300), call(400)), (1, 3, 4));
        // In-range misses, where LLVM's own lookup over this table never returns.
        assert_eq!((call(150), call(250), call(350)), (150, 250, 350));
        assert_eq!((call(0), call(99), call(401)), (0, 99, 401));
    });
    with_llvm_table(&[], || assert_eq!(call(300), 300));
}

#[test]
fn our_table_wins_over_llvms() {
    let ours = table(&[(100, 11), (200, 12)]);
    let llvms = table(&[(100, 21), (200, 22), (300, 23)]);
    let got = with_llvm_table(&llvms, || {
        // SAFETY: with_llvm_table holds the lock that serialises the globals.
        unsafe {
            *addr_of_mut!(__omp_offloading_fptr_map_p) = ours.as_ptr();
            *addr_of_mut!(__omp_offloading_fptr_map_size) = 2;
        }
        let got = (call(100), call(200), call(300));
        // SAFETY: as above.
        unsafe {
            *addr_of_mut!(__omp_offloading_fptr_map_p) = null();
            *addr_of_mut!(__omp_offloading_fptr_map_size) = 0;
        }
        got
    });
    // 300 is not in our table: ours is searched alone, LLVM's is not consulted.
    assert_eq!(got, (11, 12, 300));
}

fn key_range() -> (u64, u64) {
    // SAFETY: callers hold the lock of the globals (with_installed, with_llvm_table).
    unsafe { (__omptarget_indirect_first_key(), __omptarget_indirect_last_key()) }
}

#[test]
fn the_exported_key_range_bounds_the_table_searched() {
    let ours = table(&[(100, 11), (200, 12)]);
    let llvms = table(&[(50, 21), (300, 23)]);
    assert_eq!(with_installed(&[], 0, key_range), (u64::MAX, 0), "no table: an empty range");
    assert_eq!(with_installed(&ours, 2, key_range), (100, 200));
    assert_eq!(with_installed(&ours, 0, key_range), (u64::MAX, 0), "a size of 0 disables the table");
    assert_eq!(with_llvm_table(&llvms, key_range), (50, 300));
}

/// Sorted table with many duplicate keys and keys at both ends of the address space.
fn sorted_table(max_len: usize) -> impl Strategy<Value = Vec<FptrMapEntry>> {
    let key = prop_oneof![0u64..64, any::<u64>(), (u64::MAX - 64)..=u64::MAX];
    prop::collection::vec((key, any::<u64>()), 0..=max_len).prop_map(|mut pairs| {
        pairs.sort_by_key(|p| p.0);
        pairs.into_iter().map(|(host_ptr, tgt_ptr)| FptrMapEntry { host_ptr, tgt_ptr }).collect()
    })
}

/// Every key worth asking about a table: each entry's key, each gap next to a key, the ends.
fn probe_keys(t: &[FptrMapEntry]) -> Vec<u64> {
    let mut keys = vec![0, 1, u64::MAX, u64::MAX - 1];
    for e in t {
        keys.extend([e.host_ptr, e.host_ptr.wrapping_sub(1), e.host_ptr.wrapping_add(1)]);
    }
    for pair in t.windows(2) {
        keys.push(pair[0].host_ptr / 2 + pair[1].host_ptr / 2);
    }
    keys
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn matches_the_ordered_map_oracle(t in sorted_table(70), extra in any::<u64>()) {
        let oracle = Oracle::new(&t);
        let mut keys = probe_keys(&t);
        keys.push(extra);
        for key in keys {
            prop_assert_eq!(translate_in(&t, key), oracle.translate(key), "key {:#x}", key);
        }
    }

    #[test]
    fn every_prefix_length_matches_the_oracle(t in sorted_table(40)) {
        for len in 0..=t.len() {
            let prefix = &t[..len];
            let oracle = Oracle::new(prefix);
            for key in probe_keys(&t) {
                prop_assert_eq!(translate_in(prefix, key), oracle.translate(key));
            }
        }
    }

    #[test]
    fn pointers_outside_the_key_range_translate_to_themselves(
        t in sorted_table(40),
        keys in prop::collection::vec(any::<u64>(), 8),
        llvms in any::<bool>(),
    ) {
        // The table installed as ours or as LLVM's; the other one empty.
        let (address, size) = (if t.is_empty() { 0 } else { t.as_ptr() as u64 }, t.len() as u64);
        let ours_table = if llvms { null() } else { address as *const FptrMapEntry };
        let (llvm_table, llvm_size) = if llvms { (address, size) } else { (0, 0) };
        let ours = InstalledTable { table: &ours_table, size: &size };
        let llvm = InstalledTable { table: &llvm_table, size: &llvm_size };
        // SAFETY: `t` is a live sorted table of `size` entries, no index describes it.
        let (first, last) = unsafe { key_range_first_installed(ours, llvm, &FptrIndex::NONE) };
        for entry in &t {
            prop_assert!(first <= entry.host_ptr && entry.host_ptr <= last);
        }
        for key in keys.into_iter().chain(probe_keys(&t)) {
            if key < first || key > last {
                // SAFETY: as above.
                let got = unsafe { translate_first_installed(ours, llvm, &FptrIndex::NONE, key as *mut c_void) };
                prop_assert_eq!(got as u64, key, "key {:#x} outside {:#x}..={:#x}", key, first, last);
            }
        }
    }

    #[test]
    fn unsorted_tables_never_read_out_of_bounds(
        pairs in prop::collection::vec((any::<u64>(), any::<u64>()), 0..40),
        key in any::<u64>(),
    ) {
        // The answer is unspecified, but it is the key or one of the table's values: a read
        // outside the slice would show up under Miri/valgrind, and a hang as a test timeout.
        let t = table(&pairs);
        let got = translate_in(&t, key);
        prop_assert!(got == key || t.iter().any(|e| e.tgt_ptr == got));
    }
}
