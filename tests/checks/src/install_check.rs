//! The install check of `scripts/test.sh`: an install prefix built from the dist tree, moved,
//! consumed by CMake, pkg-config, clang and flang, and uninstalled.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::llvm::Llvm;
use crate::requirements;
use packaging::install::{archive, install, uninstall, version};

/// The install test of `scripts/test.sh`: installs into a fresh prefix (twice: the second over
/// the first), moves the prefix elsewhere, and builds `tests/install/consumer.c` outside the
/// source tree three ways against it (CMake `find_package`, `pkg-config`, `clang-19 --config=`),
/// plus once with clang 22 and once from the unpacked release archive; every build runs and must
/// call the device copies. Then uninstalls and checks that nothing is left.
pub fn check(workspace: &Path, tools: &crate::tools::Tools, dist: &Dist) -> Result<String> {
    let base = std::env::temp_dir().join(format!("omptarget-indirect-install-{}", std::process::id()));
    if base.exists() {
        fs::remove_dir_all(&base)?;
    }
    let result = check_in(workspace, tools, dist, &base);
    let _ = fs::remove_dir_all(&base);
    result
}

fn check_in(workspace: &Path, tools: &crate::tools::Tools, dist: &Dist, base: &Path) -> Result<String> {
    let first = base.join("first/prefix");
    let installed = install(workspace, dist, &first)?;
    let again = install(workspace, dist, &first)?;
    ensure!(installed == again, "a second install over the first installed other files");
    let prefix = base.join("moved/elsewhere/prefix");
    fs::create_dir_all(prefix.parent().context("no parent")?)?;
    fs::rename(&first, &prefix)?;
    let project = base.join("project");
    fs::create_dir_all(&project)?;
    for file in ["consumer.c", "CMakeLists.txt"] {
        fs::copy(workspace.join("tests/install").join(file), project.join(file))?;
    }
    let header_checks = check_header(workspace, tools, &prefix.join("include"), &project)?;
    let plugins_runtime = &tools.plugins_runtime_lib;
    let plugins = prefix.join("lib/omptarget-indirect");
    let offload = ["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-Wall", "-Werror"];
    let mut ways = Vec::new();

    // CMake: find_package + target_link_libraries; the plugin directory from the target's property.
    let build = cmake_build(
        &project,
        &[
            format!("-DCMAKE_C_COMPILER={}", tools.clang.display()),
            format!("-DCMAKE_PREFIX_PATH={}", prefix.display()),
            format!("-DLIBOMPTARGET_DIR={}", plugins_runtime.display()),
        ],
    )?;
    let from_cmake = PathBuf::from(fs::read_to_string(build.join("plugin-dir.txt"))?.trim());
    ensure!(
        from_cmake.canonicalize()? == plugins.canonicalize()?,
        "the CMake target names plugin directory {}, expected {}",
        from_cmake.display(),
        plugins.display()
    );
    ways.push(run_consumer(
        &build.join("consumer"),
        Some((&from_cmake, plugins_runtime)),
        "CMake find_package",
    )?);

    // pkg-config.
    let pkg = |what: &str| -> Result<Vec<String>> {
        let out = cmd::stdout(
            Command::new(requirements::program("pkg-config"))
                .arg(what)
                .arg("omptarget-indirect")
                .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        )?;
        Ok(out.split_whitespace().map(str::to_string).collect())
    };
    let exe = project.join("consumer-pkg-config");
    cmd::output(
        Command::new(&tools.clang)
            .args(offload)
            .args(pkg("--cflags")?)
            .arg(project.join("consumer.c"))
            .arg(format!("-L{}", plugins_runtime.display()))
            .args(pkg("--libs")?)
            .arg("-o")
            .arg(&exe),
    )?;
    ways.push(run_consumer(&exe, Some((&plugins, plugins_runtime)), "pkg-config")?);

    // Each release's clang with its configuration file (which also links, LLVM 20+), where its
    // runtime gives the x86_64 device a table.
    for llvm in Llvm::all() {
        let what = format!("clang-{} --config", llvm.major);
        ways.push(build_with_config(tools, &prefix, &project, llvm, &what)?);
    }
    ways.push(mixed_compilers_consumer(workspace, tools, &prefix, base)?);
    ways.push(vendor_compiler_refused(workspace, tools, &prefix, base)?);
    ways.extend(fortran_consumers(workspace, tools, &prefix, base)?);

    // The release archive, unpacked on a clean path.
    let archive = archive(workspace, dist)?;
    let unpacked = base.join("unpacked");
    fs::create_dir_all(&unpacked)?;
    cmd::output(
        Command::new(requirements::program("tar")).arg("-xzf").arg(&archive).arg("-C").arg(&unpacked),
    )?;
    let tree = unpacked.join(
        archive
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".tar.gz"))
            .context("archive name")?,
    );
    cmd::output(
        Command::new(requirements::program("sha256sum"))
            .arg("--quiet")
            .arg("-c")
            .arg("SHA256SUMS")
            .current_dir(&tree),
    )?;
    ways.push(build_with_config(tools, &tree, &project, Llvm::oldest(), "the unpacked release archive")?);

    let removed = uninstall(&prefix)?;
    ensure!(!prefix.exists(), "{} still exists after uninstall", prefix.display());
    ensure!(removed == installed.len(), "uninstall removed {removed} files of {}", installed.len());
    Ok(format!(
        "{} files installed twice, moved, used by {}; the header compiles warning-free in {header_checks} \
         configurations; the archive's SHA256SUMS verify; uninstall removed all {removed}",
        installed.len(),
        ways.join(", ")
    ))
}

/// The installed header compiles with `-Wall -Wextra -pedantic -Werror` as C and C++, with gcc
/// and clang, with and without `-fopenmp` (clang), and its version macros match the workspace's.
fn check_header(workspace: &Path, tools: &crate::tools::Tools, include: &Path, dir: &Path) -> Result<usize> {
    let (major, minor, patch, version) = version(workspace)?;
    let source = format!(
        "#include <omptarget-indirect.h>\n\
         #if OMPTARGET_INDIRECT_VERSION_MAJOR != {major} || OMPTARGET_INDIRECT_VERSION_MINOR != {minor} || \
         OMPTARGET_INDIRECT_VERSION_PATCH != {patch}\n#error version macros\n#endif\n\
         static const char *version = OMPTARGET_INDIRECT_VERSION;\n\
         int main(void) {{ __omp_offloading_fptr_map_ty e = {{0, 0}}; \
         return (int)e.host_ptr + (version[0] != '{first}'); }}\n",
        first = version.chars().next().unwrap_or('0'),
    );
    let mut checked = 0;
    for (file, compilers) in [
        ("header.c", vec![requirements::program("cc"), tools.clang.clone()]),
        ("header.cpp", vec![requirements::program("c++"), tools.clangxx.clone()]),
    ] {
        let path = dir.join(file);
        fs::write(&path, &source)?;
        for compiler in compilers {
            let clang = compiler.to_string_lossy().contains("clang");
            let openmp: &[&[&str]] = if clang { &[&[], &["-fopenmp"]] } else { &[&[]] };
            for extra in openmp {
                cmd::output(
                    Command::new(&compiler)
                        .args(["-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only"])
                        .args(*extra)
                        .arg(format!("-I{}", include.display()))
                        .arg(&path),
                )?;
                checked += 1;
            }
        }
    }
    Ok(checked)
}

/// Builds the consumer with `clang-NN --config=<tree>/share/omptarget-indirect/clang-NN.cfg` and
/// runs it (clang 19: through LLVM 16's libomptarget and the tree's plugins; clang 22: through
/// its own libomptarget, with the configuration file also linking the device library).
fn build_with_config(
    tools: &crate::tools::Tools,
    tree: &Path,
    project: &Path,
    llvm: Llvm,
    what: &str,
) -> Result<String> {
    let exe = project.join(format!("consumer-{}", what.replace([' ', '-'], "_")));
    let config = tree.join("share/omptarget-indirect").join(llvm.clang_config_file());
    let release = tools.of(llvm);
    let mut c = Command::new(&release.clang);
    c.arg(format!("--config={}", config.display()))
        .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-Wall", "-Werror"])
        .arg(format!("-I{}", tree.join("include").display()));
    let plugins = tree.join("lib/omptarget-indirect");
    let runtime = if llvm.runs_project_plugins() {
        c.arg(project.join("consumer.c"))
            .arg(format!("-L{}", tools.plugins_runtime_lib.display()))
            .arg(format!("-L{}", tree.join("lib").display()))
            .arg("-lomptarget-indirect");
        Some((plugins.as_path(), tools.plugins_runtime_lib.as_path()))
    } else {
        if let Some(openmp) = &release.openmp {
            c.arg("-isystem").arg(openmp.join("include")).arg(format!("-L{}", openmp.join("lib").display()));
        }
        c.arg(project.join("consumer.c"));
        None
    };
    cmd::output(c.arg("-o").arg(&exe))?;
    run_consumer_through(release.run_command(&exe), runtime, what)
}

/// `tests/install/consumer.c` as C++ in a CMake project whose C compiler is gcc and whose C++
/// compiler is the clang++ of the oldest of Debian's own releases with a stock libomptarget
/// (`tests/install/mixed`): the package configures C++ alone, gcc compiles the project's C file
/// without clang's options, and the consumer runs the device copies.
fn mixed_compilers_consumer(
    workspace: &Path,
    tools: &crate::tools::Tools,
    prefix: &Path,
    base: &Path,
) -> Result<String> {
    let project = base.join("mixed-project");
    fs::create_dir_all(&project)?;
    fs::copy(workspace.join("tests/install/consumer.c"), project.join("consumer.cpp"))?;
    for file in ["CMakeLists.txt", "host_only.c"] {
        fs::copy(workspace.join("tests/install/mixed").join(file), project.join(file))?;
    }
    let llvm = oldest_debian_stock_release()?;
    let release = tools.of(llvm);
    let mut defines = vec![
        format!("-DCMAKE_C_COMPILER={}", requirements::program("gcc").display()),
        format!("-DCMAKE_CXX_COMPILER={}", release.clangxx.display()),
        format!("-DCMAKE_PREFIX_PATH={}", prefix.display()),
    ];
    if let Some(openmp) = &release.openmp {
        defines.push(format!("-DOPENMP_DIR={}", openmp.display()));
    }
    let build = cmake_build(&project, &defines)?;
    let languages = fs::read_to_string(build.join("languages.txt"))?;
    ensure!(
        languages.trim() == "CXX",
        "with gcc and clang++-{}, the package configured `{languages}`",
        llvm.major
    );
    let what = format!("CMake find_package (CC=gcc, CXX=clang++-{})", llvm.major);
    run_consumer_through(release.run_command(&build.join("consumer")), None, &what)
}

/// The oldest of Debian's own releases (no root of its own) that runs on its stock libomptarget:
/// the clang++ the CMake projects of mixed and vendor compilers build with.
fn oldest_debian_stock_release() -> Result<Llvm> {
    Llvm::all()
        .find(|l| l.root.is_none() && l.needs_register())
        .context("no release of Debian's own runs on its stock libomptarget")
}

/// A CMake project whose C++ compiler is ROCm's clang of a supported version
/// (`tests/install/vendor`): a script that prints ROCm's `--version` line and hands everything
/// else to Debian's clang++ of that version, so that CMake identifies it as that Clang. The
/// package must not be found, and say it found ROCm's LLVM with the line it printed.
fn vendor_compiler_refused(
    workspace: &Path,
    tools: &crate::tools::Tools,
    prefix: &Path,
    base: &Path,
) -> Result<String> {
    let project = base.join("vendor-project");
    fs::create_dir_all(&project)?;
    fs::copy(workspace.join("tests/install/vendor/CMakeLists.txt"), project.join("CMakeLists.txt"))?;
    let llvm = oldest_debian_stock_release()?;
    let clangxx = &tools.of(llvm).clangxx;
    let line = format!(
        "AMD clang version {}.1.8 (https://github.com/ROCm/llvm-project roc-7.2.0 25425 abcdef0)",
        llvm.major
    );
    let amdclang = project.join("amdclang++");
    fs::write(
        &amdclang,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{line}'; exit 0; fi\nexec {} \"$@\"\n",
            clangxx.display()
        ),
    )?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&amdclang, fs::Permissions::from_mode(0o755))?;
    let build = project.join("build");
    cmd::output(
        Command::new(requirements::program("cmake"))
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_CXX_COMPILER={}", amdclang.display()))
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())),
    )?;
    let found = fs::read_to_string(build.join("found.txt"))?;
    let (verdict, message) = found.split_once('\n').unwrap_or((&found, ""));
    ensure!(
        verdict == "not found" && message.contains("ROCm's LLVM") && message.contains(&line),
        "with ROCm's clang++ (`{line}`), the package was {verdict}: {message}"
    );
    Ok(format!("CMake find_package refuses ROCm's clang++ {}", llvm.major))
}

/// `examples/procedure_pointers.F90` (the README's Fortran example), built with flang 22 against
/// the prefix through CMake `find_package` (`tests/install/fortran/CMakeLists.txt`) and through
/// `flang-22 --config=`, run through the stock libomptarget 22.
fn fortran_consumers(
    workspace: &Path,
    tools: &crate::tools::Tools,
    prefix: &Path,
    base: &Path,
) -> Result<Vec<String>> {
    let project = base.join("fortran-project");
    fs::create_dir_all(&project)?;
    let source = workspace.join("examples/procedure_pointers.F90");
    fs::copy(&source, project.join("procedure_pointers.F90"))?;
    fs::copy(workspace.join("tests/install/fortran/CMakeLists.txt"), project.join("CMakeLists.txt"))?;
    // The oldest of Debian's own releases whose flang compiles the programs (CMake runs it
    // directly, not through a root's `enter`).
    let fortran = Llvm::fortran_releases()
        .find(|llvm| llvm.root.is_none())
        .context("no release of Debian's own has a flang that compiles the programs")?;
    let release = tools.of(fortran);
    let flang = release.flang.as_deref().context("flang is not located")?;
    let libomp = release.openmp.as_ref().context("no omp.h of the release with flang")?.join("lib");
    let build = cmake_build(
        &project,
        &[
            format!("-DCMAKE_Fortran_COMPILER={}", flang.display()),
            format!("-DCMAKE_PREFIX_PATH={}", prefix.display()),
            format!("-DLIBOMP_DIR={}", libomp.display()),
        ],
    )?;
    let languages = fs::read_to_string(build.join("languages.txt"))?;
    ensure!(
        languages.trim() == "Fortran",
        "with flang-{} alone, the package configured `{languages}`",
        fortran.major
    );
    let mut ways = vec![run_consumer(&build.join("consumer"), None, "CMake find_package (flang alone)")?];
    let exe = project.join("consumer-config");
    cmd::output(
        Command::new(flang)
            .arg(format!(
                "--config={}",
                prefix.join("share/omptarget-indirect").join(fortran.flang_config_file()).display()
            ))
            .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"])
            .arg(project.join("procedure_pointers.F90"))
            .arg(format!("-L{}", libomp.display()))
            .arg("-o")
            .arg(&exe)
            .current_dir(&project),
    )?;
    ways.push(run_consumer(&exe, None, &format!("flang-{} --config", fortran.major))?);
    Ok(ways)
}

/// Configures the CMake project in `project` with `defines` and builds it in `project/build`,
/// which it returns.
fn cmake_build(project: &Path, defines: &[String]) -> Result<PathBuf> {
    let build = project.join("build");
    let cmake = requirements::program("cmake");
    cmd::output(Command::new(&cmake).arg("-S").arg(project).arg("-B").arg(&build).args(defines))?;
    cmd::output(Command::new(&cmake).arg("--build").arg(&build))?;
    Ok(build)
}

/// Runs a consumer build (with `LD_LIBRARY_PATH` = plugin directory, then libomptarget 16's, where
/// given) and requires its "ok".
fn run_consumer(exe: &Path, library_path: Option<(&Path, &Path)>, what: &str) -> Result<String> {
    run_consumer_through(Command::new(exe), library_path, what)
}

/// [`run_consumer`] of a consumer started by `command` (through its release's root, say).
fn run_consumer_through(mut c: Command, library_path: Option<(&Path, &Path)>, what: &str) -> Result<String> {
    c.env_remove("LD_LIBRARY_PATH").env_remove("LIBOMPTARGET_INFO").env("OMP_TARGET_OFFLOAD", "MANDATORY");
    if let Some((plugins, runtime)) = library_path {
        c.env("LD_LIBRARY_PATH", format!("{}:{}", plugins.display(), runtime.display()));
    }
    let out = c.output().with_context(|| format!("cannot run the consumer built with {what}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success() && text.contains(": ok"),
        "the consumer built with {what} failed ({}):\n{text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(what.to_string())
}
