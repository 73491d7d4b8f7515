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
    fn compiler(self) -> Llvm {
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

/// The stock-parity corpus (`tests/corpus/`) and the demo's `examples/scene.cpp`, which CI builds
/// with the reference release alone, built for the bundle's GPU as their user builds them:
/// `corpus/<name>` the project's build with `<name>.expected`, what stock's x86_64 build prints
/// on the x86_64 device; `corpus-stock/<name>` stock's build with `<name>.expect`, `prints` where
/// stock's x86_64 build prints the same on the strict device and `faults` where the strict device
/// stops it (what a GPU then does); `demo/scene` and `demo-control/scene` (stock: must fault). A
/// program whose GPU build fails, stock's or the project's, is not carried (CI's corpus table
/// shows which; `docs/gpu-bundle.md` why). Returns the carried executables, relative to `root`.
fn corpus_and_demo(
    workspace: &Path,
    toolchain: &Toolchain,
    target: &OffloadTarget,
    root: &Path,
) -> Result<Vec<PathBuf>> {
    use corpus::Build::{Project, Stock};
    let work = workspace.join("target/gpu-bundle-build/corpus");
    let x86 = OffloadTarget::x86_64();
    let builds: Vec<(&str, &OffloadTarget, corpus::Build)> = corpus::PROGRAMS
        .iter()
        .flat_map(|name| [(*name, target, Project), (*name, target, Stock), (*name, &x86, Stock)])
        .collect();
    let built = cmd::in_parallel(builds, |(name, t, how)| {
        corpus::build(workspace, toolchain, t, name, &work.join(&t.name).join(name), how)
    });
    let mut carried = Vec::new();
    for dir in ["corpus", "corpus-stock", "demo", "demo-control"] {
        fs::create_dir_all(root.join(dir))?;
    }
    for (name, builds) in corpus::PROGRAMS.iter().zip(built.chunks(3)) {
        let [project, stock, on_x86] = builds else { bail!("fewer corpus builds than programs") };
        let (Ok(project), Ok(stock)) = (project, stock) else { continue };
        let on_x86 = on_x86.as_ref().map_err(|err| anyhow::anyhow!("{err:#}"))?;
        let expected = corpus::run(toolchain, on_x86, false)?;
        let strict = Command::new(on_x86)
            .env_remove("LD_PRELOAD")
            .env_remove("LIBOMPTARGET_INFO")
            .envs(toolchain.run_env())
            .env("LD_PRELOAD", toolchain.dist().strict_lib())
            .output()?;
        let expect = if strict.status.success() && String::from_utf8_lossy(&strict.stdout) == expected {
            "prints"
        } else if String::from_utf8_lossy(&strict.stderr).contains("omptarget-indirect strict: ") {
            "faults"
        } else {
            bail!("{name}: stock's x86_64 build neither prints its output on the strict device nor is stopped there")
        };
        copy(project, &root.join("corpus").join(name))?;
        fs::write(root.join("corpus").join(format!("{name}.expected")), &expected)?;
        copy(stock, &root.join("corpus-stock").join(name))?;
        fs::write(root.join("corpus-stock").join(format!("{name}.expect")), format!("{expect}\n"))?;
        carried.extend([PathBuf::from("corpus").join(name), PathBuf::from("corpus-stock").join(name)]);
    }
    ensure!(!carried.is_empty(), "no corpus program builds for {}", target.name);
    let scene = workspace.join("examples/scene.cpp");
    for (dir, how) in [("demo", Project), ("demo-control", Stock)] {
        corpus::compile(toolchain, target, &scene, &root.join(dir).join("scene"), how)
            .with_context(|| format!("examples/scene.cpp for the bundle's {dir}"))?;
        carried.push(PathBuf::from(dir).join("scene"));
    }
    Ok(carried)
}

/// The list of the `e2e/` programs whose objects the host builds, one name a line: `run-stock.sh`
/// runs each without the vtables in the table (`OMPTARGET_INDIRECT_VTABLES=0`), which must fault.
const VTABLES_OFF_CONTROLS: &str = "e2e/vtables-off.controls";

/// The `e2e/` programs with a trap argument, `<name> <argument>` a line: `run-stock.sh` runs each
/// with it, which must stop with the stub's line.
const TRAP_ARGUMENTS: &str = "e2e/trap.arguments";

/// The folders that travel as they are; every other folder of a part holds executables (and the
/// shared libraries and expected outputs beside them), which `pack_programs` packs.
const UNPACKED_FOLDERS: [&str; 5] = ["bin", "lib", "kernels", "images", "debs"];

/// Packs the part's executables into `programs.tar.xz` (ELF executables shrink about twenty
/// times: what lets one call carry every program), which `run.sh` unpacks into its cache
/// (`unpack_programs` in `common.sh`), and checks that it holds every one of `checked` that
/// lived in those folders.
fn pack_programs(root: &Path, checked: &[PathBuf]) -> Result<()> {
    let mut folders: Vec<String> = Vec::new();
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() && !UNPACKED_FOLDERS.contains(&name.as_str()) {
            folders.push(name);
        }
    }
    folders.sort();
    let archive = root.join("programs.tar.xz");
    cmd::output(
        Command::new(requirements::program("tar"))
            .args(["--sort=name", "-cJf"])
            .arg(&archive)
            .arg("-C")
            .arg(root)
            .args(&folders),
    )?;
    let listed = cmd::stdout(Command::new(requirements::program("tar")).arg("-tJf").arg(&archive))?;
    let listed: Vec<&str> = listed.lines().collect();
    for file in checked.iter().filter(|f| is_packed(f)) {
        ensure!(listed.contains(&&*file.to_string_lossy()), "programs.tar.xz lacks {}", file.display());
    }
    for folder in &folders {
        fs::remove_dir_all(root.join(folder))?;
    }
    Ok(())
}

/// Whether `path` is an ELF file (an executable or a library, not a list or an expected output).
fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    fs::File::open(path).and_then(|mut file| file.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

/// Whether `file` (relative to a part) travels in `programs.tar.xz`.
fn is_packed(file: &Path) -> bool {
    let mut parts = file.components();
    match (parts.next(), parts.next()) {
        (Some(folder), Some(_)) => !UNPACKED_FOLDERS.iter().any(|f| folder.as_os_str() == *f),
        _ => false,
    }
}

/// The libraries the release's stock libomptarget loads (`ldd`, in the release's root when it
/// lives in one), as that system names them (`/usr/lib/...`): libomptarget first.
fn runtime_libraries(tools: &Tools, llvm: Llvm) -> Result<Vec<PathBuf>> {
    let release = tools.of(llvm);
    let libomptarget = in_release_root(tools, llvm, &release.libomptarget);
    let mut libraries = vec![libomptarget.clone()];
    libraries.extend(linked_libraries(tools, llvm, &libomptarget)?);
    Ok(libraries)
}

/// The path `path` (of this machine) has in the root `llvm` lives in, if it lives in one: the
/// root's `/usr` is the release's own.
fn in_release_root(tools: &Tools, llvm: Llvm, path: &Path) -> PathBuf {
    let Some(root) = release_root(tools, llvm) else { return path.to_path_buf() };
    path.strip_prefix(&root).map(|inside| Path::new("/").join(inside)).unwrap_or_else(|_| path.to_path_buf())
}

/// The root `llvm` lives in (beside its `enter`), if any.
fn release_root(tools: &Tools, llvm: Llvm) -> Option<PathBuf> {
    tools.of(llvm).enter.as_ref().and_then(|enter| enter.parent()).map(|dir| dir.join("root"))
}

/// What `ldd` (run as the release runs its programs) says `file` loads: each library's path,
/// the loader included.
fn linked_libraries(tools: &Tools, llvm: Llvm, file: &Path) -> Result<Vec<PathBuf>> {
    let mut ldd = tools.of(llvm).run_command(Path::new("ldd"));
    ldd.arg(file);
    let listed = cmd::stdout(&mut ldd)?;
    let mut found = Vec::new();
    for line in listed.lines() {
        let line = line.trim();
        ensure!(!line.contains("not found"), "{}: {line}", file.display());
        let path = match line.split_once("=>") {
            Some((_, resolved)) => resolved.trim().split(' ').next().unwrap_or_default(),
            None => line.split(' ').next().unwrap_or_default(),
        };
        if path.starts_with('/') {
            found.push(PathBuf::from(path));
        }
    }
    Ok(found)
}

/// `runtime.tar.xz` of a part that carries its loader: every library its libomptarget and its
/// programs load, the C library and the loader (`ld-linux-x86-64.so.2`) included, flat, under
/// the names they are loaded by; and `part.env`. Packed once per set of libraries
/// (`target/gpu-bundle-runtimes/`): xz takes a minute.
fn private_runtime(workspace: &Path, tools: &Tools, part: Part, root: &Path) -> Result<()> {
    let Part::Stock(llvm) = part else { bail!("part {} carries no runtime of its own", part.name()) };
    let release_root = release_root(tools, llvm).context("a release in a root of its own")?;
    let mut libraries = runtime_libraries(tools, llvm)?;
    // Every carried executable and library: the program folders, the benches, the memcheck
    // control and ours in lib/.
    let folders = part.programs().into_iter().map(|(dir, _, _)| dir);
    for dir in folders.chain(["bench", "memcheck-control", "lib"]) {
        let Ok(entries) = fs::read_dir(root.join(dir)) else { continue };
        for entry in entries {
            let path = entry?.path();
            // Executables and libraries (a list of controls, an expected output lie beside them).
            if is_elf(&path) {
                libraries.extend(linked_libraries(tools, llvm, &path)?);
            }
        }
    }
    let carried = |path: &Path| !path.starts_with(root) && !path.starts_with(workspace.join("target"));
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for library in libraries.iter().filter(|l| carried(l)) {
        let name = library.file_name().context("a library's name")?.to_string_lossy().into_owned();
        if files.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let inside = release_root.join(library.strip_prefix("/").unwrap_or(library));
        let file = fs::canonicalize(&inside).with_context(|| format!("{} in the root", library.display()))?;
        files.push((name, file));
    }
    files.sort();
    ensure!(
        files.iter().any(|(n, _)| n == "ld-linux-x86-64.so.2") && files.iter().any(|(n, _)| n == "libc.so.6"),
        "the runtime of part {} lacks its loader or C library: {files:?}",
        part.name()
    );
    let manifest: String = files
        .iter()
        .map(|(name, file)| Ok(format!("{name} {} {}\n", file.display(), fs::metadata(file)?.len())))
        .collect::<Result<String>>()?;
    let cache = workspace.join("target/gpu-bundle-runtimes").join(part.name());
    let packed = cache.join("runtime.tar.xz");
    if fs::read_to_string(cache.join("manifest")).ok().as_deref() != Some(manifest.as_str())
        || !packed.is_file()
    {
        let staging = cache.join("lib");
        if cache.exists() {
            fs::remove_dir_all(&cache)?;
        }
        fs::create_dir_all(&staging)?;
        for (name, file) in &files {
            copy(file, &staging.join(name))?;
        }
        let partial = cache.join("runtime.tar.xz.partial");
        cmd::output(
            Command::new(requirements::program("tar"))
                .env("XZ_OPT", "-6 -T0")
                .arg("-cJf")
                .arg(&partial)
                .arg("-C")
                .arg(&staging)
                .args(files.iter().map(|(name, _)| name)),
        )?;
        fs::rename(&partial, &packed)?;
        fs::remove_dir_all(&staging)?;
        fs::write(cache.join("manifest"), &manifest)?;
    }
    copy(&packed, &root.join("runtime.tar.xz"))?;
    write_part_env(root, llvm, tools, "private", "")
}

/// `part.env` of a stock part (`run-stock.sh` reads it): the release, its libomptarget's file
/// name, how its runtime travels, and for packages the paths in them of what it loads.
fn write_part_env(root: &Path, llvm: Llvm, tools: &Tools, runtime: &str, libraries: &str) -> Result<()> {
    let libomptarget = tools
        .of(llvm)
        .libomptarget
        .file_name()
        .context("libomptarget's name")?
        .to_string_lossy()
        .into_owned();
    fs::write(
        root.join("part.env"),
        format!(
            "RELEASE={}\nLIBOMPTARGET={libomptarget}\nRUNTIME={runtime}\nRUNTIME_LIBRARIES=\"{libraries}\"\n",
            llvm.major
        ),
    )?;
    Ok(())
}

/// Unpacks the part's `runtime.tar.xz` and lists, through its loader, what libomptarget and every
/// carried program load: nothing may be `not found`.
fn loads_with_carried_loader(workspace: &Path, root: &Path, expected: &[PathBuf]) -> Result<()> {
    let unpacked = workspace.join("target/gpu-bundle-runtimes/check");
    if unpacked.exists() {
        fs::remove_dir_all(&unpacked)?;
    }
    fs::create_dir_all(&unpacked)?;
    cmd::output(
        Command::new(requirements::program("tar"))
            .arg("-xJf")
            .arg(root.join("runtime.tar.xz"))
            .arg("-C")
            .arg(&unpacked),
    )?;
    let env = fs::read_to_string(root.join("part.env"))?;
    let libomptarget = env
        .lines()
        .find_map(|l| l.strip_prefix("LIBOMPTARGET="))
        .context("part.env names no LIBOMPTARGET")?;
    let mut programs = vec![unpacked.join(libomptarget)];
    programs.extend(expected.iter().filter(|f| is_packed(f)).map(|f| root.join(f)).filter(|f| is_elf(f)));
    let library_path = format!("{}:{}", root.join("lib").display(), unpacked.display());
    for program in &programs {
        let listed = cmd::stdout(
            Command::new(unpacked.join("ld-linux-x86-64.so.2"))
                .args(["--library-path", &library_path, "--list"])
                .arg(program),
        )?;
        ensure!(!listed.contains("not found"), "{} through the carried loader:\n{listed}", program.display());
    }
    fs::remove_dir_all(&unpacked)?;
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// The kernel modules: the gpu-kernels crate's bitcode linked with our device runtime's (as
/// clang links a program with `-lomptarget-indirect`), once optimised together (device LTO: the
/// translation inlined) and once not (a call); and its LLVM variant linked with `lookup`, by that
/// LLVM's tools. `kernels/llvm_lookup.release` names that LLVM for the benchmark's report.
fn kernels(workspace: &Path, tools: &Tools, dist: &Dist, lookup: &LlvmLookup, dir: &Path) -> Result<()> {
    let work = workspace.join("target/device/gpu-kernels");
    for (features, name) in [(&[][..], "ours.bc"), (&["llvm-lookup"][..], "llvm.bc")] {
        DeviceBuild {
            package: "gpu-kernels",
            features,
            target: packaging::target_record::NVIDIA.rust_target,
            cpu: Some(BUNDLE_SM),
            emits: &[("llvm-bc", name)],
        }
        .run(workspace, &work)?;
    }
    let linked = work.join("ours_linked.bc");
    cmd::output(
        Command::new(&tools.llvm_link)
            .arg(work.join("ours.bc"))
            .arg(dist.nvptx_dir(BUNDLE_SM).join("device_rtl.bc"))
            .arg(device_environment(&work)?)
            .arg("-o")
            .arg(&linked),
    )?;
    let inlined = work.join("ours_inlined.bc");
    cmd::output(Command::new(&tools.opt).arg("-O3").arg(&linked).arg("-o").arg(&inlined))?;
    let llvm_work = work.join(lookup.release.to_lowercase().replace(' ', ""));
    let llvm = lookup.bitcode(BUNDLE_SM, &llvm_work)?;
    let llvm_linked = llvm_work.join("llvm_linked.bc");
    cmd::output(
        Command::new(lookup.llvm_link).arg(work.join("llvm.bc")).arg(&llvm).arg("-o").arg(&llvm_linked),
    )?;
    let llvm_inlined = llvm_work.join("llvm_inlined.bc");
    cmd::output(Command::new(lookup.opt).arg("-O3").arg(&llvm_linked).arg("-o").arg(&llvm_inlined))?;
    fs::write(dir.join("llvm_lookup.release"), format!("{}\n", lookup.release))?;

    for (module, bitcode, llc, translation_is_call) in [
        ("lookup_inlined", &inlined, tools.llc.as_path(), false),
        ("lookup_called", &linked, tools.llc.as_path(), true),
        ("llvm_lookup", &llvm_inlined, lookup.llc, false),
    ] {
        let ptx = dir.join(format!("{module}.ptx"));
        packaging::tools::compile_ptx(llc, bitcode, BUNDLE_SM, &ptx)?;
        let text = fs::read_to_string(&ptx)?;
        if let Some(ext) = text.lines().find(|l| l.starts_with(".extern")) {
            bail!("{}: unresolved `{ext}`", ptx.display());
        }
        ensure!(!text.contains("trap;"), "{}: a trap (panic path) remains", ptx.display());
        // ptxas syntax puts the callee on the line after `call.uni (retval0),`.
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let calls = words.contains(&format!("(retval0), {}, (", images::TRANSLATE));
        ensure!(
            calls == translation_is_call,
            "{}: the translation is {} a call, expected the opposite",
            ptx.display(),
            if calls { "" } else { "not" }
        );
        cmd::output(
            Command::new(tools.ptxas())
                .arg(format!("-arch={BUNDLE_SM}"))
                .arg("-o")
                .arg(dir.join(format!("{module}.{BUNDLE_SM}.cubin")))
                .arg(&ptx),
        )?;
    }
    Ok(())
}

/// The plugin test's images: `probe.c` as is and with functions of its own (name, define).
const PROBE_IMAGES: [(&str, Option<&str>); 2] = [("probe", None), ("probe_second", Some("-DPROBE_SECOND"))];

/// `bench/virtual_arrays_gpu`: virtual calls over arrays of host-built objects on the GPU
/// (`bench/programs/virtual_arrays_gpu.cpp`), built by `toolchain`: its kernels with the pass plugin,
/// without it (device-built objects), and without it through LLVM's lookup; `run.sh --bench`
/// runs it.
fn array_bench(workspace: &Path, toolchain: &Toolchain, dir: &Path) -> Result<()> {
    let units: [BenchUnit; 5] = [
        ("virtual_arrays_gpu.cpp", "main.o", true, &[]),
        ("virtual_sweeps_gpu.cpp", "plain.o", false, &["-DVARIANT=plain"]),
        ("virtual_sweeps_gpu.cpp", "translated.o", true, &["-DVARIANT=translated"]),
        ("virtual_sweeps_gpu.cpp", "llvm.o", false, &["-DVARIANT=llvm", "-DLLVM_LOOKUP"]),
        ("virtual_sweeps_gpu.cpp", "uncached.o", true, &["-DVARIANT=uncached"]),
    ];
    gpu_bench(workspace, toolchain, &units, &dir.join("virtual_arrays_gpu"))
}

/// One unit of a GPU benchmark: (source in `bench/programs/`, object, with the pass plugin,
/// defines).
type BenchUnit = (&'static str, &'static str, bool, &'static [&'static str]);

/// Compiles `units` for sm_90 with `toolchain` (each object in a folder of the executable's name
/// and the release) and links them into `exe` as a program built with the configuration file is.
fn gpu_bench(workspace: &Path, toolchain: &Toolchain, units: &[BenchUnit], exe: &Path) -> Result<()> {
    let target = OffloadTarget::nvptx(BUNDLE_SM);
    let name = exe.file_name().context("no name")?.to_string_lossy();
    let work = workspace.join("target/device/gpu-bench").join(format!("{name}-llvm{}", toolchain.llvm.major));
    fs::create_dir_all(&work)?;
    let sources = workspace.join("bench/programs");
    let objects = units
        .iter()
        .map(|&(source, object, plugin, defines)| {
            bench::virtual_calls::compile_object(
                toolchain,
                &target,
                &work.join(object),
                &sources.join(source),
                plugin,
                defines,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    link_as_configured(toolchain, &target, &objects, exe)
}

/// `bench/translation_gpu`: calls through host function pointers on the GPU
/// (`bench/programs/translation_gpu.c`), built as a user builds a program with `toolchain` (its
/// configuration file), with one kernel compiled with the pass plugin and one without it calling
/// LLVM's lookup; `run.sh --bench` runs it with and without the index.
fn translation_bench(workspace: &Path, toolchain: &Toolchain, dir: &Path) -> Result<()> {
    let units: [BenchUnit; 3] = [
        ("translation_gpu.c", "main.o", true, &[]),
        ("translation_gpu_calls.c", "translated.o", true, &["-DVARIANT=translated"]),
        ("translation_gpu_calls.c", "llvm.o", false, &["-DVARIANT=llvm", "-DLLVM_LOOKUP"]),
    ];
    gpu_bench(workspace, toolchain, &units, &dir.join("translation_gpu"))?;
    strip(toolchain.tools(), &dir.join("translation_gpu"))
}

/// Strips the host symbols of a carried executable that needs none of them at run time (no
/// vtables the registration library looks up by name): the part must fit its device call.
fn strip(tools: &Tools, exe: &Path) -> Result<()> {
    cmd::output(Command::new(&tools.llvm_strip).arg("--strip-all").arg(exe))?;
    Ok(())
}

/// `memcheck-control/out_of_bounds`: `gpu-tests/bundle/out_of_bounds.c` built by `toolchain` as a
/// user builds it. Its kernel writes one element past a device allocation, which faults nowhere
/// but under compute-sanitizer: the memcheck step must fail on it.
fn memcheck_control(workspace: &Path, toolchain: &Toolchain, root: &Path) -> Result<()> {
    let target = OffloadTarget::nvptx(BUNDLE_SM);
    let work =
        workspace.join("target/device/gpu-memcheck-control").join(format!("llvm{}", toolchain.llvm.major));
    fs::create_dir_all(&work)?;
    let dir = root.join("memcheck-control");
    fs::create_dir_all(&dir)?;
    let object = bench::virtual_calls::compile_object(
        toolchain,
        &target,
        &work.join("out_of_bounds.o"),
        &workspace.join("gpu-tests/bundle/out_of_bounds.c"),
        true,
        &[],
    )?;
    link_as_configured(toolchain, &target, &[object], &dir.join("out_of_bounds"))
}

/// Links `objects` into `exe` as a program built with `toolchain`'s configuration file is (a
/// stock runtime's programs need its registration library).
fn link_as_configured(
    toolchain: &Toolchain,
    target: &OffloadTarget,
    objects: &[PathBuf],
    exe: &Path,
) -> Result<()> {
    cmd::output(
        Command::new(toolchain.compiler("main.cpp"))
            .args(toolchain.offload_args(target))
            .args(toolchain.pass_plugin_args())
            .args(objects)
            .args(toolchain.link_args_with_config())
            .args(toolchain.device_link_args(target))
            .arg("-o")
            .arg(exe),
    )?;
    Ok(())
}

/// `gpu-tests/images/probe.c` built like an end-to-end program (with `define`, if any); its sm_90
/// image and the names clang gave its indirect functions' globals and its kernel (they carry a
/// per-file id) as `<name>.sm_90.cubin` and `<name>.entries`.
fn probe_image(
    workspace: &Path,
    tools: &Tools,
    dist: &Dist,
    dir: &Path,
    name: &str,
    define: Option<&str>,
) -> Result<()> {
    let target = OffloadTarget::nvptx(BUNDLE_SM);
    let work = workspace.join("target/device/gpu-probes").join(name);
    fs::create_dir_all(&work)?;
    let exe = work.join("probe");
    let toolchain = Toolchain::project_plugins(tools, dist);
    cmd::output(
        Command::new(&tools.clang)
            .args(toolchain.offload_args(&target))
            .args(["-O2", "-Wall", "-Werror"])
            .args(define)
            .arg(workspace.join("gpu-tests/images/probe.c"))
            .args(toolchain.link_args())
            .arg("-o")
            .arg(&exe),
    )?;
    let image = e2e::extract_image(&tools.packager, &exe, &target, &work)?;
    let data = cmd::read(&image)?;
    let names = images::offload_symbols(&data)?;
    ensure!(
        names.indirect.len() == 2 && names.kernels.len() == 1,
        "{}: expected 2 indirect globals and 1 kernel, found {:?} and {:?}",
        image.display(),
        names.indirect,
        names.kernels
    );
    let mut manifest = String::new();
    for name in &names.indirect {
        manifest.push_str(&format!("indirect {name}\n"));
    }
    manifest.push_str(&format!("kernel {}\n", names.kernels[0]));
    fs::write(dir.join(format!("{name}.entries")), manifest)?;
    copy(&image, &dir.join(format!("{name}.{BUNDLE_SM}.cubin")))
}

/// Every file the part needs is there (`carried`: what [`corpus_and_demo`] added), the script
/// parses, and its memcheck verdict holds on recorded reports. Returns the files checked.
fn self_check(workspace: &Path, root: &Path, part: Part, carried: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut expected: Vec<PathBuf> = vec![
        "run.sh".into(),
        "common.sh".into(),
        "bin/gpu-test".into(),
        "bench/virtual_arrays_gpu".into(),
        "kernels/llvm_lookup.release".into(),
    ];
    expected.extend(part.libraries().iter().map(|l| PathBuf::from("lib").join(l)));
    for module in ["lookup_inlined", "lookup_called", "llvm_lookup"] {
        expected.push(format!("kernels/{module}.ptx").into());
        expected.push(format!("kernels/{module}.{BUNDLE_SM}.cubin").into());
    }
    if let Part::Stock(_) = part {
        expected.push(VTABLES_OFF_CONTROLS.into());
        expected.push(TRAP_ARGUMENTS.into());
        expected.push("bench/translation_gpu".into());
        expected.push("memcheck-control/out_of_bounds".into());
        expected.push("part.env".into());
    }
    if part.carries_loader() {
        expected.push("runtime.tar.xz".into());
    }
    if part == Part::ProjectPlugins {
        for (name, _) in PROBE_IMAGES {
            expected.push(format!("images/{name}.{BUNDLE_SM}.cubin").into());
            expected.push(format!("images/{name}.entries").into());
        }
    }
    for (dir, _, programs) in part.programs() {
        ensure!(!programs.is_empty(), "the bundle's {dir} would hold no program");
        expected.extend(programs.iter().map(|p| PathBuf::from(dir).join(p.name)));
    }
    expected.extend(carried.iter().cloned());
    for file in &expected {
        ensure!(root.join(file).is_file(), "the bundle lacks {}", file.display());
    }
    for cubin in expected.iter().filter(|f| f.extension().is_some_and(|e| e == "cubin")) {
        let elf = images::elf_summary(&cmd::read(&root.join(cubin))?, &[])?;
        ensure!(elf.machine == 190 && elf.flags & 0xff == 90, "{}: not an sm_90 cubin", cubin.display());
    }
    if part.carries_loader() {
        loads_with_carried_loader(workspace, root, &expected)?;
    }
    for script in ["run.sh", "common.sh", "report.sh"] {
        cmd::output(Command::new(requirements::program("bash")).arg("-n").arg(root.join(script)))?;
    }
    // The memcheck step's verdict, on reports shaped as compute-sanitizer prints them.
    let verdict = cmd::stdout(
        Command::new(requirements::program("bash"))
            .arg(workspace.join("gpu-tests/bundle/memcheck-verdict-test.sh")),
    )?;
    ensure!(verdict.contains(" 0 failed"), "the memcheck verdict's own test: {verdict}");
    Ok(expected)
}

fn size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() { size(&entry.path())? } else { meta.len() };
    }
    Ok(total)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
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
