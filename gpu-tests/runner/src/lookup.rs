//! Test 1 of the bundle: the device lookup itself. Rust kernels linked with the device runtime
//! (inlined, and as a call) translate every key of random tables of 0, 1, 2, 3, 17, 1000 and 1M
//! entries: all hits, a miss between every two neighbours, and misses outside the range; every
//! thread's result is checked on the host against a binary search of the same table. Each table
//! is installed three times: with the plugin's hash index, alone (the binary search, what a table
//! from another producer gets), and as LLVM's runtime installs its own, in the device
//! environment with no table of ours (what libomptarget 22 and LLVM 18-21's GPU plugins do).

use std::path::Path;

use host_table::rtl_interface::{FptrMapEntry, FPTR_MAP_P, FPTR_MAP_SIZE};
use plugin_test_support::random::sorted_pairs;

use crate::cuda::{Arg, Gpu, Result};

/// Table sizes of the issue.
const SIZES: [usize; 7] = [0, 1, 2, 3, 17, 1000, 1 << 20];
/// The kernel modules: the translation inlined into the kernel (clang's device LTO) and called.
pub const VARIANTS: [&str; 2] = ["lookup_inlined", "lookup_called"];

/// What the function must return: `tgt_ptr` of the entry whose `host_ptr` is `key`, else `key`.
fn expected(table: &[FptrMapEntry], key: u64) -> u64 {
    if key == 0 {
        return 0;
    }
    table.binary_search_by_key(&key, |e| e.host_ptr).map_or(key, |i| table[i].tgt_ptr)
}

/// Every hit, the key just above each entry (a miss inside the range, where LLVM's lookup
/// hangs), and keys outside the range or special.
fn keys_for(table: &[FptrMapEntry]) -> Vec<u64> {
    let mut keys: Vec<u64> = table.iter().map(|e| e.host_ptr).collect();
    keys.extend(table.windows(2).map(|w| w[0].host_ptr + 16));
    keys.extend([0, 1, 16, u64::MAX, u64::MAX - 15, 1 << 63, 0x7fff_ffff_fff0]);
    if let (Some(first), Some(last)) = (table.first(), table.last()) {
        keys.extend([first.host_ptr - 1, first.host_ptr - 16, last.host_ptr + 1, last.host_ptr + 16]);
    }
    // Device addresses passing through, as a pointer that is already translated does.
    keys.extend(table.iter().take(64).map(|e| e.tgt_ptr));
    keys
}

/// Runs every table size on both variants. Returns the lines of the report.
pub fn run(gpu: &Gpu, bundle: &Path) -> Result<Vec<String>> {
    let mut report = Vec::new();
    for variant in VARIANTS {
        let module = gpu.load_kernels(bundle, variant)?;
        let blocks = gpu.sms * 4;
        for &n in &SIZES {
            let table = sorted_pairs(n, 0x1d1e ^ n as u64);
            let keys = keys_for(&table);
            let none: &[FptrMapEntry] = &[];
            for (ours, index, llvms, how) in [
                (&table[..], true, none, "indexed"),
                (&table[..], false, none, "searched"),
                (none, false, &table[..], "in LLVM's device environment"),
            ] {
                let _installed = module.install(ours, index)?;
                let _llvms = module.install_in_device_environment(llvms)?;
                let failures = translate_and_check(&module, blocks, &keys, |k| expected(&table, k), gpu)?;
                if failures > 0 {
                    return Err(format!(
                        "{variant}: {n} entries, {how}: {failures} of {} keys translated wrongly",
                        keys.len()
                    ));
                }
                report.push(format!(
                    "{variant}: {n:>7} entries, {how}: {:>7} keys (hits, in-range and outside misses) ok",
                    keys.len()
                ));
            }
        }
        // Another producer replaces the table (new address, new values) and leaves our index:
        // the index no longer names the table and must be ignored.
        let table = sorted_pairs(1000, 77);
        let _ours = module.install(&table, true)?;
        let theirs: Vec<FptrMapEntry> =
            table.iter().map(|e| FptrMapEntry { host_ptr: e.host_ptr, tgt_ptr: e.tgt_ptr ^ 0xff0 }).collect();
        let their_table = gpu.upload(&theirs)?;
        module.set_global(FPTR_MAP_P, their_table.ptr)?;
        let keys = keys_for(&theirs);
        let failures = translate_and_check(&module, blocks, &keys, |k| expected(&theirs, k), gpu)?;
        if failures > 0 {
            return Err(format!(
                "{variant}: a table installed over ours: {failures} keys translated wrongly"
            ));
        }
        report.push(format!("{variant}: a table installed over ours (index left behind): ignored, ok"));
        // Ours and LLVM's both installed, with different values: ours answers.
        let _ours = module.install(&table, true)?;
        let _llvms = module.install_in_device_environment(&theirs)?;
        let keys = keys_for(&table);
        let failures = translate_and_check(&module, blocks, &keys, |k| expected(&table, k), gpu)?;
        if failures > 0 {
            return Err(format!("{variant}: ours and LLVM's table: {failures} keys not answered by ours"));
        }
        report.push(format!("{variant}: ours and LLVM's table installed: ours answers, ok"));
        module.install_in_device_environment(&[])?;
        // A table pointer with no size, and a size with no table pointer: nothing is a key.
        let table = sorted_pairs(5, 5);
        let keys = keys_for(&table);
        let device_table = module.install(&table, false)?.table;
        for (pointer, size, what) in [(device_table.ptr, 0, "size 0"), (0, 5, "null table with size 5")] {
            module.set_global(FPTR_MAP_P, pointer)?;
            module.set_global(FPTR_MAP_SIZE, size)?;
            let failures = translate_and_check(&module, blocks, &keys, |k| k, gpu)?;
            if failures > 0 {
                return Err(format!("{variant}: {what}: {failures} keys changed"));
            }
            report.push(format!("{variant}: {what}: {} keys returned unchanged", keys.len()));
        }
    }
    Ok(report)
}

/// Launches `translate_keys` over `keys` and counts results that differ from `expect`,
/// printing the first few.
fn translate_and_check(
    module: &crate::cuda::Module<'_>,
    blocks: u32,
    keys: &[u64],
    expect: impl Fn(u64) -> u64,
    gpu: &Gpu,
) -> Result<usize> {
    let device_keys = gpu.upload(keys)?;
    let out = gpu.upload(&vec![0xdead_beef_u64; keys.len()])?;
    module.run(
        "translate_keys",
        blocks,
        256,
        &[Arg::U64(device_keys.ptr), Arg::U64(out.ptr), Arg::U64(keys.len() as u64)],
    )?;
    let results: Vec<u64> = out.download()?;
    let mut failures = 0;
    for (i, (&key, &got)) in keys.iter().zip(&results).enumerate() {
        let want = expect(key);
        if got != want {
            if failures < 5 {
                eprintln!("  thread {i}: key {key:#x}: got {got:#x}, expected {want:#x}");
            }
            failures += 1;
        }
    }
    Ok(failures)
}
