//! How often a stock runtime closes each x86_64 device image when the program exits, counted by
//! `tests/e2e/close_count.c` (an `LD_PRELOAD` library that reports a `dlclose` of a handle with
//! no reference left instead of passing it on). libomptarget 24 closes every image twice (LLVM's
//! `DynamicLibrary` handle set, then the plugin's deinitialization), and the second `dlclose`
//! reads a freed link map: the program dies at exit or not, as its heap happens to lie. The
//! registration library holds one more reference to each image where the runtime does that
//! (`stock-runtime/src/x86_64_table.rs`). Shown on the `unmodified` program: built stock,
//! with the project, and with the project but `OMPTARGET_INDIRECT_HOLD_IMAGES=0` (the negative
//! control, which must close twice wherever stock does).

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use super::compile::{build, build_as};
use super::programs::{Build, PROGRAMS};
use crate::offload::OffloadTarget;
use crate::toolchain::Toolchain;
use crate::{cmd, requirements};

/// The counting library's report line.
const SPENT: &str = "close_count: dlclose(";

/// The registration library's switch of the extra reference (its `HOLD_IMAGES_ENV`).
const HOLD_IMAGES_SWITCH: &str = "OMPTARGET_INDIRECT_HOLD_IMAGES";

/// Runs the three builds with the counting library; returns the report.
pub fn check(workspace: &Path, toolchain: &Toolchain) -> Result<String> {
    ensure!(!toolchain.llvm.runs_project_plugins(), "the count shows a stock runtime");
    let target = OffloadTarget::x86_64();
    let program = PROGRAMS.iter().find(|p| p.name == "unmodified").context("no unmodified program")?;
    let out = toolchain.e2e_dir(workspace, &target).join("image-closes");
    std::fs::create_dir_all(&out)?;
    let counter = out.join("close_count.so");
    cmd::output(
        Command::new(requirements::program("gcc"))
            .args(["-Wall", "-Werror", "-shared", "-fPIC", "-o"])
            .arg(&counter)
            .arg(workspace.join("tests/e2e/close_count.c")),
    )?;
    let stock = build_as(workspace, toolchain, &target, program, Build::Stock)?;
    let project = build(workspace, toolchain, &target, program)?;
    let closed_twice = |exe: &Path, hold: bool| -> Result<usize> {
        let mut c = toolchain.run_command(exe);
        c.env_remove("LD_LIBRARY_PATH").envs(toolchain.run_env()).env_remove("LIBOMPTARGET_INFO");
        c.env("LD_PRELOAD", &counter).env(HOLD_IMAGES_SWITCH, if hold { "1" } else { "0" });
        let output = c.output().with_context(|| format!("cannot run {}", exe.display()))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        // The stock build fails its checks (the host copies run); only its exit matters here.
        ensure!(
            output.status.code().is_some(),
            "{} died ({}):\n{stdout}{stderr}",
            exe.display(),
            output.status
        );
        Ok(stderr.lines().filter(|l| l.starts_with(SPENT)).count())
    };
    let by_itself = closed_twice(&stock, true)?;
    let with_project = closed_twice(&project, true)?;
    let without_hold = closed_twice(&project, false)?;
    let major = toolchain.llvm.major;
    ensure!(
        with_project == 0,
        "with the project, libomptarget {major} still closed {with_project} handles once too often at exit"
    );
    if by_itself == 0 {
        ensure!(
            without_hold == 0,
            "libomptarget {major} closes no image twice by itself, yet {without_hold} with the project without \
             its extra reference"
        );
        return Ok(format!(
            "stock libomptarget {major} closes each x86_64 device image once at exit, with the project too"
        ));
    }
    ensure!(
        without_hold > 0,
        "negative control: stock libomptarget {major} closed {by_itself} handles once too often, but the project \
         without its extra reference ({HOLD_IMAGES_SWITCH}=0) none"
    );
    Ok(format!(
        "stock libomptarget {major} closes x86_64 device images twice at exit ({by_itself} dlclose of a spent handle, \
         counted by tests/e2e/close_count.c); with the project none (its extra reference); with {HOLD_IMAGES_SWITCH}=0 \
         {without_hold} (negative control)"
    ))
}
