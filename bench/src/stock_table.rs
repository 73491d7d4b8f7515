//! `cargo xtask bench`, the stock runtimes' part: what a call through a host function pointer
//! costs on the x86_64 device with each release's runtime, the program built the README's way
//! (`bench/programs/stock_table.c`, 4096 and 65536 indirect functions, a pointer picked per call).
//! clang 19 through the project's libomptarget 16 plugins is the baseline; the clang of every
//! stock release (21 and later) through its stock libomptarget with the table `libomptarget-indirect-register.so` installs
//! per device (`docs/stock-runtime-table.md`), the same without its hash index
//! (`OMPTARGET_INDIRECT_INDEX=0`: the negative control, whose ratio to the stock table falls to
//! about 1x), and the stock runtime's own per-image table (`OMPTARGET_INDIRECT_MAP=0`: the
//! device library binary-searches it; LLVM 21 builds none on x86_64, so no such case there).
//! The configurations run in turn, three passes of five rounds each, and every ratio is per round
//! with its spread. Figures in `target/bench/stock_table{,_64k}.csv`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::offload::OffloadTarget;
use crate::toolchain::Toolchain;
use crate::tools::Tools;
use crate::translation::report_ratios;

/// The program's two sizes: (name, extra compile flag, number of indirect functions).
const SIZES: [(&str, Option<&str>, u32); 2] =
    [("stock_table", None, 4096), ("stock_table_64k", Some("-DFUNCTIONS_64K"), 65536)];

/// Passes over every configuration (each run times five rounds).
const PASSES: usize = 3;

/// Rounds one run of the program prints.
const ROUNDS: usize = 5;

/// Goal of a stock release's time per call against clang 19's through the project's plugins.
const GOAL_VS_PLUGINS: f64 = 1.25;

/// Goal of the installed table with its index against the stock per-image table: at least twice
/// as fast, at 64K entries.
const GOAL_VS_STOCK: f64 = 0.5;

/// One way of running: the report's name, the executable, its toolchain and environment.
struct Configuration<'a> {
    name: String,
    toolchain: &'a Toolchain<'a>,
    exe: PathBuf,
    env: &'static [(&'static str, &'static str)],
}

/// Builds and runs the benchmark, prints the ratios and whether each goal is met.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let source = workspace.join("bench/programs/stock_table.c");
    let out = workspace.join("target/bench/stock-table");
    std::fs::create_dir_all(&out)?;
    let toolchains: Vec<Toolchain> = Toolchain::all(tools, dist).collect();
    for (name, flag, functions) in SIZES {
        let mut configurations = Vec::new();
        for toolchain in &toolchains {
            let exe =
                build(toolchain, &source, flag, &out.join(format!("{name}-llvm{}", toolchain.llvm.major)))?;
            let release = format!("llvm{}", toolchain.llvm.major);
            configurations.push(Configuration {
                name: release.clone(),
                toolchain,
                exe: exe.clone(),
                env: &[],
            });
            if toolchain.llvm.runs_project_plugins() {
                continue;
            }
            configurations.push(Configuration {
                name: format!("{release}_index_off"),
                toolchain,
                exe: exe.clone(),
                env: &[("OMPTARGET_INDIRECT_INDEX", "0")],
            });
            if toolchain.llvm.project_installs_x86_64_map() {
                continue; // No stock table on x86_64 (LLVM 21).
            }
            configurations.push(Configuration {
                name: format!("{release}_stock_table"),
                toolchain,
                exe,
                env: &[("OMPTARGET_INDIRECT_MAP", "0")],
            });
        }
        let mut printed = String::new();
        for pass in 0..PASSES {
            for configuration in &configurations {
                printed.push_str(&run_once(configuration, pass)?);
            }
        }
        std::fs::write(workspace.join("target/bench").join(format!("{name}.csv")), &printed)?;
        println!(
            "\na host function pointer picked per call from {functions} indirect functions, x86_64 device, ns per call \
             ({PASSES} passes of {ROUNDS} rounds of 4M calls, the configurations in turn):"
        );
        let baseline =
            configurations.iter().find(|c| c.toolchain.llvm.runs_project_plugins()).map(|c| c.name.clone());
        let mut ratios: Vec<(String, String, f64)> = Vec::new();
        for toolchain in toolchains.iter().filter(|t| !t.llvm.runs_project_plugins()) {
            let release = format!("llvm{}", toolchain.llvm.major);
            if let Some(baseline) = &baseline {
                ratios.push((release.clone(), baseline.clone(), GOAL_VS_PLUGINS));
            }
            if configurations.iter().any(|c| c.name == format!("{release}_stock_table")) {
                let stock = format!("{release}_stock_table");
                let goal = if functions >= 65536 { GOAL_VS_STOCK } else { f64::NAN };
                ratios.push((release.clone(), stock.clone(), goal));
                ratios.push((format!("{release}_index_off"), stock, f64::NAN));
            }
        }
        let ratios: Vec<(&str, &str, f64)> =
            ratios.iter().map(|(a, b, g)| (a.as_str(), b.as_str(), *g)).collect();
        report_ratios(&printed, &ratios)?;
        println!("figures: target/bench/{name}.csv");
    }
    Ok(())
}

/// Compiles and links `source` with `toolchain` for the x86_64 device, as the README says.
fn build(toolchain: &Toolchain, source: &Path, flag: Option<&str>, exe: &Path) -> Result<PathBuf> {
    let target = OffloadTarget::x86_64();
    cmd::output(
        Command::new(toolchain.compiler("stock_table.c"))
            .args(toolchain.offload_args(&target))
            .args(toolchain.pass_plugin_args())
            .args(["-O2", "-Wall", "-Werror"])
            .args(flag)
            .arg(source)
            .args(toolchain.link_args_with_config())
            .arg("-o")
            .arg(exe),
    )?;
    Ok(exe.to_path_buf())
}

/// Runs `configuration` once; returns its CSV lines with the rounds numbered after the pass.
fn run_once(configuration: &Configuration, pass: usize) -> Result<String> {
    let Configuration { name, toolchain, exe, env } = configuration;
    let mut command = toolchain.run_command(exe);
    command.arg(name).env_remove("LD_LIBRARY_PATH").envs(toolchain.run_env());
    command
        .env_remove("OMPTARGET_INDIRECT_MAP")
        .env_remove("OMPTARGET_INDIRECT_INDEX")
        .envs(env.iter().copied());
    let printed = cmd::stdout(&mut command)?;
    ensure!(
        printed.lines().any(|l| l.starts_with("stock_table: ") && l.ends_with(" 0 failed")),
        "{name}: the benchmark's results are wrong:\n{printed}"
    );
    Ok(printed
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(',');
            let (case, round, ns) = (fields.next()?, fields.next()?.parse::<usize>().ok()?, fields.next()?);
            Some(format!("{case},{},{ns}\n", pass * ROUNDS + round))
        })
        .collect())
}
