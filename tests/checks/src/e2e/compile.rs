//! Compiling and linking an end-to-end program with a toolchain, for a target, as a [`Build`]
//! says, rebuilt only when an input changed; and taking a device image out of an executable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pass plugin's switch of polymorphic map sizes (its `fortran_maps::SWITCH`), read in the
/// compiler's environment.
pub const POLYMORPHIC_MAPS_SWITCH: &str = "OMPTARGET_INDIRECT_POLYMORPHIC_MAPS";
/// The pass plugin's switch of its binding copies (`compiler/pass-plugin/src/binding_copies.rs`).
pub const BINDING_COPIES_SWITCH: &str = "OMPTARGET_INDIRECT_BINDING_COPIES";

use anyhow::{ensure, Result};

use super::programs::{Build, Program, Unit};
use crate::cmd;
use crate::offload::OffloadTarget;
use crate::toolchain::{is_fortran, module_dir_args, Toolchain, NVPTX_DEVICE_RTL_FLAG};

/// Builds `program` at `-O2` for `target` with `toolchain` and returns the executable.
pub fn build(
    workspace: &Path,
    toolchain: &Toolchain,
    target: &OffloadTarget,
    program: &Program,
) -> Result<PathBuf> {
    build_as(workspace, toolchain, target, program, Build::O2)
}

/// Builds `program` as `how` says for `target` with `toolchain` and returns the executable.
pub fn build_as(
    workspace: &Path,
    toolchain: &Toolchain,
    target: &OffloadTarget,
    program: &Program,
    how: Build,
) -> Result<PathBuf> {
    let out = toolchain.e2e_dir(workspace, target).join(program.name).join(how.dir());
    let exe = out.join(program.name);
    // Rebuild only when an input changed (ptxas and the GPU links take most of the suite's time).
    if newer_than_all(&exe, &inputs_of(workspace, toolchain, program)) {
        return Ok(exe);
    }
    std::fs::create_dir_all(&out)?;
    let build = ProgramBuild { toolchain, target, program, how, sources: workspace.join("tests/e2e"), out };
    build.link(&exe)?;
    if program.stripped {
        let mut strip = Command::new(&toolchain.tools().llvm_strip);
        strip.arg("--strip-all").arg(&exe);
        strip.args(shared_library_of(program, &exe));
        cmd::output(&mut strip)?;
    }
    check_needs(&exe, toolchain.libomptarget_soname())?;
    Ok(exe)
}

/// What a build of `program` reads: its sources, the headers the programs share, the device
/// library and libomptarget, and for a program that needs the project's plugins their files.
fn inputs_of(workspace: &Path, toolchain: &Toolchain, program: &Program) -> Vec<PathBuf> {
    let sources = workspace.join("tests/e2e");
    let mut inputs: Vec<PathBuf> = program
        .units
        .iter()
        .chain(program.library)
        .chain(program.shared_library)
        .map(|u| sources.join(u.source))
        .collect();
    inputs.extend(
        [
            "check.h",
            "indirect_check.h",
            "device_copy.h",
            "library_objects.h",
            "host_scene.h",
            "class_library.h",
            "fortran_checks.inc",
            "fortran_counters.inc",
            "beside_executable.h",
            "split.h",
            "arena.h",
            "plugin_base.h",
        ]
        .map(|h| sources.join(h)),
    );
    inputs.extend([toolchain.dist().fat_lib(), toolchain.libomptarget()]);
    if program.unmodified {
        inputs.extend([toolchain.pass_plugin(), toolchain.dist().clang_config(toolchain.llvm)]);
        inputs.push(toolchain.dist().frontend_plugin(toolchain.llvm));
        if program.is_fortran() {
            inputs.push(toolchain.dist().flang_config(toolchain.fortran()));
        }
    }
    inputs
}

/// One build of a program: its units compiled into `out`, then linked.
struct ProgramBuild<'a> {
    toolchain: &'a Toolchain<'a>,
    target: &'a OffloadTarget,
    program: &'a Program,
    how: Build,
    /// `tests/e2e`.
    sources: PathBuf,
    out: PathBuf,
}

impl ProgramBuild<'_> {
    /// Whether the build loads the project's plugins through the configuration file.
    fn with_plugin(&self) -> bool {
        self.program.unmodified && !matches!(self.how, Build::WithoutPassPlugin | Build::Stock)
    }

    /// Each unit's flags: its language's offload flags and configuration file, and what `how`
    /// adds or takes away.
    fn flags_for(&self, source: &str) -> Vec<OsString> {
        let (toolchain, how) = (self.toolchain, self.how);
        let mut flags: Vec<OsString> = toolchain.offload_args_for(self.target, source);
        if how == Build::OffloadLto {
            // Device LTO links the DeviceRTL at the link (libompdevice.a), not per compile: clang
            // 22 warns that the bitcode path is unused.
            flags.retain(|f| !f.to_string_lossy().starts_with(NVPTX_DEVICE_RTL_FLAG));
        }
        flags.extend(how.flags().iter().map(OsString::from));
        if self.target.is_gpu() {
            flags.extend(self.program.gpu_flags.iter().map(OsString::from));
        }
        if how == Build::Stock {
            // Not even the project's Fortran module directory.
            flags.retain(|f| !f.to_string_lossy().starts_with("-I"));
        }
        if how == Build::WithoutNaming {
            flags.extend(self.program.without_naming.iter().map(OsString::from));
        }
        if how == Build::WithoutFrontendPlugin {
            flags.extend(toolchain.pass_plugin_only_args());
        } else if how == Build::WithoutHostPass {
            flags.extend(toolchain.device_only_pass_plugin_args());
        } else if self.with_plugin() {
            flags.extend(toolchain.pass_plugin_args_for(source));
        }
        flags
    }

    /// Compiles `unit` into an object of `out`; position-independent for a shared library's
    /// units only (the GPU builds take no -fPIC).
    fn compile(&self, unit: &Unit, pic: bool) -> Result<PathBuf> {
        let object = self.out.join(format!("{}.o", unit.source));
        let mut compiler = Command::new(self.toolchain.compiler(unit.source));
        if let (true, Some(path)) = (is_fortran(unit.source), self.toolchain.fortran_path(self.target)) {
            compiler.env("PATH", path);
        }
        if self.how == Build::WithoutPolymorphicMaps {
            compiler.env(POLYMORPHIC_MAPS_SWITCH, "0");
        }
        if self.how == Build::WithoutBindingCopies {
            compiler.env(BINDING_COPIES_SWITCH, "0");
        }
        // A plain unit (no OpenMP) is compiled as a plain file, without the offload flags.
        let flags = if unit.flags.contains(&"-fno-openmp") {
            vec!["-O2".into()]
        } else {
            self.flags_for(unit.source)
        };
        cmd::output(
            compiler
                .args(flags)
                .args(module_dir_args(unit.source, &self.out))
                .args(["-Wall", "-Werror", "-c"])
                .args(pic.then_some("-fPIC"))
                .args(unit.flags)
                .arg(self.sources.join(unit.source))
                .arg("-o")
                .arg(&object),
        )?;
        Ok(object)
    }

    /// What every link of the build adds: the runtime alone for a stock build, the
    /// configuration file's link lines where the plugins are loaded, else the project's
    /// libraries by hand; and the target's device link.
    fn link_args(&self) -> Vec<OsString> {
        let toolchain = self.toolchain;
        let mut link_args = if self.how == Build::Stock {
            toolchain.runtime_link_args()
        } else if self.with_plugin()
            && !matches!(self.how, Build::WithoutFrontendPlugin | Build::WithoutHostPass)
        {
            toolchain.link_args_with_config()
        } else {
            toolchain.link_args()
        };
        link_args.extend(toolchain.device_link_args(self.target));
        link_args
    }

    /// Compiles every unit (the libraries first: a Fortran program's units use their modules),
    /// archives the static library, links the shared one, and links `exe`.
    fn link(&self, exe: &Path) -> Result<()> {
        let (toolchain, program, out) = (self.toolchain, self.program, &self.out);
        let link_args = self.link_args();
        let library_members =
            program.library.iter().map(|u| self.compile(u, false)).collect::<Result<Vec<_>>>()?;
        let shared_members =
            program.shared_library.iter().map(|u| self.compile(u, true)).collect::<Result<Vec<_>>>()?;
        let objects = program.units.iter().map(|u| self.compile(u, false)).collect::<Result<Vec<_>>>()?;
        let mut link = Command::new(toolchain.compiler(program.units[0].source));
        link.args(self.flags_for(program.units[0].source)).args(&objects);
        if let (true, Some(path)) = (is_fortran(program.units[0].source), toolchain.fortran_path(self.target))
        {
            link.env("PATH", path);
        }
        if !program.library.is_empty() {
            let archive = out.join(format!("lib{}.a", program.name));
            let _ = std::fs::remove_file(&archive);
            cmd::output(
                Command::new(&toolchain.tools().llvm_ar).arg("rcs").arg(&archive).args(&library_members),
            )?;
            link.arg("-L").arg(out).arg(format!("-l{}", program.name));
        }
        if !program.shared_library.is_empty() {
            let name = format!("{}_shared", program.name);
            cmd::output(
                Command::new(toolchain.compiler(program.shared_library[0].source))
                    .args(self.flags_for(program.shared_library[0].source))
                    .arg("-shared")
                    .args(&shared_members)
                    .args(&link_args)
                    .arg("-o")
                    .args(shared_library_of(program, exe)),
            )?;
            // Found beside the executable wherever it is copied with it (the GPU bundle).
            if !program.loads_shared_library {
                link.arg("-L").arg(out).arg(format!("-l{name}")).arg("-Wl,-rpath,$ORIGIN");
            }
        }
        cmd::output(link.args(&link_args).args(program.link_flags).arg("-o").arg(exe)).map(drop)
    }
}

/// The shared library [`build_as`] builds for `program` beside `exe`, if it has one.
pub fn shared_library_of(program: &Program, exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    (!program.shared_library.is_empty()).then(|| dir.join(format!("lib{}_shared.so", program.name)))
}

/// Whether `output` exists and was written after every one of `inputs`.
fn newer_than_all(output: &Path, inputs: &[PathBuf]) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(built) = modified(output) else { return false };
    inputs.iter().all(|i| modified(i).is_some_and(|t| t < built))
}

/// `exe` depends on the shared library `soname`: clang 19 silently links its own
/// `libomptarget.so.19.1` when `-L<llvm16>` finds nothing.
fn check_needs(exe: &Path, soname: &str) -> Result<()> {
    let needed = needed(exe)?;
    ensure!(
        needed.iter().any(|n| n == soname),
        "{} does not link {soname} (NEEDED: {})",
        exe.display(),
        needed.join(", ")
    );
    Ok(())
}

pub use packaging::elf::needed;

/// Writes the device image for `target` embedded in `program` to `dir` and returns its path.
pub fn extract_image(packager: &Path, program: &Path, target: &OffloadTarget, dir: &Path) -> Result<PathBuf> {
    let image = dir.join(format!("image.{}", target.name));
    let _ = std::fs::remove_file(&image);
    cmd::output(Command::new(packager).arg(program).arg(target.image_selector(&image)))?;
    ensure!(image.is_file(), "{} holds no {} image", program.display(), target.name);
    Ok(image)
}
