//! The Spack package (`install/spack/`), installed with a real Spack, offline, as a site would:
//! `tests/install/spack/spack-check.sh` does it, in a network namespace of its own (nothing can
//! be fetched), with Spack configured in scratch directories only. Its LLVM is the cluster
//! check's: the reference release's Debian tree copied to another prefix with its OpenMP headers
//! and library beside it ([`crate::cluster_install::llvm_prefix`]). Spack itself needs no root;
//! the namespace does.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::cluster_install::{cluster_llvm, debian_prefix, llvm_prefix};
use crate::llvm::Llvm;
use crate::tools::Tools;
use crate::{cmd, device_build, requirements};

/// Runs the check; `tarball` is `cargo xtask vendor`'s release tarball. Returns the script's
/// `[spack]` lines as one paragraph.
pub fn check(workspace: &Path, tools: &Tools, tarball: &Path) -> Result<String> {
    let uid = cmd::stdout(Command::new(requirements::program("id")).arg("-u"))?;
    ensure!(uid.trim() == "0", "needs root for the network namespace that keeps Spack offline");
    let scratch = workspace.join("target/spack-check");
    if scratch.exists() {
        fs::remove_dir_all(&scratch)?;
    }
    fs::create_dir_all(&scratch)?;
    let llvm = scratch.join("llvm").join(cluster_llvm().tested_version);
    llvm_prefix(tools, &llvm)?;
    let spack = requirements::program("spack");
    let spack_root = spack.ancestors().nth(2).context("spack's bin/spack")?;
    let builtin = requirements::program("spack-builtin-packages");
    let oldest = Llvm::oldest();
    let mut run = Command::new(requirements::program("unshare"));
    run.args(["--net", "--"])
        .arg(requirements::program("bash"))
        .arg(workspace.join("tests/install/spack/spack-check.sh"))
        .env("SCRATCH", &scratch)
        .env("SPACK", spack_root)
        .env("SPACK_PYTHON", requirements::program("spack-python"))
        .env("BUILTIN", builtin.parent().context("the builtin repository's repo.yaml")?)
        .env("PACKAGES", workspace.join("install/spack/spack_repo/omptarget_indirect"))
        .env("LLVM", &llvm)
        .env("LLVM_VERSION", cluster_llvm().tested_version)
        .env("OLDEST_LLVM", debian_prefix(oldest))
        .env("OLDEST_LLVM_VERSION", oldest.tested_version)
        .env("RUST", device_build::rust_sysroot()?)
        .env("TARBALL", tarball)
        .env("CHECKOUT", workspace)
        .env("PROGRAM", workspace.join("tests/install/cluster"));
    let printed = cmd::stdout(&mut run);
    let printed = match printed {
        Ok(printed) => printed,
        Err(err) => return Err(err.context(format!("logs under {}", scratch.display()))),
    };
    let said: Vec<&str> = printed.lines().filter_map(|l| l.strip_prefix("[spack] ")).collect();
    ensure!(said.iter().any(|l| l.starts_with("spack uninstall")), "the check stopped early:\n{printed}");
    fs::remove_dir_all(&scratch)?;
    Ok(said.join("; "))
}
