//! The end-to-end programs: one entry each, written over [`Program::DEFAULT`] so that an entry
//! shows only what is particular to it, and how each is built ([`Build`]).

use crate::llvm::Llvm;
use crate::toolchain::is_fortran;

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

impl Unit {
    /// Whether the unit has device code: not one compiled with `--offload-host-only` (a file
    /// built without offloading, whose procedures the device never gets) or `-fno-openmp` (a
    /// plain file).
    pub fn has_device_code(&self) -> bool {
        !self.flags.iter().any(|f| matches!(*f, "--offload-host-only" | "-fno-openmp"))
    }
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
    /// the program links with `-l<name>_shared` and finds through its rpath (`$ORIGIN`).
    pub shared_library: &'static [Unit],
    /// The program is not linked with its [`Program::shared_library`]: it loads it with `dlopen`
    /// from its own directory after it started.
    pub loads_shared_library: bool,
    /// Flags of the executable's link only (`-rdynamic`: a plugin host exporting its functions).
    pub link_flags: &'static [&'static str],
    /// Compile flags that leave the procedures unnamed (Fortran's `omptarget_indirect` holders):
    /// built so, the program must fail (a negative control). Empty: no such control.
    pub without_naming: &'static [&'static str],
    /// Needs the frontend plugin (inline indirect functions, vtables of classes only the host
    /// constructs): what a build without it must do (the negative control).
    pub frontend: FrontendControl,
    /// An argument that makes device code call a virtual function (or a Fortran binding's
    /// procedure) the device does not compile: the run must stop with the stub's line naming it.
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
    /// it is compiled for x86_64 only (`#if`): [`expect_gpu_linkable`](super::expect_gpu_linkable) lets these through.
    pub x86_64_only_symbols: &'static [&'static str],
    /// The executable and its shared library are stripped after linking (`llvm-strip`, as release
    /// installs do): no `.symtab` is left to find the host's vtables by name.
    pub stripped: bool,
    /// Needs the pass plugin in host compiles too (the vtable records of a stripped program, an
    /// entry per instantiation or overload of an indirect function): built with it in device
    /// compiles only, it must fail its checks and be stopped on the strict device.
    pub needs_host_pass: bool,
    /// Calls virtual functions whose vtable (the program's) names functions only a shared
    /// library's image defines: with `OMPTARGET_INDIRECT_SLOT_COPIES=0` the program image's weak
    /// trap must stop it, loose and strict.
    pub slots_in_another_image: bool,
    /// Calls type-bound procedures in target regions: only the releases whose flang compiles
    /// that build it ([`Release::flang_type_bound_calls`]).
    ///
    /// [`Release::flang_type_bound_calls`]: crate::llvm::Release::flang_type_bound_calls
    pub type_bound_calls: bool,
    /// Maps polymorphic objects whose extensions have components of their own, which only the
    /// pass plugin in host compiles maps (their dynamic type's size): built without that
    /// ([`Build::WithoutPolymorphicMaps`]), the program must fail its checks, and run with this
    /// argument (an abstract type without components) it must die in flang's default mapper.
    pub extension_components: Option<&'static str>,
    /// Binds ordinary module procedures (no `declare target`), whose device copies only the pass
    /// plugin makes: built without them ([`Build::WithoutBindingCopies`]) the program must not
    /// link or must stop at the first such call with the stub's line, loose and strict.
    pub binding_copies: bool,
    /// Binding-table slots of its type descriptors that lead to a trap in its NVPTX images (the
    /// bindings whose procedures can have no device copy): every other slot must lead to a
    /// procedure, whichever unit's copy of a descriptor the link kept.
    pub trapping_binding_slots: usize,
    /// Mistakes the program makes when given their argument: a call into host code no image
    /// pairs, which the check of such calls must stop with its line, loose and strict, and which
    /// runs the host copy (the program passes) with the check off.
    pub host_call_mistakes: &'static [HostCallMistake],
}

/// A unit compiled without OpenMP: a plain file, built without the offload flags.
const PLAIN: &[&str] = &["-fno-openmp"];

/// One call into host code a program makes when asked ([`Program::host_call_mistakes`]).
pub struct HostCallMistake {
    /// The program's argument.
    pub argument: &'static str,
    /// What the check's line says was called (`host function `f``, `a virtual function through
    /// the host's vtable of class `C``).
    pub called: &'static str,
    /// The file name of the object the line names (the executable's, a library's).
    pub object: &'static str,
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
        loads_shared_library: false,
        link_flags: &[],
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
        stripped: false,
        needs_host_pass: false,
        slots_in_another_image: false,
        type_bound_calls: false,
        extension_components: None,
        binding_copies: false,
        trapping_binding_slots: 0,
        host_call_mistakes: &[],
    };

    /// Whether it runs with `llvm`'s toolchain: every program does, Fortran ones with the
    /// releases whose flang compiles them ([`Release::flang`], and
    /// [`Program::type_bound_calls`]).
    ///
    /// [`Release::flang`]: crate::llvm::Release::flang
    pub fn runs_with(&self, llvm: Llvm) -> bool {
        !self.is_fortran() || (llvm.flang && (!self.type_bound_calls || llvm.flang_type_bound_calls))
    }

    /// Whether it is written in Fortran (built by flang).
    pub fn is_fortran(&self) -> bool {
        self.units.iter().any(|u| is_fortran(u.source))
    }

    /// Whether it is also built and run at `-O2 -foffload-lto` for GPUs with `llvm`'s toolchain:
    /// the unmodified programs of [`Program::on_gpus_with`] (flang has no `-foffload-lto`).
    pub fn offload_lto_on_gpus_with(&self, llvm: Llvm) -> bool {
        self.on_gpus_with(llvm) && self.unmodified && !self.is_fortran()
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

    /// Whether [`build_gpu`](super::build_gpu) builds it for `llvm`'s toolchain: [`Program::on_gpus_with`] or
    /// [`Program::on_pageable_gpus_with`].
    pub fn built_for_gpus_with(&self, llvm: Llvm) -> bool {
        self.on_gpus_with(llvm) || self.on_pageable_gpus_with(llvm)
    }

    /// Whether it is a GPU negative control with `llvm`'s toolchain: an unmodified program of
    /// [`Program::on_gpus_with`] that stock clang compiles (built without the pass plugin, it
    /// must fault on a GPU). Not the type-bound programs: stock flang calls its runtime for
    /// `same_type_as` and `extends_type_of`, which no GPU library defines, so it cannot link
    /// them; the GPU bundle's control of those is the run without the vtables (as for every
    /// [`Program::host_vtables`] program).
    pub fn stock_control_on_gpus_with(&self, llvm: Llvm) -> bool {
        self.on_gpus_with(llvm)
            && self.unmodified
            && self.frontend != FrontendControl::CompileFails
            && !self.type_bound_calls
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
    /// `-O2` with both plugins, the pass plugin in device compiles only: host compiles record no
    /// vtables and keep clang's entry names (the negative control of [`Program::needs_host_pass`]).
    WithoutHostPass,
    /// `-O2` with both plugins, the pass plugin's polymorphic map sizes off in host compiles
    /// (`OMPTARGET_INDIRECT_POLYMORPHIC_MAPS=0`): the negative control of
    /// [`Program::extension_components`].
    WithoutPolymorphicMaps,
    /// `-O2` with both plugins, the pass plugin's binding copies off in device compiles
    /// (`OMPTARGET_INDIRECT_BINDING_COPIES=0`): the negative control of
    /// [`Program::binding_copies`].
    WithoutBindingCopies,
    /// `-O2` by the release's clang and flang alone: no configuration file, plugin or library of
    /// the project, linked against the release's runtime only (what the release does by itself).
    Stock,
}

impl Build {
    pub(super) fn flags(self) -> &'static [&'static str] {
        match self {
            Build::O2
            | Build::WithoutPassPlugin
            | Build::WithoutNaming
            | Build::WithoutFrontendPlugin
            | Build::WithoutHostPass
            | Build::WithoutPolymorphicMaps
            | Build::WithoutBindingCopies
            | Build::Stock => &["-O2"],
            Build::O0 => &["-O0"],
            Build::OffloadLto => &["-O2", "-foffload-lto"],
        }
    }

    /// Subdirectory of the program's build directory (the `-O2` build has none).
    pub(super) fn dir(self) -> &'static str {
        match self {
            Build::O2 => "",
            Build::O0 => "O0",
            Build::OffloadLto => "offload-lto",
            Build::WithoutPassPlugin => "without-pass-plugin",
            Build::WithoutNaming => "without-naming",
            Build::WithoutFrontendPlugin => "without-frontend-plugin",
            Build::WithoutHostPass => "without-host-pass",
            Build::WithoutPolymorphicMaps => "without-polymorphic-maps",
            Build::WithoutBindingCopies => "without-binding-copies",
            Build::Stock => "stock",
        }
    }
}

/// What the programs of `class_library_main.cpp` share: host-built objects of classes with no
/// OpenMP in them, reached only through the frontend plugin.
const CLASS_LIBRARY: Program = Program {
    host_vtables: true,
    unmodified: true,
    frontend: FrontendControl::StrictStop,
    ..Program::DEFAULT
};

/// The class library as a stripped `-fvisibility=hidden` shared library with its own device image.
const SHARED_CLASS_LIBRARY: Program = Program {
    shared_library: &[Unit { source: "class_library.cpp", flags: &["-fvisibility=hidden"] }],
    stripped: true,
    needs_host_pass: true,
    // The program's own Dot and Polygon name Shape's type_info, which the library's image
    // defines (x86_64 device code has RTTI; GPU device code has none).
    x86_64_only_symbols: &["_ZTI5Shape"],
    ..CLASS_LIBRARY
};

/// The name `class_library_main.cpp` reports under, per program built from it.
const CLASS_LIBRARY_HIDDEN: &str = "-DPROGRAM_NAME=\"class_library_hidden\"";
const CLASS_LIBRARY_STRIPPED: &str = "-DPROGRAM_NAME=\"class_library_stripped\"";
const CLASS_LIBRARY_SHARED: &str = "-DPROGRAM_NAME=\"class_library_shared\"";
const CLASS_LIBRARY_DLOPEN: &[&str] = &[
    "-DPROGRAM_NAME=\"class_library_dlopen\"",
    "-DCLASS_LIBRARY_DLOPEN=\"libclass_library_dlopen_shared.so\"",
];

/// What the programs of `split_main.cpp` share: a class library split over a header and a file
/// of its own (`split.h`, `split_lib.cpp`), whose inline virtual functions call the other file's
/// out-of-line functions; each program puts the two together another way.
const SPLIT: Program = Program {
    host_vtables: true,
    unmodified: true,
    frontend: FrontendControl::StrictStop,
    trap_argument: Some("call-host-only"),
    ..Program::DEFAULT
};

/// The split library as a stripped `-fvisibility=hidden` shared library with its own device
/// image: its vtables pair with its image's copies, whichever runtime (one table per device).
const SHARED_SPLIT: Program = Program {
    shared_library: &[Unit { source: "split_lib.cpp", flags: &["-fvisibility=hidden"] }],
    stripped: true,
    needs_host_pass: true,
    // The program's own classes name Shape's type_info, which the library's image defines
    // (x86_64 device code has RTTI; GPU device code has none).
    x86_64_only_symbols: &["_ZTI5Shape"],
    ..SPLIT
};

/// The name `split_main.cpp` reports under, per program built from it.
const SPLIT_HEADER_ONLY: &[&str] = &["-DPROGRAM_NAME=\"split_header_only\"", "-DSPLIT_HEADER_ONLY"];
const SPLIT_ARCHIVE: &str = "-DPROGRAM_NAME=\"split_archive\"";
const SPLIT_HIDDEN: &str = "-DPROGRAM_NAME=\"split_hidden\"";
const SPLIT_STRIPPED: &str = "-DPROGRAM_NAME=\"split_stripped\"";
const SPLIT_SHARED: &str = "-DPROGRAM_NAME=\"split_shared\"";
const CONCURRENCY: &[&str] = &["-DCONCURRENCY_LIBRARY=\"libconcurrency_shared.so\""];

/// [`PROGRAMS`]' `concurrency` with a race of its own (its `nowait` tasks without `depend`): the
/// stress step's negative control, which must fail.
pub const CONCURRENCY_UNORDERED: Program = Program {
    name: "concurrency_unordered",
    about: "the concurrency program with its nowait tasks' depend clauses left out",
    units: &[Unit {
        source: "concurrency.c",
        flags: &["-DCONCURRENCY_LIBRARY=\"libconcurrency_unordered_shared.so\"", "-DUNORDERED_CHAINS"],
    }],
    shared_library: &[unit("concurrency_lib.c")],
    loads_shared_library: true,
    unmodified: true,
    on_gpus: false,
    ..Program::DEFAULT
};

const SPLIT_DLOPEN: &[&str] =
    &["-DPROGRAM_NAME=\"split_dlopen\"", "-DSPLIT_DLOPEN=\"libsplit_dlopen_shared.so\""];

/// What the programs of `fortran_modules.F90` share: the driver of a module library compiled
/// apart (`fortran_modules_lib.F90`), each program putting the two together another way.
const FORTRAN_MODULES: Program =
    Program { unmodified: true, without_naming: &["-DWITHOUT_NAMING"], ..Program::DEFAULT };

/// [`FORTRAN_MODULES`] with the library's type-bound procedures (flang 23 and later).
const FORTRAN_MODULES_BOUND: Program =
    Program { host_vtables: true, type_bound_calls: true, binding_copies: true, ..FORTRAN_MODULES };

const FORTRAN_LIBRARY: Unit = unit("fortran_modules_lib.F90");
const FORTRAN_LIBRARY_BOUND: Unit = Unit { source: "fortran_modules_lib.F90", flags: &["-DTYPE_BOUND"] };

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
        about: "device addresses, data, null pass unchanged",
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
                functions, per team/thread, device addresses, NULL",
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
        // typeid's comparison (type names, strcmp) and, from clang 23, its check of a null operand
        // (__cxa_bad_typeid), compiled for x86_64 only.
        x86_64_only_symbols: &["strcmp", "__cxa_bad_typeid"],
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
        name: "class_library",
        about: "frontend plugin: a class library with no OpenMP in it (pure virtual base, inline virtual functions, \
                key functions in its own unit, two dynamic bases, a class template), objects placement-new'ed by the \
                library into a mapped arena, virtual calls through base pointers in the program's one target region",
        units: &[unit("class_library_main.cpp"), unit("class_library.cpp")],
        ..CLASS_LIBRARY
    },
    Program {
        name: "class_library_hidden",
        about: "frontend plugin: the class library, every unit compiled with -fvisibility=hidden",
        units: &[
            Unit { source: "class_library_main.cpp", flags: &["-fvisibility=hidden", CLASS_LIBRARY_HIDDEN] },
            Unit { source: "class_library.cpp", flags: &["-fvisibility=hidden"] },
        ],
        ..CLASS_LIBRARY
    },
    Program {
        name: "class_library_stripped",
        about: "frontend plugin: the class library, the executable stripped after linking (no .symtab: the host's \
                vtables are found through the records its host compiles left)",
        units: &[Unit { source: "class_library_main.cpp", flags: &[CLASS_LIBRARY_STRIPPED] }, unit("class_library.cpp")],
        stripped: true,
        needs_host_pass: true,
        ..CLASS_LIBRARY
    },
    Program {
        name: "class_library_shared",
        about: "frontend plugin: the class library as a shared library with its own device image, built with \
                -fvisibility=hidden and stripped with the executable",
        units: &[Unit { source: "class_library_main.cpp", flags: &[CLASS_LIBRARY_SHARED] }],
        ..SHARED_CLASS_LIBRARY
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
        name: "class_library_dlopen",
        about: "frontend plugin: the class library as a stripped shared library with its own device image, built \
                with -fvisibility=hidden, which the program loads with dlopen before its target region",
        units: &[Unit { source: "class_library_main.cpp", flags: CLASS_LIBRARY_DLOPEN }],
        loads_shared_library: true,
        ..SHARED_CLASS_LIBRARY
    },
    Program {
        name: "split",
        about: "frontend plugin, class library split over files: inline virtual functions calling another file's \
                out-of-line functions, key functions, a pure virtual base, two bases, a virtual base, an explicitly \
                instantiated class template, a virtual member pointer, virtual destructors; two units",
        units: &[unit("split_main.cpp"), unit("split_lib.cpp")],
        ..SPLIT
    },
    Program {
        name: "split_header_only",
        about: "frontend plugin: the split class library with every definition inline in its header",
        units: &[Unit { source: "split_main.cpp", flags: SPLIT_HEADER_ONLY }],
        ..SPLIT
    },
    Program {
        name: "split_archive",
        about: "frontend plugin: the split class library's own file in a static archive",
        units: &[Unit { source: "split_main.cpp", flags: &[SPLIT_ARCHIVE] }],
        library: &[unit("split_lib.cpp")],
        ..SPLIT
    },
    Program {
        name: "split_hidden",
        about: "frontend plugin: the split class library, both units -fvisibility=hidden",
        units: &[
            Unit { source: "split_main.cpp", flags: &["-fvisibility=hidden", SPLIT_HIDDEN] },
            Unit { source: "split_lib.cpp", flags: &["-fvisibility=hidden"] },
        ],
        ..SPLIT
    },
    Program {
        name: "split_stripped",
        about: "frontend plugin: the split class library, the executable stripped after linking",
        units: &[Unit { source: "split_main.cpp", flags: &[SPLIT_STRIPPED] }, unit("split_lib.cpp")],
        stripped: true,
        needs_host_pass: true,
        ..SPLIT
    },
    Program {
        name: "split_shared",
        about: "frontend plugin: the split class library as a stripped -fvisibility=hidden shared library with its \
                own device image",
        units: &[Unit { source: "split_main.cpp", flags: &[SPLIT_SHARED] }],
        ..SHARED_SPLIT
    },
    Program {
        name: "split_dlopen",
        about: "frontend plugin: the split class library as a shared library with its own device image, loaded \
                with dlopen before the first target region",
        units: &[Unit { source: "split_main.cpp", flags: SPLIT_DLOPEN }],
        loads_shared_library: true,
        ..SHARED_SPLIT
    },
    Program {
        name: "split_derived",
        about: "frontend plugin: the program's own classes over the split class library's, a shared library with \
                its own device image: single, multiple and virtual inheritance and a class template whose \
                vtables (the program's) name the library's functions, and the library's code calling the \
                program's override",
        units: &[unit("split_derived.cpp")],
        shared_library: &[unit("split_lib.cpp")],
        trap_argument: None,
        slots_in_another_image: true,
        ..SPLIT
    },
    Program {
        name: "plugin_host",
        about: "frontend plugin: a plugin library loaded with dlopen derives its classes from the program's base, \
                whose out-of-line functions (the program's) its vtables keep and its own code calls back",
        units: &[unit("plugin_host.cpp")],
        shared_library: &[unit("plugin_lib.cpp")],
        loads_shared_library: true,
        link_flags: &["-rdynamic"],
        host_vtables: true,
        unmodified: true,
        frontend: FrontendControl::StrictStop,
        slots_in_another_image: true,
        ..Program::DEFAULT
    },
    Program {
        name: "indirect_instances",
        about: "frontend and pass plugins, host side: explicit and implicit instantiations of indirect function \
                templates (two and three of one template, a namespace's, a member template), three overloads on \
                one line, a function with internal linkage, each its own entry, called through host pointers in \
                mapped data",
        units: &[unit("indirect_instances.cpp")],
        unmodified: true,
        frontend: FrontendControl::CompileFails,
        needs_host_pass: true,
        ..Program::DEFAULT
    },
    Program {
        name: "indirect_across",
        about: "frontend and pass plugins: indirect function template instances and an inline indirect function \
                that two files define (one device image), called through the host addresses each file took",
        units: &[unit("indirect_across.cpp"), unit("indirect_across_other.cpp")],
        unmodified: true,
        frontend: FrontendControl::CompileFails,
        needs_host_pass: true,
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
        name: "concurrency",
        about: "no explicit translation (pass plugin): 16 host threads released together on every device's first \
                launch beside a 17th launching the region of a library with its own device image, dlopened before; nowait target tasks with depend \
                chains, target enter/exit data nowait, omp_target_alloc and omp_target_memcpy from several \
                threads, over every device",
        units: &[Unit { source: "concurrency.c", flags: CONCURRENCY }],
        shared_library: &[unit("concurrency_lib.c")],
        loads_shared_library: true,
        unmodified: true,
        ..Program::DEFAULT
    },
    Program {
        name: "fortran_procedures",
        about: "Fortran, no explicit translation (flang 21 to 24, pass plugin, procedures named through the \
                omptarget_indirect module): procedure pointer variables, an array of derived types with \
                procedure-pointer components in a teams loop, a pointer passed to a device procedure, \
                c_funptr and c_f_procpointer, two modules",
        units: &[unit("fortran_procedures.F90")],
        unmodified: true,
        without_naming: &["-DWITHOUT_NAMING"],
        ..Program::DEFAULT
    },
    Program {
        name: "fortran_type_bound",
        about: "Fortran type-bound procedures on polymorphic objects the host built (flang 23 and 24, pass plugin, \
                nothing named, the bindings' procedures declare target): allocate(source=), a polymorphic array \
                in a teams loop, a class pointer re-pointed between regions, three levels of extension, deferred \
                function and subroutine bindings, binding forms, select type, same_type_as, extends_type_of",
        units: &[unit("fortran_type_bound.F90")],
        unmodified: true,
        host_vtables: true,
        type_bound_calls: true,
        ..Program::DEFAULT
    },
    Program {
        name: "fortran_bindings",
        about: "Fortran type-bound procedures whose procedures are ordinary module procedures (flang 23 and 24, no \
                declare target, the module compiled apart): three levels below an abstract type, a polymorphic \
                array and a section of it in teams loops, a re-pointed class pointer, an extension's own \
                component, an implicit map, binding forms; `unbound`: a binding that cannot have a device copy",
        units: &[unit("fortran_bindings_lib.F90"), unit("fortran_bindings.F90")],
        unmodified: true,
        host_vtables: true,
        type_bound_calls: true,
        trap_argument: Some("unbound"),
        binding_copies: true,
        trapping_binding_slots: 1,
        ..Program::DEFAULT
    },
    Program {
        name: "fortran_bindings_archive",
        about: "Fortran type-bound procedures without declare target (flang 23 and later): the module in a static archive",
        units: &[Unit { source: "fortran_bindings.F90", flags: &["-DPROGRAM_NAME=\"fortran_bindings_archive\""] }],
        library: &[unit("fortran_bindings_lib.F90")],
        unmodified: true,
        host_vtables: true,
        type_bound_calls: true,
        binding_copies: true,
        trapping_binding_slots: 1,
        ..Program::DEFAULT
    },
    Program {
        name: "fortran_unoffloaded",
        about: "Fortran type-bound procedures beside a module compiled without offloading (flang 23 and later): the \
                program's own module's bindings (no declare target) run on the device; `unoffloaded`: a binding of \
                the other module's type called on the device stops with the line that names it and the fix",
        units: &[
            Unit { source: "fortran_unoffloaded_lib.F90", flags: &["--offload-host-only"] },
            unit("fortran_unoffloaded.F90"),
        ],
        unmodified: true,
        host_vtables: true,
        type_bound_calls: true,
        trap_argument: Some("unoffloaded"),
        binding_copies: true,
        trapping_binding_slots: 1,
        ..Program::DEFAULT
    },
    Program {
        name: "fortran_extensions",
        about: "Fortran extensions with components of their own, mapped through class(...) objects the host built \
                (flang 23 and later): map(to:) and map(tofrom:) of a circle and of a sphere (an extension of an extension), a \
                class pointer re-pointed between regions, target enter/exit data, a routine's region over its dummy \
                argument, an implicit map, a polymorphic array and a section of it, a derived type's class(shape) \
                components and a class(shape) array component, an abstract type without components",
        units: &[unit("fortran_extensions.F90")],
        unmodified: true,
        host_vtables: true,
        type_bound_calls: true,
        extension_components: Some("empty"),
        ..Program::DEFAULT
    },
    Program {
        name: "fortran_modules",
        about: "Fortran modules compiled apart (flang 21 to 24): a module library's file and its driver's, a \
                procedure-pointer component the driver points at the library's procedures, called in the \
                library's own target region and in the driver's",
        units: &[FORTRAN_LIBRARY, Unit { source: "fortran_modules.F90", flags: &["-DPROGRAM_NAME=\"fortran_modules\""] }],
        ..FORTRAN_MODULES
    },
    Program {
        name: "fortran_modules_archive",
        about: "Fortran modules compiled apart: the module library in a static archive",
        units: &[Unit { source: "fortran_modules.F90", flags: &["-DPROGRAM_NAME=\"fortran_modules_archive\""] }],
        library: &[FORTRAN_LIBRARY],
        ..FORTRAN_MODULES
    },
    Program {
        name: "fortran_modules_shared",
        about: "Fortran modules compiled apart: the module library a shared library with its own device image",
        units: &[Unit { source: "fortran_modules.F90", flags: &["-DPROGRAM_NAME=\"fortran_modules_shared\""] }],
        shared_library: &[FORTRAN_LIBRARY],
        // flang's shared libraries with GPU images are untried.
        on_gpus: false,
        ..FORTRAN_MODULES
    },
    Program {
        name: "fortran_modules_bound",
        about: "Fortran modules compiled apart (flang 23 and later): the module library's type-bound procedures too, on a \
                polymorphic object the driver allocated, in the driver's region and the library's",
        units: &[
            FORTRAN_LIBRARY_BOUND,
            Unit { source: "fortran_modules.F90", flags: &["-DTYPE_BOUND", "-DPROGRAM_NAME=\"fortran_modules_bound\""] },
        ],
        ..FORTRAN_MODULES_BOUND
    },
    Program {
        name: "fortran_modules_bound_archive",
        about: "Fortran modules compiled apart (flang 23 and later), type-bound procedures: the library in a static archive",
        units: &[Unit {
            source: "fortran_modules.F90",
            flags: &["-DTYPE_BOUND", "-DPROGRAM_NAME=\"fortran_modules_bound_archive\""],
        }],
        library: &[FORTRAN_LIBRARY_BOUND],
        ..FORTRAN_MODULES_BOUND
    },
    Program {
        name: "fortran_modules_bound_shared",
        about: "Fortran modules compiled apart (flang 23 and later), type-bound procedures: the library a shared library \
                with its own device image",
        units: &[Unit {
            source: "fortran_modules.F90",
            flags: &["-DTYPE_BOUND", "-DPROGRAM_NAME=\"fortran_modules_bound_shared\""],
        }],
        shared_library: &[FORTRAN_LIBRARY_BOUND],
        // As fortran_modules_shared's.
        on_gpus: false,
        ..FORTRAN_MODULES_BOUND
    },
    Program {
        name: "host_calls",
        about: "calls into host code no device image pairs (pass plugin): a function not declared indirect, a \
                plain C file's function, a virtual function of a class library compiled without offloading; each \
                stops with the line that names it",
        units: &[unit("host_calls.cpp"), Unit { source: "host_calls_plain.c", flags: PLAIN }],
        shared_library: &[Unit { source: "host_calls_shapes.cpp", flags: PLAIN }],
        unmodified: true,
        host_vtables: true,
        on_gpus: true,
        host_call_mistakes: &[
            HostCallMistake { argument: "not-indirect", called: "host function `triple(double)`", object: "host_calls" },
            HostCallMistake { argument: "plain-c", called: "host function `quadruple`", object: "host_calls" },
            HostCallMistake {
                argument: "class-library",
                called: "a virtual function through the host's vtable of class `(anonymous namespace)::Square`",
                object: "libhost_calls_shared.so",
            },
        ],
        ..Program::DEFAULT
    },
];
