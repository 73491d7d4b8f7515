//! The kernel modules and the GPU benchmarks a part carries (`kernels/`, `bench/`).

use super::*;

/// The kernel modules: the gpu-kernels crate's bitcode linked with our device runtime's (as
/// clang links a program with `-lomptarget-indirect`), once optimised together (device LTO: the
/// translation inlined) and once not (a call); and its LLVM variant linked with `lookup`, by that
/// LLVM's tools. `kernels/llvm_lookup.release` names that LLVM for the benchmark's report.
pub(crate) fn kernels(
    workspace: &Path,
    tools: &Tools,
    dist: &Dist,
    lookup: &LlvmLookup,
    dir: &Path,
) -> Result<()> {
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
        if let Some(function) = trap_outside_the_host_call_check(&text) {
            bail!("{}: a trap (panic path) remains in {function}", ptx.display());
        }
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

/// `bench/virtual_arrays_gpu`: virtual calls over arrays of host-built objects on the GPU
/// (`bench/programs/virtual_arrays_gpu.cpp`), built by `toolchain`: its kernels with the pass plugin,
/// without it (device-built objects), and without it through LLVM's lookup; `run.sh --bench`
/// runs it.
pub(crate) fn array_bench(workspace: &Path, toolchain: &Toolchain, dir: &Path) -> Result<()> {
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
pub(crate) type BenchUnit = (&'static str, &'static str, bool, &'static [&'static str]);

/// Compiles `units` for sm_90 with `toolchain` (each object in a folder of the executable's name
/// and the release) and links them into `exe` as a program built with the configuration file is.
pub(crate) fn gpu_bench(
    workspace: &Path,
    toolchain: &Toolchain,
    units: &[BenchUnit],
    exe: &Path,
) -> Result<()> {
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
pub(crate) fn translation_bench(workspace: &Path, toolchain: &Toolchain, dir: &Path) -> Result<()> {
    let units: [BenchUnit; 3] = [
        ("translation_gpu.c", "main.o", true, &[]),
        ("translation_gpu_calls.c", "translated.o", true, &["-DVARIANT=translated"]),
        ("translation_gpu_calls.c", "llvm.o", false, &["-DVARIANT=llvm", "-DLLVM_LOOKUP"]),
    ];
    gpu_bench(workspace, toolchain, &units, &dir.join("translation_gpu"))?;
    strip(toolchain.tools(), &dir.join("translation_gpu"))
}

/// The first PTX function other than the device library's check of calls into host code
/// (`device-rtl/src/host_calls.rs`, whose trap stops a kernel that calls into host code) that
/// holds a `trap`: any other trap is a panic path the lookup must not have.
fn trap_outside_the_host_call_check(ptx: &str) -> Option<String> {
    let mut function = String::new();
    for line in ptx.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.iter().any(|w| matches!(*w, ".func" | ".entry")) {
            let named = words
                .iter()
                .rev()
                .find(|w| !w.starts_with(".") && !w.starts_with('(') && !w.starts_with("//"));
            function = named.map_or("", |w| w.trim_end_matches('(')).to_string();
        }
        let in_check = function.contains("host_calls") && function.contains("untranslated");
        if line.contains("trap;") && !in_check {
            return Some(if function.is_empty() { "the module".to_string() } else { function });
        }
    }
    None
}

#[cfg(test)]
mod trap_tests {
    use super::trap_outside_the_host_call_check;

    #[test]
    fn only_the_host_call_checks_trap_is_allowed() {
        let check = ".func  (.param .b64 func_retval0) _ZN10device_rtl10host_calls12untranslated17hE(\n{\n\ttrap; exit;\n}\n";
        let lookup =
            ".visible .func  (.param .b64 func_retval0) __kmpc_target_translate_fptr(\n{\n\tret;\n}\n";
        assert_eq!(trap_outside_the_host_call_check(&format!("{lookup}{check}")), None);
        let panicking = ".visible .entry bench_ours_latency(\n{\n\ttrap;\n}\n";
        assert_eq!(
            trap_outside_the_host_call_check(&format!("{check}{panicking}")).as_deref(),
            Some("bench_ours_latency")
        );
    }
}
