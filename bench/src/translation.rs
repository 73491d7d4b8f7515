//! `cargo xtask bench`, second part: what the translation the pass plugin inserts costs on the
//! x86_64 device. `bench/programs/translation_loops.c` is compiled twice into one program, with the
//! plugin and without (the baseline, in the same run); `translation_cost.c` times both on the
//! device and checks every result. The program then runs again with no table installed (the
//! control): the inserted call returns its argument at once and the host copy runs, which the
//! x86_64 device allows, so that run separates what inserting a call costs from what the lookup
//! costs. Figures in `target/bench/translation_cost{,_no_table}.csv` (and `_64k`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::offload::OffloadTarget;
use crate::toolchain::Toolchain;
use crate::tools::Tools;

/// (case, baseline, goal for case / baseline): the inserted translation with a loop-invariant
/// pointer (hoisted) and with a pointer picked per iteration, against the untranslated calls of
/// the mapped host addresses (the host copies run: the goal's baseline).
const RATIOS: [(&str, &str, f64); 2] =
    [("invariant_translated", "invariant_plain", 1.1), ("varying_translated", "varying_plain", 1.5)];

/// The same goals against the untranslated calls of the device copies themselves (the same
/// callees as the translated loops, at the same addresses): what the translation alone costs.
const RATIOS_SAME_CALLEES: [(&str, &str, f64); 2] =
    [("invariant_translated", "invariant_device", 1.1), ("varying_translated", "varying_device", 1.5)];

/// Function pointers taken in device code (device addresses, no key of the table)
/// through the translated loops, against the same pointers through the loops compiled stock.
const RATIOS_DEVICE_TAKEN: [(&str, &str, f64); 2] = [
    ("invariant_device_translated", "invariant_device", 1.05),
    ("varying_device_translated", "varying_device", 1.05),
];

/// The program's two sizes: (name, extra compile flag, number of indirect functions).
const SIZES: [(&str, Option<&str>, u32); 2] =
    [("translation_cost", None, 1024), ("translation_cost_64k", Some("-DFUNCTIONS_64K"), 65536)];

/// Builds and runs the benchmark, prints the ratios and whether each goal is met.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let sources = workspace.join("bench/programs");
    let out = workspace.join("target/bench/translation-cost");
    std::fs::create_dir_all(&out)?;
    let target = OffloadTarget::x86_64();
    let toolchain = Toolchain::project_plugins(tools, dist);
    let compile = |source: &str, object: &str, extra: Vec<std::ffi::OsString>| -> Result<PathBuf> {
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
        let exe = link(tools, &toolchain, &objects, &out, name)?;
        let printed = run_checked(workspace, &toolchain, &exe, name, &[], name)?;
        let control = run_checked(workspace, &toolchain, &exe, name, &NO_TABLE, &format!("{name}_no_table"))?;
        println!(
            "\ntranslation inserted by the pass plugin, x86_64 device, {functions} indirect functions, ns per call \
             (median of 7 rounds of 4M calls):"
        );
        report_ratios(&printed, &RATIOS)?;
        println!("  against the device copies called untranslated (the same callees):");
        report_ratios(&printed, &RATIOS_SAME_CALLEES)?;
        report_control(&printed, &control, &RATIOS)?;
        println!(
            "  function pointers taken in device code through the translated loops, against the same stock:"
        );
        report_ratios(&printed, &RATIOS_DEVICE_TAKEN)?;
        println!("figures: target/bench/{name}.csv, target/bench/{name}_no_table.csv");
    }
    Ok(())
}

/// The control run's environment: the plugin installs no table, so the inserted translation
/// finds none and returns its argument, and the loop calls the host copies (which the check of
/// calls into host code, off here, would stop).
pub(crate) const NO_TABLE: [(&str, &str); 2] =
    [("OMPTARGET_INDIRECT_MAP", "0"), (NO_HOST_CALL_CHECK.0, NO_HOST_CALL_CHECK.1)];

/// The check of calls into host code off: the device library as it was before the check (a miss
/// returns its key at once).
pub(crate) const NO_HOST_CALL_CHECK: (&str, &str) = ("OMPTARGET_INDIRECT_HOST_CALLS", "off");

/// Prints, for each `(case, baseline, goal)` of `ratios`, the control run's time (no table: the inserted call
/// alone) against its own baseline, and the translated time against the control's (medians of
/// the two runs: what the lookup adds, and the device copies called instead of the host's); and,
/// where the goal is missed and the call alone already misses it, that the inserted call, not
/// the lookup, is what this machine charges for.
pub(crate) fn report_control(printed: &str, control: &str, ratios: &[(&str, &str, f64)]) -> Result<()> {
    println!(
        "  control: the same program with no table installed ({}={}, {}={}: the inserted call returns its \
         argument, the host copy runs):",
        NO_TABLE[0].0, NO_TABLE[0].1, NO_TABLE[1].0, NO_TABLE[1].1
    );
    for &(case, base, goal) in ratios {
        let (translated, call_only, call_only_base) =
            (median(rounds(printed, case)?), median(rounds(control, case)?), median(rounds(control, base)?));
        let (call_ratio, lookup_ratio) = (call_only / call_only_base, translated / call_only);
        println!(
            "  {case:<20} {call_only:6.2}  vs {base:<18} {call_only_base:6.2}  ratio {call_ratio:.2}x (the call \
             alone); with the table {lookup_ratio:.2}x the control (the lookup, the device copies)"
        );
        if translated / median(rounds(printed, base)?) > goal && call_ratio > goal {
            println!(
                "  {case:<20} the goal is missed by the inserted call, not by the lookup: with no table to \
                 search, the call alone costs {call_ratio:.2}x here"
            );
        }
    }
    Ok(())
}

/// Links `objects` (x86_64 offload, clang 19, C++ runtime included) into `<out>/<name>`.
pub(crate) fn link(
    tools: &Tools,
    toolchain: &Toolchain,
    objects: &[PathBuf],
    out: &Path,
    name: &str,
) -> Result<PathBuf> {
    let exe = out.join(name);
    cmd::output(
        Command::new(&tools.clangxx)
            .args(toolchain.offload_args(&OffloadTarget::x86_64()))
            .args(objects)
            .args(toolchain.link_args())
            .arg("-o")
            .arg(&exe),
    )?;
    Ok(exe)
}

/// Runs the benchmark `exe` (whose report names it `name`) with `env` added, checks that it
/// printed `<name>: N checks, 0 failed`, writes its CSV lines (those with two commas) to
/// `target/bench/<csv>.csv`, and returns what it printed.
pub(crate) fn run_checked(
    workspace: &Path,
    toolchain: &Toolchain,
    exe: &Path,
    name: &str,
    env: &[(&str, &str)],
    csv: &str,
) -> Result<String> {
    let printed = cmd::stdout(Command::new(exe).envs(toolchain.run_env()).envs(env.iter().copied()))?;
    ensure!(
        printed.lines().any(|l| l.starts_with(&format!("{name}: ")) && l.ends_with(" 0 failed")),
        "the benchmark's results are wrong:\n{printed}"
    );
    let lines: Vec<&str> = printed.lines().filter(|l| l.matches(',').count() == 2).collect();
    std::fs::write(workspace.join("target/bench").join(format!("{csv}.csv")), lines.join("\n") + "\n")?;
    Ok(printed)
}

/// Prints, for each `(case, baseline, goal)`, both medians over the rounds of the CSV lines
/// `<case>,<round>,<ns>` in `printed`, the median of the per-round ratios with their spread, and
/// whether the goal is met, or that the rounds disagree too much to say (spread over half the
/// ratio); a NaN goal is a line for comparison only.
pub fn report_ratios(printed: &str, ratios: &[(&str, &str, f64)]) -> Result<()> {
    report_ratios_between(printed, printed, ratios)
}

/// [`report_ratios`] with each case read from `printed` and its baseline from `baseline_run`
/// (another run of the same program, under another switch), round against round.
pub fn report_ratios_between(printed: &str, baseline_run: &str, ratios: &[(&str, &str, f64)]) -> Result<()> {
    for &(case, base, goal) in ratios {
        let (with, without) = (rounds(printed, case)?, rounds(baseline_run, base)?);
        let ratios: Vec<f64> = with.iter().zip(&without).map(|(w, b)| w / b).collect();
        let (low, high) = spread(&ratios);
        let ratio = median(ratios);
        let verdict = if goal.is_nan() {
            "for comparison".to_string()
        } else if high - low > 0.5 * ratio {
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

/// The figures of the CSV lines `<case>,<round>,<ns>` in `printed`, in round order.
pub(crate) fn rounds(printed: &str, case: &str) -> Result<Vec<f64>> {
    let values: Vec<f64> = printed
        .lines()
        .filter_map(|l| l.strip_prefix(case)?.strip_prefix(','))
        .filter_map(|l| l.rsplit(',').next()?.parse().ok())
        .collect();
    ensure!(!values.is_empty(), "no {case} figures in:\n{printed}");
    Ok(values)
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The lowest and the highest of `values` (the spread of a run's ratios, round against round).
pub(crate) fn spread(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::MAX, f64::MIN), |(low, high), &v| (low.min(v), high.max(v)))
}
