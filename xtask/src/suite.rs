//! `cargo xtask test`: every check that runs without a GPU, with a closing summary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{ensure, Result};

use crate::build::{self, Archs, Dist};
use crate::checks::{self, MAP_P, MAP_SIZE, TRANSLATE};
use crate::cmd;
use crate::offload::OffloadTarget;
use crate::tools::Tools;

/// Collects step outcomes and prints them as they finish.
#[derive(Default)]
struct Report {
    steps: Vec<(String, Result<String, String>)>,
}

impl Report {
    fn step(&mut self, name: impl Into<String>, run: impl FnOnce() -> Result<String>) -> bool {
        let name = name.into();
        println!("\n=== {name}");
        let started = Instant::now();
        let outcome = run().map_err(|e| format!("{e:#}"));
        let secs = started.elapsed().as_secs_f64();
        match &outcome {
            Ok(detail) => println!("--- ok ({secs:.1} s) {name}: {detail}"),
            Err(err) => println!("--- FAILED ({secs:.1} s) {name}: {err}"),
        }
        let ok = outcome.is_ok();
        self.steps.push((name, outcome));
        ok
    }

    fn finish(self) -> Result<()> {
        println!("\n=== summary");
        let failed = self.steps.iter().filter(|(_, o)| o.is_err()).count();
        for (name, outcome) in &self.steps {
            match outcome {
                Ok(detail) => println!("  ok      {name}: {detail}"),
                Err(err) => println!("  FAILED  {name}: {}", err.lines().next().unwrap_or("")),
            }
        }
        println!("xtask: {} passed, {failed} failed", self.steps.len() - failed);
        ensure!(failed == 0, "{failed} test step(s) failed");
        Ok(())
    }
}

/// Runs the whole suite; fails if any step failed (after running all of them).
pub fn run(workspace: &Path) -> Result<()> {
    let mut report = Report::default();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let cargo_step = |args: &[&str]| {
        let mut c = Command::new(&cargo);
        c.current_dir(workspace).args(args);
        cmd::status(&mut c).map(|()| String::new())
    };
    report.step("cargo fmt --check", || cargo_step(&["fmt", "--all", "--", "--check"]));
    report.step("cargo clippy -D warnings", || {
        cargo_step(&["clippy", "--workspace", "--all-targets", "--quiet", "--", "-D", "warnings"])
    });
    report.step("host unit and property tests (cargo test)", || cargo_step(&["test", "--workspace"]));

    let tools = match Tools::locate(workspace) {
        Ok(tools) => tools,
        Err(err) => {
            report.step("locate tools", || Err(err));
            return report.finish();
        }
    };
    let archs = Archs::default();
    if !report.step("cargo xtask build", || build::build(workspace, &tools, &archs).map(|_| String::new())) {
        return report.finish();
    }
    let dist = Dist::new(workspace);

    report.step("C ABI test against the x86_64 archive", || c_abi_test(workspace, &dist));
    for sm in &archs.sms {
        let dir = dist.nvptx_dir(sm);
        report.step(format!("nvptx64 {sm}: PTX, cubin, bitcode"), || {
            checks::check_ptx(&dir.join("device_rtl.ptx"))?;
            checks::check_bitcode(&tools, &dir.join("device_rtl.bc"))?;
            let cubin = dir.join("device_rtl.cubin");
            let elf = checks::elf_summary(&cmd::read(&cubin)?, &[TRANSLATE, MAP_P, MAP_SIZE])?;
            elf.expect_defined_once(&cubin.display().to_string(), &[TRANSLATE, MAP_P, MAP_SIZE])?;
            let regs = checks::cubin_registers(&tools, &cubin)?;
            Ok(format!("{TRANSLATE}: {regs} registers (ptxas 11.8)"))
        });
    }
    for gfx in &archs.gfxs {
        let dir = dist.amdgcn_dir(gfx);
        report.step(format!("amdgcn {gfx}: code object v5, bitcode"), || {
            checks::check_bitcode(&tools, &dir.join("device_rtl.bc"))?;
            checks::check_amdgcn_object(&tools, &dir.join("device_rtl.o"), gfx)
        });
    }
    report.step("x86_64: bitcode", || {
        checks::check_bitcode(&tools, &dist.x86_64_dir().join("device_rtl.bc")).map(|()| String::new())
    });
    for target in [OffloadTarget::nvptx("sm_90"), OffloadTarget::amdgcn("gfx90a"), OffloadTarget::x86_64()] {
        report.step(format!("clang 19 links libomptarget-indirect.a for {}", target.name), || {
            link_test(workspace, &tools, &dist, &target)
        });
    }
    report.finish()
}

/// Builds `tests/c/translate_abi.c` with the system C compiler against the x86_64 archive and
/// runs it.
fn c_abi_test(workspace: &Path, dist: &Dist) -> Result<String> {
    let out = workspace.join("target/tests/c");
    std::fs::create_dir_all(&out)?;
    let exe = out.join("translate_abi");
    cmd::output(
        Command::new("cc")
            .args(["-std=c11", "-O2", "-Wall", "-Werror"])
            .arg(workspace.join("tests/c/translate_abi.c"))
            .arg(dist.x86_64_archive())
            .arg("-o")
            .arg(&exe),
    )?;
    let printed = cmd::stdout(&mut Command::new(&exe))?;
    Ok(printed.trim().to_string())
}

/// Links `tests/c/offload_translate.c` for `target` and checks the device image it holds.
fn link_test(workspace: &Path, tools: &Tools, dist: &Dist, target: &OffloadTarget) -> Result<String> {
    let out = workspace.join("target/tests/link").join(&target.name);
    std::fs::create_dir_all(&out)?;
    let program = out.join("offload_translate");
    cmd::output(
        Command::new(&tools.clang)
            .args(target.clang_args(tools))
            .arg("-O2")
            .arg(workspace.join("tests/c/offload_translate.c"))
            .arg("-L")
            .arg(dist.lib_dir())
            .arg("-lomptarget-indirect")
            .arg("-o")
            .arg(&program),
    )?;
    let image = extract_image(tools, &program, target, &out)?;
    let names = [TRANSLATE, MAP_P, MAP_SIZE];
    let elf = checks::elf_summary(&cmd::read(&image)?, &names)?;
    elf.expect_defined_once(&image.display().to_string(), &names)?;
    let mut detail = format!("{} holds {TRANSLATE}, {MAP_P}, {MAP_SIZE} once each", image.display());
    if target.triple == "nvptx64-nvidia-cuda" {
        let dump = cmd::stdout(Command::new(tools.cuobjdump()).arg("-elf").arg(&image))?;
        for name in names {
            ensure!(dump.contains(name), "cuobjdump -elf does not list {name}");
        }
        let regs = checks::cubin_registers(tools, &image)?;
        detail.push_str(&format!("; linked {TRANSLATE}: {regs} registers"));
    }
    Ok(detail)
}

/// Writes the device image for `target` embedded in `program` to `dir` and returns its path.
pub fn extract_image(tools: &Tools, program: &Path, target: &OffloadTarget, dir: &Path) -> Result<PathBuf> {
    let image = dir.join(format!("image.{}", target.name));
    let _ = std::fs::remove_file(&image);
    cmd::output(Command::new(&tools.packager).arg(program).arg(target.image_selector(&image)))?;
    ensure!(image.is_file(), "{} holds no {} image", program.display(), target.name);
    Ok(image)
}
