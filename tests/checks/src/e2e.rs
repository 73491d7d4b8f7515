//! The end-to-end programs of `tests/e2e/`: OpenMP programs with `declare target indirect`
//! functions, linked with `-lomptarget-indirect` and run on x86_64 host offload with each
//! toolchain ([`Toolchain`]): clang 19 through LLVM 16's libomptarget and our plugin, and clang 22
//! through its stock libomptarget 22 (which must load nothing of ours). Both also build them for
//! the GPU targets (clang 22 with LLVM 22's DeviceRTL built from source), whose device images are
//! checked. Unmodified programs (no explicit
//! translation) are compiled with the pass plugin through `--config=<dist>/share/omptarget-
//! indirect/clang-NN.cfg`, at `-O0`, `-O2` and `-O2 -foffload-lto`, and once without it (the
//! negative control).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use crate::cmd;
use crate::images::{self, IMAGE_SYMBOLS, TRANSLATE};
use crate::offload::OffloadTarget;
use crate::toolchain::{is_fortran, module_dir_args, Llvm, Toolchain, NVPTX_DEVICE_RTL_FLAG};

/// One translation unit and the flags only it needs.
pub struct Unit {
    /// Path under `tests/e2e/`.
    pub source: &'static str,
    /// Extra compile flags for this unit.
    pub flags: &'static [&'static str],
}

const fn unit(source: &'static str) -> Unit {
    Unit { source, flags: &[] }
}

/// A test program: units linked directly, and units archived into a static library first.
pub struct Program {
    /// Name of the executable; the program prints `<name>: N checks, 0 failed` when it passes.
    pub name: &'static str,
    /// What it shows, for reports.
    pub about: &'static str,
    /// Compiled and linked in this order (the first one's language picks the linker driver).
    pub units: &'static [Unit],
    /// Archived into `lib<name>.a` and linked with `-l<name>`.
    pub library: &'static [Unit],
    /// Linked into the shared library `lib<name>_shared.so` (with its own device image), which
    /// the program links with `-l<name>_shared` and finds through its rpath.
    pub shared_library: &'static [Unit],
    /// Runs only where the project's libomptarget 16 plugins run it ([`Runtime::ProjectPlugins`]):
    /// what a stock libomptarget's per-image tables cannot do (the entry says why). Programs run
    /// with every release otherwise, Fortran ones with those whose flang compiles them.
    pub project_plugins_only: bool,
    /// Compile flags that leave the procedures unnamed (Fortran's `omptarget_indirect` holders):
    /// built so, the program must fail (a negative control). Empty: no such control.
    pub without_naming: &'static [&'static str],
    /// Needs the frontend plugin (inline indirect functions, vtables of classes only the host
    /// constructs): what a build without it must do (the negative control).
    pub frontend: FrontendControl,
    /// An argument that makes device code call a virtual function the device does not compile:
    /// the run must stop with the stub's line naming it.
    pub trap_argument: Option<&'static str>,
    /// Whether it must fail with the map disabled (the negative control): programs whose
    /// pointers all reach the device untranslated.
    pub needs_map: bool,
    /// A line its output must hold on our x86_64 plugin (2 devices), beside the summary.
    pub expect_line: Option<&'static str>,
    /// Calls virtual functions of host-built objects: it must fail with the vtables left out of
    /// the map (`OMPTARGET_INDIRECT_VTABLES=0`, both toolchains), and be stopped on the strict
    /// device.
    pub host_vtables: bool,
    /// Written without any explicit translation: compiled with the pass plugin, and it must fail
    /// when compiled without it.
    pub unmodified: bool,
    /// Built for the GPU targets and run by the GPU bundle (not: programs that need what only the
    /// x86_64 device gives).
    pub on_gpus: bool,
    /// Compile flags added for the GPU targets only.
    pub gpu_flags: &'static [&'static str],
    /// Not [`Program::on_gpus`], but runs on a GPU whose device reads pageable host memory (HMM),
    /// as `requires unified_shared_memory` needs: built by the releases with a stock libomptarget
    /// for their GPU bundle part, which runs it on such a GPU only (libomptarget 22 takes the
    /// requirement without checking it; our LLVM 16 plugins refuse such images).
    pub on_gpus_with_pageable_memory: bool,
    /// What its x86_64 device image may need that no GPU provides, because the code that needs
    /// it is compiled for x86_64 only (`#if`): [`expect_gpu_linkable`] lets these through.
    pub x86_64_only_symbols: &'static [&'static str],
}

impl Program {
    /// What an entry does not say: C units linked directly, needing the map, built for the GPU
    /// targets, run with every release.
    pub const DEFAULT: Program = Program {
        name: "",
        about: "",
        units: &[],
        library: &[],
        shared_library: &[],
        project_plugins_only: false,
        without_naming: &[],
        frontend: FrontendControl::NotNeeded,
        trap_argument: None,
        needs_map: true,
        expect_line: None,
        host_vtables: false,
        unmodified: false,
        on_gpus: true,
        gpu_flags: &[],
        on_gpus_with_pageable_memory: false,
        x86_64_only_symbols: &[],
    };

    /// Whether it runs with `llvm`'s toolchain: Fortran needs the release's flang
    /// ([`Release::flang`]), [`Program::project_plugins_only`] the project's plugins.
    ///
    /// [`Release::flang`]: crate::llvm::Release::flang
    pub fn runs_with(&self, llvm: Llvm) -> bool {
        let fortran = self.units.iter().any(|u| is_fortran(u.source));
        (!fortran || llvm.flang) && (!self.project_plugins_only || llvm.runs_project_plugins())
    }

    /// Whether the GPU bundle runs it with `llvm`'s toolchain on every GPU.
    pub fn on_gpus_with(&self, llvm: Llvm) -> bool {
        self.on_gpus && self.runs_with(llvm)
    }

    /// Whether the GPU bundle runs it with `llvm`'s toolchain where the GPU reads pageable host
    /// memory ([`Program::on_gpus_with_pageable_memory`]; a stock libomptarget only: ours refuse
    /// such images).
    pub fn on_pageable_gpus_with(&self, llvm: Llvm) -> bool {
        !llvm.runs_project_plugins() && self.on_gpus_with_pageable_memory && self.runs_with(llvm)
    }

    /// Whether [`build_gpu`] builds it for `llvm`'s toolchain: [`Program::on_gpus_with`] or
    /// [`Program::on_pageable_gpus_with`].
    pub fn built_for_gpus_with(&self, llvm: Llvm) -> bool {
        self.on_gpus_with(llvm) || self.on_pageable_gpus_with(llvm)
    }

    /// Whether it is a GPU negative control with `llvm`'s toolchain: an unmodified program of
    /// [`Program::on_gpus_with`] that stock clang compiles (built without the pass plugin, it
    /// must fault on a GPU).
    pub fn stock_control_on_gpus_with(&self, llvm: Llvm) -> bool {
        self.on_gpus_with(llvm) && self.unmodified && self.frontend != FrontendControl::CompileFails
    }
}

/// What a program that needs the frontend plugin does when built without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontendControl {
    /// It does not need it.
    NotNeeded,
    /// The compile fails: clang 22 reports the indirect entry's address invalid, clang 19 crashes.
    CompileFails,
    /// It builds, fails its checks on the loose device, and the strict device stops it at the
    /// first host vtable read or host function call.
    StrictStop,
}

/// How a program is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// `-O2`: every program, and the only build for GPU targets and the bundle.
    O2,
    /// `-O0`.
    O0,
    /// `-O2 -foffload-lto`: device code linked and optimised as one module by
    /// clang-linker-wrapper, which loads no pass plugin: the rewrite happens before, per file.
    OffloadLto,
    /// `-O2` without the pass plugin: the negative control of an unmodified program.
    WithoutPassPlugin,
    /// `-O2` with the pass plugin and the program's [`Program::without_naming`] flags.
    WithoutNaming,
    /// `-O2` with the pass plugin alone (loaded directly, no configuration file): the negative
    /// control of a program that needs the frontend plugin.
    WithoutFrontendPlugin,
}

impl Build {
    fn flags(self) -> &'static [&'static str] {
        match self {
            Build::O2 | Build::WithoutPassPlugin | Build::WithoutNaming | Build::WithoutFrontendPlugin => {
                &["-O2"]
            }
            Build::O0 => &["-O0"],
            Build::OffloadLto => &["-O2", "-foffload-lto"],
        }
    }

    /// Subdirectory of the program's build directory (the `-O2` build has none).
    fn dir(self) -> &'static str {
        match self {
            Build::O2 => "",
            Build::O0 => "O0",
            Build::OffloadLto => "offload-lto",
            Build::WithoutPassPlugin => "without-pass-plugin",
            Build::WithoutNaming => "without-naming",
            Build::WithoutFrontendPlugin => "without-frontend-plugin",
        }
    }
}

/// Every program, in the order of the end-to-end issue's list.
pub const PROGRAMS: &[Program] = &[
    Program {
        name: "forms",
        about: "begin/end block, to(f) indirect, enter(f) indirect (5.2)",
        units: &[unit("forms.c"), Unit { source: "forms_enter.c", flags: &["-fopenmp-version=52"] }],
        ..Program::DEFAULT
    },
    Program {
        name: "reach",
        about: "captured, firstprivate, struct member, mapped array, returned by a device function",
        units: &[unit("reach.c")],
        ..Program::DEFAULT
    },
    Program {
        name: "table",
        about: "1024 indirect functions chosen by index, and summed by a teams reduction",
        units: &[unit("table.c")],
        // ptxas peaks at 23 GB over 1024 address-taken functions, 0.4 GB over 256.
        gpu_flags: &["-DTABLE_FUNCTIONS_256"],
        ..Program::DEFAULT
    },
    Program {
        name: "requires",
        about: "requires unified_shared_memory, unified_address, dynamic_allocators: unmapped host data",
        units: &[unit("requires.c")],
        // Our LLVM 16 GPU plugins refuse this program's image (no unified shared memory).
        on_gpus: false,
        on_gpus_with_pageable_memory: true,
        ..Program::DEFAULT
    },
    Program {
        name: "strict",
        about: "what the strict device lets through: mapped data, globals, enter/exit data, a mapper, nowait from two threads",
        units: &[unit("strict.c")],
        // Its other modes touch the host program on purpose ([`strict_stops`]).
        on_gpus: false,
        ..Program::DEFAULT
    },
    Program {
        name: "multi",
        about: "several translation units and a static library",
        units: &[unit("multi_main.c"), unit("multi_unit.c")],
        library: &[unit("multi_lib.c")],
        ..Program::DEFAULT
    },
    Program {
        name: "passthrough",
        about: "device addresses, non-indirect and host-only functions, data, null pass unchanged",
        units: &[unit("passthrough.c")],
        ..Program::DEFAULT
    },
    Program {
        name: "devices",
        about: "two devices, each with its own image and map",
        units: &[unit("devices.c")],
        expect_line: Some("device count: 2"),
        ..Program::DEFAULT
    },
    Program {
        name: "no_indirect",
        about: "an image with no indirect function",
        units: &[unit("no_indirect.c")],
        needs_map: false,
        ..Program::DEFAULT
    },
    Program {
        name: "cxx",
        about: "C++ free, static member, namespaced functions",
        units: &[unit("cxx.cpp")],
        ..Program::DEFAULT
    },
    Program {
        name: "unmodified",
        about: "no explicit translation (pass plugin): map(to:), arrays, struct members, through device \
                functions, per team/thread, device addresses, NULL, not indirect",
        units: &[unit("unmodified.c")],
        unmodified: true,
        ..Program::DEFAULT
    },
    Program {
        name: "unmodified_virtual",
        about:
            "no explicit translation (pass plugin): C++ virtual calls on device-built and mapped host objects",
        units: &[unit("unmodified_virtual.cpp")],
        host_vtables: true,
        unmodified: true,
        ..Program::DEFAULT
    },
    Program {
        name: "library_objects",
        about: "no explicit translation (pass plugin): virtual calls on objects a shared library with its own device \
                image built, of classes it defines",
        units: &[unit("library_objects.cpp")],
        shared_library: &[unit("library_objects_lib.cpp")],
        host_vtables: true,
        unmodified: true,
        on_gpus: false,
        // A stock libomptarget builds one table per image: the program's image has none of the
        // library's vtables (docs/virtual.md).
        project_plugins_only: true,
        ..Program::DEFAULT
    },
    Program {
        name: "host_objects",
        about: "no explicit translation (pass plugin): virtual calls on host-built mapped objects (single, multiple and \
                virtual inheritance, thunks, pure virtual bases, array sections in a teams loop, device-built objects \
                beside them, a virtual member pointer, typeid, two devices)",
        units: &[unit("host_objects.cpp")],
        host_vtables: true,
        unmodified: true,
        // typeid's comparison (type names, strcmp), compiled for x86_64 only.
        x86_64_only_symbols: &["strcmp"],
        ..Program::DEFAULT
    },
    Program {
        name: "host_scene",
        about: "frontend plugin: a polymorphic scene (multiple inheritance, virtual destructors, texture function \
                pointers) placement-new'ed by a factory in another unit into a mapped byte arena, rendered on the \
                device through base pointers and compared with the host's render; a virtual function the device \
                does not compile traps naming itself",
        units: &[unit("host_scene.cpp"), unit("host_scene_factory.cpp")],
        host_vtables: true,
        unmodified: true,
        frontend: FrontendControl::StrictStop,
        trap_argument: Some("call-host-only"),
        ..Program::DEFAULT
    },
    Program {
        name: "host_scene_usm",
        about: "frontend plugin: the same scene under requires unified_shared_memory, as vectors of unique_ptrs the \
                host built, nothing mapped",
        units: &[unit("host_scene_usm.cpp"), Unit { source: "host_scene_factory.cpp", flags: &["-DSCENE_USM"] }],
        host_vtables: true,
        unmodified: true,
        // Unified shared memory on a GPU needs what the bundle's machines may not have (HMM).
        on_gpus: false,
        on_gpus_with_pageable_memory: true,
        frontend: FrontendControl::StrictStop,
        ..Program::DEFAULT
    },
    Program {
        name: "inline_indirect",
        about: "frontend plugin: inline, static inline, namespace, extern \"C\", in-class static and non-static \
                member functions and implicitly and explicitly instantiated templates in begin declare target \
                indirect, called through host pointers and pointers to member functions in mapped data",
        units: &[unit("inline_indirect.cpp")],
        unmodified: true,
        frontend: FrontendControl::CompileFails,
        ..Program::DEFAULT
    },
    Program {
        name: "loop_cache",
        about: "loop cache (pass plugin): virtual calls in loops over host-built objects of one class, grouped, \
                alternating, random, mixed with device-built ones, over several sweeps and launches, and function \
                pointers with runs and skipped nulls",
        units: &[unit("loop_cache.cpp")],
        host_vtables: true,
        unmodified: true,
        // (Device code constructs objects of every class too: the device has their vtables without
        // the frontend plugin.)
        ..Program::DEFAULT
    },
    Program {
        name: "dynamic_casts",
        about: "no explicit translation (pass plugin): dynamic_cast on host-built mapped and device-built objects \
                (downcasts, cross casts, virtual and duplicated bases, private bases, references), against the host's \
                C++ runtime",
        units: &[unit("dynamic_casts.cpp")],
        host_vtables: true,
        unmodified: true,
        // clang gives GPU device code no RTTI: the casts' type_info arguments are null there.
        on_gpus: false,
        ..Program::DEFAULT
    },
    Program {
        name: "fortran_procedures",
        about: "Fortran, no explicit translation (flang 22, pass plugin, procedures named through the \
                omptarget_indirect module): procedure pointer variables, an array of derived types with \
                procedure-pointer components in a teams loop, a pointer passed to a device procedure, \
                c_funptr and c_f_procpointer, two modules",
        units: &[unit("fortran_procedures.F90")],
        unmodified: true,
        // flang 22 cannot compile for sm_90 here: without a CUDA installation it knows of it targets
        // PTX ISA 4.2, and it takes no --cuda-path (docs/gpu-bundle.md): device IR only.
        on_gpus: false,
        without_naming: &["-DWITHOUT_NAMING"],
        ..Program::DEFAULT
    },
];

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
    let sources = workspace.join("tests/e2e");
    let out = toolchain.e2e_dir(workspace, target).join(program.name).join(how.dir());
    let exe = out.join(program.name);
    // Rebuild only when an input changed (ptxas and the GPU links take most of the suite's time).
    let mut inputs: Vec<PathBuf> = program
        .units
        .iter()
        .chain(program.library)
        .chain(program.shared_library)
        .map(|u| sources.join(u.source))
        .collect();
    inputs.extend(
        ["check.h", "indirect_check.h", "device_copy.h", "library_objects.h", "host_scene.h"]
            .map(|h| sources.join(h)),
    );
    inputs.extend([toolchain.dist().fat_lib(), toolchain.libomptarget()]);
    if program.unmodified {
        inputs.extend([toolchain.pass_plugin(), toolchain.dist().clang_config(toolchain.llvm)]);
        inputs.push(toolchain.dist().frontend_plugin(toolchain.llvm));
        if let Some(fortran) = Llvm::fortran() {
            inputs.push(toolchain.dist().flang_config(fortran));
        }
    }
    if newer_than_all(&exe, &inputs) {
        return Ok(exe);
    }
    std::fs::create_dir_all(&out)?;
    let with_plugin = program.unmodified && how != Build::WithoutPassPlugin;
    let pass_plugin_only = how == Build::WithoutFrontendPlugin;
    // Each unit's flags: its language's offload flags and configuration file.
    let flags_for = |source: &str| -> Vec<OsString> {
        let mut flags: Vec<OsString> = toolchain.offload_args_for(target, source);
        if how == Build::OffloadLto {
            // Device LTO links the DeviceRTL at the link (libompdevice.a), not per compile: clang
            // 22 warns that the bitcode path is unused.
            flags.retain(|f| !f.to_string_lossy().starts_with(NVPTX_DEVICE_RTL_FLAG));
        }
        flags.extend(how.flags().iter().map(OsString::from));
        if target.triple != OffloadTarget::x86_64().triple {
            flags.extend(program.gpu_flags.iter().map(OsString::from));
        }
        if how == Build::WithoutNaming {
            flags.extend(program.without_naming.iter().map(OsString::from));
        }
        if pass_plugin_only {
            flags.extend(toolchain.pass_plugin_only_args());
        } else if with_plugin {
            flags.extend(toolchain.pass_plugin_args_for(source));
        }
        flags
    };
    // Position-independent code for a shared library's units only (the GPU builds take no -fPIC).
    let compile_as = |u: &Unit, pic: bool| -> Result<PathBuf> {
        let object = out.join(format!("{}.o", u.source));
        cmd::output(
            Command::new(toolchain.compiler(u.source))
                .args(flags_for(u.source))
                .args(module_dir_args(u.source, &out))
                .args(["-Wall", "-Werror", "-c"])
                .args(pic.then_some("-fPIC"))
                .args(u.flags)
                .arg(sources.join(u.source))
                .arg("-o")
                .arg(&object),
        )?;
        Ok(object)
    };
    let compile = |u: &Unit| compile_as(u, false);
    let mut link_args = if pass_plugin_only {
        toolchain.link_args_without_config()
    } else if with_plugin {
        toolchain.link_args_with_config()
    } else {
        toolchain.link_args()
    };
    link_args.extend(toolchain.device_link_args(target));
    let objects = program.units.iter().map(compile).collect::<Result<Vec<_>>>()?;
    let mut link = Command::new(toolchain.compiler(program.units[0].source));
    link.args(flags_for(program.units[0].source)).args(&objects);
    if !program.library.is_empty() {
        let archive = out.join(format!("lib{}.a", program.name));
        let _ = std::fs::remove_file(&archive);
        let members = program.library.iter().map(compile).collect::<Result<Vec<_>>>()?;
        cmd::output(Command::new(&toolchain.tools().llvm_ar).arg("rcs").arg(&archive).args(&members))?;
        link.arg("-L").arg(&out).arg(format!("-l{}", program.name));
    }
    if !program.shared_library.is_empty() {
        let name = format!("{}_shared", program.name);
        let members =
            program.shared_library.iter().map(|u| compile_as(u, true)).collect::<Result<Vec<_>>>()?;
        cmd::output(
            Command::new(toolchain.compiler(program.shared_library[0].source))
                .args(flags_for(program.shared_library[0].source))
                .arg("-shared")
                .args(&members)
                .args(&link_args)
                .arg("-o")
                .arg(out.join(format!("lib{name}.so"))),
        )?;
        link.arg("-L").arg(&out).arg(format!("-l{name}")).arg(format!("-Wl,-rpath,{}", out.display()));
    }
    cmd::output(link.args(&link_args).arg("-o").arg(&exe))?;
    check_needs(&exe, toolchain.libomptarget_soname())?;
    Ok(exe)
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
    use object::read::elf::{Dyn, ElfFile64, FileHeader};
    let data = cmd::read(exe)?;
    let elf = ElfFile64::<object::Endianness>::parse(&*data)?;
    let endian = elf.endian();
    let sections = elf.elf_header().sections(endian, &*data)?;
    let mut needed = Vec::new();
    if let Some((dynamic, index)) = sections.dynamic(endian, &*data)? {
        let strings = sections.strings(endian, &*data, index)?;
        for entry in dynamic {
            if entry.tag32(endian) == Some(object::elf::DT_NEEDED) {
                needed.push(String::from_utf8_lossy(entry.string(endian, strings)?).into_owned());
            }
        }
    }
    ensure!(
        needed.iter().any(|n| n == soname),
        "{} does not link {soname} (NEEDED: {})",
        exe.display(),
        needed.join(", ")
    );
    Ok(())
}

/// How our plugin installs the map in a run, set through its environment switches (LLVM 19;
/// libomptarget 22 installs its own table, always).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapSetup {
    /// The default: table and hash index.
    Indexed,
    /// `OMPTARGET_INDIRECT_INDEX=0`: the table alone, binary-searched on the device.
    SearchOnly,
    /// `OMPTARGET_INDIRECT_MAP=0`: nothing installed (the negative control).
    None,
    /// `OMPTARGET_INDIRECT_VTABLES=0`: functions paired, vtables not (the negative control of
    /// virtual calls on host-built objects).
    NoVtables,
}

/// Runs an x86_64 build with the map installed as `setup` says. Returns (exit code, stdout and
/// stderr). With LLVM 22 it also proves, from the dynamic loader's trace (`LD_DEBUG=libs`), that
/// the run used libomptarget 22 and loaded no library of the project's dist tree: the stock
/// runtime and the device library did the work alone.
pub fn run(toolchain: &Toolchain, exe: &Path, setup: MapSetup) -> Result<(i32, String)> {
    run_with(toolchain, exe, &[], setup, false, Device::Loose)
}

/// How forgiving the x86_64 device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// Plain host offload: device code may touch the host program (as no GPU lets it).
    Loose,
    /// Under `LD_PRELOAD=libomptarget-indirect-strict.so`: the host program is unreachable while
    /// device code runs, as on a GPU.
    Strict,
}

/// [`run`] with `args`, with `LIBOMPTARGET_INFO=1` where `info`, on the `device` given.
pub fn run_with(
    toolchain: &Toolchain,
    exe: &Path,
    args: &[&str],
    setup: MapSetup,
    info: bool,
    device: Device,
) -> Result<(i32, String)> {
    let strict_lib = (device == Device::Strict).then(|| toolchain.dist().strict_lib());
    run_preloaded(toolchain, exe, args, setup, info, strict_lib.as_deref())
}

/// [`run_with`] with `preload` (a strict-mode library, wherever it lies) as the only
/// `LD_PRELOAD`, or none.
fn run_preloaded(
    toolchain: &Toolchain,
    exe: &Path,
    args: &[&str],
    setup: MapSetup,
    info: bool,
    preload: Option<&Path>,
) -> Result<(i32, String)> {
    let mut c = Command::new(exe);
    c.args(args).env_remove("LD_LIBRARY_PATH").envs(toolchain.run_env()).env_remove("LIBOMPTARGET_INFO");
    c.env_remove("LD_PRELOAD");
    if let Some(preload) = preload {
        c.env("LD_PRELOAD", preload);
    }
    if info {
        c.env("LIBOMPTARGET_INFO", "1");
    }
    c.env_remove("OMPTARGET_INDIRECT_MAP").env_remove("OMPTARGET_INDIRECT_INDEX");
    match setup {
        MapSetup::Indexed => {}
        MapSetup::SearchOnly => {
            c.env("OMPTARGET_INDIRECT_INDEX", "0");
        }
        MapSetup::None => {
            c.env("OMPTARGET_INDIRECT_MAP", "0");
        }
        MapSetup::NoVtables => {
            c.env("OMPTARGET_INDIRECT_VTABLES", "0");
        }
    }
    let trace = exe.with_extension("ld-debug");
    let stock = !toolchain.llvm.runs_project_plugins();
    if stock {
        let _ = std::fs::remove_dir_all(&trace);
        std::fs::create_dir_all(&trace)?;
        c.env("LD_DEBUG", "libs").env("LD_DEBUG_OUTPUT", trace.join("trace"));
    }
    let out = c.output().with_context(|| format!("cannot run {}", exe.display()))?;
    let code = out.status.code().unwrap_or(-1);
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if stock {
        let loaded = initialised_objects(&trace)?;
        let ours = toolchain.dist().lib_dir();
        let foreign: Vec<&String> = loaded
            .iter()
            .filter(|o| {
                let o = Path::new(o);
                let allowed = [toolchain.dist().strict_lib(), toolchain.dist().register_lib()];
                (o.starts_with(&ours) && !allowed.iter().any(|a| a == o))
                    || o.to_string_lossy().contains("libomptarget.rtl.")
            })
            .collect();
        ensure!(foreign.is_empty(), "{} loaded plugins with libomptarget 22: {foreign:?}", exe.display());
        let runtime = toolchain.libomptarget_soname();
        ensure!(
            loaded.iter().any(|o| o.ends_with(&format!("/{runtime}"))),
            "{} did not load {runtime}; it loaded {loaded:?}",
            exe.display()
        );
    }
    Ok((code, text))
}

/// The objects whose initialisers the dynamic loader ran (`calling init: <path>` lines of the
/// `LD_DEBUG=libs` trace files in `trace`): every library of the run, `dlopen`ed ones included.
fn initialised_objects(trace: &Path) -> Result<Vec<String>> {
    let mut objects = Vec::new();
    for file in std::fs::read_dir(trace)? {
        let text = std::fs::read_to_string(file?.path())?;
        objects.extend(
            text.lines().filter_map(|l| l.split_once("calling init: ")).map(|(_, o)| o.trim().to_string()),
        );
    }
    ensure!(!objects.is_empty(), "no LD_DEBUG trace in {}", trace.display());
    Ok(objects)
}

/// Builds and runs `program` on x86_64 host offload with `toolchain`. With our plugin (LLVM 19)
/// a program that needs the map runs again with the table alone (the device's binary search
/// instead of the index: same results expected), then with the map disabled, which must fail.
/// An unmodified program is also built and run at `-O0` and with `-foffload-lto`, and built
/// without the pass plugin, which must fail.
pub fn run_x86_64(workspace: &Path, toolchain: &Toolchain, program: &Program) -> Result<String> {
    let target = OffloadTarget::x86_64();
    let exe = build(workspace, toolchain, &target, program)?;
    expect_gpu_linkable(toolchain, &exe, program.x86_64_only_symbols)?;
    let ours = toolchain.llvm.runs_project_plugins();
    let setups: &[MapSetup] = if program.needs_map && ours {
        &[MapSetup::Indexed, MapSetup::SearchOnly]
    } else {
        &[MapSetup::Indexed]
    };
    let mut detail = String::new();
    for &setup in setups {
        let summary = expect_pass(toolchain, &exe, program, setup)?;
        if detail.is_empty() {
            detail = summary;
        } else {
            detail.push_str("; the same without the hash index");
        }
    }
    expect_pass_on(toolchain, &exe, program, MapSetup::Indexed, Device::Strict)?;
    detail.push_str("; the same on the strict device");
    if program.unmodified {
        // flang has no -foffload-lto.
        let fortran = program.units.iter().any(|u| is_fortran(u.source));
        let builds: &[Build] = if fortran { &[Build::O0] } else { &[Build::O0, Build::OffloadLto] };
        for &how in builds {
            let exe = build_as(workspace, toolchain, &target, program, how)?;
            expect_pass(toolchain, &exe, program, MapSetup::Indexed)?;
        }
        detail.push_str(if fortran {
            "; the same at -O0"
        } else {
            "; the same at -O0 and with -foffload-lto"
        });
        // Without the configuration file a program that needs the frontend plugin does not
        // compile: its own control below shows that.
        if program.frontend != FrontendControl::CompileFails {
            let control = build_as(workspace, toolchain, &target, program, Build::WithoutPassPlugin)?;
            let failed =
                expect_failure(toolchain, &control, MapSetup::Indexed, "compiled without the pass plugin")?;
            detail.push_str(&format!("; compiled without the pass plugin: {failed} checks fail"));
            let stopped = expect_strict_stop(
                toolchain,
                &control,
                MapSetup::Indexed,
                "compiled without the pass plugin",
            )?;
            detail.push_str(&format!(", and the strict device stops it at the {stopped}"));
            detail.push_str(" (negative controls)");
        }
    }
    detail.push_str(&frontend_controls(workspace, toolchain, program)?);
    if !program.without_naming.is_empty() {
        let control = build_as(workspace, toolchain, &target, program, Build::WithoutNaming)?;
        let what = "compiled without naming its procedures";
        let failed = expect_failure(toolchain, &control, MapSetup::Indexed, what)?;
        let stopped = expect_strict_stop(toolchain, &control, MapSetup::Indexed, what)?;
        detail.push_str(&format!(
            "; {what}: {failed} checks fail, and the strict device stops it at the {stopped} (negative control)"
        ));
    }
    if program.host_vtables {
        let what = "with OMPTARGET_INDIRECT_VTABLES=0";
        let failed = expect_failure(toolchain, &exe, MapSetup::NoVtables, what)?;
        let stopped = expect_strict_stop(toolchain, &exe, MapSetup::NoVtables, what)?;
        detail.push_str(&format!(
            "; without the vtables in the map: {failed} checks fail, and the strict device stops it at the {stopped} \
             (negative controls)"
        ));
    }
    if program.needs_map && ours {
        let failed = expect_failure(toolchain, &exe, MapSetup::None, "with OMPTARGET_INDIRECT_MAP=0")?;
        detail.push_str(&format!("; without the map: {failed} checks fail"));
        let stopped = expect_strict_stop(toolchain, &exe, MapSetup::None, "with OMPTARGET_INDIRECT_MAP=0")?;
        detail.push_str(&format!(", and the strict device stops it at the {stopped}"));
        detail.push_str(" (negative controls)");
        detail.push_str(&format!("; {}", check_diagnostics(toolchain, &exe, program)?));
    }
    if !ours {
        detail.push_str(&format!(
            "; loaded {}, and of target/dist at most {}",
            toolchain.libomptarget_soname(),
            crate::dist::REGISTER.2
        ));
    }
    Ok(detail)
}

/// What our plugins print around a passing run of `exe` (LLVM 19): nothing by default (the CUDA
/// and AMDGPU plugins, which find no device here, included); with `LIBOMPTARGET_INFO=1` the
/// summary of the map the x86_64 plugin installed, and the GPU plugins' reasons for having no
/// device; with `OMPTARGET_INDIRECT_MAP=0`, its notice once.
fn check_diagnostics(toolchain: &Toolchain, exe: &Path, program: &Program) -> Result<String> {
    let ours = |text: &str| -> Vec<String> {
        text.lines().filter(|l| l.starts_with("omptarget-indirect (")).map(str::to_string).collect()
    };
    let (_, quiet) = run_with(toolchain, exe, &[], MapSetup::Indexed, false, Device::Loose)?;
    ensure!(ours(&quiet).is_empty(), "{}: a passing run printed {:?}", exe.display(), ours(&quiet));
    let (code, informed) = run_with(toolchain, exe, &[], MapSetup::Indexed, true, Device::Loose)?;
    let lines = ours(&informed);
    ensure!(code == 0, "{} with LIBOMPTARGET_INFO=1 exited with {code}", exe.display());
    let summary = lines
        .iter()
        .find(|l| {
            l.starts_with("omptarget-indirect (x86_64) info: device 0: ")
                && l.contains(" indirect functions, ")
                && l.contains(" vtables (")
        })
        .with_context(|| {
            format!("{} printed no map summary with LIBOMPTARGET_INFO=1: {lines:?}", program.name)
        })?;
    ensure!(
        lines.iter().all(|l| !l.contains(") error: ")),
        "{}: error lines in a passing run: {lines:?}",
        program.name
    );
    let (_, unmapped) = run_with(toolchain, exe, &[], MapSetup::None, false, Device::Loose)?;
    let notices =
        ours(&unmapped).into_iter().filter(|l| l.contains(") notice: OMPTARGET_INDIRECT_MAP=0")).count();
    ensure!(notices == 1, "{}: {notices} OMPTARGET_INDIRECT_MAP=0 notices, expected 1", program.name);
    let summary = summary.split(": ").last().unwrap_or(summary);
    Ok(format!("silent by default; LIBOMPTARGET_INFO=1: `{summary}`; OMPTARGET_INDIRECT_MAP=0: one notice"))
}

/// Runs `exe` and requires it to pass; returns its summary line.
fn expect_pass(toolchain: &Toolchain, exe: &Path, program: &Program, setup: MapSetup) -> Result<String> {
    expect_pass_on(toolchain, exe, program, setup, Device::Loose)
}

/// [`expect_pass`] on `device`.
fn expect_pass_on(
    toolchain: &Toolchain,
    exe: &Path,
    program: &Program,
    setup: MapSetup,
    device: Device,
) -> Result<String> {
    let (code, output) = run_with(toolchain, exe, &[], setup, false, device)?;
    let summary = output.lines().find(|l| l.starts_with(&format!("{}: ", program.name))).unwrap_or("");
    ensure!(
        code == 0 && summary.ends_with(" 0 failed"),
        "{} ({setup:?}, {device:?} device) exited with {code}:\n{output}",
        exe.display()
    );
    if let (Some(line), true) = (program.expect_line, toolchain.llvm.runs_project_plugins()) {
        ensure!(output.lines().any(|l| l == line), "{} did not print `{line}`:\n{output}", exe.display());
    }
    Ok(summary.to_string())
}

/// Fails if the x86_64 device image of `exe` needs a symbol that a GPU link would not find
/// ([`images::GpuProvided`]), `x86_64_only` excepted: the x86_64 device resolves host symbols from the host process, so
/// without this check its runs hide what only a GPU refuses.
pub fn expect_gpu_linkable(toolchain: &Toolchain, exe: &Path, x86_64_only: &[&str]) -> Result<()> {
    let dir = exe.parent().context("no parent")?;
    let image = extract_image(toolchain.tools(), exe, &OffloadTarget::x86_64(), dir)?;
    let undefined = images::undefined_symbols(&cmd::read(&image)?)?;
    let provided = images::GpuProvided::read(toolchain.tools())?;
    let missing: Vec<&str> =
        provided.missing(&undefined).into_iter().filter(|s| !x86_64_only.contains(s)).collect();
    let missing = missing.join(", ");
    ensure!(
        missing.is_empty(),
        "{}: the x86_64 device image needs what no GPU provides (a GPU link would fail): {missing}",
        image.display()
    );
    Ok(())
}

/// Runs a negative control, which must fail its checks (exit 1, FAIL lines); returns how many
/// checks failed.
fn expect_failure(toolchain: &Toolchain, exe: &Path, setup: MapSetup, what: &str) -> Result<usize> {
    let (code, output) = run(toolchain, exe, setup)?;
    let failed = output.lines().filter(|l| l.starts_with("FAIL ")).count();
    ensure!(
        code == 1 && failed > 0,
        "negative control: {what}, {} exited with {code} and {failed} failed checks; it must fail:\n{output}",
        exe.display()
    );
    Ok(failed)
}

/// The checks of a program that needs the frontend plugin: built without it, it must fail as
/// [`Program::frontend`] says; asked to call a virtual function the device does not compile, it
/// must stop with the stub's line. Returns what they showed, for the report.
fn frontend_controls(workspace: &Path, toolchain: &Toolchain, program: &Program) -> Result<String> {
    let target = OffloadTarget::x86_64();
    let mut detail = String::new();
    if let Some(argument) = program.trap_argument {
        let exe = build(workspace, toolchain, &target, program)?;
        let (code, output) =
            run_with(toolchain, &exe, &[argument], MapSetup::Indexed, false, Device::Strict)?;
        let line = output.lines().find(|l| l.contains("is not compiled for the device"));
        ensure!(
            code != 0 && line.is_some(),
            "{} {argument} on the strict device exited with {code}, expected the trap stub's line:\n{output}",
            exe.display()
        );
        let named = line.unwrap_or_default().split_whitespace().nth(1).unwrap_or_default();
        detail.push_str(&format!("; `{argument}` stops at the stub of {named} (exit {code})"));
    }
    let what = "built without the frontend plugin";
    match program.frontend {
        FrontendControl::NotNeeded => {}
        FrontendControl::CompileFails => {
            let Err(err) = build_as(workspace, toolchain, &target, program, Build::WithoutFrontendPlugin)
            else {
                bail!("{}: {what}, it compiled; expected the compile to fail", program.name);
            };
            let err = format!("{err:#}");
            let (expected, shown) = toolchain.llvm.inline_indirect_without_frontend;
            ensure!(err.contains(expected), "{}: {what}, the compile failed otherwise:\n{err}", program.name);
            detail.push_str(&format!("; {what}: {shown} (negative control)"));
        }
        FrontendControl::StrictStop => {
            let control = build_as(workspace, toolchain, &target, program, Build::WithoutFrontendPlugin)?;
            let failed = expect_failure(toolchain, &control, MapSetup::Indexed, what)?;
            let stopped = expect_strict_stop(toolchain, &control, MapSetup::Indexed, what)?;
            detail.push_str(&format!(
                "; {what}: {failed} checks fail, and the strict device stops it at the {stopped} (negative controls)"
            ));
        }
    }
    Ok(detail)
}

/// Runs a negative control on the strict device, which must stop it at the first host function
/// device code calls or host variable it reads: exit status 70 and one line `omptarget-indirect
/// strict: call of host function `f` ...` (or `read of host variable `v`+0x10 ...`) naming it;
/// returns what it names ("call of host function `f`").
fn expect_strict_stop(toolchain: &Toolchain, exe: &Path, setup: MapSetup, what: &str) -> Result<String> {
    let (code, output) = run_with(toolchain, exe, &[], setup, false, Device::Strict)?;
    let lines: Vec<&str> = output.lines().filter(|l| l.starts_with("omptarget-indirect strict: ")).collect();
    let [line] = lines[..] else {
        bail!(
            "negative control on the strict device: {what}, {} exited with {code} and {} strict lines, expected 1:\n{output}",
            exe.display(),
            lines.len()
        )
    };
    ensure!(
        code == 70 && line.ends_with("on a GPU this faults"),
        "negative control on the strict device: {what}, {} exited with {code}:\n{output}",
        exe.display()
    );
    // "call of host function `f` at 0x...", "read of host variable `v`+0x10 at 0x...".
    let touched = line
        .strip_prefix("omptarget-indirect strict: ")
        .and_then(|rest| rest.split_once(" at 0x"))
        .map(|(touched, _)| touched.to_string())
        .filter(|t| t.contains("of host function `") || t.contains("of host variable `"))
        .with_context(|| format!("{what}: the strict line names no host function or variable: {line}"))?;
    Ok(touched)
}

/// `tests/e2e/strict.c`'s modes that touch the host program from device code (a host global
/// read and written, a host function called, each through a pointer passed as a value): the
/// loose x86_64 device lets each through (exit 0), the strict device stops each with its line.
pub fn strict_stops(workspace: &Path, toolchain: &Toolchain) -> Result<String> {
    let program = PROGRAMS.iter().find(|p| p.name == "strict").context("no strict program")?;
    let exe = build(workspace, toolchain, &OffloadTarget::x86_64(), program)?;
    for (mode, expected) in [
        ("read", "read of host variable `host_counter`"),
        ("write", "write to host variable `host_counter`"),
        ("call", "call of host function `host_only`"),
        ("relro", "read of host variable `host_relro`"),
    ] {
        for device in [Device::Loose, Device::Strict] {
            let (code, text) = run_with(toolchain, &exe, &[mode], MapSetup::Indexed, false, device)?;
            let lines: Vec<&str> =
                text.lines().filter(|l| l.starts_with("omptarget-indirect strict: ")).collect();
            match device {
                Device::Loose => ensure!(
                    code == 0 && text.contains("touched") && lines.is_empty(),
                    "{mode} on the loose device exited with {code}:\n{text}"
                ),
                Device::Strict => ensure!(
                    code == 70 && lines.len() == 1 && lines[0].contains(expected) && lines[0].contains(" by device code at `__omp_offloading_") && lines[0].ends_with("on a GPU this faults") && !text.contains("touched"),
                    "{mode} on the strict device exited with {code}, expected 70 and one line with `{expected}`:\n{text}"
                ),
            }
        }
    }
    // Under another file name the library still keeps its own code open while it protects the
    // host program (it finds itself by address; by name it would close itself off and crash in
    // its own fault handler).
    let renamed = exe.with_file_name("renamed-strict-mode.so");
    std::fs::copy(toolchain.dist().strict_lib(), &renamed)?;
    let (code, text) = run_preloaded(toolchain, &exe, &[], MapSetup::Indexed, false, Some(&renamed))?;
    ensure!(
        code == 0 && text.lines().any(|l| l.starts_with("strict: ") && l.ends_with(" 0 failed")),
        "the strict library renamed to {}: {} exited with {code}:\n{text}",
        renamed.display(),
        exe.display()
    );
    Ok("the loose device lets device code read, write and call into the host program and read its RELRO; the \
        strict device stops each with its line (exit 70), naming the symbol and the kernel; the strict library \
        renamed works the same"
        .to_string())
}

/// Builds every program of `toolchain` for a GPU target and checks that each device image defines
/// our function and every global exactly once, and the host-built-object programs' images their
/// vtables; with clang 22 the unmodified programs are also built at `-O2 -foffload-lto` (the
/// translation inlined: [`expect_translation_linked`]) and without the pass plugin (stock clang 22
/// must link them too). The executables stay in [`Toolchain::e2e_dir`].
pub fn build_gpu(workspace: &Path, toolchain: &Toolchain, target: &OffloadTarget) -> Result<String> {
    let tools = toolchain.tools();
    // The DeviceRTL's device environment too: the device library's reference resolved to it.
    let names = IMAGE_SYMBOLS;
    let mut registers = None;
    let mut images = Vec::new();
    let mut vtables = 0;
    // With a stock runtime, the unmodified programs also at -O2 -foffload-lto (its GPU bundle
    // part runs both).
    let stock = !toolchain.llvm.runs_project_plugins();
    let lto = |p: &&Program| stock && p.unmodified;
    let gpu_programs = || PROGRAMS.iter().filter(|p| p.built_for_gpus_with(toolchain.llvm));
    let builds = gpu_programs()
        .map(|p| (p, Build::O2))
        .chain(gpu_programs().filter(lto).map(|p| (p, Build::OffloadLto)));
    let mut offload_lto = 0;
    for (program, how) in builds {
        let exe = build_as(workspace, toolchain, target, program, how)
            .with_context(|| format!("building {} for {} ({how:?})", program.name, target.name))?;
        offload_lto += usize::from(how == Build::OffloadLto);
        let dir = exe.parent().context("no parent")?;
        let image = extract_image(tools, &exe, target, dir)?;
        let data = cmd::read(&image)?;
        let what = image.display().to_string();
        if how == Build::OffloadLto {
            expect_translation_linked(&data, &what)?;
        } else {
            images::elf_summary(&data, &names)?.expect_defined_once(&what, &names)?;
        }
        if program.host_vtables {
            let defined = images::defined_vtables(&data)?;
            ensure!(
                !defined.is_empty(),
                "{}: no vtable defined, though the host builds its objects",
                image.display()
            );
            vtables += defined.len();
        }
        if target.triple == "nvptx64-nvidia-cuda" && registers.is_none() {
            registers = Some(images::cubin_registers(tools, &image)?);
        }
        images.push(image);
    }
    let built = images.len() - offload_lto;
    let mut detail = format!(
        "{built} programs{}; each image defines {} once; {vtables} vtables in the images of the host-built-object programs",
        if offload_lto > 0 { format!(" (and {offload_lto} at -O2 -foffload-lto)") } else { String::new() },
        names.join(", ")
    );
    if stock {
        // The controls link too: stock clang with the same DeviceRTL, no plugin (those that
        // stock clang refuses to compile excepted, as in the GPU bundle).
        let controls: Vec<&str> = PROGRAMS
            .iter()
            .filter(|p| p.stock_control_on_gpus_with(toolchain.llvm))
            .map(|p| {
                let exe = build_as(workspace, toolchain, target, p, Build::WithoutPassPlugin).with_context(
                    || format!("building {} without the pass plugin for {}", p.name, target.name),
                )?;
                extract_image(tools, &exe, target, exe.parent().context("no parent")?)?;
                Ok(p.name)
            })
            .collect::<Result<_>>()?;
        detail.push_str(&format!("; built without the pass plugin too: {}", controls.join(", ")));
    }
    if let Some(regs) = registers {
        detail.push_str(&format!("; linked {TRANSLATE}: {regs} registers"));
    }
    // Our AMDGPU plugin loads clang 19's images (code object v5); clang 22's (v6) go to libomptarget
    // 22's own plugin.
    if target.triple == "amdgcn-amd-amdhsa" && toolchain.llvm.runs_project_plugins() {
        let reductions = check_amdgpu_images(workspace, tools, &images)?;
        detail.push_str(&format!(
            "; AMDGPU plugin checks: target ID, .kd descriptors and segment sizes, kernel environments \
             ({reductions} with a reduction buffer), kernarg layout vs metadata; "
        ));
        let program = &PROGRAMS[0];
        let exe = toolchain.e2e_dir(workspace, target).join(program.name).join(program.name);
        detail.push_str(&run_amdgcn(toolchain, &exe, program)?);
    }
    Ok(detail)
}

/// A device-LTO image: the globals and the device environment defined once, and the translation
/// either defined once or, inlined everywhere and dropped by the LTO, present as its reads of the
/// map globals; nothing of it left undefined.
fn expect_translation_linked(data: &[u8], what: &str) -> Result<()> {
    let elf = images::elf_summary(data, &IMAGE_SYMBOLS)?;
    let globals: Vec<&str> = IMAGE_SYMBOLS.iter().copied().filter(|&n| n != TRANSLATE).collect();
    elf.expect_defined_once(what, &globals)?;
    let entries = elf.symbol(TRANSLATE);
    ensure!(
        entries.iter().all(|s| s.defined) && entries.len() <= 1,
        "{what}: {TRANSLATE} is left undefined or defined twice ({} entries)",
        entries.len()
    );
    if entries.is_empty() {
        let read = images::relocated_symbols(data)?;
        ensure!(
            images::GLOBALS.iter().all(|g| read.contains(*g)),
            "{what}: {TRANSLATE} is gone and its code does not read {} (it reads: {})",
            images::GLOBALS.join(", "),
            read.into_iter()
                .filter(|n| n.starts_with("__omp") || n.starts_with("__kmpc"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// The AMDGPU plugin's assumptions checked against `images` by the `amdgpu-hsa` crate's own test
/// (`host-plugin/amdgpu-hsa/tests/clang_images.rs`, ignored unless asked for, as here); how many
/// kernels have a reduction buffer, as it reports.
fn check_amdgpu_images(workspace: &Path, tools: &crate::tools::Tools, images: &[PathBuf]) -> Result<String> {
    let joined = std::env::join_paths(images)?;
    let printed = cmd::stdout(
        cmd::cargo()
            .current_dir(workspace)
            .args([
                "test",
                "--quiet",
                "-p",
                "amdgpu-hsa",
                "--test",
                "clang_images",
                "--",
                "--ignored",
                "--nocapture",
            ])
            .env("OMPTARGET_INDIRECT_GFX90A_IMAGES", joined)
            .env("OMPTARGET_INDIRECT_LLVM_READELF", &tools.llvm_readelf),
    )?;
    printed
        .lines()
        .find_map(|l| l.split_once("kernels with a reduction buffer: ").map(|(_, n)| n.trim().to_string()))
        .with_context(|| format!("the AMDGPU image test printed no count:\n{printed}"))
}

/// Runs an amdgcn-only program through libomptarget 16, which loads our
/// `libomptarget.rtl.amdgpu.so`. With an AMD GPU (`/dev/kfd`) it must pass; without one the plugin
/// must say why it has no devices and the mandatory offload must fail, not crash or hang.
fn run_amdgcn(toolchain: &Toolchain, exe: &Path, program: &Program) -> Result<String> {
    let out = Command::new(exe)
        .envs(toolchain.run_env())
        .env("LIBOMPTARGET_INFO", "1")
        .output()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    let code = out.status.code().unwrap_or(-1);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if Path::new("/dev/kfd").exists() {
        ensure!(
            code == 0 && text.contains(" 0 failed"),
            "{} on the AMD GPU exited with {code}:\n{text}",
            exe.display()
        );
        return Ok(format!("{} ran on the AMD GPU", program.name));
    }
    let reason = text
        .lines()
        .find(|l| l.starts_with("omptarget-indirect (amdgpu) info: __tgt_rtl_init_plugin failed: "))
        .with_context(|| {
            format!("libomptarget did not load our AMDGPU plugin, or it gave no reason:\n{text}")
        })?;
    ensure!(
        code != 0 && text.contains("offloading is mandatory"),
        "without a device the mandatory offload must fail (exit {code}):\n{text}"
    );
    let why = reason.split_once("failed: ").map_or(reason, |(_, why)| why);
    let why = why.strip_prefix("no usable device: ").unwrap_or(why);
    let why = why.split_once(':').map_or(why, |(head, _)| head);
    Ok(format!("no AMD GPU: libomptarget 16 loaded the plugin, which refused with `{why}`"))
}

/// Writes the device image for `target` embedded in `program` to `dir` and returns its path.
pub fn extract_image(
    tools: &crate::tools::Tools,
    program: &Path,
    target: &OffloadTarget,
    dir: &Path,
) -> Result<PathBuf> {
    let image = dir.join(format!("image.{}", target.name));
    let _ = std::fs::remove_file(&image);
    cmd::output(Command::new(&tools.packager).arg(program).arg(target.image_selector(&image)))?;
    ensure!(image.is_file(), "{} holds no {} image", program.display(), target.name);
    Ok(image)
}
