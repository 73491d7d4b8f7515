//! `cargo xtask bench`, third part: what strict mode (`LD_PRELOAD` of
//! libomptarget-indirect-strict.so) adds to a target region on the x86_64 device, with more or
//! fewer segments of the host program to protect. `bench/programs/strict_cost.c` is linked with
//! 0, 4 and 24 generated user libraries; each build runs alternately loose and strict, seven
//! pairs, in the same benchmark run. Figures in `target/bench/strict_cost.csv`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::offload::OffloadTarget;
use crate::toolchain::Toolchain;
use crate::tools::Tools;
use crate::translation::{median, spread};
use checks::e2e::{run_with, Device, MapSetup};

/// Generated user libraries per build.
const PADS: [usize; 3] = [0, 4, 24];
/// Loose/strict pairs per build.
const PAIRS: usize = 7;
/// Above this extra time per region, strict mode needs a reason (issue's bound).
const BOUND_US: f64 = 50.0;

/// Builds and runs the benchmark; prints, per build, the protected segments, the median extra
/// time per region and the ratio to the loose run with its spread.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let out = workspace.join("target/bench/strict-cost");
    std::fs::create_dir_all(&out)?;
    let toolchain = Toolchain::project_plugins(tools, dist);
    let target = OffloadTarget::x86_64();
    let mut csv =
        String::from("user_libraries,segments,loose_us,strict_us,extra_us,ratio,ratio_min,ratio_max\n");
    println!("\nstrict mode, x86_64 device, one empty target region (median of {PAIRS} loose/strict pairs of 2000 regions):");
    for pads in PADS {
        let dir = out.join(format!("pads-{pads}"));
        std::fs::create_dir_all(&dir)?;
        let mut link = Vec::new();
        let mut calls = String::new();
        for i in 0..pads {
            let source = dir.join(format!("pad_{i}.c"));
            std::fs::write(&source, format!("int pad_{i}(int x) {{ return x + {i}; }}\n"))?;
            cmd::output(
                Command::new(&tools.clang)
                    .args(["-O2", "-shared", "-fPIC"])
                    .arg(&source)
                    .arg("-o")
                    .arg(dir.join(format!("libpad_{i}.so"))),
            )?;
            link.push(format!("-lpad_{i}"));
            write!(calls, "{{ extern int pad_{i}(int); pads += pad_{i}(0) >= 0; }} ")?;
        }
        let exe = dir.join("strict_cost");
        cmd::output(
            Command::new(&tools.clang)
                .args(toolchain.offload_args(&target))
                .args(["-O2", "-Wall", "-Werror"])
                .arg(format!("-DPAD_CALLS={calls}"))
                .arg(workspace.join("bench/programs/strict_cost.c"))
                .arg(format!("-L{}", dir.display()))
                .arg(format!("-Wl,-rpath,{}", dir.display()))
                .args(&link)
                .args(toolchain.link_args())
                .arg("-o")
                .arg(&exe),
        )?;
        let once = |device: Device, info: bool| -> Result<(f64, String)> {
            let (code, text) = run_with(&toolchain, &exe, &[], MapSetup::Indexed, info, device)?;
            ensure!(code == 0, "{} ({device:?} device) exited with {code}:\n{text}", exe.display());
            let us = text
                .lines()
                .find_map(|l| l.strip_prefix("strict_cost,"))
                .with_context(|| format!("no figure in:\n{text}"))?
                .trim()
                .parse()?;
            Ok((us, text))
        };
        let (_, info) = once(Device::Strict, true)?;
        let segments: usize = info
            .lines()
            .find_map(|l| l.split("protecting ").nth(1)?.split(' ').next()?.parse().ok())
            .with_context(|| format!("strict mode said nothing with LIBOMPTARGET_INFO=1:\n{info}"))?;
        let mut pairs = Vec::new();
        for _ in 0..PAIRS {
            pairs.push((once(Device::Loose, false)?.0, once(Device::Strict, false)?.0));
        }
        let loose = median(pairs.iter().map(|p| p.0).collect());
        let strict = median(pairs.iter().map(|p| p.1).collect());
        let ratios: Vec<f64> = pairs.iter().map(|p| p.1 / p.0).collect();
        let (low, high) = spread(&ratios);
        let extra = strict - loose;
        let noisy = high - low > 0.5 * (strict / loose);
        let verdict = if noisy {
            "too noisy to judge".to_string()
        } else if extra <= BOUND_US {
            format!("within {BOUND_US} us")
        } else {
            format!("OVER {BOUND_US} us")
        };
        println!(
            "  {pads:>2} user libraries, {segments:>3} segments: loose {loose:7.2} us, strict {strict:7.2} us, extra {extra:6.2} us, ratio {:.2}x (pairs {low:.2}x..{high:.2}x): {verdict}",
            strict / loose
        );
        writeln!(
            csv,
            "{pads},{segments},{loose:.3},{strict:.3},{extra:.3},{:.3},{low:.3},{high:.3}",
            strict / loose
        )?;
    }
    std::fs::write(workspace.join("target/bench/strict_cost.csv"), csv)?;
    println!("figures: target/bench/strict_cost.csv");
    Ok(())
}
