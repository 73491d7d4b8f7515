//! `cargo xtask bench`: the time of `__tgt_rtl_set_function_ptr_map` (validate, copy to device
//! memory, patch both globals, free the previous table) through the installed plugin's C ABI, at
//! 1, 1K and 1M entries, against a baseline measured in the same run on the same pairs: sorting
//! them by `host_ptr` plus one memcpy of the sorted table.
//!
//! Each repetition is timed on its own and the two are interleaved, so drift hits both alike;
//! the report gives medians and minima. Writes `target/bench/set_function_ptr_map.csv`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use host_table::rtl_interface::{FptrMapEntry, OFFLOAD_SUCCESS};
use plugin_test_support::random;
use support::{api, indirect_image, workspace};

/// The goal: at most this many baselines at 1M entries (median of the paired ratios).
const GOAL_RATIO_AT_1M: f64 = 1.5;
const SIZES: [usize; 3] = [1, 1 << 10, 1 << 20];

/// `n` pairs with distinct host addresses in random order: the baseline then sorts a shuffled
/// input rather than a sorted one.
fn random_pairs(n: usize, seed: u64) -> Vec<FptrMapEntry> {
    let mut pairs = random::sorted_pairs(n, seed);
    random::shuffle(&mut pairs, !seed);
    pairs
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

struct Row {
    entries: usize,
    reps: usize,
    plugin_median: Duration,
    plugin_min: Duration,
    baseline_median: Duration,
    baseline_min: Duration,
    /// Each repetition's plugin time over the baseline time measured right after it, sorted.
    ratios: Vec<f64>,
}

impl Row {
    /// The median of the paired ratios.
    fn ratio(&self) -> f64 {
        self.ratios[self.ratios.len() / 2]
    }

    /// The middle half of the paired ratios (first and third quartile).
    fn spread(&self) -> (f64, f64) {
        let n = self.ratios.len();
        (self.ratios[n / 4], self.ratios[(3 * n) / 4])
    }

    /// The goal's verdict, or that the repetitions disagree too much to give one (their middle
    /// half spreads over more than a quarter of the ratio).
    fn verdict(&self, goal: f64) -> String {
        let (low, high) = self.spread();
        let ratio = self.ratio();
        if high - low > 0.25 * ratio {
            format!("too noisy to judge (middle half of the ratios {low:.3}x..{high:.3}x)")
        } else if ratio <= goal {
            format!("met ({ratio:.3}x, middle half {low:.3}x..{high:.3}x)")
        } else {
            format!("NOT met ({ratio:.3}x, middle half {low:.3}x..{high:.3}x)")
        }
    }

    /// Entries, repetitions, then the four times in microseconds: the table's and the CSV's
    /// columns before the ratio.
    fn cells(&self) -> [String; 6] {
        [
            self.entries.to_string(),
            self.reps.to_string(),
            micros(self.plugin_median),
            micros(self.plugin_min),
            micros(self.baseline_median),
            micros(self.baseline_min),
        ]
    }
}

fn measure(n: usize) -> Row {
    let api = api();
    let shuffled = random_pairs(n, 0x5eed ^ n as u64);
    let mut sorted = shuffled.clone();
    sorted.sort_unstable_by_key(|e| e.host_ptr);
    // About 0.5 s of plugin calls per size, and at least 31 repetitions: enough pairs for the
    // quartiles of their ratios to mean something (1M entries: about 2 s in all).
    let reps = (4_000_000 / n).clamp(31, 20_000);
    let mut scratch = shuffled.clone();
    let mut copy = vec![FptrMapEntry { host_ptr: 0, tgt_ptr: 0 }; n];
    let (mut plugin, mut baseline) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let start = Instant::now();
        // SAFETY: a live sorted table of n entries; device 0 has the image loaded.
        let rc = unsafe { (api.set_function_ptr_map)(0, n as u64, black_box(sorted.as_ptr())) };
        plugin.push(start.elapsed());
        assert_eq!(rc, OFFLOAD_SUCCESS, "set_function_ptr_map failed at {n} entries");

        scratch.copy_from_slice(&shuffled);
        let start = Instant::now();
        black_box(&mut scratch).sort_unstable_by_key(|e| e.host_ptr);
        copy.copy_from_slice(&scratch);
        black_box(&copy);
        baseline.push(start.elapsed());
    }
    assert_eq!(copy, sorted, "the baseline sorted the same pairs");
    let mut ratios: Vec<f64> =
        plugin.iter().zip(&baseline).map(|(p, b)| p.as_secs_f64() / b.as_secs_f64()).collect();
    ratios.sort_by(f64::total_cmp);
    Row {
        ratios,
        entries: n,
        reps,
        plugin_min: *plugin.iter().min().unwrap(),
        baseline_min: *baseline.iter().min().unwrap(),
        plugin_median: median(&mut plugin),
        baseline_median: median(&mut baseline),
    }
}

fn micros(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

fn main() {
    let api = api();
    let image = indirect_image();
    // SAFETY: the call order of libomptarget; `image` outlives its use on device 0.
    unsafe {
        assert_eq!((api.init_plugin)(), OFFLOAD_SUCCESS);
        assert_eq!((api.init_device)(0), OFFLOAD_SUCCESS);
        assert!(!(api.load_binary)(0, image.ptr()).is_null(), "cannot load the indirect image");
    }
    let rows: Vec<Row> = SIZES.iter().map(|&n| measure(n)).collect();
    // SAFETY: as above; clearing frees the last table.
    unsafe {
        assert_eq!((api.set_function_ptr_map)(0, 0, std::ptr::null()), OFFLOAD_SUCCESS);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
        assert_eq!((api.deinit_plugin)(), OFFLOAD_SUCCESS);
    }

    println!("\nset_function_ptr_map (x86_64 plugin, 1 image patched) vs sort + memcpy of the same pairs");
    println!(
        "{:>9} {:>6} {:>14} {:>14} {:>14} {:>14} {:>7} {:>15}",
        "entries",
        "reps",
        "plugin med us",
        "plugin min us",
        "base med us",
        "base min us",
        "ratio",
        "middle half"
    );
    let mut csv = String::from(
        "entries,reps,plugin_median_us,plugin_min_us,baseline_median_us,baseline_min_us,ratio_median,ratio_q1,ratio_q3\n",
    );
    for r in &rows {
        let [entries, reps, plugin_med, plugin_min, base_med, base_min] = r.cells();
        let (q1, q3) = r.spread();
        println!(
            "{entries:>9} {reps:>6} {plugin_med:>14} {plugin_min:>14} {base_med:>14} {base_min:>14} {:>7.3} {:>15}",
            r.ratio(),
            format!("{q1:.3}..{q3:.3}")
        );
        csv += &format!(
            "{entries},{reps},{plugin_med},{plugin_min},{base_med},{base_min},{:.4},{q1:.4},{q3:.4}\n",
            r.ratio()
        );
    }
    let verdict = rows.last().expect("three sizes").verdict(GOAL_RATIO_AT_1M);
    println!(
        "goal (<= {GOAL_RATIO_AT_1M}x the baseline at 1M entries, median of paired repetitions): {verdict}"
    );
    let dir = workspace().join("target/bench");
    std::fs::create_dir_all(&dir).expect("cannot create target/bench");
    let path = dir.join("set_function_ptr_map.csv");
    std::fs::write(&path, csv).expect("cannot write the CSV");
    println!("wrote {}", path.display());
}
