//! `cargo xtask gpu-test`: builds the self-contained GPU bundle in `target/gpu-bundle/` and runs
//! it when this machine has an NVIDIA GPU.
//!
//! ```text
//! run.sh                      the bundle's driver (gpu-tests/bundle/run.sh)
//! bin/gpu-test                lookup test, plugin C-ABI test, benchmark (gpu-tests/runner)
//! lib/libomptarget.rtl.cuda.so
//! kernels/<module>.{ptx,sm_90.cubin}   lookup_inlined, lookup_called, llvm_lookup
//! images/probe{,_second}.{sm_90.cubin,entries}   the plugin test's two clang 19 images and their symbols
//! e2e/<program>               the end-to-end programs built for sm_90
//! e2e-controls/<program>      the unmodified ones built without the pass plugin: must fail
//! bench/virtual_arrays_gpu     virtual calls over arrays of host-built objects (run.sh --bench)
//! debs/*.deb                  LLVM 16's runtime and what libLLVM-16 links (Debian 12)
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use crate::cmd;
use crate::device_build::DeviceBuild;
use crate::dist::Dist;
use crate::e2e;
use crate::images;
use crate::offload::OffloadTarget;
use crate::requirements;
use crate::toolchain::Toolchain;
use crate::tools::Tools;

/// The GPU architecture of the bundle's cubins (H100/H200); other GPUs JIT the PTX.
pub const BUNDLE_SM: &str = "sm_90";
/// The issue's limit on the bundle's size.
const MAX_BYTES: u64 = 60 << 20;
/// LLVM 19's indirect-call lookup in its DeviceRTL bitcode.
pub use omptarget_indirect_abi::LLVM_LOOKUP;
/// The device environment LLVM's lookup and our fallback read LLVM's table from, defined as
/// LLVM 19's DeviceRTL defines it (`DeviceEnvironmentTy`, device-rtl/src/environment.rs) for the
/// kernel modules, which link no DeviceRTL.
const DEVICE_ENVIRONMENT_LL: &str = r#"target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.DeviceEnvironmentTy = type { i32, i32, i32, i32, i64, i64, i64, i64 }
@__omp_rtl_device_environment = protected addrspace(4) externally_initialized global %struct.DeviceEnvironmentTy zeroinitializer, align 8
"#;

/// Builds the bundle from `dist` (built with sm_90), checks it, and returns its folder and a
/// summary line.
pub fn build(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<(PathBuf, String)> {
    let root = workspace.join("target/gpu-bundle");
    if root.exists() {
        fs::remove_dir_all(&root).with_context(|| format!("cannot clear {}", root.display()))?;
    }
    for dir in
        ["bin", "lib", "kernels", "images", "e2e", "e2e-controls", "e2e-controls-frontend", "bench", "debs"]
    {
        fs::create_dir_all(root.join(dir))?;
    }
    kernels(workspace, tools, dist, &root.join("kernels"))?;
    for (name, define) in PROBE_IMAGES {
        probe_image(workspace, tools, dist, &root.join("images"), name, define)?;
    }
    let target = OffloadTarget::nvptx(BUNDLE_SM);
    for program in e2e::PROGRAMS.iter().filter(|p| p.on_gpus) {
        let exe = e2e::build(workspace, &Toolchain::llvm19(tools, dist), &target, program)?;
        copy(&exe, &root.join("e2e").join(program.name))?;
    }
    for (dir, how, programs) in controls() {
        for program in programs {
            let exe = e2e::build_as(workspace, &Toolchain::llvm19(tools, dist), &target, program, how)?;
            copy(&exe, &root.join(dir).join(program.name))?;
        }
    }
    array_bench(workspace, tools, dist, &root.join("bench"))?;
    cmd::status(cmd::cargo().current_dir(workspace).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "gpu-tests",
    ]))?;
    copy(&workspace.join("target/release/gpu-test"), &root.join("bin/gpu-test"))?;
    copy(&dist.lib_dir().join("libomptarget.rtl.cuda.so"), &root.join("lib/libomptarget.rtl.cuda.so"))?;
    copy(&workspace.join("gpu-tests/bundle/run.sh"), &root.join("run.sh"))?;
    cmd::output(
        Command::new(requirements::program("bash")).arg(workspace.join("scripts/fetch-bundle-debs.sh")),
    )?;
    let debs = workspace.join("target/tools/debs/bundle");
    for entry in fs::read_dir(&debs)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "deb") {
            copy(&path, &root.join("debs").join(path.file_name().context("no name")?))?;
        }
    }
    let summary = self_check(&root)?;
    Ok((root, summary))
}

/// The negative controls of the bundle's programs, by folder: the unmodified programs built
/// without the pass plugin (those that compile so), and those that need the frontend plugin
/// built without it. Each must fault on the GPU (`run.sh`).
fn controls() -> [(&'static str, e2e::Build, Vec<&'static e2e::Program>); 2] {
    let on_gpus = |keep: fn(&e2e::Program) -> bool| -> Vec<&'static e2e::Program> {
        e2e::PROGRAMS.iter().filter(|p| p.on_gpus && p.unmodified && keep(p)).collect()
    };
    [
        (
            "e2e-controls",
            e2e::Build::WithoutPassPlugin,
            on_gpus(|p| p.frontend != e2e::FrontendControl::CompileFails),
        ),
        (
            "e2e-controls-frontend",
            e2e::Build::WithoutFrontendPlugin,
            on_gpus(|p| p.frontend == e2e::FrontendControl::StrictStop),
        ),
    ]
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// The kernel modules: the gpu-kernels crate's bitcode linked with our device runtime's (as
/// clang links a program with `-lomptarget-indirect`), once optimised together (device LTO: the
/// translation inlined) and once not (a call); and its LLVM variant linked with LLVM 19's lookup.
fn kernels(workspace: &Path, tools: &Tools, dist: &Dist, dir: &Path) -> Result<()> {
    let work = workspace.join("target/device/gpu-kernels");
    for (features, name) in [(&[][..], "ours.bc"), (&["llvm-lookup"][..], "llvm.bc")] {
        DeviceBuild {
            package: "gpu-kernels",
            features,
            target: "nvptx64-nvidia-cuda",
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
    let llvm = llvm_lookup_bitcode(tools, BUNDLE_SM, &work)?;
    let llvm_linked = work.join("llvm_linked.bc");
    cmd::output(
        Command::new(&tools.llvm_link).arg(work.join("llvm.bc")).arg(&llvm).arg("-o").arg(&llvm_linked),
    )?;
    let llvm_inlined = work.join("llvm_inlined.bc");
    cmd::output(Command::new(&tools.opt).arg("-O3").arg(&llvm_linked).arg("-o").arg(&llvm_inlined))?;

    for (module, bitcode, translation_is_call) in [
        ("lookup_inlined", &inlined, false),
        ("lookup_called", &linked, true),
        ("llvm_lookup", &llvm_inlined, false),
    ] {
        let ptx = dir.join(format!("{module}.ptx"));
        tools.compile_ptx(bitcode, BUNDLE_SM, &ptx)?;
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

/// LLVM 19's `__llvm_omp_indirect_call_lookup` for an `sm_NN` or a `gfxNNN`, extracted from
/// Debian's DeviceRTL bitcode; for NVIDIA with a definition of the device environment it reads
/// (ptxas needs one). Returns the bitcode's path.
pub fn llvm_lookup_bitcode(tools: &Tools, arch: &str, work: &Path) -> Result<PathBuf> {
    let rtl = tools.llvm_device_rtl(arch);
    ensure!(rtl.is_file(), "{} is missing (Debian package libomp-19-dev)", rtl.display());
    fs::create_dir_all(work)?;
    let extracted = work.join("llvm_lookup_only.bc");
    cmd::output(
        Command::new(&tools.llvm_extract)
            .arg(format!("--func={LLVM_LOOKUP}"))
            .arg(&rtl)
            .arg("-o")
            .arg(&extracted),
    )?;
    if arch.starts_with("gfx") {
        return Ok(extracted);
    }
    let out = work.join("llvm_lookup.bc");
    cmd::output(
        Command::new(&tools.llvm_link).arg(&extracted).arg(device_environment(work)?).arg("-o").arg(&out),
    )?;
    Ok(out)
}

/// Writes [`DEVICE_ENVIRONMENT_LL`] to `work` and returns its path.
fn device_environment(work: &Path) -> Result<PathBuf> {
    let environment = work.join("device_environment.ll");
    fs::write(&environment, DEVICE_ENVIRONMENT_LL)?;
    Ok(environment)
}

/// The plugin test's images: `probe.c` as is and with functions of its own (name, define).
const PROBE_IMAGES: [(&str, Option<&str>); 2] = [("probe", None), ("probe_second", Some("-DPROBE_SECOND"))];

/// `gpu-tests/images/probe.c` built like an end-to-end program (with `define`, if any); its sm_90
/// image and the names clang gave its indirect functions' globals and its kernel (they carry a
/// per-file id) as `<name>.sm_90.cubin` and `<name>.entries`.
/// `bench/virtual_arrays_gpu`: virtual calls over arrays of host-built objects on the GPU
/// (`tests/bench/virtual_arrays_gpu.cpp`), its kernels built with the pass plugin, without it
/// (device-built objects), and without it through LLVM's lookup; `run.sh --bench` runs it.
fn array_bench(workspace: &Path, tools: &Tools, dist: &Dist, dir: &Path) -> Result<()> {
    let target = OffloadTarget::nvptx(BUNDLE_SM);
    let work = workspace.join("target/device/gpu-array-bench");
    fs::create_dir_all(&work)?;
    let toolchain = Toolchain::llvm19(tools, dist);
    let sources = workspace.join("tests/bench");
    let compile = |source: &str, object: &str, plugin: bool, defines: &[&str]| {
        crate::virtual_bench::compile_object(
            &toolchain,
            &target,
            &work.join(object),
            &sources.join(source),
            plugin,
            defines,
        )
    };
    let objects = [
        compile("virtual_arrays_gpu.cpp", "main.o", true, &[])?,
        compile("virtual_sweeps_gpu.cpp", "plain.o", false, &["-DVARIANT=plain"])?,
        compile("virtual_sweeps_gpu.cpp", "translated.o", true, &["-DVARIANT=translated"])?,
        compile("virtual_sweeps_gpu.cpp", "llvm.o", false, &["-DVARIANT=llvm", "-DLLVM_LOOKUP"])?,
        compile("virtual_sweeps_gpu.cpp", "uncached.o", true, &["-DVARIANT=uncached"])?,
    ];
    let exe = dir.join("virtual_arrays_gpu");
    cmd::output(
        Command::new(&tools.clangxx)
            .args(toolchain.offload_args(&target))
            .args(&objects)
            .args(toolchain.link_args())
            .arg("-o")
            .arg(&exe),
    )?;
    Ok(())
}

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
    let toolchain = Toolchain::llvm19(tools, dist);
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
    let image = e2e::extract_image(tools, &exe, &target, &work)?;
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

/// Every file the bundle needs is there, the script parses, and the whole fits the limit.
fn self_check(root: &Path) -> Result<String> {
    let mut expected: Vec<PathBuf> =
        vec!["run.sh".into(), "bin/gpu-test".into(), "lib/libomptarget.rtl.cuda.so".into()];
    for module in ["lookup_inlined", "lookup_called", "llvm_lookup"] {
        expected.push(format!("kernels/{module}.ptx").into());
        expected.push(format!("kernels/{module}.{BUNDLE_SM}.cubin").into());
    }
    for (name, _) in PROBE_IMAGES {
        expected.push(format!("images/{name}.{BUNDLE_SM}.cubin").into());
        expected.push(format!("images/{name}.entries").into());
    }
    expected.extend(e2e::PROGRAMS.iter().filter(|p| p.on_gpus).map(|p| PathBuf::from("e2e").join(p.name)));
    for (dir, _, programs) in controls() {
        expected.extend(programs.iter().map(|p| PathBuf::from(dir).join(p.name)));
    }
    for file in &expected {
        ensure!(root.join(file).is_file(), "the bundle lacks {}", file.display());
    }
    for cubin in expected.iter().filter(|f| f.extension().is_some_and(|e| e == "cubin")) {
        let elf = images::elf_summary(&cmd::read(&root.join(cubin))?, &[])?;
        ensure!(elf.machine == 190 && elf.flags & 0xff == 90, "{}: not an sm_90 cubin", cubin.display());
    }
    cmd::output(Command::new(requirements::program("bash")).arg("-n").arg(root.join("run.sh")))?;
    let bytes = size(root)?;
    ensure!(
        bytes <= MAX_BYTES,
        "the bundle is {:.1} MiB, over the {} MiB limit",
        mib(bytes),
        MAX_BYTES >> 20
    );
    let summary = format!("{} ({:.1} MiB, {} files checked)", root.display(), mib(bytes), expected.len());
    println!("gpu bundle: {summary}");
    Ok(summary)
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
    let default_out = root.with_file_name("gpu-bundle-results");
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
