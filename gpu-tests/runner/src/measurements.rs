//! What the translation benchmark measures and records: the implementations, key patterns and
//! table sizes, and one row per measurement. Shared by the benchmark (`bench`) and the plot
//! (`plot`), which import it and not each other.

use std::time::Duration;

/// Table sizes: 1 to 1M keys, each size below 16 and then a factor of 4 apart: the x86_64
/// sweep's (`host-table/benches/lookup_sweep.rs`), so that the two devices' tables read alike.
pub const SIZES: [usize; 14] =
    [1, 2, 3, 4, 8, 16, 64, 256, 1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20];
/// The key patterns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pattern {
    /// Every lane of a warp translates the same pointer.
    UniformHit,
    /// Every lane a different random key of the table.
    DivergentHit,
    /// Pointers below or above the table's range (a device pointer passing through).
    MissOutside,
    /// Pointers between two keys: LLVM's lookup never returns on these.
    MissInside,
}

impl Pattern {
    /// All four, in report order.
    pub const ALL: [Pattern; 4] =
        [Pattern::UniformHit, Pattern::DivergentHit, Pattern::MissOutside, Pattern::MissInside];

    /// Name in the report and the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::UniformHit => "uniform-hit",
            Pattern::DivergentHit => "divergent-hit",
            Pattern::MissOutside => "miss-outside",
            Pattern::MissInside => "miss-inside",
        }
    }
}

/// How an implementation's module gets the table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Install {
    /// As the plugin installs it: table and hash index.
    Indexed,
    /// The table and the two map globals alone.
    TableOnly,
    /// In LLVM's device environment (the same in LLVM 19 and 22).
    LlvmEnvironment,
}

/// One implementation measured.
pub struct Implementation {
    /// Name in the report, the CSV and the plot.
    pub name: &'static str,
    /// Kernel module of the bundle.
    pub module: &'static str,
    /// Kernel name prefix (`<prefix>_throughput`, `<prefix>_latency`).
    pub prefix: &'static str,
    /// How its module gets the table.
    pub install: Install,
}

/// The implementations, each with a module of its own.
pub const IMPLEMENTATIONS: [Implementation; 5] = [
    Implementation {
        name: "ours-inlined",
        module: "lookup_inlined",
        prefix: "bench_ours",
        install: Install::Indexed,
    },
    Implementation {
        name: "ours-called",
        module: "lookup_called",
        prefix: "bench_ours",
        install: Install::Indexed,
    },
    Implementation {
        name: "ours-searched",
        module: "lookup_inlined",
        prefix: "bench_ours",
        install: Install::TableOnly,
    },
    Implementation {
        name: "llvm",
        module: "llvm_lookup",
        prefix: "bench_llvm",
        install: Install::LlvmEnvironment,
    },
    Implementation {
        name: "baseline",
        module: "lookup_inlined",
        prefix: "bench_baseline",
        install: Install::TableOnly,
    },
];

/// One measurement.
pub struct Row {
    /// Implementation name.
    pub implementation: &'static str,
    /// Key pattern.
    pub pattern: Pattern,
    /// "throughput" or "latency".
    pub mode: &'static str,
    /// Table entries.
    pub entries: usize,
    /// Translations per launch.
    pub translations: u64,
    /// Median kernel time (CUDA events) over the timed launches.
    pub median: Duration,
    /// The 10th and 90th percentile of the kernel times: the spread.
    pub spread: (Duration, Duration),
}

impl Row {
    /// Translations per second.
    pub fn rate(&self) -> f64 {
        self.translations as f64 / self.median.as_secs_f64()
    }
}
