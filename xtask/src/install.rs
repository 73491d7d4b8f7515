//! `cargo xtask install --prefix DIR [--llvm DIR]...`: builds for the LLVM installs it is given,
//! wherever they are, and installs what they can use; `cargo xtask uninstall`, `install-check`
//! and `dist` (the release archive).
//!
//! Which LLVMs: every `--llvm DIR` (a prefix, its `bin`, or an `llvm-config`); else the
//! colon-separated `OMPTARGET_INDIRECT_LLVM`; else `llvm-config` on `PATH` and Debian's
//! `/usr/lib/llvm-NN` of every supported release (19, 21, 22, 23). Nothing here needs root or the network:
//! the build runs offline from a `cargo xtask vendor` tarball.

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};

use crate::build::{self, Inputs, Optional};
use crate::cmd;
use crate::dist::Archs;
use crate::llvm::Llvm;
use crate::requirements::on_path;
use crate::tools::Tools;
use packaging::llvm_identity::LlvmInstall;

/// Debian's prefix of each supported LLVM release, looked at only when no LLVM is given at all.
fn debian_llvms() -> impl Iterator<Item = PathBuf> {
    Llvm::all().map(|llvm| PathBuf::from(format!("/usr/lib/llvm-{}", llvm.major)))
}

/// The environment variable that names LLVM install prefixes when `--llvm` is not given.
const LLVM_VARIABLE: &str = "OMPTARGET_INDIRECT_LLVM";

/// What `install` was asked for.
#[derive(Debug)]
pub struct Request {
    /// `--prefix`, absolute.
    pub prefix: PathBuf,
    /// `--llvm`, in order.
    pub llvms: Vec<PathBuf>,
    /// `--sm` / `--gfx` (`none` leaves a vendor out).
    pub archs: Archs,
    /// `--without PART` (repeatable, or a comma-separated list): optional parts left out.
    pub without: Vec<Optional>,
}

/// Parses `--prefix DIR`, `--llvm DIR` (repeatable), `--sm LIST`, `--gfx LIST`, `--without PART`.
pub fn parse(args: &[String]) -> Result<Request> {
    let (mut prefix, mut llvms, mut gpu, mut without) = (None, Vec::new(), Vec::new(), Vec::new());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_string())),
            None => (arg.as_str(), None),
        };
        let mut value = || -> Result<String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => iter.next().cloned().with_context(|| format!("{flag} needs a value")),
            }
        };
        match flag {
            "--prefix" => prefix = Some(PathBuf::from(value()?)),
            "--llvm" => llvms.push(PathBuf::from(value()?)),
            "--sm" | "--gfx" => {
                gpu.push(flag.to_string());
                gpu.push(value()?);
            }
            "--without" => {
                for part in value()?.split(',').filter(|p| !p.is_empty()) {
                    without.push(Optional::parse(part)?);
                }
            }
            _ => bail!(
                "`install` takes --prefix DIR [--llvm DIR]... [--sm LIST] [--gfx LIST] [--without PART], got `{arg}`"
            ),
        }
    }
    let prefix = prefix.context("`install` needs --prefix DIR")?;
    let prefix = if prefix.is_absolute() { prefix } else { std::env::current_dir()?.join(prefix) };
    Ok(Request { prefix, llvms, archs: crate::parse_archs(&gpu)?, without })
}

/// Builds for the requested LLVMs into `target/install-build`, installs under the prefix (with
/// `$DESTDIR`), and prints what was installed and each part left out with its reason.
pub fn run(workspace: &Path, request: &Request) -> Result<()> {
    let llvms = given_llvms(&request.llvms)?;
    check_rust(&llvms[0])?;
    for llvm in &llvms {
        println!("building for {}", llvm.describe());
    }
    let scratch = workspace.join("target/install-build");
    let inputs = Inputs {
        llvms,
        ptxas: ptxas(),
        complete: false,
        cargo_target: Some(scratch.join("cargo")),
        without: request.without.clone(),
    };
    let (dist, skipped) = build::build_from(workspace, &inputs, &request.archs, &scratch.join("dist"))?;
    let root = packaging::install::staged(&request.prefix);
    let files = packaging::install::install(workspace, &dist, &root)?;
    println!("installed {} files under {}", files.len(), root.display());
    for part in skipped {
        println!("{part}");
    }
    Ok(())
}

/// The LLVM installs to build for, oldest release first, one per release.
fn given_llvms(flags: &[PathBuf]) -> Result<Vec<LlvmInstall>> {
    let from_variable: Vec<PathBuf> = std::env::var_os(LLVM_VARIABLE)
        .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect())
        .unwrap_or_default();
    let mut llvms = Vec::new();
    if !flags.is_empty() || !from_variable.is_empty() {
        let (given, by) =
            if flags.is_empty() { (from_variable, LLVM_VARIABLE) } else { (flags.to_vec(), "--llvm") };
        for dir in &given {
            llvms.push(LlvmInstall::probe(dir).context(by)?);
        }
    } else {
        // Nothing given: llvm-config on PATH, then Debian's; an unsupported release is passed over.
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(on_path) = on_path("llvm-config") {
            candidates.push(on_path);
        }
        candidates.extend(debian_llvms().filter(|p| p.join("bin/llvm-config").is_file()));
        for candidate in candidates {
            match LlvmInstall::probe(&candidate) {
                Ok(llvm) if llvms.iter().any(|l: &LlvmInstall| l.release == llvm.release) => {
                    println!(
                        "passed over {}: an LLVM {} was found first",
                        candidate.display(),
                        llvm.release.major
                    )
                }
                Ok(llvm) => llvms.push(llvm),
                Err(err) => println!("passed over {}: {err:#}", candidate.display()),
            }
        }
        ensure!(
            !llvms.is_empty(),
            "no LLVM {} found: give its install prefix with --llvm DIR (or {LLVM_VARIABLE}=DIR, or put \
             its llvm-config on PATH)",
            Llvm::all().map(|l| l.major).collect::<Vec<_>>().join(" or ")
        );
    }
    llvms.sort_by_key(|l| l.release);
    let mut seen = Vec::new();
    for llvm in &llvms {
        ensure!(
            !seen.contains(&llvm.release),
            "two LLVM {} installs given ({} and another): give one per release",
            llvm.release.major,
            llvm.describe()
        );
        seen.push(llvm.release);
    }
    Ok(llvms)
}

/// The Rust toolchain must build the device library: a nightly (`-Zbuild-std`) with `rust-src`,
/// whose LLVM is not newer than the oldest LLVM given (that LLVM reads the device bitcode).
fn check_rust(oldest: &LlvmInstall) -> Result<()> {
    let verbose = cmd::stdout(std::process::Command::new(crate::requirements::program("rustc")).arg("-vV"))?;
    let field = |name: &str| verbose.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).unwrap_or("");
    let (release, llvm) = (field("release:"), field("LLVM version:"));
    let pinned =
        "rust-toolchain.toml's nightly-2025-02-17 (LLVM 19.1.7) with the rust-src component: rustup \
                  installs it at the first cargo command here; without rustup, put that toolchain's bin \
                  directory first on PATH";
    ensure!(
        release.contains("nightly") || std::env::var_os("RUSTC_BOOTSTRAP").is_some(),
        "rustc {release} cannot build the device library (it needs -Zbuild-std, a nightly feature): use {pinned}"
    );
    let core = packaging::device_build::rust_library()?.join("core");
    ensure!(core.is_dir(), "rustc {release} has no rust-src ({} is missing): use {pinned}", core.display());
    let rust_llvm: u32 = llvm.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(u32::MAX);
    let given: u32 = oldest.release.major.parse()?;
    ensure!(
        rust_llvm <= given,
        "rustc {release} writes LLVM {llvm} bitcode, which {} cannot read: use {pinned}",
        oldest.describe()
    );
    Ok(())
}

/// CUDA's `ptxas`: `$CUDA_HOME/bin/ptxas`, else on `PATH`.
fn ptxas() -> Option<PathBuf> {
    std::env::var_os("CUDA_HOME")
        .map(|home| Path::new(&home).join("bin/ptxas"))
        .filter(|p| p.is_file())
        .or_else(|| on_path("ptxas"))
}

/// `cargo xtask uninstall --prefix DIR`: removes exactly what `install` put there (its manifest).
pub fn uninstall(prefix: &Path) -> Result<()> {
    let prefix =
        if prefix.is_absolute() { prefix.to_path_buf() } else { std::env::current_dir()?.join(prefix) };
    let root = packaging::install::staged(&prefix);
    let removed = packaging::install::uninstall(&root)?;
    println!("removed {removed} files from {}", root.display());
    Ok(())
}

/// `cargo xtask install-check`: the build, then the suite's install test alone.
pub fn check(workspace: &Path) -> Result<()> {
    let tools = Tools::locate(workspace)?;
    let dist = build::build(workspace, &tools, &Archs::default())?;
    println!("{}", checks::install_check::check(workspace, &tools, &dist)?);
    Ok(())
}

/// `cargo xtask dist`: the build, then the release archive with its `SHA256SUMS`.
pub fn archive(workspace: &Path) -> Result<()> {
    let tools = Tools::locate(workspace)?;
    let dist = build::build(workspace, &tools, &Archs::default())?;
    println!("{}", packaging::install::archive(workspace, &dist)?.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn install_options_are_parsed() {
        let request = parse(&args(&[
            "--prefix",
            "/opt/oi",
            "--llvm",
            "/opt/llvm/22",
            "--llvm=/opt/llvm/19",
            "--sm",
            "none",
            "--gfx=gfx90a",
            "--without",
            "fortran",
            "--without=libomptarget16-plugins,fortran",
        ]))
        .unwrap();
        assert_eq!(request.without, [Optional::Fortran, Optional::Libomptarget16Plugins, Optional::Fortran]);
        assert_eq!(request.prefix, Path::new("/opt/oi"));
        assert_eq!(request.llvms, [Path::new("/opt/llvm/22"), Path::new("/opt/llvm/19")]);
        assert!(request.archs.sms.is_empty());
        assert_eq!(request.archs.gfxs, ["gfx90a"]);
        let defaults = parse(&args(&["--prefix=relative"])).unwrap();
        assert!(defaults.prefix.is_absolute() && defaults.prefix.ends_with("relative"));
        assert_eq!(defaults.archs.sms, Archs::default().sms);
        assert!(defaults.without.is_empty());
    }

    #[test]
    fn bad_install_options_are_refused() {
        assert!(parse(&args(&["--llvm", "/opt/llvm"])).unwrap_err().to_string().contains("--prefix"));
        assert!(parse(&args(&["--prefix", "/p", "--llvm"]))
            .unwrap_err()
            .to_string()
            .contains("needs a value"));
        assert!(parse(&args(&["--prefix", "/p", "--frob"])).is_err());
        assert!(parse(&args(&["--prefix", "/p", "--sm", "sm_x"])).is_err());
        let unknown = parse(&args(&["--prefix", "/p", "--without", "docs"])).unwrap_err().to_string();
        assert!(unknown.contains("fortran or libomptarget16-plugins"), "{unknown}");
    }

    #[test]
    fn a_directory_without_llvm_is_named() {
        let err = given_llvms(&[PathBuf::from("/nonexistent/llvm")]).unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/llvm"), "{err:#}");
    }
}
