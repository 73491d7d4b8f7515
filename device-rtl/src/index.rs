//! The optional hash index beside the sorted table: one probe per translation instead of
//! `log2(size)` dependent loads.
//!
//! Our host plugin builds it when it installs a table (GCC's libgomp builds a similar hash table
//! on the host for the same reason, REFERENCE.md section 2) and describes it in the weak global
//! `__omp_offloading_fptr_index`. The sorted table stays the reference: the index answers only
//! while `__omp_offloading_fptr_map_p` holds the very table it was built from, so a table
//! installed by any other producer (the two globals and nothing else) is searched as before.
//! The plugin keeps that table allocated for as long as the index names it, so no other table
//! can appear at its address.

use core::simd::u64x2;

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

    /// Whether this index was built from the table at `table` (a non-null device address).
    #[inline(always)]
    pub fn describes(&self, table: u64) -> bool {
        self.table == table
    }

    /// Translates the non-zero `key`: the `tgt_ptr` of its entry, or `key` when it has none.
    ///
    /// Keys outside `[first, last]` are answered without a probe; others take one 16-byte load
    /// per slot from the bucket to the key or to the first empty slot, at most the capacity.
    ///
    /// # Safety
    /// `slots` must point to `mask() + 1` readable, 16-aligned slots laid out as the type's
    /// documentation says.
    #[inline(always)]
    pub unsafe fn translate(&self, key: u64) -> u64 {
        if key < self.first || key > self.last {
            return key;
        }
        // SAFETY: forwarded.
        unsafe { self.find(key) }.unwrap_or(key)
    }

    /// The `tgt_ptr` of `key`'s slot, if it has one.
    ///
    /// # Safety
    /// As for [`FptrIndex::translate`].
    #[inline(always)]
    unsafe fn find(&self, key: u64) -> Option<u64> {
        let slots = self.slots as *const IndexSlot;
        let mask = self.mask();
        let mut at = self.bucket(key);
        let mut left = mask;
        loop {
            // SAFETY: `at <= mask` (a `32 - shift`-bit value, then masked), inside the slots.
            // Read as one 16-byte vector so key and value come in a single load.
            let [host_ptr, tgt_ptr] = unsafe { slots.add(at as usize).cast::<u64x2>().read() }.to_array();
            if host_ptr == key {
                return Some(tgt_ptr);
            }
            if host_ptr == 0 || left == 0 {
                return None;
            }
            left -= 1;
            at = at.wrapping_add(1) & mask;
        }
    }
}
