//! Reproducible pseudo-random function-pointer tables: the same input in every run and on every
//! machine, so a failure on a GPU can be replayed here.

use host_table::rtl_interface::FptrMapEntry;

/// splitmix64's next value.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` pairs with distinct 16-byte-aligned host addresses below 2^47, sorted by `host_ptr`.
/// Alignment leaves room between neighbours, so every table of two or more entries has keys that
/// fall inside its range and are not in it.
pub fn sorted_pairs(n: usize, seed: u64) -> Vec<FptrMapEntry> {
    let mut state = seed;
    let mut pairs: Vec<FptrMapEntry> = Vec::with_capacity(n);
    while pairs.len() < n {
        pairs.extend((pairs.len()..n).map(|_| FptrMapEntry {
            host_ptr: (splitmix(&mut state) & 0x0000_7fff_ffff_fff0) | 0x10,
            tgt_ptr: splitmix(&mut state) & 0x0000_7fff_ffff_fff0,
        }));
        pairs.sort_unstable_by_key(|e| e.host_ptr);
        pairs.dedup_by_key(|e| e.host_ptr);
    }
    pairs
}

/// Fisher-Yates with the same generator.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..items.len()).rev() {
        let j = (splitmix(&mut state) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}
