//! `cargo xtask bench`, second part: what the translation the pass plugin inserts costs on the
//! x86_64 device. `tests/bench/translation_loops.c` is compiled twice into one program, with the
//! plugin and without (the baseline, in the same run); `translation_cost.c` times both on the
//! device and checks every result. Figures in `target/bench/translation_cost.csv`.

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::build::Dist;
use crate::cmd;
use crate::offload::OffloadTarget;
use crate::toolchain::Toolchain;
use crate::tools::Tools;

/// (case, goal for translated / plain).
const GOALS: [(&str, f64); 2] = [("invariant", 1.1), ("varying", 2.0)];

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
    let objects = [
        compile("translation_cost.c", "translation_cost.o", Vec::new())?,
        compile("translation_loops.c", "loops_plain.o", vec!["-DVARIANT=plain".into()])?,
        compile("translation_loops.c", "loops_translated.o", translated)?,
    ];
    let printed = link_and_run(workspace, tools, &toolchain, &objects, &out, "translation_cost")?;
    let csv: Vec<&str> = printed.lines().filter(|l| l.matches(',').count() == 2).collect();
    let ns = |case: &str, variant: &str| -> Result<f64> {
        let line = csv
            .iter()
            .find(|l| l.starts_with(&format!("{case},{variant},")))
            .with_context(|| format!("no {case},{variant} line in:\n{printed}"))?;
        Ok(line.rsplit(',').next().unwrap_or("").parse()?)
    };
    println!("\ntranslation inserted by the pass plugin, x86_64 device, ns per call (minimum of 7 runs of 4M calls):");
    for (case, goal) in GOALS {
        let (plain, with) = (ns(case, "plain")?, ns(case, "translated")?);
        let ratio = with / plain;
        let verdict = if ratio <= goal { "met" } else { "MISSED" };
        println!("  {case:<9}  untranslated {plain:6.2}  translated {with:6.2}  ratio {ratio:.2}x  (goal <= {goal}x: {verdict})");
    }
    println!("figures: target/bench/translation_cost.csv");
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
