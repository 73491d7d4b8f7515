//! Validation and construction of the function-pointer table the device runtime searches, and
//! of the hash index installed beside it.

use std::borrow::Cow;

use crate::error::{PluginError, Result};
use crate::rtl_interface::{FptrIndex, FptrMapEntry, FPTR_INDEX, FPTR_MAP_P, FPTR_MAP_SIZE};
use omptarget_indirect_abi::HOST_DEVICE_MIN_INDEXED_KEYS;

/// A table that satisfies the device lookup's precondition: sorted by `host_ptr` (unsigned),
/// each `host_ptr` once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FptrTable<'a> {
    entries: Cow<'a, [FptrMapEntry]>,
}

impl<'a> FptrTable<'a> {
    /// Checks a table given by a caller of `__tgt_rtl_set_function_ptr_map`: it must be sorted
    /// by `host_ptr`; a `host_ptr` repeated with the same `tgt_ptr` collapses to one entry, with
    /// a different `tgt_ptr` it is an error. Borrows `entries` when nothing collapses.
    pub fn from_sorted(entries: &'a [FptrMapEntry]) -> Result<Self> {
        let mut twins = 0usize;
        for (i, pair) in entries.windows(2).enumerate() {
            let (a, b) = (pair[0], pair[1]);
            if b.host_ptr < a.host_ptr {
                return Err(PluginError::InvalidTable(format!(
                    "not sorted by host_ptr: entry {} ({:#x}) comes after entry {i} ({:#x})",
                    i + 1,
                    b.host_ptr,
                    a.host_ptr
                )));
            }
            if b.host_ptr == a.host_ptr {
                if b.tgt_ptr != a.tgt_ptr {
                    return Err(PluginError::InvalidTable(format!(
                        "host_ptr {:#x} maps to both {:#x} and {:#x}",
                        a.host_ptr, a.tgt_ptr, b.tgt_ptr
                    )));
                }
                twins += 1;
            }
        }
        if twins == 0 {
            return Ok(FptrTable { entries: Cow::Borrowed(entries) });
        }
        let mut unique = entries.to_vec();
        unique.dedup();
        Ok(FptrTable { entries: Cow::Owned(unique) })
    }

    /// Builds the table from `(host, device)` pairs in any order (what `load_binary` collects
    /// from an image's indirect entries), with the same rules for repeated keys.
    pub fn from_pairs(mut pairs: Vec<FptrMapEntry>) -> Result<FptrTable<'static>> {
        pairs.sort_unstable();
        FptrTable::from_sorted(&pairs)?;
        pairs.dedup();
        Ok(FptrTable { entries: Cow::Owned(pairs) })
    }

    /// The validated entries.
    pub fn entries(&self) -> &[FptrMapEntry] {
        &self.entries
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty (installing it clears the map).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries as the bytes copied to the device (16 per entry, little-endian).
    pub fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.entries)
    }
}

/// The hash index over a table ([`FptrIndex`]): the header fields that do not depend on where
/// the table and the slots land. The slots themselves, `{host_ptr, tgt_ptr}` per slot as
/// `omptarget_indirect_abi::IndexSlot` lays them out, are built into memory the caller provides
/// ([`HashIndex::build_into`]) or into a host vector ([`HashIndex::build`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashIndex {
    multiplier: u64,
    shift: u32,
    first: u64,
    last: u64,
    /// Longest distance of a key from its bucket in the slots as built.
    longest_probe: u32,
}

impl HashIndex {
    /// Multipliers tried in turn, the golden-ratio one first, until the keys sit on average
    /// within [`HashIndex::GOOD_ENOUGH`] slots of their buckets (else the best one is kept). All
    /// odd, so `key * multiplier` is a bijection.
    pub const MULTIPLIERS: [u64; 4] =
        [0x9e37_79b9_7f4a_7c15, 0xbf58_476d_1ce4_e5b9, 0x94d0_49bb_1331_11eb, 0xd6e8_feb8_6659_fd93];

    /// Average distance from the bucket accepted at once: linear probing at most half full
    /// averages 0.5 with a well-spread hash, so 1 means the multiplier did its job.
    pub const GOOD_ENOUGH: f64 = 1.0;

    /// Largest table indexed: the device computes slot numbers in 32 bits, and the capacity is
    /// at least twice the entries. Larger tables are searched.
    pub const MAX_ENTRIES: usize = 1 << 30;

    /// The slots the index of `table` needs: the power of two at or above twice its keys (at
    /// most half full, so a miss meets an empty slot after about 2.5 probes). `None` for an
    /// empty table (nothing to index) or one above [`HashIndex::MAX_ENTRIES`].
    pub fn capacity(table: &FptrTable<'_>) -> Option<usize> {
        let keys = keyed(table.entries()).len();
        (keys > 0 && table.len() <= Self::MAX_ENTRIES).then(|| (2 * keys).next_power_of_two())
    }

    /// [`HashIndex::capacity`] for a table the x86_64 device reads: `None` below
    /// [`HOST_DEVICE_MIN_INDEXED_KEYS`] keys, where the device scans the table. A hit's latency
    /// through the index is a fixed chain (the header, the multiply, the slot: about 7 ns)
    /// against 1.5 to 5 ns scanned, and LLVM's lookup of the same table answers sooner too
    /// (`cargo xtask bench lookup`, `docs/performance.md`). On GPUs the index wins at one key as
    /// well.
    pub fn capacity_on_host_device(table: &FptrTable<'_>) -> Option<usize> {
        let keys = keyed(table.entries()).len();
        Self::capacity(table).filter(|_| keys >= HOST_DEVICE_MIN_INDEXED_KEYS)
    }

    /// Builds the index of `table` into `slots`, which must be all zero and
    /// [`HashIndex::capacity`] long. `None` (and `slots` untouched) when the table gets no index
    /// or `slots` has the wrong length.
    pub fn build_into(table: &FptrTable<'_>, slots: &mut [[u64; 2]]) -> Option<HashIndex> {
        if Self::capacity(table) != Some(slots.len()) {
            return None;
        }
        let entries = table.entries();
        let keyed = keyed(entries);
        let shift = 32 - slots.len().trailing_zeros();
        let (first, last) = (entries[0].host_ptr, entries[entries.len() - 1].host_ptr);
        let mut best: Option<(u64, HashIndex)> = None;
        for multiplier in Self::MULTIPLIERS {
            if best.is_some() {
                slots.fill([0, 0]);
            }
            let mut index = HashIndex { multiplier, shift, first, last, longest_probe: 0 };
            let (displacement, longest_probe) = index.place(keyed, slots);
            index.longest_probe = longest_probe;
            if displacement as f64 <= Self::GOOD_ENOUGH * keyed.len() as f64 {
                return Some(index);
            }
            if best.is_none_or(|(d, _)| displacement < d) {
                best = Some((displacement, index));
            }
        }
        // None was good enough: rebuild with the best (the slots hold the last one tried).
        let (_, index) = best?;
        if index.multiplier != Self::MULTIPLIERS[Self::MULTIPLIERS.len() - 1] {
            slots.fill([0, 0]);
            index.place(keyed, slots);
        }
        Some(index)
    }

    /// [`HashIndex::build_into`] a new host vector.
    pub fn build(table: &FptrTable<'_>) -> Option<(HashIndex, Vec<[u64; 2]>)> {
        // `vec!` of `[u64; 2]` zeros comes from calloc: pages the kernel zeroes on first touch.
        let mut slots = vec![[0u64; 2]; Self::capacity(table)?];
        Self::build_into(table, &mut slots).map(|index| (index, slots))
    }

    /// The header fields as the device reads them, without the addresses.
    fn header(&self) -> FptrIndex {
        FptrIndex {
            multiplier: self.multiplier,
            shift: self.shift,
            first: self.first,
            last: self.last,
            ..FptrIndex::NONE
        }
    }

    /// Fills the zeroed `slots` with `keyed` (unique, non-zero keys) by linear probing with
    /// Robin Hood placement; returns the sum of the distances from bucket to slot, and the
    /// longest.
    ///
    /// Robin Hood placement leaves the sum as plain linear probing does but evens the distances
    /// out: a GPU warp waits for its slowest lane, and of 32 random hits the farthest is about 4
    /// probes away instead of 6 (at half full).
    ///
    /// Any insertion order gives a valid table; this one keeps a million-entry build in cache:
    /// the entries are first copied out grouped by the top bits of their bucket (a counting
    /// sort: sequential reads, a thousand sequential write streams), then each group is inserted
    /// into its own stretch of slots, a few tens of KiB, instead of landing at random in the
    /// whole array.
    fn place(&self, keyed: &[FptrMapEntry], slots: &mut [[u64; 2]]) -> (u64, u32) {
        let header = self.header();
        let mask = header.mask();
        let group_shift = slots.len().trailing_zeros().saturating_sub(10);
        let group = |e: &FptrMapEntry| (header.bucket(e.host_ptr) >> group_shift) as usize;
        let mut next = vec![0usize; (slots.len() >> group_shift) + 1];
        for e in keyed {
            next[group(e) + 1] += 1;
        }
        for g in 1..next.len() {
            next[g] += next[g - 1];
        }
        let mut grouped = vec![[0u64; 2]; keyed.len()];
        for e in keyed {
            let at = &mut next[group(e)];
            grouped[*at] = [e.host_ptr, e.tgt_ptr];
            *at += 1;
        }
        let (mut displacement, mut longest) = (0u64, 0u32);
        for mut carried in grouped {
            let mut at = header.bucket(carried[0]);
            // Distance of `carried` from its bucket.
            let mut probe = 0u32;
            loop {
                let slot = &mut slots[at as usize];
                let resident =
                    if slot[0] == 0 { None } else { Some((at.wrapping_sub(header.bucket(slot[0]))) & mask) };
                if resident.is_none_or(|resident| resident < probe) {
                    // Robin Hood: the key farther from its bucket takes the slot, and the one
                    // nearer to its own moves on. Every key's distance only grows, so the
                    // longest placement seen is the longest that stays.
                    std::mem::swap(slot, &mut carried);
                    displacement += u64::from(probe);
                    longest = longest.max(probe);
                    match resident {
                        None => break,
                        Some(resident) => {
                            displacement -= u64::from(resident);
                            probe = resident;
                        }
                    }
                }
                at = at.wrapping_add(1) & mask;
                probe += 1;
            }
        }
        (displacement, longest)
    }

    /// The header to write into `__omp_offloading_fptr_index` once the table is at device
    /// address `table` and the slots at `slots` (16-aligned).
    pub fn header_at(&self, table: u64, slots: u64) -> FptrIndex {
        FptrIndex { table, slots, ..self.header() }
    }

    /// Longest distance of a key from its bucket in the slots as built: the most slots past
    /// the first that a lookup of a present key reads.
    pub fn longest_probe(&self) -> u32 {
        self.longest_probe
    }

    /// Whether every run of occupied slots holds its keys in the order of their buckets (the
    /// Robin Hood placement): a key is at most one slot farther from its bucket than the key
    /// before it.
    #[cfg(test)]
    fn in_bucket_order(&self, slots: &[[u64; 2]]) -> bool {
        let header = self.header();
        let mask = header.mask();
        let distance = |at: usize| (at as u32).wrapping_sub(header.bucket(slots[at][0])) & mask;
        (0..slots.len()).all(|at| {
            let next = (at + 1) & mask as usize;
            slots[at][0] == 0 || slots[next][0] == 0 || distance(next) <= distance(at) + 1
        })
    }

    /// [`HashIndex::longest_probe`] measured again over `slots` (as built for this index).
    #[cfg(test)]
    fn max_probe(&self, slots: &[[u64; 2]]) -> u32 {
        let header = self.header();
        let mask = header.mask();
        slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s[0] != 0)
            .map(|(at, s)| (at as u32).wrapping_sub(header.bucket(s[0])) & mask)
            .max()
            .unwrap_or(0)
    }
}

/// The entries with a non-zero key: the table is sorted, so only leading ones can be 0 (key 0 is
/// never translated, and 0 marks an empty slot).
fn keyed(entries: &[FptrMapEntry]) -> &[FptrMapEntry] {
    &entries[entries.iter().take_while(|e| e.host_ptr == 0).count()..]
}

/// The bytes of `slots` as copied to the device (16 per slot, little-endian).
pub fn slot_bytes(slots: &[[u64; 2]]) -> &[u8] {
    bytemuck::cast_slice(slots)
}

/// The bytes of an index header as written into the device global (48, little-endian).
pub fn header_bytes(header: &FptrIndex) -> [u8; 48] {
    bytemuck::cast(*header)
}

/// The writes that point one image's map globals at a table (`(address, entries, index
/// header)`; `None` clears them), in the order they must be made: the size 0 first, so that a
/// reader never pairs the new pointer with the old length, then the pointer, the size, and the
/// index header (all zero without an index, so that a stale header never names a table). Each is
/// `(global, bytes)`; an image without the index global skips the last.
pub fn map_global_writes(table: Option<(u64, u64, FptrIndex)>) -> [(&'static str, Vec<u8>); 4] {
    let (ptr, len, index) = table.unwrap_or((0, 0, FptrIndex::NONE));
    [
        (FPTR_MAP_SIZE, 0u64.to_le_bytes().to_vec()),
        (FPTR_MAP_P, ptr.to_le_bytes().to_vec()),
        (FPTR_MAP_SIZE, len.to_le_bytes().to_vec()),
        (FPTR_INDEX, header_bytes(&index).to_vec()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_x86_64_device_searches_tables_of_fewer_than_four_keys() {
        let pairs = |n: u64| {
            (1..=n).map(|k| FptrMapEntry { host_ptr: 16 * k, tgt_ptr: 0x9000 + k }).collect::<Vec<_>>()
        };
        for n in 1..=6u64 {
            let entries = pairs(n);
            let table = FptrTable::from_sorted(&entries).unwrap();
            let everywhere = HashIndex::capacity(&table);
            assert_eq!(everywhere, Some((2 * n as usize).next_power_of_two()), "GPUs index every table");
            let on_host = HashIndex::capacity_on_host_device(&table);
            assert_eq!(on_host, if n < 4 { None } else { everywhere }, "{n} keys on the x86_64 device");
        }
    }

    #[test]
    fn map_globals_are_written_size_zero_first_then_pointer_size_and_header() {
        let writes = map_global_writes(Some((0x1000, 3, FptrIndex::NONE)));
        let names: Vec<&str> = writes.iter().map(|(g, _)| *g).collect();
        assert_eq!(names, [FPTR_MAP_SIZE, FPTR_MAP_P, FPTR_MAP_SIZE, FPTR_INDEX]);
        assert_eq!(writes[0].1, 0u64.to_le_bytes());
        assert_eq!(writes[1].1, 0x1000u64.to_le_bytes());
        assert_eq!(writes[2].1, 3u64.to_le_bytes());
        assert_eq!(writes[3].1.len(), 48);
        // Clearing writes zeros everywhere.
        assert!(map_global_writes(None).iter().all(|(_, bytes)| bytes.iter().all(|&b| b == 0)));
    }

    fn e(host_ptr: u64, tgt_ptr: u64) -> FptrMapEntry {
        FptrMapEntry { host_ptr, tgt_ptr }
    }

    #[test]
    fn sorted_tables_are_borrowed_unchanged() {
        let t = [e(1, 10), e(2, 20), e(u64::MAX, 30)];
        let table = FptrTable::from_sorted(&t).unwrap();
        assert!(matches!(table.entries, Cow::Borrowed(_)));
        assert_eq!(table.entries(), &t);
        assert_eq!(table.as_bytes().len(), 48);
        assert_eq!(&table.as_bytes()[..8], &1u64.to_le_bytes());
    }

    #[test]
    fn unsorted_and_conflicting_tables_are_rejected() {
        let err = FptrTable::from_sorted(&[e(2, 1), e(1, 1)]).unwrap_err();
        assert!(err.to_string().contains("not sorted"), "{err}");
        // Unsigned order: 2^63 sorts after 1.
        assert!(FptrTable::from_sorted(&[e(1 << 63, 1), e(1, 1)]).is_err());
        assert!(FptrTable::from_sorted(&[e(1, 1), e(1 << 63, 1)]).is_ok());
        let err = FptrTable::from_sorted(&[e(1, 1), e(1, 2)]).unwrap_err();
        assert!(err.to_string().contains("maps to both"), "{err}");
    }

    #[test]
    fn identical_twins_collapse() {
        let twins = [e(1, 1), e(1, 1), e(1, 1), e(2, 2)];
        let table = FptrTable::from_sorted(&twins).unwrap();
        assert_eq!(table.entries(), &[e(1, 1), e(2, 2)]);
        let table = FptrTable::from_pairs(vec![e(2, 2), e(1, 1), e(2, 2)]).unwrap();
        assert_eq!(table.entries(), &[e(1, 1), e(2, 2)]);
    }

    #[test]
    fn empty_tables_are_valid() {
        assert!(FptrTable::from_sorted(&[]).unwrap().is_empty());
        assert!(FptrTable::from_pairs(Vec::new()).unwrap().is_empty());
    }

    /// Translates `key` the way the device does, with the index placed at the host copies.
    fn indexed(table: &FptrTable<'_>, (index, slots): &(HashIndex, Vec<[u64; 2]>), key: u64) -> u64 {
        let entries = table.entries();
        let header = index.header_at(entries.as_ptr() as u64, slots.as_ptr() as u64);
        let size = entries.len() as u64;
        // SAFETY: the entries and slots are alive and laid out as the device expects.
        unsafe {
            device_rtl::translate_indexed(entries.as_ptr(), &size, &header, key as *mut std::ffi::c_void)
                as u64
        }
    }

    #[test]
    fn index_answers_like_the_search_on_function_like_addresses() {
        // 100k functions 16 to 4096 bytes apart, as in a large program's text segment.
        let mut state = 7u64;
        let mut next = 0x40_0000u64;
        let pairs: Vec<FptrMapEntry> = (0..100_000)
            .map(|i| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                next += 16 * (1 + (state >> 33) % 256);
                e(next, 0x7000_0000_0000 + 64 * i)
            })
            .collect();
        let table = FptrTable::from_sorted(&pairs).unwrap();
        let index = HashIndex::build(&table).unwrap();
        assert_eq!(index.1.len(), 1 << 18, "power of two, at most half full");
        let max_probe = index.0.max_probe(&index.1);
        assert!(max_probe < 64, "max probe {max_probe}");
        assert_eq!(index.0.longest_probe(), max_probe, "as counted while building");
        assert!(index.0.in_bucket_order(&index.1));
        for p in &pairs {
            assert_eq!(indexed(&table, &index, p.host_ptr), p.tgt_ptr);
            assert_eq!(indexed(&table, &index, p.host_ptr + 8), p.host_ptr + 8);
        }
        for key in [1, 0x40_0000, u64::MAX] {
            assert_eq!(indexed(&table, &index, key), key);
        }
    }

    #[test]
    fn nothing_to_index_builds_no_index() {
        assert!(HashIndex::build(&FptrTable::from_sorted(&[]).unwrap()).is_none());
        // Key 0 is never translated, and 0 marks an empty slot.
        assert!(HashIndex::build(&FptrTable::from_sorted(&[e(0, 5)]).unwrap()).is_none());
        let table = [e(0, 5), e(9, 6)];
        let table = FptrTable::from_sorted(&table).unwrap();
        let index = HashIndex::build(&table).unwrap();
        assert_eq!(index.1.len(), 2);
        assert_eq!((indexed(&table, &index, 9), indexed(&table, &index, 0)), (6, 0));
    }

    #[test]
    fn header_bytes_are_the_c_struct() {
        let header =
            FptrIndex { table: 1, slots: 2, multiplier: 3, first: 4, last: 5, shift: 6, reserved: 0 };
        // SAFETY: FptrIndex is repr(C) without padding (48 bytes, asserted in the ABI crate).
        let image: [u8; 48] = unsafe { std::mem::transmute(header) };
        assert_eq!(header_bytes(&header), image);
    }

    proptest! {
        #[test]
        fn index_agrees_with_the_search(
            keys in prop::collection::btree_set(prop_oneof![0u64..200, any::<u64>()], 0..300),
            extra in any::<u64>(),
        ) {
            let pairs: Vec<FptrMapEntry> = keys.iter().map(|&k| e(k, k ^ 0x5555)).collect();
            let table = FptrTable::from_sorted(&pairs).unwrap();
            match HashIndex::build(&table) {
                None => prop_assert!(pairs.iter().all(|p| p.host_ptr == 0)),
                Some(index) => {
                    let keys_in_slots = index.1.iter().filter(|s| s[0] != 0).count();
                    prop_assert_eq!(keys_in_slots, pairs.iter().filter(|p| p.host_ptr != 0).count());
                    prop_assert!(index.1.len() >= 2 * keys_in_slots);
                    prop_assert_eq!(index.0.longest_probe(), index.0.max_probe(&index.1));
                    prop_assert!(index.0.in_bucket_order(&index.1));
                    let mut asked: Vec<u64> = pairs.iter().flat_map(|p| [p.host_ptr, p.host_ptr.wrapping_add(1), p.host_ptr.wrapping_sub(1)]).collect();
                    asked.extend([0, 1, u64::MAX, extra]);
                    for key in asked {
                        prop_assert_eq!(indexed(&table, &index, key), device_rtl::translate_in(&pairs, key), "key {:#x}", key);
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn from_pairs_sorts_and_agrees_with_a_map(
            pairs in prop::collection::vec((0u64..50, 0u64..3), 0..60)
        ) {
            let entries: Vec<_> = pairs.iter().map(|&(h, t)| e(h, t)).collect();
            let mut by_key = std::collections::BTreeMap::new();
            let mut conflict = false;
            for &(h, t) in &pairs {
                if *by_key.entry(h).or_insert(t) != t {
                    conflict = true;
                }
            }
            match FptrTable::from_pairs(entries) {
                Ok(table) => {
                    prop_assert!(!conflict);
                    let want: Vec<_> = by_key.iter().map(|(&h, &t)| e(h, t)).collect();
                    prop_assert_eq!(table.entries(), &want[..]);
                }
                Err(_) => prop_assert!(conflict),
            }
        }
    }
}
