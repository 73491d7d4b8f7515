//! `cargo xtask install --prefix DIR`, `uninstall --prefix DIR` and `dist`: the dist tree laid out
//! as an install prefix (relocatable: every path inside is relative to the file that holds it),
//! with the header, the clang configuration files, a CMake package, a pkg-config file and a
//! manifest; and the release archive of such a tree.
//!
//! ```text
//! lib/libomptarget-indirect.a                     the fat device library
//! lib/libomptarget-indirect-pass.so, ...-llvmNN.so  the pass plugins (clang 19; each later release)
//! lib/libomptarget-indirect-frontend-llvmNN.so    the frontend plugin of each release
//! lib/libomptarget-indirect-register.so           the registration library (stock libomptarget, LLVM 21 on)
//! lib/libomptarget-indirect-strict.so             strict mode
//! lib/omptarget-indirect/libomptarget.rtl.*.so    the libomptarget 16 plugins, alone in their directory
//! include/omptarget-indirect.h                    the C API
//! share/omptarget-indirect/clang-NN.cfg           clang --config= files, one per release
//! share/omptarget-indirect/flang-NN.cfg           flang --config= files, one per release whose flang
//!                                                 compiles the Fortran programs
//! include/omptarget-indirect/omptarget_indirect.f90  the Fortran module naming indirect procedures
//! include/omptarget-indirect/flang-NN/*.mod       its module file, as flang NN reads it
//! share/omptarget-indirect/install-manifest.txt   every installed file, for uninstall
//! lib/cmake/OmptargetIndirect/                    find_package(OmptargetIndirect)
//! lib/pkgconfig/omptarget-indirect.pc             pkg-config
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use crate::cmd;
use crate::dist::{Dist, PLUGINS};
use crate::llvm::Llvm;
use crate::requirements;
use omptarget_indirect_abi::VENDOR_COMPILERS;

/// The templates of `install/` and where each goes in the tree.
const TEMPLATES: [(&str, &str); 4] = [
    ("omptarget-indirect.h.in", "include/omptarget-indirect.h"),
    ("OmptargetIndirectConfig.cmake.in", "lib/cmake/OmptargetIndirect/OmptargetIndirectConfig.cmake"),
    (
        "OmptargetIndirectConfigVersion.cmake.in",
        "lib/cmake/OmptargetIndirect/OmptargetIndirectConfigVersion.cmake",
    ),
    ("omptarget-indirect.pc.in", "lib/pkgconfig/omptarget-indirect.pc"),
];

/// The manifest, relative to the prefix.
const MANIFEST: &str = "share/omptarget-indirect/install-manifest.txt";

/// The workspace version (`Cargo.toml`'s `[workspace.package] version`), as `(major, minor,
/// patch)` and text.
pub fn version(workspace: &Path) -> Result<(u32, u32, u32, String)> {
    let manifest = fs::read_to_string(workspace.join("Cargo.toml"))?;
    let text = manifest
        .lines()
        .skip_while(|l| l.trim() != "[workspace.package]")
        .find_map(|l| l.trim().strip_prefix("version = \"")?.strip_suffix('"').map(str::to_string))
        .context("no version in [workspace.package] of Cargo.toml")?;
    let parts: Vec<u32> = text.split('.').map(str::parse).collect::<std::result::Result<_, _>>()?;
    let [major, minor, patch] = parts[..] else { bail!("version {text} is not major.minor.patch") };
    Ok((major, minor, patch, text))
}

/// Fills a template of `install/` with the version.
fn template(workspace: &Path, name: &str) -> Result<String> {
    let (major, minor, patch, version) = version(workspace)?;
    let text = fs::read_to_string(workspace.join("install").join(name))
        .with_context(|| format!("install/{name} is missing"))?;
    Ok(text
        .replace("@VERSION@", &version)
        .replace("@MAJOR@", &major.to_string())
        .replace("@MINOR@", &minor.to_string())
        .replace("@PATCH@", &patch.to_string()))
}

/// The EasyBuild recipe of the project for `llvm` (`install/easybuild/omptarget-indirect.eb.in`
/// filled): its file name, as EasyBuild names recipes (`<name>-<version><versionsuffix>.eb`), and
/// its text. One per release is kept in `install/easybuild/`; a unit test keeps them equal to
/// what this writes.
pub fn easybuild_recipe(workspace: &Path, llvm: Llvm) -> Result<(String, String)> {
    let (_, _, _, version) = version(workspace)?;
    let text = template(workspace, "easybuild/omptarget-indirect.eb.in")?
        .replace("@LLVM_VERSION@", llvm.tested_version)
        .replace("@LLVM_MAJOR@", llvm.major)
        .replace("@RELEASES@", &Llvm::all().map(|l| l.major).collect::<Vec<_>>().join(", "));
    Ok((format!("omptarget-indirect-{version}-LLVM-{}.eb", llvm.tested_version), text))
}

/// Where installed files go: `$DESTDIR` (for packagers) in front of `prefix`, as make does.
pub fn staged(prefix: &Path) -> PathBuf {
    match std::env::var_os("DESTDIR").filter(|d| !d.is_empty()) {
        Some(destdir) => Path::new(&destdir).join(prefix.strip_prefix("/").unwrap_or(prefix)),
        None => prefix.to_path_buf(),
    }
}

/// Installs the built `dist` tree under `root` (the prefix, with any `DESTDIR` applied), over
/// an earlier install of the same tree; returns the installed files, relative to `root`.
pub fn install(workspace: &Path, dist: &Dist, root: &Path) -> Result<Vec<PathBuf>> {
    let copy = |from: PathBuf, to: &str| -> Result<(PathBuf, Vec<u8>)> {
        let bytes = fs::read(&from)
            .with_context(|| format!("{} is missing: run cargo xtask build", from.display()))?;
        Ok((PathBuf::from(to), bytes))
    };
    let parts = &dist.parts;
    let mut files: Vec<(PathBuf, Vec<u8>)> = vec![copy(dist.fat_lib(), "lib/libomptarget-indirect.a")?];
    for &llvm in &parts.releases {
        files.push(copy(dist.pass_plugin(llvm), &format!("lib/{}", llvm.pass_plugin_file))?);
        let frontend = parts.frontend.contains(&llvm);
        if frontend {
            files.push(copy(dist.frontend_plugin(llvm), &format!("lib/{}", llvm.frontend_plugin_file()))?);
        }
        files.push((
            PathBuf::from("share/omptarget-indirect").join(llvm.clang_config_file()),
            llvm.clang_config(frontend).into_bytes(),
        ));
    }
    if parts.libomptarget16_plugins {
        for (_, _, name) in PLUGINS {
            files.push(copy(dist.lib_dir().join(name), &format!("lib/omptarget-indirect/{name}"))?);
        }
    }
    if !parts.fortran.is_empty() {
        files.push(copy(
            workspace.join(crate::dist::FORTRAN_MODULE_SOURCE),
            "include/omptarget-indirect/omptarget_indirect.f90",
        )?);
    }
    for &fortran in &parts.fortran {
        files.push((
            PathBuf::from("share/omptarget-indirect").join(fortran.flang_config_file()),
            fortran.flang_config().into_bytes(),
        ));
        files.push(copy(
            dist.fortran_module_dir(fortran).join("omptarget_indirect.mod"),
            &format!("{}/omptarget_indirect.mod", fortran.fortran_module_dir()),
        )?);
    }
    files.push(copy(dist.strict_lib(), &format!("lib/{}", crate::dist::STRICT.2))?);
    if parts.register() {
        files.push(copy(dist.register_lib(), &format!("lib/{}", crate::dist::REGISTER.2))?);
    }
    for (name, to) in TEMPLATES {
        let text = filled_template(workspace, name, parts)?;
        files.push((PathBuf::from(to), text.into_bytes()));
    }
    let mut installed: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    installed.push(PathBuf::from(MANIFEST));
    for (relative, bytes) in &files {
        let dest = root.join(relative);
        fs::create_dir_all(dest.parent().context("no parent")?)?;
        // Replace, never write through: a running program may have the old file mapped.
        let fresh = dest.with_extension("install-new");
        fs::write(&fresh, bytes)?;
        if relative.extension().is_some_and(|e| e == "so") {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&fresh, fs::Permissions::from_mode(0o755))?;
        }
        fs::rename(&fresh, &dest).with_context(|| format!("cannot write {}", dest.display()))?;
    }
    let manifest: String = installed.iter().map(|p| format!("{}\n", p.display())).collect();
    fs::write(root.join(MANIFEST), manifest)?;
    Ok(installed)
}

/// What the pkg-config file gives, for the oldest release the tree holds: (clang's major, Cflags
/// after the include directory, Libs after the library directory).
fn pkg_config_flags(parts: &crate::dist::Parts) -> (&'static str, String, &'static str) {
    let llvm = parts.releases.first().copied().unwrap_or_else(Llvm::oldest);
    let mut cflags = String::new();
    if parts.frontend.contains(&llvm) {
        cflags = format!("-fplugin=${{libdir}}/{} ", llvm.frontend_plugin_file());
    }
    cflags.push_str(&format!("-fpass-plugin=${{libdir}}/{}", llvm.pass_plugin_file));
    (llvm.major, cflags, llvm.pkg_config_libs())
}

/// The template `name` of `install/` filled for a tree holding `parts`: the version, the
/// pkg-config flags, and what the CMake package says of each release (from the release records).
fn filled_template(workspace: &Path, name: &str, parts: &crate::dist::Parts) -> Result<String> {
    let (pc_clang, pc_cflags, pc_libs) = pkg_config_flags(parts);
    Ok(template(workspace, name)?
        .replace("@PC_CLANG@", pc_clang)
        .replace("@PC_CFLAGS@", &pc_cflags)
        .replace("@PC_LIBS@", pc_libs)
        .replace("@RELEASE_CASES@", &cmake_release_cases())
        .replace("@RELEASES@", &Llvm::all().map(|l| l.major).collect::<Vec<_>>().join(" or "))
        .replace(
            "@FORTRAN_MAJORS@",
            &Llvm::fortran_releases().map(|l| l.major).collect::<Vec<_>>().join(" or "),
        )
        .replace("@FORTRAN_CASES@", &cmake_fortran_cases())
        .replace("@VENDOR_MARKERS@", &cmake_vendor_markers()))
}

/// The vendors' compilers as a quoted CMake list of `marker=name` pairs: the text of the first
/// line of their `--version` that tells them, and what they are.
fn cmake_vendor_markers() -> String {
    let pairs: Vec<String> =
        VENDOR_COMPILERS.iter().map(|(marker, name)| format!("{marker}={name}")).collect();
    format!("\"{}\"", pairs.join(";"))
}

/// The CMake package's Fortran options, one case per release whose flang compiles the programs:
/// the pass plugin in both compiles and the directory of that flang's module file.
fn cmake_fortran_cases() -> String {
    let mut text = String::new();
    for (i, llvm) in Llvm::fortran_releases().enumerate() {
        text.push_str(&format!(
            "  {keyword}(_omptarget_indirect_fortran_major STREQUAL \"{major}\")\n    \
             set(_omptarget_indirect_fortran_options\n        \
             \"$<$<COMPILE_LANGUAGE:Fortran>:SHELL:-fpass-plugin=${{_omptarget_indirect_prefix}}/lib/{pass}>\"\n        \
             \"$<$<COMPILE_LANGUAGE:Fortran>:SHELL:-I${{_omptarget_indirect_prefix}}/{module_dir}>\")\n    \
             set(_omptarget_indirect_fortran Fortran)\n",
            keyword = if i == 0 { "if" } else { "elseif" },
            major = llvm.major,
            pass = llvm.pass_plugin_file,
            module_dir = llvm.fortran_module_dir(),
        ));
    }
    if !text.is_empty() {
        text.push_str("  endif()\n");
    }
    text
}

/// The CMake package's `if(major STREQUAL ...) ... elseif(...)` chain, one case per supported
/// release: its pass plugin, frontend plugin, libraries and link options (what its configuration
/// file links). Ends open, for the template's `else()`.
fn cmake_release_cases() -> String {
    let mut text = String::new();
    for (i, llvm) in Llvm::all().rev().enumerate() {
        let (libs, link_options) = if llvm.needs_register() {
            (
                "omptarget-indirect;omptarget-indirect-register",
                "LINKER:-rpath,${_omptarget_indirect_prefix}/lib",
            )
        } else {
            ("omptarget-indirect", "")
        };
        text.push_str(&format!(
            "{keyword}(_omptarget_indirect_major STREQUAL \"{major}\")\n  \
             set(_omptarget_indirect_pass \"{pass}\")\n  \
             set(_omptarget_indirect_frontend \"{frontend}\")\n  \
             set(_omptarget_indirect_libs \"{libs}\")\n  \
             set(_omptarget_indirect_link_options \"{link_options}\")\n",
            keyword = if i == 0 { "if" } else { "elseif" },
            major = llvm.major,
            pass = llvm.pass_plugin_file,
            frontend = llvm.frontend_plugin_file(),
        ));
    }
    text
}

/// Removes exactly what the manifest under `root` lists, then the directories that emptied
/// (the prefix itself included).
pub fn uninstall(root: &Path) -> Result<usize> {
    let manifest = root.join(MANIFEST);
    let text = fs::read_to_string(&manifest).with_context(|| {
        format!("{} is missing: nothing of omptarget-indirect is installed there", manifest.display())
    })?;
    let mut removed = 0;
    let mut dirs = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let relative = Path::new(line);
        ensure!(
            relative.is_relative() && !relative.components().any(|c| c == std::path::Component::ParentDir),
            "{}: unexpected entry {line}",
            manifest.display()
        );
        let path = root.join(relative);
        match fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", path.display())),
        }
        dirs.extend(relative.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty()).map(|a| root.join(a)));
    }
    dirs.sort();
    dirs.dedup();
    // Deepest first; a directory that still holds something else stays.
    for dir in dirs.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
    // The prefix too, if the install was all it held.
    let _ = fs::remove_dir(root);
    Ok(removed)
}

/// `cargo xtask dist`: `target/release/omptarget-indirect-<version>-x86_64-linux-gnu.tar.gz`, an
/// install tree with the README, the LICENSE and a SHA256SUMS file of every file in it.
pub fn archive(workspace: &Path, dist: &Dist) -> Result<PathBuf> {
    archive_in(workspace, dist, &workspace.join("target/release-archive"))
}

/// [`archive`], made in `out` (a check that runs beside another makes its own).
pub fn archive_in(workspace: &Path, dist: &Dist, out: &Path) -> Result<PathBuf> {
    let (_, _, _, version) = version(workspace)?;
    let name = format!("omptarget-indirect-{version}-x86_64-linux-gnu");
    let tree = out.join(&name);
    if tree.exists() {
        fs::remove_dir_all(&tree)?;
    }
    let mut files = install(workspace, dist, &tree)?;
    for doc in ["README.md", "LICENSE"] {
        fs::copy(workspace.join(doc), tree.join(doc))?;
        files.push(PathBuf::from(doc));
    }
    files.sort();
    let mut sums =
        cmd::stdout(Command::new(requirements::program("sha256sum")).current_dir(&tree).args(&files))?;
    if !sums.ends_with('\n') {
        sums.push('\n');
    }
    fs::write(tree.join("SHA256SUMS"), sums)?;
    let archive = out.join(format!("{name}.tar.gz"));
    tar_gz(out, &name, &archive)?;
    Ok(archive)
}

/// Packs the directory `name` of `parent` into the gzipped tarball `archive`, reproducibly: sorted
/// names, owner and group 0.
pub fn tar_gz(parent: &Path, name: &str, archive: &Path) -> Result<()> {
    cmd::output(
        Command::new(requirements::program("tar"))
            .current_dir(parent)
            .args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-czf"])
            .arg(archive)
            .arg(name),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destdir_goes_in_front_of_the_prefix() {
        // The only test of this crate that touches DESTDIR.
        std::env::set_var("DESTDIR", "/tmp/stage");
        assert_eq!(staged(Path::new("/opt/oi")), Path::new("/tmp/stage/opt/oi"));
        std::env::set_var("DESTDIR", "");
        assert_eq!(staged(Path::new("/opt/oi")), Path::new("/opt/oi"));
        std::env::remove_var("DESTDIR");
        assert_eq!(staged(Path::new("/opt/oi")), Path::new("/opt/oi"));
    }

    #[test]
    fn the_pkg_config_flags_follow_the_installed_parts() {
        let oldest = Llvm::oldest();
        let (major, cflags, libs) = pkg_config_flags(&crate::dist::Parts::all());
        assert_eq!(major, oldest.major);
        assert!(cflags.contains(&oldest.frontend_plugin_file()) && cflags.contains("-pass.so"), "{cflags}");
        assert_eq!(libs, "-lomptarget-indirect");
        let stock = Llvm::reference();
        let only_stock = crate::dist::Parts {
            releases: vec![stock],
            frontend: vec![],
            fortran: vec![],
            libomptarget16_plugins: false,
        };
        let (major, cflags, libs) = pkg_config_flags(&only_stock);
        assert_eq!(major, stock.major);
        assert!(!cflags.contains("-fplugin") && cflags.contains(stock.pass_plugin_file), "{cflags}");
        assert!(libs.contains("-lomptarget-indirect-register"), "{libs}");
    }

    /// `install/easybuild/` holds exactly the recipes [`easybuild_recipe`] writes, one per
    /// release; `UPDATE_EASYBUILD=1` writes them (after a change to the template or the records).
    #[test]
    fn the_easybuild_recipes_are_the_templates_for_each_release() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(1).unwrap();
        let dir = workspace.join("install/easybuild");
        let update = std::env::var_os("UPDATE_EASYBUILD").is_some();
        let mut expected = Vec::new();
        for llvm in Llvm::all() {
            let (name, text) = easybuild_recipe(workspace, llvm).unwrap();
            let left: Vec<&str> =
                text.split('@').skip(1).step_by(2).filter(|w| !w.contains(char::is_whitespace)).collect();
            assert!(left.is_empty(), "{name}: unfilled {left:?}");
            if update {
                fs::write(dir.join(&name), &text).unwrap();
            }
            let kept = fs::read_to_string(dir.join(&name)).unwrap_or_default();
            assert!(kept == text, "install/easybuild/{name} is not the template's: run UPDATE_EASYBUILD=1 cargo test -p packaging easybuild");
            expected.push(name);
        }
        let mut present: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".eb"))
            .collect();
        present.sort();
        expected.sort();
        assert_eq!(present, expected, "recipes in install/easybuild/ that no release writes");
    }

    #[test]
    fn every_placeholder_of_the_install_templates_is_filled() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(1).unwrap();
        for name in TEMPLATES.map(|(name, _)| name) {
            let text = filled_template(workspace, name, &crate::dist::Parts::all()).unwrap();
            let left: Vec<&str> =
                text.split('@').skip(1).step_by(2).filter(|w| !w.contains(char::is_whitespace)).collect();
            assert!(left.is_empty(), "{name}: unfilled {left:?}");
        }
        let cmake =
            filled_template(workspace, "OmptargetIndirectConfig.cmake.in", &crate::dist::Parts::all())
                .unwrap();
        for llvm in Llvm::all() {
            assert!(
                cmake.contains(&format!("_omptarget_indirect_major STREQUAL \"{}\")", llvm.major)),
                "{cmake}"
            );
            assert!(cmake.contains(llvm.pass_plugin_file));
        }
    }

    #[test]
    fn the_workspace_version_is_read() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(1).unwrap();
        let (major, minor, patch, text) = version(workspace).unwrap();
        assert_eq!(format!("{major}.{minor}.{patch}"), text);
        assert_eq!(text, env!("CARGO_PKG_VERSION"));
    }
}
