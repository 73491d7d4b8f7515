//! `cargo xtask bench`, fourth part: what the frontend plugin's vtable policy costs device
//! compiles. Each source is compiled for the device alone (`--offload-device-only -c`, clang 19,
//! both plugins) with `vtables=declare-target` (classes in `declare target` regions only, the
//! policy before) and `vtables=all` (every dynamic class outside system headers, the default),
//! alternately, five pairs, in the same run: the device object's size and vtables (deterministic)
//! and the median compile time with the spread of the pairs' ratios. Sources: the end-to-end C++
//! programs and `bench/programs/class_hierarchy.cpp` (50 classes over the C++ library), the latter
//! for sm_90 too (through ptxas). Figures in `target/bench/frontend_policy.csv`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::Result;

use crate::cmd;
use crate::dist::Dist;
use crate::offload::OffloadTarget;
use crate::toolchain::Toolchain;
use crate::tools::Tools;
use crate::translation::{median, spread};

/// Compile pairs per source and target.
const PAIRS: usize = 5;

/// The two policies, as the plugin argument names them: the baseline first.
const POLICIES: [&str; 2] = ["declare-target", "all"];

/// `(source under the workspace, targets)`.
const SOURCES: &[(&str, &[&str])] = &[
    ("bench/programs/class_hierarchy.cpp", &["x86_64", "sm_90"]),
    ("tests/e2e/class_library.cpp", &["x86_64"]),
    ("tests/e2e/class_library_main.cpp", &["x86_64"]),
    ("tests/e2e/host_scene.cpp", &["x86_64"]),
    ("tests/e2e/host_scene_factory.cpp", &["x86_64"]),
    ("tests/e2e/host_objects.cpp", &["x86_64"]),
    ("tests/e2e/dynamic_casts.cpp", &["x86_64"]),
    ("tests/e2e/loop_cache.cpp", &["x86_64"]),
];

/// Builds nothing (the dist tree must be built) and prints, per source and target, the device
/// object's vtables and size and the compile time under each policy.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let out = workspace.join("target/bench/frontend-policy");
    std::fs::create_dir_all(&out)?;
    let toolchain = Toolchain::project_plugins(tools, dist);
    let mut csv = String::from(
        "source,target,vtables_before,vtables_after,bytes_before,bytes_after,seconds_before,seconds_after,ratio,ratio_min,ratio_max\n",
    );
    println!(
        "\nfrontend plugin's vtable policy, device compiles (clang 19), vtables=declare-target -> vtables=all \
         (median of {PAIRS} pairs):"
    );
    for &(source, targets) in SOURCES {
        for &arch in targets {
            let target =
                if arch == "x86_64" { OffloadTarget::x86_64() } else { OffloadTarget::of_arch(arch) };
            let name = Path::new(source).file_stem().and_then(|s| s.to_str()).unwrap_or("source");
            let compile = |policy: &str| -> Result<(f64, u64, usize)> {
                let object = out.join(format!("{name}.{arch}.{policy}.o"));
                let start = Instant::now();
                cmd::output(
                    Command::new(&tools.clangxx)
                        .args(toolchain.offload_args(&target))
                        .args(["-O2", "--offload-device-only", "-c", "-Wno-unknown-cuda-version"])
                        .arg(format!("-I{}", workspace.join("tests/e2e").display()))
                        .args(toolchain.device_only_pass_plugin_args())
                        .arg(format!("-fplugin-arg-omptarget_indirect-vtables={policy}"))
                        .arg(workspace.join(source))
                        .arg("-o")
                        .arg(&object),
                )?;
                let seconds = start.elapsed().as_secs_f64();
                let bytes = std::fs::metadata(&object)?.len();
                Ok((seconds, bytes, vtables_in(&std::fs::read(&object)?)))
            };
            let mut pairs = Vec::new();
            let mut sizes = [(0, 0); 2];
            for _ in 0..PAIRS {
                let (before, bytes_before, vtables_before) = compile(POLICIES[0])?;
                let (after, bytes_after, vtables_after) = compile(POLICIES[1])?;
                sizes = [(bytes_before, vtables_before), (bytes_after, vtables_after)];
                pairs.push((before, after));
            }
            let before = median(pairs.iter().map(|p| p.0).collect());
            let after = median(pairs.iter().map(|p| p.1).collect());
            let ratios: Vec<f64> = pairs.iter().map(|p| p.1 / p.0).collect();
            let (low, high) = spread(&ratios);
            let ratio = after / before;
            let noisy = if high - low > 0.25 * ratio { " (too noisy to judge the time)" } else { "" };
            let [(bytes_before, vtables_before), (bytes_after, vtables_after)] = sizes;
            println!(
                "  {name:<22} {arch:<6} vtables {vtables_before:>3} -> {vtables_after:>3}, object {bytes_before:>8} -> \
                 {bytes_after:>8} B ({:.2}x), compile {before:5.2} -> {after:5.2} s, {ratio:.2}x (pairs {low:.2}x..{high:.2}x){noisy}",
                bytes_after as f64 / bytes_before as f64
            );
            writeln!(
                csv,
                "{source},{arch},{vtables_before},{vtables_after},{bytes_before},{bytes_after},{before:.3},{after:.3},{ratio:.3},{low:.3},{high:.3}"
            )?;
        }
    }
    std::fs::write(workspace.join("target/bench/frontend_policy.csv"), csv)?;
    println!("figures: target/bench/frontend_policy.csv");
    Ok(())
}

/// How many vtables and construction vtables an object file defines (a cubin's or an x86_64
/// object's symbols, whatever their type: a cubin's are processor-specific; 0 for what does not
/// parse).
fn vtables_in(object: &[u8]) -> usize {
    use object::{Object as _, ObjectSymbol as _};
    let Ok(file) = object::File::parse(object) else { return 0 };
    file.symbols()
        .filter(|s| !s.is_undefined())
        .filter_map(|s| s.name().ok())
        .filter(|n| n.starts_with("_ZTV") || n.starts_with("_ZTC"))
        .count()
}
