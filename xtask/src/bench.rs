//! `cargo xtask bench [compile|frontend|lookup|stock|virtual]`: the benchmarks of `bench/` and the
//! crates' own, every one or one part, after the build; figures in `target/bench/`.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Result};

use bench::{compile_time, frontend, stock_table, strict, translation, virtual_calls};

use crate::build;
use crate::cmd;
use crate::dist::{Archs, Dist};
use crate::tools::Tools;

/// A benchmark of `bench/`, run after the build.
type Benchmark = fn(&Path, &Tools, &Dist) -> Result<()>;

/// `cargo xtask bench` with `rest`, its arguments.
pub fn run(workspace: &Path, rest: &[String]) -> Result<()> {
    let part: Option<Benchmark> = match rest {
        [] => None,
        [part] if part == "compile" => Some(compile_time::run),
        [part] if part == "frontend" => Some(frontend::run),
        [part] if part == "lookup" => Some(lookup_sweep),
        [part] if part == "stock" => Some(stock_table::run),
        [part] if part == "virtual" => Some(virtual_calls::run),
        _ => bail!("usage: cargo xtask bench [compile|frontend|lookup|stock|virtual]"),
    };
    let tools = Tools::locate(workspace)?;
    let dist = build::build(workspace, &tools, &Archs::default())?;
    match part {
        Some(part) => part(workspace, &tools, &dist),
        None => every_benchmark(workspace, &tools, &dist),
    }
}

/// The device lookup at every table size from 1 to 1M keys against LLVM's lookup of the same
/// table (`host-table/benches/lookup_sweep.rs`, release profile): `target/bench/lookup_sweep.csv`.
fn lookup_sweep(workspace: &Path, _: &Tools, _: &Dist) -> Result<()> {
    cmd::status(Command::new(env!("CARGO")).current_dir(workspace).args([
        "bench",
        "-p",
        "host-table",
        "--bench",
        "lookup_sweep",
    ]))
}

/// The plugin benchmark (release profile) through the installed plugin: `set_function_ptr_map` against sort + memcpy; then the lookup sweep; then the cost of the translation the
/// pass plugin inserts, against untranslated calls; strict mode's cost; the frontend plugin's vtable
/// policy's cost to device compiles; the configuration file's cost to compiles of real code against stock. Figures in `target/bench/`.
fn every_benchmark(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    cmd::status(Command::new(env!("CARGO")).current_dir(workspace).args([
        "bench",
        "-p",
        "omptarget-rtl-x86_64",
        "--bench",
        "set_function_ptr_map",
    ]))?;
    lookup_sweep(workspace, tools, dist)?;
    translation::run(workspace, tools, dist)?;
    stock_table::run(workspace, tools, dist)?;
    virtual_calls::run(workspace, tools, dist)?;
    strict::run(workspace, tools, dist)?;
    frontend::run(workspace, tools, dist)?;
    compile_time::run(workspace, tools, dist)
}
