//! Compiling a workspace crate for a device target (rustc's `-Zbuild-std`, one LTO'd module):
//! the device runtime for the dist tree, and the GPU bundle's kernels.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::{cmd, requirements};

/// The sysroot of the `rustc` on `PATH` (under rustup, the toolchain this checkout pins).
pub fn rust_sysroot() -> Result<PathBuf> {
    let out = cmd::stdout(Command::new(requirements::program("rustc")).args(["--print", "sysroot"]))?;
    Ok(PathBuf::from(out.trim()))
}

/// The standard library's sources of that toolchain (its `rust-src` component), which
/// `-Zbuild-std` compiles for the device targets.
pub fn rust_library() -> Result<PathBuf> {
    Ok(rust_sysroot()?.join("lib/rustlib/src/rust/library"))
}

/// One device compilation of a workspace crate as a single LTO'd module: a target, a processor,
/// and the files rustc must emit.
pub struct DeviceBuild<'a> {
    /// Cargo package.
    pub package: &'a str,
    /// Cargo features.
    pub features: &'a [&'a str],
    /// Rust target triple.
    pub target: &'a str,
    /// `-Ctarget-cpu`.
    pub cpu: Option<&'a str>,
    /// `(rustc emit kind, file name)`, e.g. `("llvm-bc", "device_rtl.bc")`.
    pub emits: &'a [(&'a str, &'a str)],
}

impl DeviceBuild<'_> {
    /// Compiles the crate and copies the emitted files to `dest`.
    pub fn run(&self, workspace: &Path, dest: &Path) -> Result<()> {
        // Each (target, cpu) gets its own target dir: `-Ctarget-cpu` applies to core too (amdgcn
        // requires it), and sharing a dir would rebuild core at every switch.
        let target_dir = workspace.join("target/device").join(format!(
            "{}-{}",
            self.target,
            self.cpu.unwrap_or("generic")
        ));
        let out_dir = target_dir.join("out");
        fs::create_dir_all(&out_dir)?;
        let emit: Vec<String> = self
            .emits
            .iter()
            .map(|(kind, name)| format!("{kind}={}", out_dir.join(name).display()))
            .collect();
        let mut build = cmd::cargo();
        build
            .current_dir(workspace)
            .args(["rustc", "--quiet", "-p", self.package, "--profile", "device", "--target"])
            .arg(self.target)
            .args(["-Zbuild-std=core", "--crate-type", "staticlib"]);
        if !self.features.is_empty() {
            build.arg("--features").arg(self.features.join(","));
        }
        build
            .arg("--")
            .arg(format!("--emit={}", emit.join(",")))
            .env("CARGO_TARGET_DIR", &target_dir)
            .env("CARGO_ENCODED_RUSTFLAGS", self.cpu.map(|c| format!("-Ctarget-cpu={c}")).unwrap_or_default())
            .env_remove("RUSTFLAGS");
        cmd::status(&mut build)?;
        fs::create_dir_all(dest)?;
        for (_, name) in self.emits {
            let from = out_dir.join(name);
            fs::copy(&from, dest.join(name))
                .with_context(|| format!("rustc did not emit {}", from.display()))?;
        }
        Ok(())
    }
}
