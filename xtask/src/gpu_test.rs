//! `cargo xtask gpu-test` and `gpu-bench`: the GPU bundle's parts ([`gpu_bundle`]), built, and
//! run where this machine has an NVIDIA GPU; `gpu-bench` runs every part's benchmarks.

use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::build;
use crate::dist::Archs;
use crate::tools::Tools;
use crate::USAGE;

/// `cargo xtask gpu-test` with `rest`, its options.
pub fn run(workspace: &Path, rest: &[String]) -> Result<()> {
    let (parts, require_gpu) = options(rest)?;
    let tools = Tools::locate(workspace)?;
    let dist = build::build(workspace, &tools, &Archs::default())?;
    for part in parts {
        let (bundle, _) = gpu_bundle::build(workspace, &tools, &dist, part)?;
        gpu_bundle::run(&bundle, require_gpu, false, None)?;
    }
    Ok(())
}

/// `cargo xtask gpu-bench`: every part built, and its benchmarks run (`target/bench/`, a stock
/// part's in `target/bench/llvmN/`).
pub fn bench(workspace: &Path) -> Result<()> {
    let tools = Tools::locate(workspace)?;
    let dist = build::build(workspace, &tools, &Archs::default())?;
    for part in gpu_bundle::Part::all() {
        let (bundle, _) = gpu_bundle::build(workspace, &tools, &dist, part)?;
        let out = match part {
            gpu_bundle::Part::ProjectPlugins => workspace.join("target/bench"),
            other => workspace.join("target/bench").join(other.name()),
        };
        gpu_bundle::run(&bundle, false, true, Some(&out))?;
    }
    Ok(())
}

/// `gpu-test`'s options: the parts given with `--part` (all when none is), and `--require-gpu`.
fn options(rest: &[String]) -> Result<(Vec<gpu_bundle::Part>, bool)> {
    let mut parts = Vec::new();
    let mut require_gpu = false;
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--require-gpu" => require_gpu = true,
            "--part" => {
                let name = args.next().with_context(|| format!("--part takes a part\n{USAGE}"))?;
                parts.push(gpu_bundle::Part::parse(name)?);
            }
            other => bail!("`gpu-test` takes --part and --require-gpu, got `{other}`\n{USAGE}"),
        }
    }
    if parts.is_empty() {
        parts = gpu_bundle::Part::all();
    }
    Ok((parts, require_gpu))
}
