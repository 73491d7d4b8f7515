//! `cargo xtask bench`, second part: what the translation the pass plugin inserts costs on the
//! x86_64 device. `tests/bench/translation_loops.c` is compiled twice into one program, with the
//! plugin and without (the baseline, in the same run); `translation_cost.c` times both on the
//! device and checks every result. Figures in `target/bench/translation_cost.csv`.

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::offload::OffloadTarget;
use crate::toolchain::Toolchain;
use crate::tools::Tools;

/// (case, baseline, goal for case / baseline): the inserted translation with a loop-invariant
/// pointer (hoisted) and with a pointer picked per iteration.
const RATIOS: [(&str, &str, f64); 2] =
    [("invariant_translated", "invariant_plain", 1.1), ("varying_translated", "varying_plain", 1.5)];

/// The program's two sizes: (name, extra compile flag, number of indirect functions).
const SIZES: [(&str, Option<&str>, u32); 2] =
    [("translation_cost", None, 1024), ("translation_cost_64k", Some("-DFUNCTIONS_64K"), 65536)];

/// Builds and runs the benchmark, prints the ratios and whether each goal is met.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let sources = workspace.join("tests/bench");
    let out = workspace.join("target/bench/translation-cost");
    std::fs::create_dir_all(&out)?;
    let target = OffloadTarget::x86_64();
    let toolchain = Toolchain::llvm19(tools, dist);
    let compile =
        |source: &str, object: &str, extra: Vec<std::ffi::OsString>| -> Result<std::path::PathBuf> {
            let path = out.join(object);
            cmd::output(
                Command::new(&tools.clang)
                    .args(toolchain.offload_args(&target))
                    .args(["-O2", "-Wall", "-Werror", "-c"])
                    .args(extra)
                    .arg(sources.join(source))
                    .arg("-o")
                    .arg(&path),
            )?;
            Ok(path)
        };
    let mut translated = toolchain.pass_plugin_args();
    translated.push("-DVARIANT=translated".into());
    let loops = [
        compile("translation_loops.c", "loops_plain.o", vec!["-DVARIANT=plain".into()])?,
        compile("translation_loops.c", "loops_translated.o", translated)?,
    ];
    for (name, flag, functions) in SIZES {
        let main =
            compile("translation_cost.c", &format!("{name}.o"), flag.into_iter().map(Into::into).collect())?;
        let objects = [main, loops[0].clone(), loops[1].clone()];
        let printed = link_and_run(workspace, tools, &toolchain, &objects, &out, name)?;
        println!(
            "\ntranslation inserted by the pass plugin, x86_64 device, {functions} indirect functions, ns per call \
             (median of 7 rounds of 4M calls):"
        );
        report_ratios(&printed, &RATIOS)?;
        println!("figures: target/bench/{name}.csv");
    }
    Ok(())
}

/// Links `objects` (x86_64 offload, clang 19, C++ runtime included) into `<out>/<name>`, runs it,
/// checks that it printed `<name>: N checks, 0 failed`, writes its CSV lines (those with two
/// commas) to `target/bench/<name>.csv`, and returns what it printed.
pub fn link_and_run(
    workspace: &Path,
    tools: &Tools,
    toolchain: &Toolchain,
    objects: &[std::path::PathBuf],
    out: &Path,
    name: &str,
) -> Result<String> {
    let exe = out.join(name);
    cmd::output(
        Command::new(&tools.clangxx)
            .args(toolchain.offload_args(&OffloadTarget::x86_64()))
            .args(objects)
            .args(toolchain.link_args())
            .arg("-o")
            .arg(&exe),
    )?;
    let printed = cmd::stdout(Command::new(&exe).envs(toolchain.run_env()))?;
    ensure!(
        printed.lines().any(|l| l.starts_with(&format!("{name}: ")) && l.ends_with(" 0 failed")),
        "the benchmark's results are wrong:\n{printed}"
    );
    let csv: Vec<&str> = printed.lines().filter(|l| l.matches(',').count() == 2).collect();
    std::fs::write(workspace.join("target/bench").join(format!("{name}.csv")), csv.join("\n") + "\n")?;
    Ok(printed)
}

/// Prints, for each `(case, baseline, goal)`, both medians over the rounds of the CSV lines
/// `<case>,<round>,<ns>` in `printed`, the median of the per-round ratios with their spread, and
/// whether the goal is met, or that the rounds disagree too much to say (spread over half the
/// ratio).
pub fn report_ratios(printed: &str, ratios: &[(&str, &str, f64)]) -> Result<()> {
    let rounds = |case: &str| -> Result<Vec<f64>> {
        let values: Vec<f64> = printed
            .lines()
            .filter_map(|l| l.strip_prefix(case)?.strip_prefix(','))
            .filter_map(|l| l.rsplit(',').next()?.parse().ok())
            .collect();
        ensure!(!values.is_empty(), "no {case} figures in:\n{printed}");
        Ok(values)
    };
    for &(case, base, goal) in ratios {
        let (with, without) = (rounds(case)?, rounds(base)?);
        let ratios: Vec<f64> = with.iter().zip(&without).map(|(w, b)| w / b).collect();
        let (low, high) = ratios.iter().fold((f64::MAX, f64::MIN), |(l, h), &r| (l.min(r), h.max(r)));
        let ratio = median(ratios);
        let verdict = if high - low > 0.5 * ratio {
            "too noisy to judge".to_string()
        } else if ratio <= goal {
            format!("goal <= {goal}x met")
        } else {
            format!("goal <= {goal}x MISSED")
        };
        println!(
            "  {case:<20} {:6.2}  vs {base:<18} {:6.2}  ratio {ratio:.2}x (rounds {low:.2}x..{high:.2}x): {verdict}",
            median(with),
            median(without)
        );
    }
    Ok(())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
