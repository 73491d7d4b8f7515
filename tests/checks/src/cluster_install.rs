//! The cluster install check of `scripts/test.sh`: an install for an LLVM that is only at another
//! prefix, by a user who is not root, with no network, from the vendored source tarball.
//!
//! LLVM 22 is put at `<scratch>/opt/llvm/22.1.8` (Debian's tree linked file by file, with LLVM 22's
//! `omp.h` and the `libomp` it runs with: what a module's LLVM holds), the Rust toolchain at
//! `<scratch>/rust` (no rustup). In a new mount and network namespace, empty file systems cover
//! `/usr/lib/llvm-19` and `/usr/lib/llvm-22`; there `tests/install/cluster/as-user.sh` runs as uid
//! 65534 under `strace -f -e trace=%file`, which must show no path under either directory.
//!
//! The user reads nothing of the clone: whatever it runs (the toolchain, EasyBuild, the tarballs)
//! is staged in the scratch directory and opened to others there, because a clone often lives in
//! a directory only its owner can enter (`mktemp -d`, a 0700 home). The trace must show no path
//! under the clone either, so a check that reaches into it fails in any clone, not only in a
//! private one.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use crate::llvm::Llvm;
use crate::{cmd, requirements};

/// Where Debian installs its LLVM `llvm` (`/usr/lib/llvm-NN`).
pub(crate) fn debian_prefix(llvm: Llvm) -> String {
    format!("/usr/lib/llvm-{}", llvm.major)
}

/// The directories the build must not touch: every Debian LLVM of the machine (the releases
/// that live in a root of their own are out of its reach already).
fn hidden() -> Vec<String> {
    Llvm::all().filter(|l| l.root.is_none()).map(debian_prefix).collect()
}

/// The cluster's LLVM: a copy of Debian's reference release ([`Llvm::reference`]).
pub(crate) fn cluster_llvm() -> Llvm {
    Llvm::reference()
}

/// The unprivileged user the build runs as (`nobody`).
const USER: u32 = 65534;

/// Runs the check; `tarball` is `cargo xtask vendor`'s. Returns a one-paragraph report.
/// `archive` is `cargo xtask dist`'s release archive, built with Debian's LLVMs: it must serve the
/// other prefix of the same LLVM 22 release as it is.
pub fn check(
    workspace: &Path,
    tools: &crate::tools::Tools,
    tarball: &Path,
    archive: &Path,
) -> Result<String> {
    let uid = cmd::stdout(Command::new(requirements::program("id")).arg("-u"))?;
    ensure!(
        uid.trim() == "0",
        "needs root to make the namespaces and hide Debian's LLVMs (the build itself runs as uid {USER})"
    );
    let scratch = std::env::temp_dir().join(format!("omptarget-indirect-cluster-{}", std::process::id()));
    if let Some(closed) = closed_ancestor(&scratch)? {
        bail!(
            "uid {USER} cannot enter {} (mode {:o}), which holds the scratch directory {}: \
             set TMPDIR to a directory that others can enter, such as /tmp",
            closed.display(),
            fs::metadata(&closed)?.mode() & 0o7777,
            scratch.display()
        );
    }
    if scratch.exists() {
        fs::remove_dir_all(&scratch)?;
    }
    let result = check_in(workspace, tools, tarball, archive, &scratch);
    // Links and copies only: removing them leaves the originals.
    let _ = fs::remove_dir_all(&scratch);
    result
}

fn check_in(
    workspace: &Path,
    tools: &crate::tools::Tools,
    tarball: &Path,
    archive: &Path,
    scratch: &Path,
) -> Result<String> {
    fs::create_dir_all(scratch)?;
    let llvm = scratch.join("opt/llvm").join(cluster_llvm().tested_version);
    llvm_prefix(tools, &llvm)?;
    let rust = scratch.join("rust");
    linked_copy(&crate::device_build::rust_sysroot()?, &rust, false)?;
    let source = tarball
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix("-src.tar.gz"))
        .context("a tarball named <name>-src.tar.gz")?
        .to_string();
    let user_tarball = scratch.join(tarball.file_name().context("no file name")?);
    fs::copy(tarball, &user_tarball)?;
    let user_archive = scratch.join(archive.file_name().context("no file name")?);
    fs::copy(archive, &user_archive)?;
    let script = scratch.join("as-user.sh");
    fs::copy(workspace.join("tests/install/cluster/as-user.sh"), &script)?;
    let easybuild = scratch.join("easybuild-venv");
    linked_copy(ancestor(&requirements::program("eb"), 2)?, &easybuild, false)?;
    open_to_others(scratch)?;
    for dir in [scratch.to_path_buf(), scratch.join("home"), scratch.join("cargo-home")] {
        fs::create_dir_all(&dir)?;
        std::os::unix::fs::chown(&dir, Some(USER), Some(USER))?;
    }

    // The trace and the namespace catch what they should: a look at a hidden directory is seen
    // and finds it empty.
    let control_trace = scratch.join("control.trace");
    let listed = cmd::stdout(
        hidden_namespace(&control_trace).arg(requirements::program("ls")).arg("-A").args(hidden()),
    )?;
    ensure!(
        listed.lines().all(|l| l.is_empty() || l.ends_with(':')),
        "the namespace does not hide {:?}: {listed}",
        hidden()
    );
    ensure!(
        !hidden_opens(&control_trace)?.is_empty(),
        "the file trace did not see `ls` look at {:?}",
        hidden()
    );

    let trace = scratch.join("build.trace");
    let path =
        format!("{}:{}:/usr/local/bin:/usr/bin:/bin", rust.join("bin").display(), llvm.join("bin").display());
    let mut run = hidden_namespace(&trace);
    run.current_dir(scratch)
        .arg(requirements::program("env"))
        .arg("-i")
        .arg(format!("PATH={path}"))
        .arg(format!("LD_LIBRARY_PATH={}", llvm.join("lib").display()))
        .arg(format!("SCRATCH={}", scratch.display()))
        .arg(format!("LLVM={}", llvm.display()))
        .arg(format!("TARBALL={}", user_tarball.display()))
        .arg(format!("ARCHIVE={}", user_archive.display()))
        .arg(format!("SOURCE={source}"))
        .arg(format!("EASYBUILD={}", easybuild.display()))
        .arg(format!("LMOD={}", ancestor(&requirements::program("lmod"), 2)?.display()))
        .arg(requirements::program("bash"))
        .arg(&script);
    let out = run.output().context("cannot start the namespace")?;
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        bail!(
            "the install as uid {USER} with LLVM 22 at {} failed ({}):\n{}",
            llvm.display(),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    let opened = hidden_opens(&trace)?;
    ensure!(
        opened.is_empty(),
        "the install reached into the hidden directories {} times; first:\n{}",
        opened.len(),
        first_lines(&opened)
    );
    let workspace = fs::canonicalize(workspace)?;
    let in_clone = traced_under(&trace, &[&workspace.to_string_lossy()])?;
    ensure!(
        in_clone.is_empty(),
        "uid {USER} reached into the clone at {} {} times (a clone in a private directory would refuse it): \
         stage what it needs in the scratch directory; first:\n{}",
        workspace.display(),
        in_clone.len(),
        first_lines(&in_clone)
    );
    let naming = files_naming(&scratch.join("prefix"), "/usr/lib/llvm-")?;
    ensure!(naming.is_empty(), "installed files name Debian's LLVM directories: {naming:?}");
    let calls = fs::read_to_string(&trace)?.lines().count();
    let said: Vec<&str> = log.lines().filter_map(|l| l.strip_prefix("[as-user] ")).collect();
    let skipped: Vec<&str> = log.lines().filter(|l| l.starts_with("skipped ")).collect();
    Ok(format!(
        "LLVM {} only at {} ({} empty), as uid {USER}, no network, from the vendored tarball ({:.1} MB): \
         {}; {}; {calls} file calls traced, none under the hidden directories or the clone; no installed file names them",
        cluster_llvm().major,
        llvm.display(),
        hidden().join(" and "),
        fs::metadata(tarball)?.len() as f64 / 1e6,
        said.join("; "),
        skipped.join("; ")
    ))
}

/// A command prefix: a new mount and network namespace with empty file systems over [`hidden`],
/// then `strace -f` of the file calls into `trace`, then the rest as [`USER`].
fn hidden_namespace(trace: &Path) -> Command {
    let mut mounts = String::new();
    for dir in hidden() {
        mounts.push_str(&format!(
            "mount -t tmpfs -o ro,mode=0755,size=64k omptarget-indirect-hidden {dir} && "
        ));
    }
    let mut command = Command::new(requirements::program("unshare"));
    // Nothing of xtask's environment (cargo's LD_LIBRARY_PATH names the clone's target/).
    command
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .args(["--mount", "--net", "--propagation", "private", "--"])
        .arg(requirements::program("sh"))
        .arg("-c")
        .arg(format!("{mounts}exec \"$@\""))
        .arg("sh")
        .arg(requirements::program("strace"))
        .args(["-f", "-qq", "-e", "trace=%file", "-o"])
        .arg(trace)
        .arg(requirements::program("setpriv"))
        .arg(format!("--reuid={USER}"))
        .arg(format!("--regid={USER}"))
        .args(["--clear-groups", "--"]);
    command
}

/// The lines of an strace file log that name a path under [`hidden`].
fn hidden_opens(trace: &Path) -> Result<Vec<String>> {
    let dirs = hidden();
    traced_under(trace, &dirs.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The lines of an strace file log that name a path in or under one of `dirs`.
fn traced_under(trace: &Path, dirs: &[&str]) -> Result<Vec<String>> {
    let text = fs::read_to_string(trace).with_context(|| format!("no trace at {}", trace.display()))?;
    Ok(text.lines().filter(|line| names_under(line, dirs)).map(str::to_string).collect())
}

/// Whether an strace line names a path in or under one of `dirs` (for `/usr/lib/llvm-22`:
/// `"/usr/lib/llvm-22"`, `"/usr/lib/llvm-22/bin/clang"`; not `"/usr/lib/llvm-220"`).
fn names_under(line: &str, dirs: &[&str]) -> bool {
    dirs.iter().any(|dir| {
        line.match_indices(dir).any(|(at, _)| {
            let after = line[at + dir.len()..].chars().next();
            matches!(after, Some('"') | Some('/'))
        })
    })
}

/// The first directory above `path` (which need not exist yet) that others cannot enter.
fn closed_ancestor(path: &Path) -> Result<Option<PathBuf>> {
    for dir in path.ancestors().skip(1) {
        let mode = fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?.mode();
        if mode & 0o001 == 0 {
            return Ok(Some(dir.to_path_buf()));
        }
    }
    Ok(None)
}

/// Makes everything under `dir` readable by others, and what its owner may run runnable by them.
/// A file that is not is a hard link of a file outside (or a copy that kept its mode, under a
/// umask such as 077): it becomes a copy of its own first, so that no mode outside changes.
fn open_to_others(dir: &Path) -> Result<()> {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mode = fs::metadata(&dir)?.mode();
        fs::set_permissions(&dir, fs::Permissions::from_mode((mode & 0o7777) | 0o055))?;
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry?.path();
            let meta = fs::symlink_metadata(&path)?;
            if meta.is_dir() {
                pending.push(path);
                continue;
            }
            if !meta.is_file() {
                continue;
            }
            let mode = meta.mode() & 0o7777;
            let open = mode | 0o044 | if mode & 0o100 != 0 { 0o011 } else { 0 };
            if open == mode {
                continue;
            }
            let own = path.with_extension("omptarget-indirect-open");
            fs::copy(&path, &own).with_context(|| format!("cannot copy {}", path.display()))?;
            fs::set_permissions(&own, fs::Permissions::from_mode(open))?;
            fs::rename(&own, &path)?;
        }
    }
    Ok(())
}

/// The directory `levels` above `path` (`.../bin/eb`, 2: the virtual environment).
fn ancestor(path: &Path, levels: usize) -> Result<&Path> {
    path.ancestors().nth(levels).with_context(|| format!("{} has no directory {levels} up", path.display()))
}

/// The files under `dir` whose bytes hold `text`.
fn files_naming(dir: &Path, text: &str) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if fs::read(&path)?.windows(text.len()).any(|w| w == text.as_bytes()) {
                found.push(path.display().to_string());
            }
        }
    }
    Ok(found)
}

/// Makes `prefix` an LLVM 22 install prefix as a module system or Spack would have it: Debian's
/// `/usr/lib/llvm-22` with its links into `/usr/include` and `/usr/lib/x86_64-linux-gnu`
/// resolved, plus LLVM 22's `omp.h` in clang's resource directory and the `libomp` its
/// libomptarget runs with (Debian's lives under `/usr/lib/llvm-19`).
pub(crate) fn llvm_prefix(tools: &crate::tools::Tools, prefix: &Path) -> Result<()> {
    fs::create_dir_all(prefix)?;
    for part in ["bin", "include", "lib", "share"] {
        linked_copy(&Path::new(&debian_prefix(cluster_llvm())).join(part), &prefix.join(part), true)?;
    }
    let resource = prefix.join("lib/clang").join(cluster_llvm().major).join("include");
    let openmp =
        tools.of(cluster_llvm()).openmp.clone().context("the cluster LLVM's omp.h is not located")?;
    for header in fs::read_dir(openmp.join("include"))? {
        let header = header?.path();
        fs::copy(&header, resource.join(header.file_name().context("no name")?))?;
    }
    let libomp = fs::canonicalize(openmp.join("lib/libomp.so"))?;
    fs::copy(&libomp, prefix.join("lib/libomp.so.5"))?;
    std::os::unix::fs::symlink("libomp.so.5", prefix.join("lib/libomp.so"))?;
    Ok(())
}

/// `cp -r` of `from` to `to`, hard-linking files where the file system allows (instant, no
/// space), copying them where it does not; `dereference` resolves symbolic links first.
fn linked_copy(from: &Path, to: &Path, dereference: bool) -> Result<()> {
    let copy = |link: bool| {
        let mut cp = Command::new(requirements::program("cp"));
        cp.arg(if dereference { "-rL" } else { "-r" });
        if link {
            cp.arg("--link");
        }
        cmd::output(cp.arg(from).arg(to)).map(drop)
    };
    if copy(true).is_err() {
        if to.exists() {
            fs::remove_dir_all(to)?;
        }
        copy(false)?;
    }
    Ok(())
}

/// The first ten of `lines`, one per line: what a failed trace check shows.
fn first_lines(lines: &[String]) -> String {
    lines.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_lines_under_the_hidden_directories_are_found() {
        let hidden = |line| names_under(line, &["/usr/lib/llvm-19", "/usr/lib/llvm-22"]);
        assert!(hidden(r#"1234  openat(AT_FDCWD, "/usr/lib/llvm-22/bin/clang", O_RDONLY) = -1 ENOENT"#));
        assert!(hidden(r#"1234  execve("/usr/lib/llvm-19/bin/clang", ["clang"], 0x7ff) = -1 ENOENT"#));
        assert!(hidden(r#"1234  stat("/usr/lib/llvm-22", 0x7ffd) = 0"#));
        assert!(!hidden(r#"1234  openat(AT_FDCWD, "/usr/lib/llvm-220/x", O_RDONLY) = -1 ENOENT"#));
        assert!(!hidden(r#"1234  openat(AT_FDCWD, "/tmp/s/opt/llvm/22.1.8/bin/clang", O_RDONLY) = 3"#));
        let clone = |line| names_under(line, &["/tmp/tmp.x1/a clone"]);
        assert!(clone(
            r#"9  execve("/tmp/tmp.x1/a clone/target/tools/easybuild/bin/eb", ["eb"]) = -1 EACCES"#
        ));
        assert!(!clone(r#"9  openat(AT_FDCWD, "/tmp/tmp.x1/a clone2/x", O_RDONLY) = 3"#));
    }

    /// A scratch tree as a clone made under umask 077 would leave it: a private file linked from
    /// outside, a private directory. Everything becomes reachable, and the file outside keeps its
    /// mode and its bytes.
    #[test]
    fn staged_files_are_opened_to_others_without_touching_the_originals() {
        let base = std::env::temp_dir().join(format!("omptarget-indirect-open-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let outside = base.join("outside");
        fs::create_dir_all(&outside).unwrap();
        let tool = outside.join("tool");
        fs::write(&tool, b"#!/bin/sh\n").unwrap();
        fs::set_permissions(&tool, fs::Permissions::from_mode(0o700)).unwrap();
        let data = outside.join("data");
        fs::write(&data, b"bytes").unwrap();
        fs::set_permissions(&data, fs::Permissions::from_mode(0o644)).unwrap();
        let staged = base.join("scratch/private");
        fs::create_dir_all(&staged).unwrap();
        fs::set_permissions(&staged, fs::Permissions::from_mode(0o700)).unwrap();
        fs::hard_link(&tool, staged.join("tool")).unwrap();
        fs::hard_link(&data, staged.join("data")).unwrap();

        open_to_others(&base.join("scratch")).unwrap();

        let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o7777;
        assert_eq!(mode(&staged), 0o755);
        assert_eq!(mode(&staged.join("tool")), 0o755);
        assert_eq!(fs::read(staged.join("tool")).unwrap(), b"#!/bin/sh\n");
        assert_eq!(mode(&tool), 0o700, "the original's mode changed");
        assert_eq!(fs::metadata(&tool).unwrap().nlink(), 1, "the private file is still linked");
        assert_eq!(fs::metadata(&data).unwrap().nlink(), 2, "an open file was copied needlessly");
        assert_eq!(closed_ancestor(&staged.join("tool")).unwrap(), closed_ancestor(&base).unwrap());
        fs::set_permissions(&staged, fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(closed_ancestor(&staged.join("tool")).unwrap(), Some(staged.clone()));
        fs::remove_dir_all(&base).unwrap();
    }
}
