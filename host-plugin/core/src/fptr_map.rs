//! Validation and construction of the function-pointer table the device runtime searches.

use std::borrow::Cow;

use crate::abi::FptrMapEntry;
use crate::error::{PluginError, Result};

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
        let entries: &[FptrMapEntry] = &self.entries;
        // SAFETY: FptrMapEntry is repr(C) of two u64 with no padding; any byte view is valid.
        unsafe { std::slice::from_raw_parts(entries.as_ptr().cast::<u8>(), std::mem::size_of_val(entries)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
