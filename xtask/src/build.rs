//! `cargo xtask build`: the device runtime for every architecture and the dist tree.
//!
//! ```text
//! target/dist/lib/libomptarget-indirect.a                 host object + embedded device images
//! target/dist/device/x86_64/libdevice_rtl.a, device_rtl.bc
//! target/dist/device/nvptx64/<sm>/device_rtl.{bc,ptx,cubin}
//! target/dist/device/amdgcn/<gfx>/device_rtl.{bc,o}
//! target/dist/lib/libomptarget.rtl.{x86_64,cuda,amdgpu}.so  the plugins
//! target/dist/lib/libomptarget-indirect-pass.so          the LLVM 19 pass plugin for clang-19
//! target/dist/lib/libomptarget-indirect-pass-llvmNN.so   the pass plugin of release NN (21, 22, 23)
//! target/dist/lib/libomptarget-indirect-frontend-llvmNN.so the clang frontend plugin of release NN
//! target/dist/share/omptarget-indirect/clang-NN.cfg      `clang-NN --config=` file that loads it
//! ```
//!
//! `cargo xtask build` makes all of it from every release's LLVM and fails on anything missing;
//! `cargo xtask install --llvm DIR` builds ([`build_from`]) only what the LLVM installs it is given
//! can use, into a tree of its own, and lists each optional part it left out with the reason.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};

use omptarget_indirect_abi::DEVICE_ENVIRONMENT;
use omptarget_indirect_frontend::{compile_command, ClangRelease};
use packaging::device_build::DeviceBuild;
use packaging::target_record::{AMD, HOST, NVIDIA};

use crate::cmd;
use crate::dist::{Archs, Dist, Parts, FORTRAN_MODULE_SOURCE, PASS_PLUGIN, PLUGINS, REGISTER, STRICT};
use crate::llvm::Llvm;
use crate::offload::OffloadTarget;
use crate::tools::Tools;
use packaging::llvm_identity::LlvmInstall;

/// What a build is given: the LLVM installs to build for and what it found beside them.
pub struct Inputs {
    /// The LLVM installs, oldest release first: the oldest writes the shared device images and
    /// the fat library (LLVM reads bitcode and offload binaries of older releases, never newer).
    pub llvms: Vec<LlvmInstall>,
    /// CUDA's `ptxas`: proves each nvptx image assembles (`device_rtl.cubin`, the GPU bundle's).
    pub ptxas: Option<PathBuf>,
    /// The development build: every part is required, a missing input is an error.
    pub complete: bool,
    /// Where cargo builds the host libraries; `None`: the workspace's own target directories.
    pub cargo_target: Option<PathBuf>,
    /// Optional parts the installer asked to leave out (`install --without`).
    pub without: Vec<Optional>,
}

/// A part of the install that can be left out although its LLVM could build it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optional {
    /// The Fortran module and the `flang-NN.cfg` files.
    Fortran,
    /// The libomptarget 16 plugins (clang 19's programs run with them).
    Libomptarget16Plugins,
}

impl Optional {
    /// Every optional part, by the name `--without` takes.
    pub const ALL: [(&'static str, Optional); 2] =
        [("fortran", Optional::Fortran), ("libomptarget16-plugins", Optional::Libomptarget16Plugins)];

    /// The part named `name` ([`Optional::ALL`]).
    pub fn parse(name: &str) -> Result<Optional> {
        Optional::ALL.iter().find(|(n, _)| *n == name).map(|&(_, part)| part).with_context(|| {
            format!("--without takes {}, not `{name}`", Optional::ALL.map(|(n, _)| n).join(" or "))
        })
    }
}

impl Inputs {
    /// `cargo xtask build`: every release's LLVM and CUDA 11.8's ptxas, as the preflight found.
    pub fn development(tools: &Tools) -> Result<Inputs> {
        let releases: Vec<Llvm> = Llvm::all().collect();
        Ok(Inputs {
            llvms: probe(tools, &releases)?,
            ptxas: Some(tools.ptxas()),
            complete: true,
            cargo_target: None,
            without: Vec::new(),
        })
    }

    /// `cargo xtask demo`: the LLVMs of `releases` and ptxas when `gpu`; no Fortran module (the
    /// demo compiles no Fortran), and what those inputs cannot build left out.
    pub fn demo(tools: &Tools, releases: &[Llvm], gpu: bool) -> Result<Inputs> {
        Ok(Inputs {
            llvms: probe(tools, releases)?,
            ptxas: gpu.then(|| tools.ptxas()),
            complete: false,
            cargo_target: None,
            without: vec![Optional::Fortran],
        })
    }

    fn oldest(&self) -> &LlvmInstall {
        &self.llvms[0]
    }
}

/// The LLVM install of each of `releases` where the preflight found its clang, oldest first.
fn probe(tools: &Tools, releases: &[Llvm]) -> Result<Vec<LlvmInstall>> {
    let mut llvms = Vec::new();
    for &llvm in releases {
        let clang = &tools.of(llvm).clang;
        let prefix = clang.parent().and_then(Path::parent).context("clang has no prefix")?;
        llvms.push(LlvmInstall::probe(prefix)?);
    }
    llvms.sort_by_key(|l| l.release);
    Ok(llvms)
}

/// A part a build left out, and why.
pub struct Skipped {
    /// What it is.
    pub part: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped {}: {}", self.part, self.reason)
    }
}

/// Builds everything `Archs` asks for from every release's LLVM and writes `target/dist`.
/// Prints the time of each part.
pub fn build(workspace: &Path, tools: &Tools, archs: &Archs) -> Result<Dist> {
    let inputs = Inputs::development(tools)?;
    build_from(workspace, &inputs, archs, &Dist::new(workspace).root).map(|(dist, _)| dist)
}

/// Builds, into the dist tree at `root`, what `inputs` allow of what `archs` asks for: the device
/// library always, each optional part when its inputs are there (or, for a complete build, fails).
/// Returns the tree and the parts left out.
pub fn build_from(
    workspace: &Path,
    inputs: &Inputs,
    archs: &Archs,
    root: &Path,
) -> Result<(Dist, Vec<Skipped>)> {
    archs.validate()?;
    ensure!(!inputs.llvms.is_empty(), "no LLVM to build for");
    let started = Instant::now();
    let mut skipped = Vec::new();
    let parts = parts(inputs, &mut skipped);
    let dist = Dist { root: root.to_path_buf(), parts };
    let oldest = inputs.oldest();
    for tool in ["clang", "llvm-ar"] {
        ensure!(
            oldest.tool(tool).is_file(),
            "{} has no {tool}: the device library is packed with the clang, llvm-ar and \
             clang-offload-packager (or llvm-offload-binary) of the oldest LLVM given",
            oldest.describe()
        );
    }
    let packager = offload_packager(oldest)?;
    let (sms, ptxas) = nvptx_tools(inputs, archs, &mut skipped);
    if let (true, Some(first)) = (inputs.complete, skipped.first()) {
        bail!("{first} (the development build needs every part: run scripts/setup.sh)");
    }
    device_libraries(workspace, &dist, sms, &archs.gfxs)?;
    let mut images = device_images(oldest, &dist, sms, &archs.gfxs, ptxas)?;
    let x86 = dist.x86_64_dir();
    archive(oldest, &dist.x86_64_archive(), &[x86.join("device_rtl_host.o")])?;
    // "generic": the offload linker matches it to the host-offload target whatever its arch. A
    // native object, not bitcode: clang-linker-wrapper 22 hands an x86_64 bitcode image to the
    // system linker unless -foffload-lto is given; an object links with and without it, in 19 too.
    let generic = OffloadTarget { arch: "generic".to_string(), ..OffloadTarget::x86_64() };
    images.push(generic.image_selector(&x86.join("device_rtl.o")));
    fat_library(oldest, &packager, &dist, &images, &x86.join("device_rtl_host.o"))?;
    let t = Instant::now();
    libraries(workspace, inputs, &dist)?;
    frontend_plugins(inputs, &dist)?;
    for &fortran in &dist.parts.fortran {
        let flang = inputs.llvms.iter().find(|l| l.release == fortran).context("no LLVM with flang")?;
        fortran_module(workspace, flang, &dist)?;
    }
    let fortran = if dist.parts.fortran.is_empty() { "" } else { " and the Fortran module" };
    println!("built the plugins{fortran} in {:.1} s", t.elapsed().as_secs_f64());
    println!("dist tree in {} ({:.1} s in all)", dist.root.display(), started.elapsed().as_secs_f64());
    Ok((dist, skipped))
}

/// The nvptx64 architectures the build can make (none without `llvm-link` and `llvm-dis` of the
/// oldest LLVM) and the `ptxas` that checks their images (none without one, or without `llc`);
/// what is left out goes to `skipped`.
fn nvptx_tools<'a>(
    inputs: &'a Inputs,
    archs: &'a Archs,
    skipped: &mut Vec<Skipped>,
) -> (&'a [String], Option<&'a PathBuf>) {
    let oldest = inputs.oldest();
    let missing_ir_tools: Vec<String> = ["llvm-link", "llvm-dis"]
        .into_iter()
        .filter(|tool| !oldest.tool(tool).is_file())
        .map(|tool| oldest.tool(tool).display().to_string())
        .collect();
    let sms: &[String] = if missing_ir_tools.is_empty() || archs.sms.is_empty() {
        &archs.sms
    } else {
        skipped.push(Skipped {
            part: format!("the nvptx64 device images ({})", archs.sms.join(", ")),
            reason: format!("{} missing (an LLVM installed without its tools)", missing_ir_tools.join(", ")),
        });
        &[]
    };
    let ptxas = match (&inputs.ptxas, sms.is_empty()) {
        (Some(ptxas), _) if oldest.tool("llc").is_file() => Some(ptxas),
        (_, true) => None,
        (None, false) => {
            skipped.push(Skipped {
                part: "the ptxas check of the nvptx64 images".to_string(),
                reason: "no ptxas (CUDA_HOME/bin, or PATH)".to_string(),
            });
            None
        }
        (Some(_), false) => {
            skipped.push(Skipped {
                part: "the ptxas check of the nvptx64 images".to_string(),
                reason: format!("{} is missing", oldest.tool("llc").display()),
            });
            None
        }
    };
    (sms, ptxas)
}

/// The device library for every target (rustc building `core` each time, mostly one thread):
/// side by side, each target in a cargo target directory of its own.
fn device_libraries(workspace: &Path, dist: &Dist, sms: &[String], gfxs: &[String]) -> Result<()> {
    let t = Instant::now();
    let x86 = dist.x86_64_dir();
    let mut device_builds: Vec<(DeviceBuild, PathBuf)> = Vec::new();
    for (record, archs) in [(&NVIDIA, sms), (&AMD, gfxs)] {
        for arch in archs {
            let build = DeviceBuild {
                package: "device-rtl",
                features: &["panic-handler"],
                target: record.rust_target,
                cpu: Some(arch),
                emits: record.device_library,
            };
            device_builds.push((build, dist.gpu_dir(record, arch)));
        }
    }
    let image = DeviceBuild {
        package: "device-rtl",
        features: &["panic-handler", "flang-kernels", "device-image"],
        target: HOST.rust_target,
        cpu: None,
        emits: HOST.device_library,
    };
    // The host's copy (the host fallback of a target region translates too) has no kernel
    // runtime: its `omp_is_initial_device` would answer 0 for the host program.
    let host = DeviceBuild {
        package: "device-rtl",
        features: &["panic-handler"],
        target: HOST.rust_target,
        cpu: None,
        emits: &[("obj", "device_rtl_host.o")],
    };
    device_builds.extend([(image, x86.clone()), (host, x86)]);
    let count = device_builds.len();
    cmd::in_parallel(device_builds, |(build, dir)| build.run(workspace, &dir))
        .into_iter()
        .collect::<Result<()>>()?;
    println!("built the device library for {count} targets in {:.1} s", t.elapsed().as_secs_f64());
    Ok(())
}

/// The GPU device images of the fat library: each nvptx64 one with its device environment made
/// constant, compiled to PTX and checked by `ptxas` (when there is one); each amdgcn one as
/// built. Returns the packager's `--image=` arguments.
fn device_images(
    oldest: &LlvmInstall,
    dist: &Dist,
    sms: &[String],
    gfxs: &[String],
    ptxas: Option<&PathBuf>,
) -> Result<Vec<String>> {
    let mut images = Vec::new();
    for sm in sms {
        let dir = dist.nvptx_dir(sm);
        constant_device_environment(oldest, &dir.join("device_rtl.bc"), Llvm::newest().nvptx_data_layout)?;
        if let Some(ptxas) = ptxas {
            crate::tools::compile_ptx(
                &oldest.tool("llc"),
                &dir.join("device_rtl.bc"),
                sm,
                &dir.join("device_rtl.ptx"),
            )?;
            cmd::output(
                Command::new(ptxas)
                    .arg(format!("-arch={sm}"))
                    .arg("-c")
                    .arg("-o")
                    .arg(dir.join("device_rtl.cubin"))
                    .arg(dir.join("device_rtl.ptx")),
            )?;
        }
        images.push(OffloadTarget::nvptx(sm).image_selector(&dir.join("device_rtl.bc")));
    }
    for gfx in gfxs {
        images.push(OffloadTarget::amdgcn(gfx).image_selector(&dist.amdgcn_dir(gfx).join("device_rtl.bc")));
    }
    Ok(images)
}

/// The LLVM's OffloadBinary packer: `clang-offload-packager`, which LLVM 22 also installs under
/// its new name `llvm-offload-binary` (the same options).
fn offload_packager(llvm: &LlvmInstall) -> Result<PathBuf> {
    ["clang-offload-packager", "llvm-offload-binary"]
        .into_iter()
        .map(|name| llvm.tool(name))
        .find(|path| path.is_file())
        .with_context(|| {
            format!("{} has neither clang-offload-packager nor llvm-offload-binary", llvm.describe())
        })
}

/// Which optional parts `inputs` allow; each one left out goes to `skipped` with its reason.
fn parts(inputs: &Inputs, skipped: &mut Vec<Skipped>) -> Parts {
    let releases: Vec<Llvm> = inputs.llvms.iter().map(|l| l.release).collect();
    for llvm in Llvm::all().filter(|l| !releases.contains(l)) {
        let mut pieces = vec!["pass plugin".to_string(), "frontend plugin".to_string()];
        if llvm.needs_register() {
            pieces.push("registration library".into());
        }
        let mut configs = llvm.clang_config_file();
        if llvm.flang {
            pieces.push("Fortran module".into());
            configs = format!("{configs} and {}", llvm.flang_config_file());
        }
        pieces.push(configs);
        skipped.push(Skipped {
            part: format!("the LLVM {} pieces ({})", llvm.major, pieces.join(", ")),
            reason: format!("no LLVM {} was given (--llvm)", llvm.major),
        });
    }
    let mut frontend = Vec::new();
    for llvm in &inputs.llvms {
        let needs = [llvm.include.join("clang/Frontend/FrontendPluginRegistry.h"), llvm.tool("clang++")];
        match needs.iter().find(|p| !p.exists()) {
            None => frontend.push(llvm.release),
            Some(missing) => skipped.push(Skipped {
                part: format!("the frontend plugin for clang {}", llvm.release.major),
                reason: format!("{} is missing (clang's development headers)", missing.display()),
            }),
        }
    }
    let mut fortran = Vec::new();
    for llvm in inputs.llvms.iter().filter(|l| l.release.flang) {
        if inputs.without.contains(&Optional::Fortran) {
            skipped.push(Skipped {
                part: format!("the Fortran module (flang {})", llvm.release.major),
                reason: "left out (--without fortran)".to_string(),
            });
        } else if llvm.tool("flang").is_file() {
            fortran.push(llvm.release);
        } else {
            skipped.push(Skipped {
                part: format!("the Fortran module (flang {})", llvm.release.major),
                reason: format!("{} is missing", llvm.tool("flang").display()),
            });
        }
    }
    let libomptarget16_plugins = if inputs.without.contains(&Optional::Libomptarget16Plugins) {
        if releases.iter().any(|l| l.runs_project_plugins()) {
            skipped.push(Skipped {
                part: "the libomptarget 16 plugins".to_string(),
                reason: "left out (--without libomptarget16-plugins)".to_string(),
            });
        }
        false
    } else if !releases.iter().any(|l| l.runs_project_plugins()) {
        let runs: Vec<String> =
            Llvm::all().filter(|l| l.runs_project_plugins()).map(|l| format!("clang {}", l.major)).collect();
        skipped.push(Skipped {
            part: "the libomptarget 16 plugins".to_string(),
            reason: format!("they run {} programs, and no such LLVM was given", runs.join(" and ")),
        });
        false
    } else if let Some(reason) = missing_libffi() {
        skipped.push(Skipped { part: "the libomptarget 16 plugins".to_string(), reason });
        false
    } else {
        true
    };
    Parts { releases, frontend, fortran, libomptarget16_plugins }
}

/// Why the x86_64 plugin cannot link libffi, if it cannot: the C compiler's linker does not find
/// `libffi.so` (`cc -print-file-name` echoes the bare name back then).
fn missing_libffi() -> Option<String> {
    let found =
        cmd::stdout(Command::new(crate::requirements::program("cc")).arg("-print-file-name=libffi.so"))
            .map(|out| out.trim().to_string());
    match found {
        Ok(path) if path.starts_with('/') => None,
        Ok(_) => Some("the C compiler finds no libffi.so (libffi's development files)".to_string()),
        Err(err) => Some(format!("cannot ask the C compiler for libffi.so: {err:#}")),
    }
}

/// LLVM's DeviceRTL defines the device environment in the constant address space (4), and nvlink
/// refuses a reference to it from another space ("Memory space doesn't match") when the device
/// library is compiled apart from the program (clang's default nvptx link, without
/// `-foffload-lto`). Rust cannot put an extern static in an address space, so the crate's
/// reference (generic, `.extern .global` in PTX) is linked into a module that declares the global
/// in space 4 and keeps that declaration alive: LLVM's IR linker then turns the crate's uses into
/// an addrspacecast of it (`ld.const` in PTX). Rewrites `bitcode` in place. (amdgcn device code is
/// always linked as IR, where the same linker reconciles the spaces by itself.)
///
/// The module gets the data layout `layout` on the way. Rust's NVPTX layout is LLVM 19's; LLVM
/// 23's offload link takes the layout of the first bitcode module it links, which is the device
/// library's when the program's device code arrives compiled (its default without
/// `-foffload-lto`), and stops on any layout but its own ("Target-incompatible DataLayout"); LLVM
/// 19-22 accept a module of another layout (a warning), so the newest release's suits all.
fn constant_device_environment(llvm: &LlvmInstall, bitcode: &Path, layout: &str) -> Result<()> {
    let ir = cmd::stdout(Command::new(llvm.tool("llvm-dis")).arg(bitcode).arg("-o").arg("-"))?;
    let module: Vec<String> = ir
        .lines()
        .map(|l| {
            if l.starts_with("target datalayout") {
                format!("target datalayout = \"{layout}\"")
            } else {
                l.to_string()
            }
        })
        .collect();
    let header: Vec<&str> = module
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("target datalayout") || l.starts_with("target triple"))
        .collect();
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
    let text = bitcode.with_extension("layout.ll");
    fs::write(&text, module.join("\n") + "\n")?;
    let linked = bitcode.with_extension("linked.bc");
    cmd::output(Command::new(llvm.tool("llvm-link")).arg(&declaration).arg(&text).arg("-o").arg(&linked))?;
    fs::remove_file(&text)?;
    fs::rename(&linked, bitcode)?;
    Ok(())
}

/// Builds the host libraries in release mode (strict mode; the libomptarget 16 plugins and the
/// registration library when the tree has them) and the pass plugin once per LLVM release,
/// installs them in the tree's `lib` (the libomptarget plugins under the names libomptarget 16
/// looks for), and writes the configuration file of each release.
fn libraries(workspace: &Path, inputs: &Inputs, dist: &Dist) -> Result<()> {
    let parts = &dist.parts;
    // The development build keeps its historic target directories (the tests' `cargo test` shares
    // the first); an install builds in its own, with each LLVM's llvm-config named explicitly.
    let target_dir = |name: &str| match &inputs.cargo_target {
        Some(dir) => dir.join(name),
        None if name == "host" => workspace.join("target"),
        None => workspace.join("target").join(name),
    };
    let mut installs: Vec<(PathBuf, &str)> = Vec::new();
    let mut host = cmd::cargo();
    host.current_dir(workspace).args(["build", "--quiet", "--release", "-p", STRICT.0]);
    let mut host_libs = vec![STRICT];
    if parts.libomptarget16_plugins {
        for (package, built, name) in PLUGINS {
            host.args(["-p", package]);
            installs.push((target_dir("host").join("release").join(built), name));
        }
    }
    if parts.register() {
        host.args(["-p", REGISTER.0]);
        host_libs.push(REGISTER);
    }
    for llvm in &inputs.llvms {
        if inputs.cargo_target.is_none() && llvm.release == Llvm::oldest() {
            // The oldest release's are the default features: with the host libraries, in the tests' directory.
            host.args(["-p", PASS_PLUGIN.0]);
            installs.push((
                target_dir("host").join("release").join(PASS_PLUGIN.1),
                llvm.release.pass_plugin_file,
            ));
            continue;
        }
        // Another feature set in a target dir of its own, so neither build undoes the other.
        let dir = target_dir(&format!("llvm{}", llvm.release.major));
        let mut build = cmd::cargo();
        build
            .current_dir(workspace)
            .args(["build", "--quiet", "--release", "-p", PASS_PLUGIN.0, "--no-default-features"])
            .args(["--features", &llvm.release.pass_plugin_feature()])
            .env("CARGO_TARGET_DIR", &dir)
            // The LLVM given, wherever it is (a release in a root of its own: its wrapper).
            .env("OMPTARGET_INDIRECT_LLVM_CONFIG", &llvm.llvm_config);
        cmd::status(&mut build)?;
        installs.push((dir.join("release").join(PASS_PLUGIN.1), llvm.release.pass_plugin_file));
    }
    host.env("CARGO_TARGET_DIR", target_dir("host"));
    cmd::status(&mut host)?;
    installs.extend(
        host_libs.iter().map(|(_, built, name)| (target_dir("host").join("release").join(built), *name)),
    );

    fs::create_dir_all(dist.lib_dir())?;
    for (from, installed) in installs {
        let dest = dist.lib_dir().join(installed);
        let fresh = dest.with_extension("so.new");
        fs::copy(&from, &fresh).with_context(|| format!("cannot copy {}", from.display()))?;
        replace_if_changed(&fresh, &dest)?;
    }
    for &llvm in &parts.releases {
        // <CFGDIR> is the file's own directory (clang 16+): the tree can move.
        let config = dist.clang_config(llvm);
        fs::create_dir_all(config.parent().context("no parent")?)?;
        let fresh = config.with_extension("cfg.new");
        fs::write(&fresh, llvm.clang_config(parts.frontend.contains(&llvm)))?;
        replace_if_changed(&fresh, &config)?;
    }
    for &fortran in &parts.fortran {
        let config = dist.flang_config(fortran);
        let fresh = config.with_extension("cfg.new");
        fs::write(&fresh, fortran.flang_config())?;
        replace_if_changed(&fresh, &config)?;
    }
    Ok(())
}

/// Compiles the frontend plugin once per LLVM release that has clang's development files, as its
/// crate describes ([`compile_command`]: that release's clang++ against its clang headers; clang's
/// symbols come from the clang that loads it). Skipped when the plugin was built with the same
/// `llvm-config` and compile command after both and the source last changed (the headers change
/// only with the LLVM).
fn frontend_plugins(inputs: &Inputs, dist: &Dist) -> Result<()> {
    let source = omptarget_indirect_frontend::source();
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    let llvms: Vec<&LlvmInstall> =
        inputs.llvms.iter().filter(|l| dist.parts.frontend.contains(&l.release)).collect();
    // One clang++ each (about 45 s, one thread): side by side.
    cmd::in_parallel(llvms, |llvm| -> Result<()> {
        let plugin = dist.frontend_plugin(llvm.release);
        let fresh = plugin.with_extension("so.new");
        let release = ClangRelease { clangxx: llvm.tool("clang++"), include: llvm.include.clone() };
        let mut command = compile_command(&release, &fresh);
        // Which LLVM it was built against and how: another install of the same release, or
        // another compile command, rebuilds it.
        let stamp = plugin.with_extension("so.llvm-config");
        let built_as = format!("{}\n{command:?}", llvm.llvm_config.display());
        let newest_input = modified(&source).max(modified(&llvm.llvm_config));
        if fs::read_to_string(&stamp).ok().as_deref() == Some(&*built_as)
            && modified(&plugin).is_some_and(|built| newest_input.is_some_and(|input| input < built))
        {
            return Ok(());
        }
        cmd::output(&mut command)?;
        fs::rename(&fresh, &plugin).with_context(|| format!("cannot write {}", plugin.display()))?;
        fs::write(&stamp, built_as)?;
        Ok(())
    })
    .into_iter()
    .collect()
}

/// Compiles the `omptarget_indirect` module with a release's flang into the dist tree's module directory
/// (a module file is only read by the flang release that wrote it). It has no code: programs
/// need the module file, not an object.
fn fortran_module(workspace: &Path, llvm: &LlvmInstall, dist: &Dist) -> Result<()> {
    let dir = dist.fortran_module_dir(llvm.release);
    fs::create_dir_all(&dir)?;
    cmd::output(
        Command::new(llvm.tool("flang"))
            .args(["-fsyntax-only", "-module-dir"])
            .arg(&dir)
            .arg(workspace.join(FORTRAN_MODULE_SOURCE)),
    )?;
    Ok(())
}

/// Packs every device image into one OffloadBinary, embeds it in a host object, and archives that
/// object with the x86_64 code (the host fallback of a target region calls the function too).
fn fat_library(
    llvm: &LlvmInstall,
    packager: &Path,
    dist: &Dist,
    images: &[String],
    host_object: &Path,
) -> Result<()> {
    let work = dist.root.join("../device-fat");
    fs::create_dir_all(&work)?;
    let packed = work.join("omptarget-indirect.offload");
    let mut pack = Command::new(packager);
    pack.arg("-o").arg(&packed);
    pack.args(images);
    cmd::output(&mut pack)?;

    // The anchor gives the member a host symbol; the offload linker extracts the member for the
    // device code it carries, the host linker never needs it.
    let anchor = work.join("omptarget_indirect_images.c");
    fs::write(&anchor, "/* Device images of libomptarget-indirect, in .llvm.offloading. */\nconst char __omptarget_indirect_images_anchor = 0;\n")?;
    let embedded = work.join("omptarget_indirect_images.o");
    cmd::output(
        Command::new(llvm.tool("clang"))
            .args(["-c", "-O2"])
            .arg(&anchor)
            .arg("-o")
            .arg(&embedded)
            .arg("-Xclang")
            .arg(format!("-fembed-offload-object={}", packed.display())),
    )?;
    let host_member = work.join("omptarget_indirect_host.o");
    fs::copy(host_object, &host_member)?;
    archive(llvm, &dist.fat_lib(), &[embedded, host_member])
}

/// Writes a fresh static archive of `members` at `path` (llvm-ar is deterministic, so an
/// unchanged library keeps its modification time).
fn archive(llvm: &LlvmInstall, path: &Path, members: &[PathBuf]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let fresh = path.with_extension("a.new");
    if fresh.exists() {
        fs::remove_file(&fresh)?;
    }
    cmd::output(Command::new(llvm.tool("llvm-ar")).arg("rcs").arg(&fresh).args(members))?;
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
