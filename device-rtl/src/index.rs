//! The optional hash index beside the sorted table: one probe per translation instead of
//! `log2(size)` dependent loads.
//!
//! Our host plugin builds it when it installs a table (GCC's libgomp builds a similar hash table
//! on the host for the same reason) and describes it in the weak global
//! `__omp_offloading_fptr_index`. The sorted table stays the reference: the index answers only
//! while `__omp_offloading_fptr_map_p` holds the very table it was built from, so a table
//! installed by any other producer (the two globals and nothing else) is searched as before.
//! The plugin keeps that table allocated for as long as the index names it, so no other table
//! can appear at its address.

use core::simd::u64x2;

pub use omptarget_indirect_abi::{FptrIndex, IndexSlot};

/// The device side of the index: the probe. (The layout and the hash, shared with the plugin
/// that builds the index, are [`FptrIndex`]'s own, in the ABI crate.)
pub trait IndexLookup {
    /// Translates the non-zero `key`: the `tgt_ptr` of its entry, or `key` when it has none.
    ///
    /// Keys outside `[first, last]` are answered without a probe; others take one 16-byte load
    /// per slot from the bucket to the key or to the first empty slot, at most the capacity.
    ///
    /// # Safety
    /// `slots` must point to `mask() + 1` readable, 16-aligned slots laid out as the type's
    /// documentation says.
    unsafe fn translate(&self, key: u64) -> u64;
}

impl IndexLookup for FptrIndex {
    #[inline(always)]
    unsafe fn translate(&self, key: u64) -> u64 {
        if key < self.first || key > self.last {
            return key;
        }
        // SAFETY: `find` requires what this function does: an index well formed over `table`.
        unsafe { find(self, key) }.unwrap_or(key)
    }
}

/// The `tgt_ptr` of `key`'s slot in `index`, if it has one.
///
/// # Safety
/// As for [`IndexLookup::translate`].
#[inline(always)]
unsafe fn find(index: &FptrIndex, key: u64) -> Option<u64> {
    let bucket = index.bucket(key);
    // SAFETY: the bucket is a slot of the index (this function's precondition).
    let [host_ptr, tgt_ptr] = unsafe { read_slot(index.slots as *const IndexSlot, bucket) };
    if host_ptr == key {
        return Some(tgt_ptr);
    }
    // SAFETY: as above.
    unsafe { find_after(index, key, bucket, host_ptr) }
}

/// Reads the slot at address `slot`.
///
/// # Safety
/// `slot` is the address of a readable, 16-aligned slot.
#[inline(always)]
pub unsafe fn read_slot_at(slot: u64) -> [u64; 2] {
    // SAFETY: the caller's guarantee.
    unsafe { read_slot(slot as *const IndexSlot, 0) }
}

/// Reads slot `at` as one 16-byte vector, so that key and value come in a single load.
///
/// # Safety
/// `slots` points to more than `at` readable, 16-aligned slots.
#[inline(always)]
unsafe fn read_slot(slots: *const IndexSlot, at: u32) -> [u64; 2] {
    // SAFETY: the caller's guarantee.
    unsafe { slots.add(at as usize).cast::<u64x2>().read() }.to_array()
}

/// The rest of [`find`] once the probe of `bucket` read `host_ptr`, not `key`: the `tgt_ptr`
/// of `key`'s slot further on, if it has one.
///
/// # Safety
/// As for [`IndexLookup::translate`].
#[inline(always)]
pub unsafe fn find_after(index: &FptrIndex, key: u64, bucket: u32, host_ptr: u64) -> Option<u64> {
    let slots = index.slots as *const IndexSlot;
    let mask = index.mask();
    if host_ptr == 0 {
        return None;
    }
    let mut at = bucket;
    let mut left = mask;
    loop {
        if left == 0 {
            return None;
        }
        left -= 1;
        at = at.wrapping_add(1) & mask;
        // SAFETY: `at <= mask`, inside the slots.
        let [host_ptr, tgt_ptr] = unsafe { read_slot(slots, at) };
        if host_ptr == key {
            return Some(tgt_ptr);
        }
        if host_ptr == 0 {
            return None;
        }
    }
}
