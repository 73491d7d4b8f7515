//! The table lookup, independent of where the table comes from.

use core::ffi::c_void;

pub use omptarget_indirect_abi::FptrMapEntry;

use crate::index::{find_after, read_slot_at, FptrIndex};

/// Translates `fn_ptr` through the sorted table of `size` entries at `table`.
///
/// Returns the `tgt_ptr` of the first entry whose `host_ptr` equals `fn_ptr`, and `fn_ptr`
/// unchanged in every other case: null `fn_ptr`, null `table`, `size == 0`, or no such entry.
/// Always terminates: the search halves a 64-bit length, so at most 64 steps, including keys that
/// fall strictly between two entries (where LLVM's DeviceRTL lookup loops forever).
///
/// # Safety
/// If `table` is non-null and `size > 0`, `table` must point to `size` readable entries sorted
/// by `host_ptr` (ascending, unsigned). An unsorted table gives an unspecified result (the input
/// or some entry's `tgt_ptr`), never an out-of-bounds read.
#[inline(always)]
pub unsafe fn translate(table: *const FptrMapEntry, size: u64, fn_ptr: *mut c_void) -> *mut c_void {
    // SAFETY: the caller's contract is this function's.
    unsafe { translate_or(table, size, fn_ptr, |missed| missed) }
}

/// [`translate`], with the answer for a non-null key that is no entry's (a miss) given by
/// `missed`: the device library's exported lookup passes its check of calls into host code
/// ([`crate::host_calls`]), everything else the key itself.
///
/// # Safety
/// As for [`translate`].
#[inline(always)]
pub unsafe fn translate_or(
    table: *const FptrMapEntry,
    size: u64,
    fn_ptr: *mut c_void,
    missed: impl FnOnce(*mut c_void) -> *mut c_void,
) -> *mut c_void {
    let key = fn_ptr as u64;
    if key == 0 {
        return fn_ptr;
    }
    if table.is_null() || size == 0 {
        return missed(fn_ptr);
    }
    // A table too small for an index on the x86_64 device (fewer than
    // HOST_DEVICE_MIN_INDEXED_KEYS keys) is scanned: a compare per key, the first equal one
    // answers, with no range test and no final compare (a halving search took 1.05x-1.15x LLVM's
    // time there; `cargo xtask bench lookup`). GPUs keep the one search: a second loop would cost
    // the whole lookup registers.
    #[cfg(target_arch = "x86_64")]
    if size < omptarget_indirect_abi::HOST_DEVICE_MIN_INDEXED_KEYS as u64 {
        let mut i = 0;
        while i < size {
            // SAFETY: `i < size`, an entry of the table (the caller's guarantee).
            let entry = unsafe { &*table.add(i as usize) };
            if entry.host_ptr == key {
                return entry.tgt_ptr as *mut c_void;
            }
            i += 1;
        }
        return missed(fn_ptr);
    }
    // SAFETY: the caller guarantees `size` readable entries.
    if !unsafe { in_range(table, size, key) } {
        return missed(fn_ptr);
    }
    // SAFETY: `key` is in range, `search`'s precondition.
    match unsafe { search(table, size, key) } {
        Some(tgt_ptr) => tgt_ptr as *mut c_void,
        None => missed(fn_ptr),
    }
}

/// [`translate`] of the table at `table` whose length `*size` holds, answered by `index` when it
/// was built from that table (one hash probe), by the binary search otherwise. Same results.
///
/// # Safety
/// As for [`translate`] with `size = *size`; in addition, an index that describes `table` must
/// be well formed over that table's entries ([`FptrIndex`]).
#[inline(always)]
pub unsafe fn translate_indexed(
    table: *const FptrMapEntry,
    size: &u64,
    index: &FptrIndex,
    fn_ptr: *mut c_void,
) -> *mut c_void {
    // SAFETY: the table and index are this function's, valid by its precondition; the fallback
    // table is null, which is never read.
    unsafe {
        translate_first_installed(InstalledTable { table: &table, size }, InstalledTable::NONE, index, fn_ptr)
    }
}

/// Where a runtime keeps an installed table: the global holding its address (a pointer for this
/// project's, an integer for LLVM's device environment) and the global holding its length.
#[derive(Clone, Copy)]
pub struct InstalledTable<'a, T> {
    /// The table's address.
    pub table: &'a T,
    /// Its number of entries.
    pub size: &'a u64,
}

impl InstalledTable<'static, u64> {
    /// No table: address and length 0.
    pub const NONE: InstalledTable<'static, u64> = InstalledTable { table: &0, size: &0 };
}

/// [`translate_indexed`] through the first installed of two tables, each given as where its
/// address and its length are: `ours` (this project's globals), else `llvm` (the device
/// environment's `IndirectCallTable` address as an integer, and its size). `index` answers only
/// for our table it was built from. Nothing of LLVM's table is read while ours is installed
/// (non-null).
///
/// The shape is the GPU's: a hit through the index loads the table pointer and the whole index
/// header at once, branches once and probes, so that it waits for two loads one after the other
/// (on sm_90; five when each check branched before the next load). The checks are combined
/// without branches (`&`) and the probe's address takes part in them: otherwise the compiler
/// sinks the header loads behind the branches again. An index that describes the table has
/// slots, so `slot != 0` holds there. One search loop serves both tables, and no length is
/// loaded on the index's path: ptxas allocates 24 registers to the whole function, as many as
/// LLVM's lookup (36 with a separate probe of a dummy slot, or when a length is loaded first).
///
/// # Safety
/// As for [`translate`] with each non-null table and its length, and for [`translate_indexed`]
/// with `index`.
#[inline(always)]
pub unsafe fn translate_first_installed(
    ours: InstalledTable<'_, *const FptrMapEntry>,
    llvm: InstalledTable<'_, u64>,
    index: &FptrIndex,
    fn_ptr: *mut c_void,
) -> *mut c_void {
    // SAFETY: the caller's contract is this function's.
    unsafe { translate_first_installed_or(ours, llvm, index, fn_ptr, |missed| missed) }
}

/// [`translate_first_installed`], with the answer for a miss given by `missed`, as
/// [`translate_or`] takes it: only the paths that found no entry call it.
///
/// # Safety
/// As for [`translate_first_installed`].
#[inline(always)]
pub unsafe fn translate_first_installed_or(
    ours: InstalledTable<'_, *const FptrMapEntry>,
    llvm: InstalledTable<'_, u64>,
    index: &FptrIndex,
    fn_ptr: *mut c_void,
    missed: impl FnOnce(*mut c_void) -> *mut c_void,
) -> *mut c_void {
    let key = fn_ptr as u64;
    let (
        InstalledTable { table: ours, size: our_size },
        InstalledTable { table: llvm_table, size: llvm_size },
    ) = (ours, llvm);
    let ours = *ours;
    // One branch before the probe, on every header field at once (see above).
    let indexed = (key != 0) & !ours.is_null() & index.describes(ours as u64);
    let slot = index.slot_address(key);
    if indexed & (index.first <= key) & (key <= index.last) & (slot != 0) {
        // SAFETY: the index describes the installed table, so it is well formed (the caller's
        // guarantee), and `slot` is the address of one of its slots.
        let [host_ptr, tgt_ptr] = unsafe { read_slot_at(slot) };
        if host_ptr == key {
            return tgt_ptr as *mut c_void;
        }
        // SAFETY: as above.
        let further = unsafe { find_after(index, key, index.bucket(key), host_ptr) };
        return match further {
            Some(tgt_ptr) => tgt_ptr as *mut c_void,
            None => missed(fn_ptr),
        };
    }
    if key == 0 {
        return fn_ptr;
    }
    if indexed {
        return missed(fn_ptr);
    }
    let (table, size) =
        if ours.is_null() { (*llvm_table as *const FptrMapEntry, *llvm_size) } else { (ours, *our_size) };
    // SAFETY: the table chosen is valid by this function's precondition (ours, or LLVM's).
    unsafe { translate_or(table, size, fn_ptr, missed) }
}

/// The closed range `(first, last)` holding every key of the table [`translate_first_installed`]
/// searches for the same arguments: a pointer outside it translates to itself, so code can skip
/// the translation with two compares (the pass plugin does so before its loop cache: objects
/// built in device code never call the lookup). `(u64::MAX, 0)`, which holds nothing, when no
/// table is installed.
///
/// # Safety
/// As for [`translate_first_installed`].
#[inline(always)]
pub unsafe fn key_range_first_installed(
    ours: InstalledTable<'_, *const FptrMapEntry>,
    llvm: InstalledTable<'_, u64>,
    index: &FptrIndex,
) -> (u64, u64) {
    let ours_table = *ours.table;
    if !ours_table.is_null() && index.describes(ours_table as u64) {
        return (index.first, index.last);
    }
    let (table, size) = if ours_table.is_null() {
        (*llvm.table as *const FptrMapEntry, *llvm.size)
    } else {
        (ours_table, *ours.size)
    };
    if table.is_null() || size == 0 {
        return (u64::MAX, 0);
    }
    // SAFETY: the table chosen has `size >= 1` readable entries (this function's precondition),
    // sorted, so its first and last keys bound the others.
    unsafe { ((*table).host_ptr, (*table.add((size - 1) as usize)).host_ptr) }
}

/// Whether `key` lies in `[table[0].host_ptr, table[size - 1].host_ptr]`. Pointers that are not
/// host functions (device pointers, other data) mostly fall outside: answered from two loads
/// that every thread shares.
///
/// # Safety
/// `table` points to `size >= 1` readable entries.
#[inline(always)]
unsafe fn in_range(table: *const FptrMapEntry, size: u64, key: u64) -> bool {
    // SAFETY: index 0 and `size - 1` are in the table.
    let (first, last) = unsafe { ((*table).host_ptr, (*table.add((size - 1) as usize)).host_ptr) };
    first <= key && key <= last
}

/// Binary search for `key`, known to lie in `[table[0].host_ptr, table[size - 1].host_ptr]`.
///
/// # Safety
/// `table` points to `size >= 1` readable entries sorted by `host_ptr`, and `key` is in the
/// closed range of their keys.
#[inline(always)]
unsafe fn search(table: *const FptrMapEntry, size: u64, key: u64) -> Option<u64> {
    // Branch-free lower bound over [base, base + len): the answer stays in [base, base + len].
    let mut base = table;
    let mut len = size;
    while len > 1 {
        let half = len / 2;
        // SAFETY: `base + half < base + len <= table + size`, so `mid` is in the table.
        let mid = unsafe { base.add(half as usize) };
        // SAFETY: as above.
        if unsafe { (*mid).host_ptr } < key {
            base = mid;
        }
        len -= half;
    }
    // SAFETY: `base` is in the table (len stayed >= 1).
    let entry = unsafe { &*base };
    if entry.host_ptr == key {
        return Some(entry.tgt_ptr);
    }
    // The lower bound is `base + 1`, which exists: `key <= last` and `base.host_ptr < key` means
    // `base` is not the last entry.
    // SAFETY: `base + 1 <= table + size - 1` by the argument above.
    let next = unsafe { &*base.add(1) };
    (next.host_ptr == key).then_some(next.tgt_ptr)
}

/// Safe form of [`translate`] over a slice, for host code and tests: same result as
/// `translate(table.as_ptr(), table.len(), fn_ptr)`.
///
/// `table` must be sorted by `host_ptr`; if it is not, the result is unspecified but the call
/// stays in bounds.
#[inline]
pub fn translate_in(table: &[FptrMapEntry], fn_ptr: u64) -> u64 {
    // SAFETY: a slice is `len` readable entries (a dangling non-null pointer when empty, never
    // read because `size == 0` returns first).
    unsafe { translate(table.as_ptr(), table.len() as u64, fn_ptr as *mut c_void) as u64 }
}
