//! Which LLVM an install is, before anything is built with it: one of the supported releases
//! ([`crate::llvm::RELEASES`]), or something the plugins cannot work with, refused by name. The
//! plugins run inside clang and flang, on the LLVM those are linked to; so an install is refused
//! when its compilers carry LLVM linked in statically (LLVM's CMake default, Spack's `llvm`
//! without `+link_llvm_dylib`), when it is a vendor's (ROCm's `amdclang`, AOMP, Cray CCE, Intel
//! `icx`, Apple's clang: their own patches and runtimes), or when its version is one no record
//! has (LLVM 20, an unreleased build other than the newest record's main branch).
//! `docs/install.md`, "Which LLVM", says what to use instead.

use crate::llvm::Llvm;
use omptarget_indirect_abi::VENDOR_COMPILERS;
use std::path::Path;

/// Where to read why: the docs' section on choosing an LLVM.
const WHICH_LLVM: &str = "docs/install.md, \"Which LLVM\"";

/// The supported release an install is, from what its `llvm-config --version` and (when it has
/// one) its `clang --version` print; otherwise one line that names what was found and what is
/// supported. A version with a `git` suffix (an unreleased build: ROCm's and AOMP's LLVMs print
/// that form too) is taken only for the newest release when that release is LLVM's main branch
/// ([`crate::llvm::Release::snapshot`]).
pub fn release_of(llvm_config_version: &str, clang_version: Option<&str>) -> Result<Llvm, String> {
    let supported = format!("omptarget-indirect builds for LLVM {} as LLVM releases them", Llvm::list());
    if let Some(line) = clang_version.and_then(|v| v.lines().next()) {
        if let Some((_, vendor)) = VENDOR_COMPILERS.iter().find(|(text, _)| line.contains(text)) {
            return Err(format!(
                "its clang is {vendor} (`{}`): {supported}, with their own libomptarget ({WHICH_LLVM})",
                line.trim()
            ));
        }
    }
    let version = llvm_config_version.trim();
    let (major, rest) = version.split_once('.').unwrap_or((version, ""));
    let Some(release) = Llvm::of_major(major) else {
        return Err(format!("it is LLVM {version}: {supported} ({WHICH_LLVM})"));
    };
    if rest.ends_with("git") && release.snapshot.is_none() {
        return Err(format!(
            "it is LLVM {version}, an unreleased build (ROCm's and AOMP's LLVMs print this form): {supported} \
             ({WHICH_LLVM})"
        ));
    }
    Ok(release)
}

/// Why `compiler` (a clang or flang of the install) cannot load the plugins because it has LLVM
/// linked in statically, or `None` when it runs on a shared `libLLVM` or cannot be told. An ELF
/// executable says so itself (its needed libraries); a wrapper script (a release in a root of its
/// own) is judged by the install's `LLVMConfig.cmake` in `cmake_dir` (`LLVM_LINK_LLVM_DYLIB`).
pub fn linked_statically(compiler: &Path, cmake_dir: &Path) -> Option<String> {
    let executable = std::fs::canonicalize(compiler).ok()?;
    let links_dylib = match crate::elf::needed(&executable) {
        Ok(needed) => needed.iter().any(|n| n.starts_with("libLLVM")),
        Err(_) => {
            let config = std::fs::read_to_string(cmake_dir.join("LLVMConfig.cmake")).ok()?;
            !config.lines().any(|l| l.trim() == "set(LLVM_LINK_LLVM_DYLIB OFF)")
        }
    };
    (!links_dylib).then(|| {
        format!(
            "{} has LLVM linked in statically (it needs no libLLVM.so): the plugins run inside it on \
             the LLVM it is linked to, and need an LLVM built with LLVM_LINK_LLVM_DYLIB=ON \
             (Spack: llvm+link_llvm_dylib; Debian's and Fedora's packages are) ({WHICH_LLVM})",
            compiler.display()
        )
    })
}

/// An LLVM installation the build is given (`--llvm DIR`): where its programs, libraries and
/// headers are, and its release, read from its own `llvm-config`.
#[derive(Clone, Debug)]
pub struct LlvmInstall {
    /// The supported release it is.
    pub release: Llvm,
    /// `llvm-config --version`, e.g. `22.1.8`.
    pub version: String,
    /// `llvm-config --bindir`.
    pub bin: std::path::PathBuf,
    /// `llvm-config --libdir`.
    pub lib: std::path::PathBuf,
    /// `llvm-config --includedir`.
    pub include: std::path::PathBuf,
    /// Its `llvm-config`.
    pub llvm_config: std::path::PathBuf,
}

impl LlvmInstall {
    /// Reads the LLVM at `dir`: an install prefix (`DIR/bin/llvm-config`), its `bin` directory, or
    /// an `llvm-config` itself. Fails, naming the path and what it found, when there is no
    /// `llvm-config` there, or it is an LLVM the plugins cannot work with
    /// (this module: another release, a vendor's, one linked statically).
    pub fn probe(dir: &std::path::Path) -> anyhow::Result<LlvmInstall> {
        use anyhow::{bail, Context};
        // Absolute: the builds it feeds run in other directories (cargo runs build scripts in
        // their package's).
        let dir = &std::path::absolute(dir).with_context(|| format!("{}: no such path", dir.display()))?;
        let llvm_config = [dir.join("bin/llvm-config"), dir.join("llvm-config"), dir.to_path_buf()]
            .into_iter()
            .find(|p| p.is_file())
            .with_context(|| {
                format!("{}: no bin/llvm-config there (give an LLVM install prefix)", dir.display())
            })?;
        let query = |arg: &str| -> anyhow::Result<String> {
            let out = crate::cmd::stdout(std::process::Command::new(&llvm_config).arg(arg))?;
            Ok(out.trim().to_string())
        };
        let version = query("--version")?;
        let bin: std::path::PathBuf = query("--bindir")?.into();
        // What its clang says of itself names a vendor's compiler (the version alone may not).
        let clang_version = std::process::Command::new(bin.join("clang"))
            .arg("--version")
            .output()
            .ok()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
        let release = release_of(&version, clang_version.as_deref())
            .map_err(|why| anyhow::anyhow!("{} refused: {why}", llvm_config.display()))?;
        let cmake_dir: std::path::PathBuf = query("--cmakedir")?.into();
        for compiler in ["clang", "flang"].map(|name| bin.join(name)) {
            if let Some(why) = linked_statically(&compiler, &cmake_dir) {
                bail!("{} refused: {why}", llvm_config.display());
            }
        }
        Ok(LlvmInstall {
            release,
            version,
            bin,
            lib: query("--libdir")?.into(),
            include: query("--includedir")?.into(),
            llvm_config,
        })
    }

    /// The program `name` of this LLVM (`clang`, `llvm-ar`, ...).
    pub fn tool(&self, name: &str) -> std::path::PathBuf {
        self.bin.join(name)
    }

    /// One line for what was built with it: `LLVM 22.1.8 (/opt/llvm/22)`.
    pub fn describe(&self) -> String {
        let prefix = self.bin.parent().unwrap_or(&self.bin);
        format!("LLVM {} ({})", self.version, prefix.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn major(version: &str, clang: Option<&str>) -> Result<&'static str, String> {
        release_of(version, clang).map(|l| l.major)
    }

    #[test]
    fn the_packaged_releases_are_taken_for_themselves() {
        assert_eq!(major("22.1.8", Some("Debian clang version 22.1.8 (1~deb12u1)")), Ok("22"));
        assert_eq!(major("19.1.7\n", Some("Debian clang version 19.1.7 (6)\nTarget: x86_64")), Ok("19"));
        assert_eq!(major("21.1.8", Some("clang version 21.1.8")), Ok("21"));
        assert_eq!(
            major("24.0.0", Some("Debian clang version 24.0.0 (++20261025103442+7e3c57157096-1~exp1)")),
            Ok("24")
        );
        // A build of LLVM's main branch is the newest record's when that record is the main branch.
        assert_eq!(
            major("24.0.0git", Some("clang version 24.0.0git (https://github.com/llvm/llvm-project)")),
            Ok("24")
        );
        assert_eq!(major("23.1.4", None), Ok("23"));
    }

    #[test]
    fn vendor_compilers_are_refused_by_name() {
        for (version, clang, vendor) in [
            (
                "19.0.0git",
                "AMD clang version 19.0.0git (https://github.com/RadeonOpenCompute/llvm-project roc-6.4.0 25133 c7fe45cf4b819c5991fe208aaa96edf142730f1d)",
                "ROCm",
            ),
            (
                "18.0.0git",
                "AMD clang version 18.0.0git (https://github.com/RadeonOpenCompute/llvm-project roc-6.2.0 24292 26466ce804ac523b398608f17388eb6d605a3f09)",
                "ROCm",
            ),
            (
                "20.0.0git",
                "AOMP_STANDALONE_20.0-1 clang version 20.0.0_AOMP_STANDALONE_20.0-1 (https://github.com/ROCm/llvm-project.git 8ab0ebfe1fdb5a7e1dca3d0a6b1e6e8e4dfc3c06)",
                "AOMP",
            ),
            ("17.0.1", "Cray clang version 17.0.1  (5ec9405551a8c8845cf14e81dc28bff7aa3935cb)", "Cray CCE"),
            ("19.0.0git", "Intel(R) oneAPI DPC++/C++ Compiler 2025.0.4 (2025.0.4.20241205)", "icx"),
            // A vendor's clang is refused even where its version number is a supported one.
            ("22.1.8", "AMD clang version 22.1.8 (https://github.com/ROCm/llvm-project roc-7.2.0)", "ROCm"),
        ] {
            let err = release_of(version, Some(clang)).unwrap_err();
            assert!(err.contains(vendor) && err.contains(clang.trim()) && err.contains(&Llvm::list()), "{err}");
        }
    }

    #[test]
    fn unknown_and_unreleased_versions_are_refused_by_version() {
        for version in ["20.1.8", "18.1.8", "25.0.0", "garbage", ""] {
            let err = release_of(version, Some("clang version 20.1.8")).unwrap_err();
            assert!(err.contains(&format!("LLVM {version}")) && err.contains(&Llvm::list()), "{err}");
        }
        // ROCm's llvm-config without its clang: the git suffix alone refuses a non-main-branch release.
        let err = release_of("19.0.0git", None).unwrap_err();
        assert!(err.contains("19.0.0git") && err.contains("unreleased"), "{err}");
        assert!(release_of("22.0.0git", Some("clang version 22.0.0git")).is_err());
    }

    /// A directory laid out as a static LLVM build is: a `bin/clang` that needs no `libLLVM`, and
    /// `LLVMConfig.cmake` saying so.
    #[test]
    fn a_statically_linked_clang_is_refused_and_a_shared_one_is_not() {
        let dir = std::env::temp_dir().join(format!("omptarget-indirect-static-llvm-{}", std::process::id()));
        let cmake = dir.join("lib/cmake/llvm");
        std::fs::create_dir_all(&cmake).unwrap();
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        // An ELF executable that needs only the C library, as a static clang needs no libLLVM.
        let clang = dir.join("bin/clang");
        std::fs::copy("/bin/true", &clang).unwrap();
        std::fs::write(cmake.join("LLVMConfig.cmake"), "set(LLVM_LINK_LLVM_DYLIB OFF)\n").unwrap();
        let why = linked_statically(&clang, &cmake).expect("refused");
        assert!(why.contains("bin/clang") && why.contains("LLVM_LINK_LLVM_DYLIB=ON"), "{why}");
        // A wrapper script is judged by LLVMConfig.cmake.
        std::fs::write(&clang, "#!/bin/sh\nexec /usr/lib/llvm/bin/clang \"$@\"\n").unwrap();
        assert!(linked_statically(&clang, &cmake).is_some());
        std::fs::write(cmake.join("LLVMConfig.cmake"), "set(LLVM_LINK_LLVM_DYLIB ON)\n").unwrap();
        assert_eq!(linked_statically(&clang, &cmake), None);
        std::fs::remove_dir_all(&dir).unwrap();
        // Debian's clang runs on libLLVM.
        for llvm in Llvm::all().filter(|l| l.root.is_none()) {
            let debian = Path::new("/usr/lib").join(format!("llvm-{}", llvm.major));
            assert_eq!(linked_statically(&debian.join("bin/clang"), &debian.join("lib/cmake/llvm")), None);
        }
    }

    /// A directory with a `bin/llvm-config` that answers `version` and its directories.
    fn fake_llvm(version: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir()
            .join(format!("omptarget-indirect-fake-llvm-{version}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let script = dir.join("bin/llvm-config");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ncase $1 in --version) echo {version};; --bindir) echo {d}/bin;; \
                 --libdir) echo {d}/lib;; --includedir) echo {d}/include;; \
                 --cmakedir) echo {d}/lib/cmake/llvm;; esac\n",
                d = dir.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    /// The release comes from `llvm-config`; an unsupported one, or none, is refused.
    #[test]
    fn the_release_is_read_from_llvm_config() {
        let dir = fake_llvm("22.1.8");
        for given in [dir.clone(), dir.join("bin"), dir.join("bin/llvm-config")] {
            let llvm = LlvmInstall::probe(&given).unwrap();
            assert_eq!((llvm.release, llvm.version.as_str()), (Llvm::major_version("22"), "22.1.8"));
            assert_eq!(llvm.tool("clang"), dir.join("bin/clang"));
            assert_eq!(llvm.include, dir.join("include"));
        }
        std::fs::remove_dir_all(dir).unwrap();

        // In the same test: a fake written while another test's thread forks can be held open for
        // writing by that child, and running it then fails with "text file busy".
        let dir = fake_llvm("20.1.8");
        let err = LlvmInstall::probe(&dir).unwrap_err().to_string();
        assert!(err.contains("LLVM 20.1.8") && err.contains(&Llvm::list()), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
        // A prefix laid out as a static build: refused before anything is built.
        let dir = fake_llvm("22.1.8");
        // An ELF executable that needs only the C library, as a static clang needs no libLLVM.
        std::fs::copy("/bin/true", dir.join("bin/clang")).unwrap();
        let err = LlvmInstall::probe(&dir).unwrap_err().to_string();
        assert!(err.contains("linked in statically") && err.contains("bin/clang"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
        let err = LlvmInstall::probe(Path::new("/nonexistent/llvm")).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/llvm") && err.contains("no bin/llvm-config"), "{err}");
    }
}
