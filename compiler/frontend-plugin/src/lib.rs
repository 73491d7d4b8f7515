//! The clang frontend plugin (`omptarget_indirect_frontend.cpp`, C++ against clang's own API) and
//! how it is built: one shared library per clang release, compiled with that release's `clang++`
//! against its headers and `libclang-cpp`. `cargo xtask build` builds it into the dist tree with
//! [`compile_command`]; this crate's tests build it the same way and run small sources through
//! it (remarks and the device IR's vtables), in seconds once built.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The plugin's one source file.
pub fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("omptarget_indirect_frontend.cpp")
}

/// Where a clang release's development files are (`llvm-config --bindir/--includedir`).
#[derive(Clone, Debug)]
pub struct ClangRelease {
    /// Its `clang++`: the plugin is compiled by the clang that will load it.
    pub clangxx: PathBuf,
    /// Its include directory (clang's and LLVM's headers).
    pub include: PathBuf,
}

/// The definition of `OMPTARGET_INDIRECT_RUNTIME_PREFIXES` the C++ source reads: the OpenMP
/// runtime's name prefixes ([`omptarget_indirect_abi::OPENMP_RUNTIME_PREFIXES`]) as a list of
/// string literals, so that the pass plugin and this plugin hold one list.
fn runtime_prefixes_define() -> String {
    let literals: Vec<String> =
        omptarget_indirect_abi::OPENMP_RUNTIME_PREFIXES.iter().map(|p| format!("\"{p}\"")).collect();
    format!("-DOMPTARGET_INDIRECT_RUNTIME_PREFIXES={}", literals.join(","))
}

/// The definition of `OMPTARGET_INDIRECT_VENDOR_MARKERS`: what vendor compilers print in their
/// version ([`omptarget_indirect_abi::VENDOR_COMPILERS`]), as string literals.
fn vendor_markers_define() -> String {
    let literals: Vec<String> =
        omptarget_indirect_abi::VENDOR_COMPILERS.iter().map(|(text, _)| format!("\"{text}\"")).collect();
    format!("-DOMPTARGET_INDIRECT_VENDOR_MARKERS={}", literals.join(","))
}

/// The definition of `OMPTARGET_INDIRECT_CLANG_RELEASES`: the major versions of the releases the
/// project has a record of ([`packaging::llvm::RELEASES`]), each checked for the Sema internals
/// the plugin writes (`docs/llvm.md`, "Adding an LLVM release"). The source refuses another clang.
fn clang_releases_define() -> String {
    let majors: Vec<&str> = packaging::llvm::RELEASES.iter().map(|r| r.major).collect();
    format!("-DOMPTARGET_INDIRECT_CLANG_RELEASES={}", majors.join(","))
}

/// The command that compiles the plugin for `release` into `output` (a shared library): C++17,
/// no RTTI and no exceptions as clang itself is built, warnings as errors, clang's headers as
/// system headers (their warnings are not ours). It links neither `libclang-cpp` nor `libLLVM`,
/// as LLVM's own example plugins on Linux do not: clang's symbols come from the clang that loads
/// it (from the shared libraries a Debian clang runs on, or from a statically linked clang built
/// with plugin support, which exports them). Linked against the shared libraries, it would bring
/// a second copy of clang and LLVM into a static clang, whose option registration aborts.
pub fn compile_command(release: &ClangRelease, output: &Path) -> Command {
    let mut command = Command::new(&release.clangxx);
    command
        .args(["-shared", "-fPIC", "-std=c++17", "-fno-rtti", "-fno-exceptions", "-O2"])
        .args(["-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-Wno-deprecated-declarations"])
        .arg("-isystem")
        .arg(&release.include)
        .arg(runtime_prefixes_define())
        .arg(vendor_markers_define())
        .arg(clang_releases_define())
        .arg(source())
        .arg("-o")
        .arg(output);
    command
}
