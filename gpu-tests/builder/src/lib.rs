//! `cargo xtask gpu-test`: builds the self-contained GPU bundle, one part per offload runtime
//! ([`Part`]), each running alone and fitting one 64 MiB device call, and runs them when this
//! machine has an NVIDIA GPU.
//!
//! ```text
//! target/gpu-bundle/          LLVM 16: clang 19 images through libomptarget 16 and our CUDA plugin
//!   run.sh, common.sh           the part's driver (gpu-tests/bundle/run.sh) and what every part shares
//!   report.sh                   the table of part x step from every part's steps.tsv
//!   bin/gpu-test                lookup test, plugin C-ABI test, benchmark (gpu-tests/runner)
//!   lib/libomptarget.rtl.cuda.so
//!   kernels/<module>.{ptx,sm_90.cubin}, llvm_lookup.release   lookup_inlined, lookup_called, llvm_lookup
//!   images/probe{,_second}.{sm_90.cubin,entries}   the plugin test's two clang 19 images and their symbols
//!   e2e/<program>               the end-to-end programs built for sm_90
//!   e2e-controls/<program>      the unmodified ones built without the pass plugin: must fail
//!   e2e-controls-frontend/<program>  those that need the frontend plugin built without it: must fail
//!   bench/virtual_arrays_gpu    virtual calls over arrays of host-built objects (run.sh --bench)
//!   debs/*.deb                  LLVM 16's runtime and what libLLVM-16 links (Debian 12)
//! target/gpu-bundle-llvmN/    LLVM N (21, 22, 23): clang N images through its stock libomptarget
//!   run.sh, common.sh, report.sh   gpu-tests/bundle/run-stock.sh, the shared functions, the report
//!   part.env                    the release, its libomptarget, how its runtime travels
//!   bin/gpu-test, kernels/      the benchmark, its LLVM module linked with LLVM N's lookup
//!   lib/libomptarget-indirect-register.so   the only library of ours the runs load
//!   e2e/, e2e-offload-lto/      clang N -O2 and -O2 -foffload-lto images (LLVM N's DeviceRTL)
//!   e2e-pageable-memory/        `requires unified_shared_memory` programs: run where the GPU reads
//!                               pageable host memory
//!   e2e-controls/, e2e-controls-frontend/   stock clang N, and without the frontend plugin
//!   bench/virtual_arrays_gpu    built by clang N
//!   bench/translation_gpu       calls through host function pointers, ours vs LLVM's lookup (--bench)
//!   memcheck-control/out_of_bounds   a bad access only compute-sanitizer sees: memcheck must fail
//!   debs/*.deb                  a Debian 12 release: its liboffload, libllvm, libomp and what they link
//!   runtime.tar.xz              a Debian sid release: every library its runtime and programs load,
//!                               sid's C library and loader included (programs run through it)
//! ```
//!
//! [`build`] puts a part together here; `programs` builds what it carries beside the end-to-end
//! programs and packs them, `runtime` what a stock part's runtime loads, `kernels` the kernel
//! modules and GPU benchmarks, `self_check` checks the result.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use checks::corpus;
use checks::e2e;
use checks::images;
use checks::llvm_lookup::{device_environment, LlvmLookup};
use packaging::cmd;
use packaging::device_build::DeviceBuild;
use packaging::dist::Dist;
use packaging::llvm::{DeviceRtl, PROJECT_PLUGINS_RUNTIME};
use packaging::offload::OffloadTarget;
use packaging::requirements;
use packaging::toolchain::{Llvm, Toolchain};
use packaging::tools::Tools;

mod kernels;
mod programs;
mod runtime;
mod self_check;

use kernels::*;
use programs::*;
use runtime::*;
use self_check::*;

/// The GPU architecture of the bundle's cubins (H100/H200); other GPUs JIT the PTX.
pub const BUNDLE_SM: &str = "sm_90";
/// The issue's limit on a part's size (a device call carries 64 MiB, the tree included).
const MAX_BYTES: u64 = 60 << 20;
/// A part of the GPU bundle: a folder that runs alone (its own `run.sh`, runtime and programs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The release that runs on LLVM 16's libomptarget and our CUDA plugin (clang 19); the
    /// device lookup and the plugin's C ABI tested directly.
    ProjectPlugins,
    /// A release's images through its own stock libomptarget (its CUDA plugin), with
    /// `libomptarget-indirect-register.so` alone of ours. A Debian 12 release carries its runtime
    /// as Debian packages (`debs/`); a Debian sid one, built for a newer C library, carries the
    /// libraries its runtime and programs load with that C library and its loader
    /// (`runtime.tar.xz`), and its programs run through that loader.
    Stock(Llvm),
}

impl Part {
    /// Every part, in the order they run: the project's plugins, then each release with a GPU
    /// DeviceRTL that runs on its stock runtime.
    pub fn all() -> Vec<Part> {
        std::iter::once(Part::ProjectPlugins)
            .chain(
                Llvm::all()
                    .filter(|l| !l.runs_project_plugins() && l.device_rtl != DeviceRtl::None)
                    .map(Part::Stock),
            )
            .collect()
    }

    /// Its folder under `target/`.
    pub fn dir(self, workspace: &Path) -> PathBuf {
        workspace.join("target").join(match self {
            Part::ProjectPlugins => "gpu-bundle".to_string(),
            Part::Stock(llvm) => format!("gpu-bundle-llvm{}", llvm.major),
        })
    }

    /// `llvm<N>`, N the major version of the runtime it carries: the argument of
    /// `scripts/fetch-bundle-debs.sh`, and `--part`'s.
    pub fn name(self) -> String {
        match self {
            Part::ProjectPlugins => {
                format!("llvm{}", PROJECT_PLUGINS_RUNTIME.trim_start_matches("libomptarget-"))
            }
            Part::Stock(llvm) => format!("llvm{}", llvm.major),
        }
    }

    /// The part `name` ([`Part::name`]) names.
    pub fn parse(name: &str) -> Result<Part> {
        let all = Part::all();
        all.iter().copied().find(|p| p.name() == name).with_context(|| {
            let names: Vec<String> = all.iter().map(|p| p.name()).collect();
            format!("no GPU bundle part {name:?}: expected {}", names.join(", "))
        })
    }

    /// The driver in `gpu-tests/bundle/`, copied into the part as `run.sh`.
    fn script(self) -> &'static str {
        match self {
            Part::ProjectPlugins => "run.sh",
            Part::Stock(_) => "run-stock.sh",
        }
    }

    /// The clang release whose images it runs.
    pub fn compiler(self) -> Llvm {
        match self {
            Part::ProjectPlugins => {
                Llvm::all().find(|l| l.runs_project_plugins()).expect("a release on LLVM 16's runtime")
            }
            Part::Stock(llvm) => llvm,
        }
    }

    /// Whether it carries the corpus and the demo: the reference release's part (CI builds
    /// them with that release alone).
    fn runs_corpus_and_demo(self) -> bool {
        self == Part::Stock(Llvm::reference())
    }

    /// Whether it carries its runtime with the C library and loader it was built for.
    fn carries_loader(self) -> bool {
        matches!(self, Part::Stock(llvm) if llvm.root.is_some())
    }

    /// The toolchain of [`Part::compiler`].
    fn toolchain<'a>(self, tools: &'a Tools, dist: &'a Dist) -> Toolchain<'a> {
        Toolchain::new(self.compiler(), tools, dist)
    }

    /// The LLVM whose own lookup the benchmark's `llvm_lookup` module links.
    fn llvm_lookup(self, tools: &Tools) -> LlvmLookup<'_> {
        LlvmLookup::of(tools, self.compiler(), BUNDLE_SM)
    }

    /// The folders of its end-to-end executables, each with its build and its programs.
    fn programs(self) -> Vec<(&'static str, e2e::Build, Vec<&'static e2e::Program>)> {
        let llvm = self.compiler();
        let select = |keep: &dyn Fn(&e2e::Program) -> bool| -> Vec<&'static e2e::Program> {
            e2e::PROGRAMS.iter().filter(|p| keep(p)).collect()
        };
        let mut folders = vec![("e2e", e2e::Build::O2, select(&|p| p.on_gpus_with(llvm)))];
        if let Part::Stock(_) = self {
            folders.push((
                "e2e-offload-lto",
                e2e::Build::OffloadLto,
                select(&|p| p.offload_lto_on_gpus_with(llvm)),
            ));
            // Run only where the GPU reads pageable host memory (run-stock.sh asks gpu-test).
            folders.push(("e2e-pageable-memory", e2e::Build::O2, select(&|p| p.on_pageable_gpus_with(llvm))));
        }
        // The negative controls: the unmodified programs built without the pass plugin (those
        // that compile so), and those that need the frontend plugin built without it. Each must
        // fault on the GPU (`run.sh`).
        folders.push((
            "e2e-controls",
            e2e::Build::WithoutPassPlugin,
            select(&|p| p.stock_control_on_gpus_with(llvm)),
        ));
        folders.push((
            "e2e-controls-frontend",
            e2e::Build::WithoutFrontendPlugin,
            select(&|p| {
                p.on_gpus_with(llvm) && p.unmodified && p.frontend == e2e::FrontendControl::StrictStop
            }),
        ));
        folders
    }

    /// The libraries of ours it carries in `lib/`: the only ones its runs may load.
    fn libraries(self) -> &'static [&'static str] {
        match self {
            Part::ProjectPlugins => &["libomptarget.rtl.cuda.so"],
            Part::Stock(_) => &["libomptarget-indirect-register.so"],
        }
    }
}

/// Builds `part` of the bundle from `dist` (built with sm_90), checks it, and returns its folder
/// and a summary line.
pub fn build(workspace: &Path, tools: &Tools, dist: &Dist, part: Part) -> Result<(PathBuf, String)> {
    let root = part.dir(workspace);
    if root.exists() {
        fs::remove_dir_all(&root).with_context(|| format!("cannot clear {}", root.display()))?;
    }
    for dir in ["bin", "lib", "kernels", "bench", "debs"] {
        fs::create_dir_all(root.join(dir))?;
    }
    let lookup = part.llvm_lookup(tools);
    kernels(workspace, tools, dist, &lookup, &root.join("kernels"))?;
    if part == Part::ProjectPlugins {
        fs::create_dir_all(root.join("images"))?;
        for (name, define) in PROBE_IMAGES {
            probe_image(workspace, tools, dist, &root.join("images"), name, define)?;
        }
    }
    let toolchain = part.toolchain(tools, dist);
    let target = OffloadTarget::nvptx(BUNDLE_SM);
    for (dir, how, programs) in part.programs() {
        fs::create_dir_all(root.join(dir))?;
        for program in programs {
            let exe = e2e::build_as(workspace, &toolchain, &target, program, how)
                .with_context(|| format!("building {} for the bundle's {dir}", program.name))?;
            copy(&exe, &root.join(dir).join(program.name))?;
            if program.is_fortran() {
                // flang links its host runtime statically; its symbols are not needed to run.
                strip(tools, &root.join(dir).join(program.name))?;
            }
            // Its rpath is `$ORIGIN`: the library goes beside it.
            if let Some(library) = e2e::shared_library_of(program, &exe) {
                copy(&library, &root.join(dir).join(library.file_name().context("no name")?))?;
            }
            // Its calls into host code, each with the report it must stop with (`common.sh`:
            // run_host_call_folder): argument, what is called, its object.
            if how == e2e::Build::O2 && !program.host_call_mistakes.is_empty() {
                let lines: String = program
                    .host_call_mistakes
                    .iter()
                    .map(|m| format!("{}\t{}\t{}\n", m.argument, m.called, m.object))
                    .collect();
                fs::write(root.join(dir).join(format!("{}.host-calls", program.name)), lines)?;
            }
        }
    }
    let mut carried = Vec::new();
    if let Part::Stock(_) = part {
        let e2e: Vec<&e2e::Program> = part
            .programs()
            .into_iter()
            .filter(|(dir, _, _)| *dir == "e2e")
            .flat_map(|(_, _, programs)| programs)
            .collect();
        // The controls of the registration library's vtable words: each program whose objects
        // the host builds, run without them (OMPTARGET_INDIRECT_VTABLES=0), must fault.
        let host_built: Vec<&str> = e2e.iter().filter(|p| p.host_vtables).map(|p| p.name).collect();
        fs::write(root.join(VTABLES_OFF_CONTROLS), host_built.join("\n") + "\n")?;
        // The programs' trap arguments: device code calls what has no device copy, and the stub
        // must stop the kernel with its line (CUDA's `__assertfail` prints it).
        let traps: Vec<String> = e2e
            .iter()
            .filter_map(|p| p.trap_argument.map(|argument| format!("{} {argument}", p.name)))
            .collect();
        fs::write(root.join(TRAP_ARGUMENTS), traps.join("\n") + "\n")?;
    }
    if part.runs_corpus_and_demo() {
        carried = corpus_and_demo(workspace, &toolchain, &target, &root)?;
    }
    array_bench(workspace, &toolchain, &root.join("bench"))?;
    if let Part::Stock(_) = part {
        translation_bench(workspace, &toolchain, &root.join("bench"))?;
        memcheck_control(workspace, &toolchain, &root)?;
    }
    cmd::status(cmd::cargo().current_dir(workspace).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "gpu-tests",
    ]))?;
    copy(&workspace.join("target/release/gpu-test"), &root.join("bin/gpu-test"))?;
    strip(tools, &root.join("bin/gpu-test"))?;
    for library in part.libraries() {
        copy(&dist.lib_dir().join(library), &root.join("lib").join(library))?;
    }
    copy(&workspace.join("gpu-tests/bundle").join(part.script()), &root.join("run.sh"))?;
    copy(&workspace.join("gpu-tests/bundle/common.sh"), &root.join("common.sh"))?;
    copy(&workspace.join("gpu-tests/bundle/report.sh"), &root.join("report.sh"))?;
    if part.carries_loader() {
        fs::remove_dir(root.join("debs"))?;
        private_runtime(workspace, tools, part, &root)?;
    } else {
        let debs = PathBuf::from(
            cmd::stdout(
                Command::new(requirements::program("bash"))
                    .arg(workspace.join("scripts/fetch-bundle-debs.sh"))
                    .arg(part.name()),
            )?
            .trim(),
        );
        for entry in fs::read_dir(&debs)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "deb") {
                copy(&path, &root.join("debs").join(path.file_name().context("no name")?))?;
            }
        }
        if let Part::Stock(llvm) = part {
            let libraries = runtime_libraries(tools, llvm)?;
            // The release's own libraries (libomptarget, libLLVM, the libomp it runs with), by the
            // paths the packages hold them at; what else it loads comes from the system, or from
            // the packages where the system lacks it (use_runtime).
            let mut in_packages: Vec<String> = Vec::new();
            for library in &libraries {
                let file = fs::canonicalize(library)?.to_string_lossy().into_owned();
                let name = library.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let own = file.starts_with("/usr/lib/llvm-") || name.starts_with("libLLVM");
                if own && !in_packages.contains(&file) {
                    in_packages.push(file);
                }
            }
            let in_packages: Vec<&str> = in_packages.iter().map(|f| f.trim_start_matches('/')).collect();
            write_part_env(&root, llvm, tools, "debs", &in_packages.join(" "))?;
        }
    }
    let checked = self_check(workspace, &root, part, &carried)?;
    pack_programs(&root, &checked)?;
    let bytes = size(&root)?;
    ensure!(
        bytes <= MAX_BYTES,
        "the bundle is {:.1} MiB, over the {} MiB limit",
        mib(bytes),
        MAX_BYTES >> 20
    );
    let summary = format!("{} ({:.1} MiB, {} files checked)", root.display(), mib(bytes), checked.len());
    println!("gpu bundle: {summary}");
    Ok((root, summary))
}

/// Runs the bundle here, echoing its output. Without a GPU it reports "built, not run" and
/// succeeds, unless `require_gpu`. Returns the bundle's last line.
pub fn run(root: &Path, require_gpu: bool, bench: bool, out: Option<&Path>) -> Result<String> {
    use std::io::BufRead;
    let mut script = Command::new(requirements::program("bash"));
    script.arg(root.join("run.sh"));
    if require_gpu {
        script.arg("--require-gpu");
    }
    if bench {
        script.arg("--bench");
    }
    // Results go beside the bundle, never into it: it must stay small enough to carry.
    let mut default_out = root.as_os_str().to_owned();
    default_out.push("-results");
    let default_out = PathBuf::from(default_out);
    script.arg("--out").arg(out.unwrap_or(&default_out));
    let line = cmd::describe(&script);
    let mut child = script
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{line}`"))?;
    let mut last = String::new();
    for text in std::io::BufReader::new(child.stdout.take().context("no stdout")?).lines() {
        let text = text?;
        println!("{text}");
        last = text;
    }
    let status = child.wait()?;
    ensure!(status.success(), "`{line}` failed ({status}): {last}");
    let bytes = size(root)?;
    ensure!(
        bytes <= MAX_BYTES,
        "after its run the bundle is {:.1} MiB, over the {} MiB limit: run.sh wrote into it",
        mib(bytes),
        MAX_BYTES >> 20
    );
    Ok(last)
}
