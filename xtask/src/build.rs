//! `cargo xtask build`: the device runtime for every architecture and the dist tree.
//!
//! ```text
//! target/dist/lib/libomptarget-indirect.a                 host object + embedded device images
//! target/dist/device/x86_64/libdevice_rtl.a, device_rtl.bc
//! target/dist/device/nvptx64/<sm>/device_rtl.{bc,ptx,cubin}
//! target/dist/device/amdgcn/<gfx>/device_rtl.{bc,o}
//! target/dist/lib/libomptarget.rtl.{x86_64,cuda,amdgpu}.so  the plugins
//! target/dist/lib/libomptarget-indirect-pass.so          the LLVM 19 pass plugin for clang-19
//! target/dist/lib/libomptarget-indirect-pass-llvm22.so   the LLVM 22 pass plugin for clang-22
//! target/dist/lib/libomptarget-indirect-frontend-llvmNN.so the clang frontend plugin of release NN
//! target/dist/share/omptarget-indirect/clang-NN.cfg      `clang-NN --config=` file that loads it
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};

use checks::images;
use harness::device_build::DeviceBuild;
use omptarget_indirect_abi::DEVICE_ENVIRONMENT;

use crate::cmd;
use crate::dist::{Archs, Dist, FORTRAN_MODULE_SOURCE, PASS_PLUGIN, PLUGINS, REGISTER, STRICT};
use crate::llvm::Llvm;
use crate::offload::OffloadTarget;
use crate::tools::Tools;

/// Rejects names that are not of the `sm_NN` / `gfxNNN` form before any work starts.
pub fn validate(archs: &Archs) -> Result<()> {
    for sm in &archs.sms {
        let digits = sm.strip_prefix("sm_").unwrap_or("");
        if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
            bail!("--sm {sm}: expected a name like sm_90");
        }
    }
    for gfx in &archs.gfxs {
        if images::amdgpu_mach(gfx).is_none() {
            bail!("--gfx {gfx}: unknown AMDGPU processor (known: {})", images::known_gfxs());
        }
    }
    Ok(())
}

/// Builds everything `Archs` asks for and writes the dist tree. Prints the time of each part.
pub fn build(workspace: &Path, tools: &Tools, archs: &Archs) -> Result<Dist> {
    validate(archs)?;
    let dist = Dist::new(workspace);
    let started = Instant::now();
    let mut images = Vec::new();

    for sm in &archs.sms {
        let t = Instant::now();
        let dir = dist.nvptx_dir(sm);
        DeviceBuild {
            package: "device-rtl",
            features: &["panic-handler"],
            target: "nvptx64-nvidia-cuda",
            cpu: Some(sm),
            emits: &[("llvm-bc", "device_rtl.bc")],
        }
        .run(workspace, &dir)?;
        constant_device_environment(tools, &dir.join("device_rtl.bc"))?;
        tools.compile_ptx(&dir.join("device_rtl.bc"), sm, &dir.join("device_rtl.ptx"))?;
        cmd::output(
            Command::new(tools.ptxas())
                .arg(format!("-arch={sm}"))
                .arg("-c")
                .arg("-o")
                .arg(dir.join("device_rtl.cubin"))
                .arg(dir.join("device_rtl.ptx")),
        )?;
        images.push(OffloadTarget::nvptx(sm).image_selector(&dir.join("device_rtl.bc")));
        println!("built nvptx64 {sm} in {:.1} s", t.elapsed().as_secs_f64());
    }

    for gfx in &archs.gfxs {
        let t = Instant::now();
        let dir = dist.amdgcn_dir(gfx);
        DeviceBuild {
            package: "device-rtl",
            features: &["panic-handler"],
            target: "amdgcn-amd-amdhsa",
            cpu: Some(gfx),
            emits: &[("llvm-bc", "device_rtl.bc"), ("obj", "device_rtl.o")],
        }
        .run(workspace, &dir)?;
        images.push(OffloadTarget::amdgcn(gfx).image_selector(&dir.join("device_rtl.bc")));
        println!("built amdgcn {gfx} in {:.1} s", t.elapsed().as_secs_f64());
    }

    let t = Instant::now();
    let x86 = dist.x86_64_dir();
    DeviceBuild {
        package: "device-rtl",
        features: &["panic-handler", "flang-kernels"],
        target: "x86_64-unknown-linux-gnu",
        cpu: None,
        emits: &[("llvm-bc", "device_rtl.bc"), ("obj", "device_rtl.o")],
    }
    .run(workspace, &x86)?;
    // The host's copy (the host fallback of a target region translates too) has no kernel
    // runtime: its `omp_is_initial_device` would answer 0 for the host program.
    DeviceBuild {
        package: "device-rtl",
        features: &["panic-handler"],
        target: "x86_64-unknown-linux-gnu",
        cpu: None,
        emits: &[("obj", "device_rtl_host.o")],
    }
    .run(workspace, &x86)?;
    archive(tools, &dist.x86_64_archive(), &[x86.join("device_rtl_host.o")])?;
    // "generic": the offload linker matches it to the host-offload target whatever its arch. A
    // native object, not bitcode: clang-linker-wrapper 22 hands an x86_64 bitcode image to the
    // system linker unless -foffload-lto is given; an object links with and without it, in 19 too.
    let generic = OffloadTarget { arch: "generic".to_string(), ..OffloadTarget::x86_64() };
    images.push(generic.image_selector(&x86.join("device_rtl.o")));
    println!("built x86_64 in {:.1} s", t.elapsed().as_secs_f64());

    fat_library(workspace, tools, &dist, &images, &x86.join("device_rtl_host.o"))?;
    let t = Instant::now();
    plugins(workspace, &dist)?;
    frontend_plugins(workspace, tools, &dist)?;
    fortran_module(workspace, tools, &dist)?;
    println!("built the plugins and the Fortran module in {:.1} s", t.elapsed().as_secs_f64());
    println!("dist tree in {} ({:.1} s in all)", dist.root.display(), started.elapsed().as_secs_f64());
    Ok(dist)
}

/// LLVM's DeviceRTL defines the device environment in the constant address space (4), and nvlink
/// refuses a reference to it from another space ("Memory space doesn't match") when the device
/// library is compiled apart from the program (clang's default nvptx link, without
/// `-foffload-lto`). Rust cannot put an extern static in an address space, so the crate's
/// reference (generic, `.extern .global` in PTX) is linked into a module that declares the global
/// in space 4 and keeps that declaration alive: LLVM's IR linker then turns the crate's uses into
/// an addrspacecast of it (`ld.const` in PTX). Rewrites `bitcode` in place. (amdgcn device code is
/// always linked as IR, where the same linker reconciles the spaces by itself.)
fn constant_device_environment(tools: &Tools, bitcode: &Path) -> Result<()> {
    let ir = cmd::stdout(Command::new(&tools.llvm_dis).arg(bitcode).arg("-o").arg("-"))?;
    let header: Vec<&str> =
        ir.lines().filter(|l| l.starts_with("target datalayout") || l.starts_with("target triple")).collect();
    ensure!(header.len() == 2, "{}: no target datalayout and triple", bitcode.display());
    let declaration = bitcode.with_file_name("device_environment.ll");
    fs::write(
        &declaration,
        format!(
            "{}\n@{DEVICE_ENVIRONMENT} = external addrspace(4) global [48 x i8], align 8\n\
             @llvm.compiler.used = appending global [1 x ptr] [ptr addrspacecast (ptr addrspace(4) \
             @{DEVICE_ENVIRONMENT} to ptr)], section \"llvm.metadata\"\n",
            header.join("\n")
        ),
    )?;
    let linked = bitcode.with_extension("linked.bc");
    cmd::output(Command::new(&tools.llvm_link).arg(&declaration).arg(bitcode).arg("-o").arg(&linked))?;
    fs::rename(&linked, bitcode)?;
    Ok(())
}

/// Builds the libomptarget plugins and the pass plugin (once per LLVM release) in release mode,
/// installs them in `target/dist/lib` (the libomptarget plugins under the names libomptarget 16
/// looks for), and writes the clang configuration file of each release that loads its pass plugin.
fn plugins(workspace: &Path, dist: &Dist) -> Result<()> {
    let mut installs: Vec<(PathBuf, &str)> = Vec::new();
    for llvm in Llvm::ALL {
        let mut build = cmd::cargo();
        build.current_dir(workspace).args(["build", "--quiet", "--release"]);
        let release = if llvm == Llvm::V19 {
            // The default features are LLVM 19's: these share the workspace's target dir.
            for (package, _, _) in PLUGINS {
                build.args(["-p", package]);
            }
            installs.extend(
                PLUGINS.iter().map(|(_, built, name)| (workspace.join("target/release").join(built), *name)),
            );
            build.args(["-p", STRICT.0, "-p", REGISTER.0]);
            installs.push((workspace.join("target/release").join(STRICT.1), STRICT.2));
            installs.push((workspace.join("target/release").join(REGISTER.1), REGISTER.2));
            workspace.join("target/release")
        } else {
            // Another feature set in a target dir of its own, so neither build undoes the other.
            let target_dir = workspace.join("target").join(format!("llvm{}", llvm.major()));
            build.arg("--no-default-features").args(["--features", llvm.pass_plugin_feature()]);
            build.env("CARGO_TARGET_DIR", &target_dir);
            target_dir.join("release")
        };
        build.args(["-p", PASS_PLUGIN.0]);
        cmd::status(&mut build)?;
        installs.push((release.join(PASS_PLUGIN.1), llvm.pass_plugin_file()));
    }
    fs::create_dir_all(dist.lib_dir())?;
    for (from, installed) in installs {
        let dest = dist.lib_dir().join(installed);
        let fresh = dest.with_extension("so.new");
        fs::copy(&from, &fresh).with_context(|| format!("cannot copy {}", from.display()))?;
        replace_if_changed(&fresh, &dest)?;
    }
    for llvm in Llvm::ALL {
        // <CFGDIR> is the file's own directory (clang 16+): the dist tree can move.
        let config = dist.clang_config(llvm);
        fs::create_dir_all(config.parent().context("no parent")?)?;
        let fresh = config.with_extension("cfg.new");
        fs::write(&fresh, llvm.clang_config())?;
        replace_if_changed(&fresh, &config)?;
    }
    let config = dist.flang_config();
    let fresh = config.with_extension("cfg.new");
    fs::write(&fresh, crate::llvm::flang_config())?;
    replace_if_changed(&fresh, &config)
}

/// The frontend plugin's one source file.
const FRONTEND_PLUGIN_SOURCE: &str = "compiler/frontend-plugin/omptarget_indirect_frontend.cpp";

/// Compiles the frontend plugin once per LLVM release, with that release's clang++ against its
/// clang headers, linked with its `libclang-cpp` and `libLLVM` (the ones its clang has loaded).
/// Skipped when the plugin is newer than its source (the headers change only with the packages).
fn frontend_plugins(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let source = workspace.join(FRONTEND_PLUGIN_SOURCE);
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    for llvm in Llvm::ALL {
        let plugin = dist.frontend_plugin(llvm);
        if modified(&plugin).is_some_and(|built| modified(&source).is_some_and(|src| src < built)) {
            continue;
        }
        let llvm_config = crate::requirements::program(&format!("llvm-config-{}", llvm.major()));
        let query =
            |arg: &str| cmd::stdout(Command::new(&llvm_config).arg(arg)).map(|s| s.trim().to_string());
        let (include, lib) = (query("--includedir")?, query("--libdir")?);
        let compiler = match llvm {
            Llvm::V19 => &tools.clangxx,
            Llvm::V22 => &tools.clangxx22,
        };
        let fresh = plugin.with_extension("so.new");
        cmd::output(
            Command::new(compiler)
                .args(["-shared", "-fPIC", "-std=c++17", "-fno-rtti", "-fno-exceptions", "-O2"])
                .args([
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    "-Wno-unused-parameter",
                    "-Wno-deprecated-declarations",
                ])
                .arg("-isystem")
                .arg(&include)
                .arg(&source)
                .arg("-o")
                .arg(&fresh)
                .arg(format!("-L{lib}"))
                .args(["-lclang-cpp", "-lLLVM"]),
        )?;
        fs::rename(&fresh, &plugin).with_context(|| format!("cannot write {}", plugin.display()))?;
    }
    Ok(())
}

/// Compiles the `omptarget_indirect` module with flang 22 into the dist tree's module directory
/// (a module file is only read by the flang release that wrote it). It has no code: programs
/// need the module file, not an object.
fn fortran_module(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let dir = dist.fortran_module_dir();
    fs::create_dir_all(&dir)?;
    cmd::output(
        Command::new(&tools.flang22)
            .args(["-fsyntax-only", "-module-dir"])
            .arg(&dir)
            .arg(workspace.join(FORTRAN_MODULE_SOURCE)),
    )?;
    Ok(())
}

/// Packs every device image into one OffloadBinary, embeds it in a host object, and archives that
/// object with the x86_64 code (the host fallback of a target region calls the function too).
fn fat_library(
    workspace: &Path,
    tools: &Tools,
    dist: &Dist,
    images: &[String],
    host_object: &Path,
) -> Result<()> {
    let work = workspace.join("target/device/fat");
    fs::create_dir_all(&work)?;
    let packed = work.join("omptarget-indirect.offload");
    let mut pack = Command::new(&tools.packager);
    pack.arg("-o").arg(&packed);
    pack.args(images);
    cmd::output(&mut pack)?;

    // The anchor gives the member a host symbol; the offload linker extracts the member for the
    // device code it carries, the host linker never needs it.
    let anchor = work.join("omptarget_indirect_images.c");
    fs::write(&anchor, "/* Device images of libomptarget-indirect, in .llvm.offloading. */\nconst char __omptarget_indirect_images_anchor = 0;\n")?;
    let embedded = work.join("omptarget_indirect_images.o");
    cmd::output(
        Command::new(&tools.clang)
            .args(["-c", "-O2"])
            .arg(&anchor)
            .arg("-o")
            .arg(&embedded)
            .arg("-Xclang")
            .arg(format!("-fembed-offload-object={}", packed.display())),
    )?;
    let host_member = work.join("omptarget_indirect_host.o");
    fs::copy(host_object, &host_member)?;
    archive(tools, &dist.fat_lib(), &[embedded, host_member])
}

/// Writes a fresh static archive of `members` at `path` (llvm-ar is deterministic, so an
/// unchanged library keeps its modification time).
fn archive(tools: &Tools, path: &Path, members: &[PathBuf]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let fresh = path.with_extension("a.new");
    if fresh.exists() {
        fs::remove_file(&fresh)?;
    }
    cmd::output(Command::new(&tools.llvm_ar).arg("rcs").arg(&fresh).args(members))?;
    replace_if_changed(&fresh, path)
}

/// Moves `fresh` to `dest` unless `dest` already has the same bytes: what is built from an
/// installed file (the end-to-end programs) is then rebuilt only when it really changed.
fn replace_if_changed(fresh: &Path, dest: &Path) -> Result<()> {
    if fs::read(dest).is_ok_and(|old| fs::read(fresh).is_ok_and(|new| new == old)) {
        fs::remove_file(fresh)?;
    } else {
        fs::rename(fresh, dest).with_context(|| format!("cannot write {}", dest.display()))?;
    }
    Ok(())
}
