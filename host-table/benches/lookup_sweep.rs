//! `cargo xtask bench lookup`: the device library's lookup on the x86_64 device at every table
//! size from 1 to 1M keys, against LLVM's own lookup of the same table, measured in the same run.
//!
//! Three lookups of one sorted table of `n` function-like keys (16 to 4096 bytes apart, as in a
//! text segment), each called out of line as device code calls it:
//!
//! - `index`: the device library's translation with the hash index the host builds
//!   (`device_rtl::translate_indexed`, what a table installed by this project answers with);
//! - `no index`: the same translation with no index installed, what a table of fewer than
//!   `HOST_DEVICE_MIN_INDEXED_KEYS` keys gets on the x86_64 device (there a scan, above that
//!   size a branch-free binary search);
//! - `llvm`: LLVM's DeviceRTL lookup (`indirectCallLookup` of `openmp/device/src/Misc.cpp`,
//!   written here in Rust step for step: the range test, then a halving search that compares
//!   for equality first), which stock libomptarget's table is searched with.
//!
//! Each is timed as throughput (independent random hits, as a loop over objects of random
//! classes asks) and as latency (each key chosen by the previous answer), rounds interleaved so
//! that drift hits all alike. Printed: ns per lookup (median of the rounds), each one's ratio to
//! LLVM's with the middle half of the per-round ratios, and per size whether what the x86_64
//! device uses there (the index, or the search below `HOST_DEVICE_MIN_INDEXED_KEYS`) is no
//! slower than LLVM's, or "noisy" where the middle half spans more than a quarter of the ratio.
//! Writes `target/bench/lookup_sweep.csv`.

use std::ffi::c_void;
use std::hint::black_box;
use std::time::Instant;

use host_table::fptr_map::{FptrTable, HashIndex};
use host_table::rtl_interface::{FptrIndex, FptrMapEntry};
use omptarget_indirect_abi::HOST_DEVICE_MIN_INDEXED_KEYS;

/// Table sizes: 1 to 1M keys (each size below 16, then a factor of 4 apart).
const SIZES: [usize; 14] = [1, 2, 3, 4, 8, 16, 64, 256, 1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20];
/// Lookups per timed run.
const LOOKUPS: usize = 1 << 20;
/// Rounds per size (each times every lookup once per mode).
const ROUNDS: usize = 9;

/// A lookup under test: `key` through the table.
type Lookup = fn(&Installed, u64) -> u64;

/// A table as the device sees it: its entries, their count, and the index's header (or none).
struct Installed {
    entries: Vec<FptrMapEntry>,
    size: u64,
    header: FptrIndex,
    _slots: Vec<[u64; 2]>,
}

impl Installed {
    /// `n` entries with function-like keys from `seed`, with the index the host would build.
    fn new(n: usize, seed: u64) -> Installed {
        let mut state = seed;
        let mut next = 0x40_0000u64;
        let pairs: Vec<FptrMapEntry> = (0..n)
            .map(|i| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                next += 16 * (1 + (state >> 33) % 256);
                FptrMapEntry { host_ptr: next, tgt_ptr: 0x7000_0000_0000 + 16 * i as u64 }
            })
            .collect();
        let table = FptrTable::from_sorted(&pairs).expect("sorted, distinct keys");
        let capacity = HashIndex::capacity(&table).expect("an index for every size measured");
        let mut slots = vec![[0u64; 2]; capacity];
        let index = HashIndex::build_into(&table, &mut slots).expect("capacity as asked");
        let header = index.header_at(pairs.as_ptr() as u64, slots.as_ptr() as u64);
        Installed { size: pairs.len() as u64, entries: pairs, header, _slots: slots }
    }
}

#[inline(never)]
fn with_index(table: &Installed, key: u64) -> u64 {
    // SAFETY: the entries and the slots the header names are alive, built by the host's own
    // code for this table.
    unsafe {
        device_rtl::translate_indexed(table.entries.as_ptr(), &table.size, &table.header, key as *mut c_void)
            as u64
    }
}

/// The same translation with no index installed (a header of zeros): the path a table without
/// an index takes on the device.
#[inline(never)]
fn without_index(table: &Installed, key: u64) -> u64 {
    // SAFETY: `size` sorted entries; the header describes no table, so no slot is read.
    unsafe {
        device_rtl::translate_indexed(
            table.entries.as_ptr(),
            &table.size,
            &FptrIndex::NONE,
            key as *mut c_void,
        ) as u64
    }
}

/// LLVM's DeviceRTL lookup, step for step. It loops forever on a key between two entries, so it
/// is given hits only.
#[inline(never)]
fn llvm_lookup(table: &Installed, key: u64) -> u64 {
    let entries = table.entries.as_ptr();
    let size = table.size;
    if key == 0 {
        return 0;
    }
    if entries.is_null() || size == 0 {
        return key;
    }
    let (mut left, mut right) = (0u32, size as u32);
    // SAFETY: indices 0 and size - 1 are in the table.
    if key < unsafe { (*entries).host_ptr } || key > unsafe { (*entries.add(right as usize - 1)).host_ptr } {
        return key;
    }
    while left != right {
        let current = left + (right - left) / 2;
        // SAFETY: left <= current < right <= size.
        let entry = unsafe { &*entries.add(current as usize) };
        if entry.host_ptr == key {
            return entry.tgt_ptr;
        }
        if key < entry.host_ptr {
            right = current;
        } else {
            left = current;
        }
    }
    key
}

/// Nanoseconds per lookup of `lookup` over `keys`: independent lookups (throughput), or each
/// key picked by the previous answer (latency).
fn time(lookup: Lookup, table: &Installed, keys: &[u64], dependent: bool) -> f64 {
    let mask = keys.len() - 1;
    let start = Instant::now();
    let mut sum = 0u64;
    if dependent {
        let mut at = 0usize;
        for i in 0..LOOKUPS {
            let answer = lookup(table, keys[at]);
            at = (answer as usize >> 4 ^ i) & mask;
            sum = sum.wrapping_add(answer);
        }
    } else {
        for i in 0..LOOKUPS {
            sum = sum.wrapping_add(lookup(table, keys[i & mask]));
        }
    }
    black_box(sum);
    start.elapsed().as_nanos() as f64 / LOOKUPS as f64
}

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `(median, first quartile, third quartile)` of `values` (sorted in place).
fn quartiles(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    (values[n / 2], values[n / 4], values[(3 * n) / 4])
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = workspace.join("target/bench");
    std::fs::create_dir_all(&out).expect("target/bench");
    let mut csv = String::from(
        "mode,keys,index_ns,no_index_ns,llvm_ns,index_vs_llvm,q1,q3,no_index_vs_llvm,x86_64_device_verdict\n",
    );
    let mut table_lines = Vec::new();
    let mut misses = Vec::new();
    for dependent in [false, true] {
        let mode = if dependent { "latency" } else { "throughput" };
        for &n in &SIZES {
            let table = Installed::new(n, 0x5eed ^ n as u64);
            let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
            let keys: Vec<u64> = (0..LOOKUPS.min(1 << 16))
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    table.entries[(state % n as u64) as usize].host_ptr
                })
                .collect();
            for &key in keys.iter().take(64) {
                let want = llvm_lookup(&table, key);
                assert_eq!(with_index(&table, key), want, "the index answers as LLVM's lookup");
                assert_eq!(without_index(&table, key), want, "the table alone answers as LLVM's lookup");
            }
            let (mut index, mut search, mut llvm) = (Vec::new(), Vec::new(), Vec::new());
            let (mut index_ratio, mut search_ratio) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                let i = time(with_index, &table, &keys, dependent);
                let s = time(without_index, &table, &keys, dependent);
                let l = time(llvm_lookup, &table, &keys, dependent);
                index.push(i);
                search.push(s);
                llvm.push(l);
                index_ratio.push(i / l);
                search_ratio.push(s / l);
            }
            // What the x86_64 device uses at this size: the index, or the search below
            // HOST_DEVICE_MIN_INDEXED_KEYS; its verdict against LLVM's.
            let (used, mut used_ratio) = if n >= HOST_DEVICE_MIN_INDEXED_KEYS {
                ("index", index_ratio.clone())
            } else {
                ("no index", search_ratio.clone())
            };
            let (used_vs_llvm, u1, u3) = quartiles(&mut used_ratio);
            let (ratio, q1, q3) = quartiles(&mut index_ratio);
            let search_vs_llvm = median(&mut search_ratio);
            let verdict = if u3 - u1 > 0.25 * used_vs_llvm {
                format!("{used}: noisy")
            } else if u1 <= 1.0 {
                format!("{used}: no slower")
            } else {
                misses.push(format!("{mode} at {n} keys ({used}): {used_vs_llvm:.2}x"));
                format!("{used}: SLOWER")
            };
            let (i, s, l) = (median(&mut index), median(&mut search), median(&mut llvm));
            csv.push_str(&format!(
                "{mode},{n},{i:.3},{s:.3},{l:.3},{ratio:.3},{q1:.3},{q3:.3},{search_vs_llvm:.3},{verdict}\n"
            ));
            table_lines.push(format!(
                "| {mode} | {n} | {i:.2} | {s:.2} | {l:.2} | {ratio:.2}x ({q1:.2}-{q3:.2}) | {search_vs_llvm:.2}x | {verdict} |"
            ));
        }
    }
    println!("lookup sweep, x86_64 ({LOOKUPS} lookups per run, {ROUNDS} rounds, ns per lookup, medians):");
    println!("| mode | keys | index | no index | LLVM | index / LLVM (middle half) | no index / LLVM | what the x86_64 device uses, vs LLVM |");
    println!("|---|---:|---:|---:|---:|---|---|---|");
    for line in &table_lines {
        println!("{line}");
    }
    if misses.is_empty() {
        println!("what the x86_64 device uses is no slower than LLVM's lookup at any size measured (or the run says noisy)");
    } else {
        println!("what the x86_64 device uses is slower than LLVM's lookup: {}", misses.join("; "));
    }
    std::fs::write(out.join("lookup_sweep.csv"), csv).expect("target/bench/lookup_sweep.csv");
}
