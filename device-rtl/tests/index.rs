//! The hash index's device half on hand-built indexes: probing, wrap-around, the stop at an empty
//! slot, termination without one, the range check, and when `translate_indexed` may use it. (The
//! plugin's builder is checked against the same lookup in `plugin-core`.)

use std::ffi::c_void;
use std::ptr::{addr_of_mut, null};
use std::sync::Mutex;

use device_rtl::{
    FptrIndex, FptrMapEntry, IndexLookup, IndexSlot, __kmpc_target_translate_fptr,
    __omp_offloading_fptr_index, __omp_offloading_fptr_map_p, __omp_offloading_fptr_map_size,
    __omptarget_indirect_first_key, __omptarget_indirect_last_key, translate_indexed,
};

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// An index of `slots` (a power of two, at most 2^31) over a table at `table` whose keys span
/// `first..=last`.
fn index(table: u64, slots: &[IndexSlot], first: u64, last: u64) -> FptrIndex {
    assert!(slots.len().is_power_of_two());
    FptrIndex {
        table,
        slots: slots.as_ptr() as u64,
        multiplier: MULTIPLIER,
        first,
        last,
        shift: 32 - slots.len().trailing_zeros(),
        reserved: 0,
    }
}

fn slot(host_ptr: u64, tgt_ptr: u64) -> IndexSlot {
    IndexSlot { host_ptr, tgt_ptr }
}

/// A key whose bucket in an index of `capacity` slots is `bucket`, searching up from `from`.
fn key_in_bucket(capacity: usize, bucket: u32, from: u64) -> u64 {
    let probe =
        FptrIndex { multiplier: MULTIPLIER, shift: 32 - capacity.trailing_zeros(), ..FptrIndex::NONE };
    (from..).find(|&k| probe.bucket(k) == bucket).unwrap()
}

#[test]
fn bucket_and_mask_follow_the_documented_formula() {
    let i = FptrIndex { multiplier: MULTIPLIER, shift: 28, ..FptrIndex::NONE };
    assert_eq!(i.mask(), 15);
    for key in [1u64, 0x1000, 0x7fff_1234_5678, u64::MAX] {
        let want = ((key.wrapping_mul(MULTIPLIER) >> 32) as u32) >> 28;
        assert_eq!(i.bucket(key), want);
        assert!(i.bucket(key) <= i.mask());
    }
    let widest = FptrIndex { multiplier: MULTIPLIER, shift: 1, ..FptrIndex::NONE };
    assert_eq!(widest.mask(), (1 << 31) - 1);
}

#[test]
fn probes_run_from_the_bucket_wrap_around_and_stop_at_an_empty_slot() {
    // Four slots; three keys that all hash to slot 3: they sit at 3, 0 and 1 (wrapping).
    let a = key_in_bucket(4, 3, 0x1000);
    let b = key_in_bucket(4, 3, a + 1);
    let c = key_in_bucket(4, 3, b + 1);
    let slots = [slot(b, 0xB), slot(c, 0xC), slot(0, 0), slot(a, 0xA)];
    let i = index(1, &slots, a, c);
    // SAFETY: `slots` is the index's slot array, alive for the calls.
    unsafe {
        assert_eq!(i.translate(a), 0xA);
        assert_eq!(i.translate(b), 0xB);
        assert_eq!(i.translate(c), 0xC);
        // A miss in bucket 3 walks 3, 0, 1 and stops at the empty slot 2.
        let miss = key_in_bucket(4, 3, c + 1);
        assert_eq!(i.translate(miss), miss);
        // A miss hashing straight to the empty slot answers after one probe.
        let empty = key_in_bucket(4, 2, a + 1);
        assert_eq!(i.translate(empty), empty);
    }
}

#[test]
fn a_full_index_still_terminates() {
    // No empty slot (the plugin never builds this): a miss stops after reading every slot once.
    let keys: Vec<u64> = (0..4).map(|b| key_in_bucket(4, b, 0x5000 + 0x100 * u64::from(b))).collect();
    let slots: Vec<IndexSlot> = keys.iter().map(|&k| slot(k, k + 1)).collect();
    let (first, last) = (*keys.iter().min().unwrap(), *keys.iter().max().unwrap());
    let i = index(1, &slots, first, last);
    let miss = (first..=last).find(|k| !keys.contains(k)).unwrap();
    // SAFETY: as above.
    unsafe {
        assert_eq!(i.translate(miss), miss);
        for &k in &keys {
            assert_eq!(i.translate(k), k + 1);
        }
    }
}

#[test]
fn keys_outside_first_last_are_answered_without_a_probe() {
    // A slot pointer that must never be read: any probe would fault.
    let i = FptrIndex {
        table: 1,
        slots: 16,
        multiplier: MULTIPLIER,
        first: 100,
        last: 200,
        shift: 31,
        reserved: 0,
    };
    // SAFETY: only keys outside [100, 200] are asked, which read no slot.
    unsafe {
        for key in [1, 99, 201, u64::MAX] {
            assert_eq!(i.translate(key), key);
        }
    }
}

#[test]
fn translate_indexed_uses_the_index_only_for_the_table_it_names() {
    let table = [FptrMapEntry { host_ptr: 0x100, tgt_ptr: 1 }, FptrMapEntry { host_ptr: 0x200, tgt_ptr: 2 }];
    // An index that deliberately disagrees with the table (0x100 -> 99), to see which answered.
    let mut slots = [IndexSlot::default(); 4];
    let k = 0x100;
    slots[FptrIndex { multiplier: MULTIPLIER, shift: 30, ..FptrIndex::NONE }.bucket(k) as usize] =
        slot(k, 99);
    let named = index(table.as_ptr() as u64, &slots, 0x100, 0x200);
    let other = index(table.as_ptr() as u64 + 16, &slots, 0x100, 0x200);
    let size = table.len() as u64;
    let ask = |i: &FptrIndex, key: u64| {
        // SAFETY: live table and slots.
        unsafe { translate_indexed(table.as_ptr(), &size, i, key as *mut c_void) as u64 }
    };
    assert_eq!(ask(&named, 0x100), 99, "the index names this table: it answers");
    assert_eq!(ask(&other, 0x100), 1, "an index of another table is ignored");
    assert_eq!(ask(&FptrIndex::NONE, 0x100), 1, "no index: the search answers");
    assert_eq!(ask(&named, 0), 0, "null stays null");
    // SAFETY: a null table is never read, whatever the index says.
    let with_null = unsafe { translate_indexed(null(), &size, &FptrIndex::NONE, 0x100 as *mut c_void) };
    assert_eq!(with_null as u64, 0x100);
}

static GLOBALS: Mutex<()> = Mutex::new(());

#[test]
fn exported_function_reads_the_index_global() {
    let _guard = GLOBALS.lock().unwrap_or_else(|e| e.into_inner());
    let table = [FptrMapEntry { host_ptr: 0x100, tgt_ptr: 1 }, FptrMapEntry { host_ptr: 0x200, tgt_ptr: 2 }];
    let mut slots = [IndexSlot::default(); 4];
    for e in &table {
        let mut at =
            FptrIndex { multiplier: MULTIPLIER, shift: 30, ..FptrIndex::NONE }.bucket(e.host_ptr) as usize;
        while slots[at].host_ptr != 0 {
            at = (at + 1) % 4;
        }
        slots[at] = slot(e.host_ptr, e.tgt_ptr + 10);
    }
    let call = |key: u64| {
        // SAFETY: table and slots outlive the calls; the lock serialises the globals.
        unsafe { __kmpc_target_translate_fptr(key as *mut c_void) as u64 }
    };
    // SAFETY: the lock serialises every access to the globals in this test binary.
    unsafe {
        *addr_of_mut!(__omp_offloading_fptr_map_p) = table.as_ptr();
        *addr_of_mut!(__omp_offloading_fptr_map_size) = 2;
        *addr_of_mut!(__omp_offloading_fptr_index) = index(table.as_ptr() as u64, &slots, 0x100, 0x200);
    }
    // The slots answer tgt_ptr + 10: the index was used.
    assert_eq!((call(0x100), call(0x200), call(0x180), call(0x300)), (11, 12, 0x180, 0x300));
    // SAFETY: as above.
    let range = unsafe { (__omptarget_indirect_first_key(), __omptarget_indirect_last_key()) };
    assert_eq!(range, (0x100, 0x200), "the index's range is the key range");
    // SAFETY: as above.
    unsafe { *addr_of_mut!(__omp_offloading_fptr_index) = FptrIndex::NONE };
    assert_eq!((call(0x100), call(0x200)), (1, 2));
    // SAFETY: as above.
    unsafe {
        *addr_of_mut!(__omp_offloading_fptr_map_p) = null();
        *addr_of_mut!(__omp_offloading_fptr_map_size) = 0;
    }
}
