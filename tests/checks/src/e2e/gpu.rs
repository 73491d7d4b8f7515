//! The end-to-end programs built for the GPU targets with each toolchain, their device images
//! checked (symbols, vtables, device LTO), the AMDGPU plugin's checks over clang 19's images.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};

use super::compile::{build_as, extract_image};
use super::programs::{Build, Program, PROGRAMS};
use crate::cmd;
use crate::images::{self, IMAGE_SYMBOLS, TRANSLATE};
use crate::offload::{OffloadTarget, Vendor};
use crate::toolchain::Toolchain;
use omptarget_indirect_abi::HOST_CALLS;

/// Builds every program of `toolchain` for a GPU target and checks that each device image defines
/// our function and every global exactly once, and the host-built-object programs' images their
/// vtables; with a stock runtime the unmodified programs are also built at `-O2 -foffload-lto` (the
/// translation inlined: `expect_translation_linked`) and without the pass plugin (stock clang
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
    let lto = |p: &&Program| stock && p.offload_lto_on_gpus_with(toolchain.llvm);
    let gpu_programs = || PROGRAMS.iter().filter(|p| p.built_for_gpus_with(toolchain.llvm));
    let builds: Vec<(&Program, Build)> = gpu_programs()
        .map(|p| (p, Build::O2))
        .chain(gpu_programs().filter(lto).map(|p| (p, Build::OffloadLto)))
        .collect();
    // The compiles first, side by side (each program in a folder of its own), then the checks.
    let exes = cmd::in_parallel(builds.clone(), |(program, how)| {
        build_as(workspace, toolchain, target, program, how)
            .with_context(|| format!("building {} for {} ({how:?})", program.name, target.name))
    });
    let mut offload_lto = 0;
    let (mut binding_slots, mut trapping_slots) = (0, Vec::new());
    for ((program, how), exe) in builds.into_iter().zip(exes) {
        let exe = exe?;
        offload_lto += usize::from(how == Build::OffloadLto);
        let dir = exe.parent().context("no parent")?;
        let image = extract_image(toolchain.packager(), &exe, target, dir)?;
        let data = cmd::read(&image)?;
        let what = image.display().to_string();
        if how == Build::OffloadLto {
            expect_translation_linked(&data, &what)?;
        } else {
            images::elf_summary(&data, &names)?.expect_defined_once(&what, &names)?;
        }
        if target.vendor() == Vendor::Nvidia {
            // The check of calls into host code, which the host's runtime fills (AMD GPUs have
            // none: the device library says why).
            images::elf_summary(&data, &[HOST_CALLS])?.expect_defined_once(&what, &[HOST_CALLS])?;
        }
        if program.type_bound_calls && target.vendor() == Vendor::Nvidia {
            let slots = images::nvptx_binding_slots(&data)?;
            ensure!(
                slots.resolved > 0 && slots.trapping.len() == program.trapping_binding_slots,
                "{}: the type descriptors the link kept lead to {} procedures and {} traps ({}), expected {} traps",
                image.display(),
                slots.resolved,
                slots.trapping.len(),
                slots.trapping.join(", "),
                program.trapping_binding_slots
            );
            binding_slots += slots.resolved;
            trapping_slots.extend(slots.trapping);
        }
        if program.host_vtables {
            let defined = images::defined_vtables(&data)?;
            ensure!(
                !defined.is_empty(),
                "{}: no vtable or type descriptor defined, though the host builds its objects",
                image.display()
            );
            vtables += defined.len();
        }
        if target.vendor() == Vendor::Nvidia && registers.is_none() {
            registers = Some(images::cubin_registers(tools, &image)?);
        }
        images.push(image);
    }
    let built = images.len() - offload_lto;
    let mut detail = format!(
        "{built} programs{}; each image defines {} once; {vtables} vtables and type descriptors in the images of the host-built-object programs",
        if offload_lto > 0 { format!(" (and {offload_lto} at -O2 -foffload-lto)") } else { String::new() },
        names.join(", ")
    );
    if binding_slots > 0 {
        trapping_slots.sort();
        trapping_slots.dedup();
        detail.push_str(&format!(
            "; the Fortran type descriptors the link kept lead to {binding_slots} procedures and to the traps expected \
             ({})",
            if trapping_slots.is_empty() { "none".to_string() } else { trapping_slots.join(", ") }
        ));
    }
    if stock {
        // The controls link too: stock clang with the same DeviceRTL, no plugin (those that
        // stock clang refuses to compile excepted, as in the GPU bundle).
        let controls: Vec<&str> = cmd::in_parallel(
            PROGRAMS.iter().filter(|p| p.stock_control_on_gpus_with(toolchain.llvm)).collect(),
            |p| {
                let exe = build_as(workspace, toolchain, target, p, Build::WithoutPassPlugin).with_context(
                    || format!("building {} without the pass plugin for {}", p.name, target.name),
                )?;
                extract_image(toolchain.packager(), &exe, target, exe.parent().context("no parent")?)?;
                Ok(p.name)
            },
        )
        .into_iter()
        .collect::<Result<_>>()?;
        detail.push_str(&format!("; built without the pass plugin too: {}", controls.join(", ")));
    }
    if let Some(regs) = registers {
        detail.push_str(&format!("; linked {TRANSLATE}: {regs} registers"));
    }
    if target.vendor() == Vendor::Nvidia {
        detail.push_str(&format!("; each defines {HOST_CALLS} once (the check of calls into host code)"));
        detail.push_str(&format!("; {}", expect_recorded_nvptx_layout(toolchain)?));
    }
    // Our AMDGPU plugin loads clang 19's images (code object v5); clang 22's (v6) go to libomptarget
    // 22's own plugin.
    if target.vendor() == Vendor::Amd && toolchain.llvm.runs_project_plugins() {
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
/// (`plugins/amdgpu-hsa/tests/clang_images.rs`, ignored unless asked for, as here); how many
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

/// Fails unless the release's clang writes the NVPTX data layout its record holds
/// (`Release::nvptx_data_layout`: the device library's nvptx bitcode carries the newest one).
fn expect_recorded_nvptx_layout(toolchain: &Toolchain) -> Result<String> {
    let ir = cmd::stdout(Command::new(toolchain.compiler("empty.c")).args([
        "--target=nvptx64-nvidia-cuda",
        "-S",
        "-emit-llvm",
        "-x",
        "c",
        "/dev/null",
        "-o",
        "-",
    ]))?;
    let written = ir
        .lines()
        .find_map(|l| l.strip_prefix("target datalayout = \"")?.strip_suffix('"'))
        .context("clang wrote no target datalayout for nvptx64")?;
    let recorded = toolchain.llvm.nvptx_data_layout;
    ensure!(
        written == recorded,
        "clang {} writes the NVPTX data layout {written:?}, its record holds {recorded:?}",
        toolchain.llvm.major
    );
    Ok("its NVPTX data layout is the record's".to_string())
}
