//! `cargo xtask bench`, third part (after `translation_bench`): a virtual call on the x86_64 device through a host-built
//! object (vtable pointer translated: a hit) against the same call on a device-built object (a
//! miss), and both against the call compiled without the pass plugin, in one run
//! (`bench/programs/virtual_cost.cpp`, `virtual_loops.cpp`); then the control run with no table
//! installed, as in `translation_bench`, for the miss. Figures in
//! `target/bench/virtual_cost{,_no_table}.csv`. Then virtual calls over arrays of objects
//! (`virtual_arrays.cpp`, `virtual_sweeps.cpp`): one class, 4 classes grouped, 4 and 64 classes
//! in random order, host-built objects against device-built ones without the pass plugin, and
//! device-built ones with it against the same without it (`target/bench/virtual_arrays.csv`), and
//! both against a second run with the check of calls into host code off
//! (`target/bench/virtual_arrays_unchecked.csv`: what the check costs a miss, and a hit).
//! Last, the arrays built the README's way by the reference release and by the newest, through
//! their stock libomptarget: the newest's stock loop calls LLVM's own lookup before every
//! virtual call, which the project's loop and table are measured against
//! (`target/bench/virtual_arrays_llvm<major>.csv`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use crate::cmd;
use crate::dist::Dist;
use crate::llvm::Llvm;
use crate::offload::OffloadTarget;
use crate::toolchain::Toolchain;
use crate::tools::Tools;
use crate::translation::{
    link, median, report_control, report_ratios, report_ratios_between, rounds, run_checked,
    NO_HOST_CALL_CHECK, NO_TABLE,
};

/// (case, baseline, goal for case / baseline).
const RATIOS: [(&str, &str, f64); 2] =
    [("host_built", "device_built", 1.5), ("device_built", "device_built_plain", 1.5)];

/// The array cases (`virtual_arrays.cpp`): host-built objects through the translated loop against
/// device-built objects of the same classes through the loop compiled without the pass plugin;
/// goals for repeated classes (the loop cache's hits) and for random ones.
const ARRAY_RATIOS: [(&str, &str, f64); 4] = [
    ("host_built_1_class", "device_built_plain_1_class", 1.1),
    ("host_built_4_grouped", "device_built_plain_4_grouped", 1.1),
    ("host_built_4_random", "device_built_plain_4_random", 1.5),
    ("host_built_64_random", "device_built_plain_64_random", 1.5),
];

/// Device-built objects through the loop compiled with the project against the same
/// objects through the loop compiled stock: what the project costs code that never needed it.
const DEVICE_BUILT_RATIOS: [(&str, &str, f64); 4] = [
    ("device_built_1_class", "device_built_plain_1_class", 1.05),
    ("device_built_4_grouped", "device_built_plain_4_grouped", 1.05),
    ("device_built_4_random", "device_built_plain_4_random", 1.05),
    ("device_built_64_random", "device_built_plain_64_random", 1.05),
];

/// The array cases with the check of calls into host code (the default) against the same cases
/// in a run with it off: device-built objects miss on every lookup (where the check runs),
/// host-built ones hit (where it must cost nothing).
const HOST_CALL_CHECK_RATIOS: [(&str, &str, f64); 6] = [
    ("device_built_1_class", "device_built_1_class", 1.05),
    ("device_built_4_grouped", "device_built_4_grouped", 1.05),
    ("device_built_4_random", "device_built_4_random", 1.05),
    ("device_built_64_random", "device_built_64_random", 1.05),
    ("host_built_4_random", "host_built_4_random", 1.05),
    ("host_built_64_random", "host_built_64_random", 1.05),
];

/// The array cases with the loop cache off, against the same baselines (no goal: what the
/// cache saves, or costs, is the difference from [`ARRAY_RATIOS`]).
const UNCACHED_RATIOS: [(&str, &str, f64); 4] = [
    ("host_built_uncached_1_class", "device_built_plain_1_class", f64::NAN),
    ("host_built_uncached_4_grouped", "device_built_plain_4_grouped", f64::NAN),
    ("host_built_uncached_4_random", "device_built_plain_4_random", f64::NAN),
    ("host_built_uncached_64_random", "device_built_plain_64_random", f64::NAN),
];

/// For each array case whose goal is missed, what the translation adds to a call and what the
/// cache changes: for repeated classes the hit path (a compare and a predicted branch) is all that
/// is left; for random ones nearly every call misses and looks up.
fn explain_missed(printed: &str) -> Result<()> {
    for (&(case, base, goal), &(uncached, _, _)) in ARRAY_RATIOS.iter().zip(&UNCACHED_RATIOS) {
        let (with, without, off) = (
            median(rounds(printed, case)?),
            median(rounds(printed, base)?),
            median(rounds(printed, uncached)?),
        );
        if with / without <= goal {
            continue;
        }
        let pattern = case.trim_start_matches("host_built_");
        println!(
            "  {pattern}: missed by {:.2} ns a call on a call of {without:.2} ns; with the cache off {:.2} ns: {}",
            with - without,
            off - without,
            if off > with {
                "the cache's hits leave the compare and the branch of its hit path"
            } else {
                "nearly every call misses the cache and looks up, which is what the cache off pays too"
            }
        );
    }
    Ok(())
}

/// For each device-built case whose goal is missed, what the project adds to a call that needs
/// no translation on the x86_64 device: the loop cache's compare and branch, its two registers
/// (last key, last result) live across the call, which makes a tight loop spill (6 callee-saved
/// registers), and at each change of class the lookup's call, which answers a device vtable after
/// its own range test (the inline key-range test is for the GPU targets: here it made host-built
/// objects of random classes slower, `compiler/pass-plugin/src/loop_cache.rs`).
fn explain_device_built_missed(printed: &str) -> Result<()> {
    for &(case, base, goal) in &DEVICE_BUILT_RATIOS {
        let (with, without) = (median(rounds(printed, case)?), median(rounds(printed, base)?));
        if with / without <= goal {
            continue;
        }
        println!(
            "  {}: missed by {:.2} ns a call on a call of {without:.2} ns: the loop cache's compare and branch, its \
             last key and result live across the call (the tight loop spills), and at each change of class the \
             lookup's call, which answers a device vtable after its own range test",
            case.trim_start_matches("device_built_"),
            with - without
        );
    }
    Ok(())
}

/// Compiles the benchmark source `source` for `target` into `object` with clang (C) or clang++ of `toolchain`
/// at -O2, through the configuration file (the pass and frontend plugins) if `plugin`, with the
/// loop cache off for `-DVARIANT=uncached`.
pub fn compile_object(
    toolchain: &Toolchain,
    target: &OffloadTarget,
    object: &Path,
    source: &Path,
    plugin: bool,
    defines: &[&str],
) -> Result<PathBuf> {
    let mut c = Command::new(toolchain.compiler(&source.to_string_lossy()));
    if defines.contains(&"-DVARIANT=uncached") {
        c.env(LOOP_CACHE_SWITCH, "0");
    }
    c.args(toolchain.offload_args(target)).args(["-O2", "-Wall", "-Werror", "-c"]).args(defines);
    if plugin {
        c.args(toolchain.pass_plugin_args());
    }
    cmd::output(c.arg(source).arg("-o").arg(object))?;
    Ok(object.to_path_buf())
}

/// The pass plugin's switch for its loop cache (`compiler/pass-plugin/src/loop_cache.rs`).
pub const LOOP_CACHE_SWITCH: &str = "OMPTARGET_INDIRECT_LOOP_CACHE";

/// Builds and runs the benchmark, prints each ratio with its spread over the rounds and whether
/// its goal is met (or that the run was too noisy to say).
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let sources = workspace.join("bench/programs");
    let out = workspace.join("target/bench/virtual-cost");
    std::fs::create_dir_all(&out)?;
    let target = OffloadTarget::x86_64();
    let toolchain = Toolchain::project_plugins(tools, dist);
    let compile = |source: &str, object: &str, plugin: bool, defines: &[&str]| {
        compile_object(&toolchain, &target, &out.join(object), &sources.join(source), plugin, defines)
    };
    let objects = [
        compile("virtual_cost.cpp", "virtual_cost.o", true, &[])?,
        compile("virtual_loops.cpp", "loops_plain.o", false, &["-DVARIANT=plain"])?,
        compile(
            "virtual_loops.cpp",
            "loops_translated.o",
            true,
            &["-DVARIANT=translated", "-DWITH_METHODS"],
        )?,
    ];
    let name = "virtual_cost";
    let exe = link(tools, &toolchain, &objects, &out, name)?;
    let printed = run_checked(workspace, &toolchain, &exe, name, &[], name)?;
    let control = run_checked(workspace, &toolchain, &exe, name, &NO_TABLE, &format!("{name}_no_table"))?;
    println!("\nvirtual calls, x86_64 device, ns per call (median of 7 rounds of 4M calls, one program):");
    report_ratios(&printed, &RATIOS)?;
    // The control for the miss only: with no table the host-built objects call the host copies.
    report_control(&printed, &control, &RATIOS[1..])?;
    println!("figures: target/bench/{name}.csv, target/bench/{name}_no_table.csv");

    let objects = [
        compile("virtual_arrays.cpp", "virtual_arrays.o", true, &[])?,
        compile("virtual_sweeps.cpp", "sweeps_plain.o", false, &["-DVARIANT=plain"])?,
        compile("virtual_sweeps.cpp", "sweeps_translated.o", true, &["-DVARIANT=translated"])?,
        compile("virtual_sweeps.cpp", "sweeps_uncached.o", true, &["-DVARIANT=uncached"])?,
    ];
    let name = "virtual_arrays";
    let exe = link(tools, &toolchain, &objects, &out, name)?;
    let printed = run_checked(workspace, &toolchain, &exe, name, &[], name)?;
    println!(
        "\nvirtual calls over arrays of 4096 objects, x86_64 device, ns per call (median of 7 rounds of 512 \
         sweeps, one program): host-built objects against device-built ones through the loop compiled \
         without the pass plugin"
    );
    report_ratios(&printed, &ARRAY_RATIOS)?;
    println!(
        "  the same host-built objects with the loop cache off (the pass plugin's {LOOP_CACHE_SWITCH}=0):"
    );
    report_ratios(&printed, &UNCACHED_RATIOS)?;
    explain_missed(&printed)?;
    println!(
        "  device-built objects through the loop compiled with the project, against the same compiled stock:"
    );
    report_ratios(&printed, &DEVICE_BUILT_RATIOS)?;
    explain_device_built_missed(&printed)?;
    let unchecked =
        run_checked(workspace, &toolchain, &exe, name, &[NO_HOST_CALL_CHECK], &format!("{name}_unchecked"))?;
    println!(
        "  the check of calls into host code: the same cases against a run with it off ({}={}; device-built \
         objects miss, host-built ones hit):",
        NO_HOST_CALL_CHECK.0, NO_HOST_CALL_CHECK.1
    );
    report_ratios_between(&printed, &unchecked, &HOST_CALL_CHECK_RATIOS)?;
    println!("figures: target/bench/{name}.csv, target/bench/{name}_unchecked.csv");
    // The reference release stands for the stock runtimes (its figures are the table's); the
    // newest is the one whose stock clang inserts LLVM's own lookup before every virtual call.
    let mut releases = vec![Llvm::reference(), Llvm::newest()];
    releases.dedup();
    for llvm in releases {
        run_arrays_on_stock_runtime(workspace, tools, dist, llvm)?;
    }
    Ok(())
}

/// The configurations of the stock runtime's part: (prefix of the cases, environment). The
/// registration library's table with its index; the same table without it (the control: the
/// ratio to the stock table falls to about 1x); the stock per-image table, binary-searched as
/// LLVM's own lookup does (`docs/stock-runtime-table.md`).
const STOCK_CONFIGURATIONS: [(&str, &[(&str, &str)]); 3] = [
    ("", &[]),
    ("index_off_", &[("OMPTARGET_INDIRECT_INDEX", "0")]),
    ("stock_table_", &[("OMPTARGET_INDIRECT_MAP", "0")]),
];

/// Passes over [`STOCK_CONFIGURATIONS`] (each run times 7 rounds).
const STOCK_PASSES: usize = 3;

/// Goal of host-built objects against device-built ones through the stock runtime's path.
const GOAL_STOCK_HOST_BUILT: f64 = 1.2;

/// The array benchmark as a user of clang `llvm` builds it (its configuration file, its stock
/// libomptarget and the registration library), the configurations of [`STOCK_CONFIGURATIONS`]
/// in turn: host-built against device-built objects, device-built ones with the project against
/// the loop compiled stock, and the table with its index against the stock table; where the
/// stock clang inserts LLVM's own lookup, also the project against that lookup on the stock
/// table (`target/bench/virtual_arrays_llvm<major>.csv`).
fn run_arrays_on_stock_runtime(workspace: &Path, tools: &Tools, dist: &Dist, llvm: Llvm) -> Result<()> {
    let toolchain = Toolchain::new(llvm, tools, dist);
    let major = llvm.major;
    let sources = workspace.join("bench/programs");
    let out = workspace.join(format!("target/bench/virtual-cost-llvm{major}"));
    std::fs::create_dir_all(&out)?;
    let target = OffloadTarget::x86_64();
    let compile = |source: &str, object: &str, plugin: bool, defines: &[&str]| {
        compile_object(&toolchain, &target, &out.join(object), &sources.join(source), plugin, defines)
    };
    let objects = [
        compile("virtual_arrays.cpp", "virtual_arrays.o", true, &[])?,
        compile("virtual_sweeps.cpp", "sweeps_plain.o", false, &["-DVARIANT=plain"])?,
        compile("virtual_sweeps.cpp", "sweeps_translated.o", true, &["-DVARIANT=translated"])?,
        compile("virtual_sweeps.cpp", "sweeps_uncached.o", true, &["-DVARIANT=uncached"])?,
    ];
    let exe = out.join("virtual_arrays");
    cmd::output(
        Command::new(toolchain.compiler("virtual_arrays.cpp"))
            .args(toolchain.offload_args(&target))
            .args(toolchain.pass_plugin_args())
            .args(&objects)
            .args(toolchain.link_args_with_config())
            .arg("-o")
            .arg(&exe),
    )?;
    let mut printed = String::new();
    for pass in 0..STOCK_PASSES {
        for (prefix, env) in STOCK_CONFIGURATIONS {
            let mut command = toolchain.run_command(&exe);
            command.env_remove("LD_LIBRARY_PATH").envs(toolchain.run_env());
            command
                .env_remove("OMPTARGET_INDIRECT_MAP")
                .env_remove("OMPTARGET_INDIRECT_INDEX")
                .envs(env.iter().copied());
            let run = cmd::stdout(&mut command)?;
            anyhow::ensure!(
                run.lines().any(|l| l.starts_with("virtual_arrays: ") && l.ends_with(" 0 failed")),
                "virtual_arrays ({prefix}): the benchmark's results are wrong:\n{run}"
            );
            for line in run.lines() {
                let mut fields = line.split(',');
                if let (Some(case), Some(Ok(round)), Some(ns), None) =
                    (fields.next(), fields.next().map(str::parse::<usize>), fields.next(), fields.next())
                {
                    printed.push_str(&format!("{prefix}{case},{},{ns}\n", pass * 7 + round));
                }
            }
        }
    }
    std::fs::write(workspace.join(format!("target/bench/virtual_arrays_llvm{major}.csv")), &printed)?;
    println!(
        "\nthe same arrays built the README's way with clang {major}, through the stock libomptarget {major} and the \
         registration library's table ({STOCK_PASSES} passes of 7 rounds, the configurations in turn):"
    );
    let patterns = ["1_class", "4_grouped", "4_random", "64_random"];
    let names = |f: &dyn Fn(&str) -> (String, String, f64)| -> Vec<(String, String, f64)> {
        patterns.iter().map(|p| f(p)).collect()
    };
    let host_built =
        names(&|p| (format!("host_built_{p}"), format!("device_built_plain_{p}"), GOAL_STOCK_HOST_BUILT));
    let device_built = names(&|p| (format!("device_built_{p}"), format!("device_built_plain_{p}"), 1.05));
    let vs_stock = names(&|p| (format!("host_built_{p}"), format!("stock_table_host_built_{p}"), f64::NAN));
    let control =
        names(&|p| (format!("index_off_host_built_{p}"), format!("stock_table_host_built_{p}"), f64::NAN));
    let mut groups = vec![
        ("host-built objects against device-built ones through the loop compiled stock:", host_built),
        ("device-built objects through the loop compiled with the project, against the same compiled stock:", device_built),
        ("host-built objects, the installed table with its index against the stock per-image table:", vs_stock),
        ("the control: the installed table without its index against the stock table (about 1x):", control),
    ];
    if llvm.inserts_own_lookup {
        // The stock loop calls LLVM's own lookup before every virtual call; with nothing of the
        // project's table installed it searches the stock per-image table, as LLVM's does.
        let vs_own_lookup = names(&|p| {
            (format!("device_built_{p}"), format!("stock_table_device_built_plain_{p}"), f64::NAN)
        });
        groups.push((
            "device-built objects, the project's loop and table against the stock loop's own lookup (LLVM's, before \
             every virtual call) on the stock table:",
            vs_own_lookup,
        ));
    }
    for (title, ratios) in groups {
        println!("  {title}");
        let ratios: Vec<(&str, &str, f64)> =
            ratios.iter().map(|(a, b, g)| (a.as_str(), b.as_str(), *g)).collect();
        report_ratios(&printed, &ratios)?;
    }
    println!("figures: target/bench/virtual_arrays_llvm{major}.csv");
    Ok(())
}
