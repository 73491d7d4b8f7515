//! `cargo xtask vendor`: a source tarball that builds and installs with no network.
//!
//! `target/vendor/omptarget-indirect-<version>-src.tar.gz` holds the checkout's files (those git
//! tracks or would track), every crate the workspace locks in `vendor/`, with the crates of the
//! Rust standard library that `-Zbuild-std` compiles for the device targets, and a
//! `.cargo/config.toml` that replaces crates.io with `vendor/` and sets `net.offline`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::{cmd, requirements};

/// What the tarball's `.cargo/config.toml` adds to the checkout's.
const OFFLINE_CONFIG: &str = "
# Added by `cargo xtask vendor`: every crate comes from vendor/, nothing from the network.
[source.crates-io]
replace-with = \"vendored-sources\"

[source.vendored-sources]
directory = \"vendor\"

[net]
offline = true
";

/// Writes the tarball and returns its path.
pub fn tarball(workspace: &Path) -> Result<PathBuf> {
    let (_, _, _, version) = packaging::install::version(workspace)?;
    let name = format!("omptarget-indirect-{version}");
    let out = workspace.join("target/vendor");
    let stage = out.join(&name);
    if stage.exists() {
        fs::remove_dir_all(&stage)?;
    }
    let listed = cmd::stdout(Command::new(requirements::program("git")).current_dir(workspace).args([
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
    ]))
    .context("the tarball is made from a git checkout")?;
    let mut copied = 0;
    for file in listed.split('\0').filter(|f| !f.is_empty()) {
        let from = workspace.join(file);
        // A tracked file deleted in the work tree is not part of it.
        if !from.is_file() {
            continue;
        }
        let to = stage.join(file);
        fs::create_dir_all(to.parent().context("no parent")?)?;
        fs::copy(&from, &to).with_context(|| format!("cannot copy {}", from.display()))?;
        copied += 1;
    }
    ensure!(copied > 0, "git lists no files in {}", workspace.display());

    // The standard library's own lock file: -Zbuild-std resolves core's dependencies from it.
    let library = packaging::device_build::rust_library()?.join("Cargo.toml");
    ensure!(
        library.is_file(),
        "{} is missing: the toolchain needs its rust-src component",
        library.display()
    );
    cmd::output(
        cmd::cargo()
            .current_dir(workspace)
            .args(["vendor", "--locked", "--versioned-dirs", "--quiet", "--sync"])
            .arg(&library)
            .arg(stage.join("vendor")),
    )?;
    let config = stage.join(".cargo/config.toml");
    let mut text = fs::read_to_string(&config).unwrap_or_default();
    text.push_str(OFFLINE_CONFIG);
    fs::write(&config, text)?;

    let tarball = out.join(format!("{name}-src.tar.gz"));
    packaging::install::tar_gz(&out, &name, &tarball)?;
    fs::remove_dir_all(&stage)?;
    Ok(tarball)
}
