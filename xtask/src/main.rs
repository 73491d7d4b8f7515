//! `cargo xtask build | test | demo | env | bench | gpu-test | gpu-bench`: the project's build,
//! test, demo and benchmark driver.

mod build;
mod install;
mod llvm_c_api;
mod suite;
mod vendor;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};

use checks::{
    frontend_bench, fuzz, gpu_bundle, install_check, stock_table_bench, strict_bench, translation_bench,
    virtual_bench,
};
use dist::Archs;
use packaging::{cmd, dist, llvm, offload, requirements, toolchain, tools};
use tools::Tools;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  build [--sm sm_70,sm_90] [--gfx gfx90a,...]   build the device runtime and target/dist
  test                                          run every test that needs no GPU
  demo                                          build, then show examples/: a C++ scene rendered on the
                                                device (target/demo/scene.png), the same program stopped
                                                without the project, C function pointers (clang 19;
                                                NVIDIA GPU 0 if present, else x86_64 host offload)
  env                                           print the compile flags and environment for users
  bench [frontend|stock|virtual]                build, then time set_function_ptr_map, the
                                                translation the pass plugin inserts, each release's
                                                table on the x86_64 device, what strict mode adds to
                                                a target region, virtual calls (clang 19; clang 22
                                                through its stock runtime), and what the frontend
                                                plugin's vtable policy costs device compiles
                                                (target/bench/;
                                                `frontend`, `stock`, `virtual`: that part alone)
  gpu-test [--part llvm16|llvm21|llvm22|llvm23] build the GPU bundle's parts (target/gpu-bundle/: clang
           [--require-gpu]                      19 through libomptarget 16; target/gpu-bundle-llvmN/: clang
                                                N through its stock libomptarget), each part given or
                                                all, and run them on this machine's NVIDIA GPU (without
                                                one: \"built, not run\", exit 0)
  gpu-bench                                     every part's benchmarks (target/bench/, target/bench/llvmN/)
  install --prefix DIR [--llvm DIR]...          build for each LLVM given (an install prefix; else
          [--sm LIST] [--gfx LIST]              $OMPTARGET_INDIRECT_LLVM, llvm-config on PATH, Debian's),
          [--without fortran|libomptarget16-plugins]  then install a relocatable tree under DIR ($DESTDIR
                                                honoured); parts an LLVM cannot use, or left out with
                                                --without, are listed as skipped
  llvm-c-api LLVM_CONFIG                        write compiler/pass-plugin/llvm-c/api.c: the LLVM-C API
                                                the pass plugin uses, as LLVM_CONFIG's LLVM (23) declares it
  vendor                                        target/vendor/omptarget-indirect-<version>-src.tar.gz: the
                                                sources with every crate, building with no network
  uninstall --prefix DIR                        remove exactly what install put there (its manifest)
  install-check                                 build, then the install test of `test` alone
  dist                                          build, then target/release-archive/omptarget-indirect-
                                                <version>-x86_64-linux-gnu.tar.gz with SHA256SUMS
  fuzz [--seconds N]                            run each cargo-fuzz target of fuzz/ for N seconds (60),
                                                seeded from the build's and the tests' real images

Run scripts/test.sh or scripts/demo.sh on a fresh machine: they install the toolchain and tools.";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let workspace = workspace_root()?;
    let (command, rest) = args.split_first().map(|(c, r)| (c.as_str(), r)).unwrap_or(("", &[]));
    match command {
        "build" => {
            let archs = parse_archs(rest)?;
            let tools = Tools::locate(&workspace)?;
            build::build(&workspace, &tools, &archs).map(drop)
        }
        "test" => {
            no_options(command, rest)?;
            suite::run(&workspace)
        }
        "demo" => {
            no_options(command, rest)?;
            demo(&workspace)
        }
        "env" => {
            no_options(command, rest)?;
            print_env(workspace.as_path())
        }
        "bench" => match rest {
            [] => bench(&workspace),
            [part] if part == "frontend" => {
                let tools = Tools::locate(&workspace)?;
                let dist = build::build(&workspace, &tools, &Archs::default())?;
                frontend_bench::run(&workspace, &tools, &dist)
            }
            [part] if part == "stock" => {
                let tools = Tools::locate(&workspace)?;
                let dist = build::build(&workspace, &tools, &Archs::default())?;
                stock_table_bench::run(&workspace, &tools, &dist)
            }
            [part] if part == "virtual" => {
                let tools = Tools::locate(&workspace)?;
                let dist = build::build(&workspace, &tools, &Archs::default())?;
                virtual_bench::run(&workspace, &tools, &dist)
            }
            _ => bail!("usage: cargo xtask bench [frontend|stock|virtual]"),
        },
        "gpu-test" => {
            let (parts, require_gpu) = gpu_test_options(rest)?;
            let tools = Tools::locate(&workspace)?;
            let dist = build::build(&workspace, &tools, &Archs::default())?;
            for part in parts {
                let (bundle, _) = gpu_bundle::build(&workspace, &tools, &dist, part)?;
                gpu_bundle::run(&bundle, require_gpu, false, None)?;
            }
            Ok(())
        }
        "install" => install::run(&workspace, &install::parse(rest)?),
        "uninstall" => {
            let prefix = match rest {
                [flag, dir] if flag == "--prefix" => PathBuf::from(dir),
                _ => bail!("`{command}` takes --prefix DIR\n{USAGE}"),
            };
            let prefix = if prefix.is_absolute() { prefix } else { std::env::current_dir()?.join(prefix) };
            let root = packaging::install::staged(&prefix);
            let removed = packaging::install::uninstall(&root)?;
            println!("removed {removed} files from {}", root.display());
            Ok(())
        }
        "llvm-c-api" => match rest {
            [llvm_config] => llvm_c_api::run(&workspace, Path::new(llvm_config)),
            _ => bail!("usage: cargo xtask llvm-c-api <llvm-config of LLVM 23>"),
        },
        "vendor" => {
            no_options(command, rest)?;
            println!("{}", vendor::tarball(&workspace)?.display());
            Ok(())
        }
        "install-check" => {
            no_options(command, rest)?;
            let tools = Tools::locate(&workspace)?;
            let dist = build::build(&workspace, &tools, &Archs::default())?;
            println!("{}", install_check::check(&workspace, &tools, &dist)?);
            Ok(())
        }
        "dist" => {
            no_options(command, rest)?;
            let tools = Tools::locate(&workspace)?;
            let dist = build::build(&workspace, &tools, &Archs::default())?;
            println!("{}", packaging::install::archive(&workspace, &dist)?.display());
            Ok(())
        }
        "fuzz" => {
            let seconds = match rest {
                [] => fuzz::SUITE_SECONDS,
                [flag, n] if flag == "--seconds" => n.parse().context("--seconds takes a number")?,
                _ => bail!("`fuzz` takes only --seconds N\n{USAGE}"),
            };
            let tools = Tools::locate(&workspace)?;
            let dist = dist::Dist::new(&workspace);
            println!("{}", fuzz::run(&workspace, &tools, &dist, seconds)?);
            Ok(())
        }
        "gpu-bench" => {
            no_options(command, rest)?;
            let tools = Tools::locate(&workspace)?;
            let dist = build::build(&workspace, &tools, &Archs::default())?;
            for part in gpu_bundle::Part::all() {
                let (bundle, _) = gpu_bundle::build(&workspace, &tools, &dist, part)?;
                let out = match part {
                    gpu_bundle::Part::ProjectPlugins => workspace.join("target/bench"),
                    other => workspace.join("target/bench").join(other.name()),
                };
                gpu_bundle::run(&bundle, false, true, Some(&out))?;
            }
            Ok(())
        }
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        "" => bail!("no command given\n{USAGE}"),
        other => bail!("unknown command `{other}`\n{USAGE}"),
    }
}

fn workspace_root() -> Result<PathBuf> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").context("run this through `cargo xtask`")?;
    Ok(Path::new(&manifest).parent().context("xtask has no parent directory")?.to_path_buf())
}

fn no_options(command: &str, rest: &[String]) -> Result<()> {
    if let Some(extra) = rest.first() {
        bail!("`{command}` takes no arguments, got `{extra}`\n{USAGE}");
    }
    Ok(())
}

/// `gpu-test`'s options: the parts given with `--part` (all when none is), and `--require-gpu`.
fn gpu_test_options(rest: &[String]) -> Result<(Vec<gpu_bundle::Part>, bool)> {
    let mut parts = Vec::new();
    let mut require_gpu = false;
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--require-gpu" => require_gpu = true,
            "--part" => {
                let name = args.next().with_context(|| format!("--part takes a part\n{USAGE}"))?;
                parts.push(gpu_bundle::Part::parse(name)?);
            }
            other => bail!("`gpu-test` takes --part and --require-gpu, got `{other}`\n{USAGE}"),
        }
    }
    if parts.is_empty() {
        parts = gpu_bundle::Part::all();
    }
    Ok((parts, require_gpu))
}

/// `--sm a,b` / `--sm=a,b` / repeated; same for `--gfx`. Either one replaces its default list;
/// `none` empties it.
fn parse_archs(args: &[String]) -> Result<Archs> {
    let mut archs = Archs::default();
    let (mut sms, mut gfxs) = (Vec::new(), Vec::new());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_string())),
            None => (arg.as_str(), None),
        };
        let list = match flag {
            "--sm" => &mut sms,
            "--gfx" => &mut gfxs,
            _ => bail!("unknown option `{arg}`\n{USAGE}"),
        };
        let value = match inline {
            Some(v) => v,
            None => iter.next().with_context(|| format!("{flag} needs a value"))?.clone(),
        };
        list.extend(value.split(',').filter(|s| !s.is_empty()).map(str::to_string));
    }
    if !sms.is_empty() {
        archs.sms = sms.into_iter().filter(|s| s != "none").collect();
    }
    if !gfxs.is_empty() {
        archs.gfxs = gfxs.into_iter().filter(|s| s != "none").collect();
    }
    archs.validate()?;
    Ok(archs)
}

/// Builds the dist tree and shows the programs of `examples/` (`checks::demo`): the C++ scene
/// rendered on the x86_64 device with the reference release's clang (22), the same program
/// stopped on the strict device without the project, and the C function-pointer table through
/// clang 19 on the best offload target present (GPU 0 of the NVIDIA driver if there is one, else
/// x86_64 host offload). It needs only the demo's lines of `scripts/requirements.txt` and builds
/// only for those two releases.
fn demo(workspace: &Path) -> Result<()> {
    use requirements::Need;
    let gpu = nvidia_gpu();
    let needs: &[Need] = if gpu.is_some() { &[Need::Demo, Need::GpuDemo] } else { &[Need::Demo] };
    let tools = Tools::locate_for(workspace, needs)?;
    let mut archs = Archs { sms: Vec::new(), gfxs: Vec::new() };
    let c_target = match &gpu {
        Some(sm) => {
            archs.sms.push(sm.clone());
            offload::OffloadTarget::nvptx(sm)
        }
        None => offload::OffloadTarget::x86_64(),
    };
    let releases = [toolchain::Llvm::oldest(), toolchain::Llvm::reference()];
    let inputs = build::Inputs::demo(&tools, &releases, gpu.is_some())?;
    let (dist, _) = build::build_from(workspace, &inputs, &archs, &dist::Dist::new(workspace).root)?;
    let shown = checks::demo::run(workspace, &tools, &dist, &c_target)?;
    println!("{}", shown.report());
    Ok(())
}

/// `sm_XY` of the NVIDIA driver's GPU 0, if this machine has a driver and a GPU.
fn nvidia_gpu() -> Option<String> {
    use cuda_driver::{attr, Driver};
    let driver = Driver::load(c"libcuda.so.1").ok()?;
    if driver.device_count().ok()? < 1 {
        return None;
    }
    let dev = driver.device(0).ok()?;
    let major = driver.attribute(dev, attr::COMPUTE_CAPABILITY_MAJOR).ok()?;
    let minor = driver.attribute(dev, attr::COMPUTE_CAPABILITY_MINOR).ok()?;
    Some(format!("sm_{major}{minor}"))
}

/// Builds the dist tree, then runs the plugin benchmark (release profile) through the installed
/// plugin: `set_function_ptr_map` against sort + memcpy; then the cost of the translation the
/// pass plugin inserts, against untranslated calls; strict mode's cost; the frontend plugin's vtable
/// policy's cost to device compiles. Figures in `target/bench/`.
fn bench(workspace: &Path) -> Result<()> {
    let tools = Tools::locate(workspace)?;
    let dist = build::build(workspace, &tools, &Archs::default())?;
    cmd::status(Command::new(env!("CARGO")).current_dir(workspace).args([
        "bench",
        "-p",
        "omptarget-rtl-x86_64",
        "--bench",
        "set_function_ptr_map",
    ]))?;
    translation_bench::run(workspace, &tools, &dist)?;
    stock_table_bench::run(workspace, &tools, &dist)?;
    virtual_bench::run(workspace, &tools, &dist)?;
    strict_bench::run(workspace, &tools, &dist)?;
    frontend_bench::run(workspace, &tools, &dist)
}

/// `cargo xtask env`: what a user needs to build and run their own program with this project,
/// for each toolchain, as shell lines (`eval "$(cargo xtask env)"` sets the run environment of
/// the LLVM 19 toolchain; LLVM 22 needs none).
fn print_env(workspace: &Path) -> Result<()> {
    use llvm::{DeviceRtl, Runtime};
    use toolchain::{Llvm, Toolchain};
    let tools = Tools::locate_for(workspace, &[requirements::Need::Install])?;
    let dist = dist::Dist::new(workspace);
    let shell = |args: Vec<std::ffi::OsString>| {
        args.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
    };
    println!("# `cargo xtask build` makes {}.", dist.fat_lib().display());
    for llvm in Llvm::all() {
        let toolchain = Toolchain::new(llvm, &tools, &dist);
        let config = shell(toolchain.pass_plugin_args());
        let link = shell(toolchain.link_args_with_config());
        println!("# {}:", toolchain.describe());
        if llvm.config_links {
            println!(
                "#   ({config} loads the pass plugin and links the device library; without it, link with {})",
                shell(toolchain.link_args())
            );
        } else {
            println!("#   ({config} loads the pass plugin into device compiles)");
        }
        let mut targets = vec![("x86_64 host offload", offload::OffloadTarget::x86_64())];
        if llvm.device_rtl == DeviceRtl::Debian {
            // Debian ships no GPU DeviceRTL for the other releases: their GPU programs need one
            // built from LLVM's source (docs/gpu-devicertl.md).
            targets.push(("NVIDIA", offload::OffloadTarget::nvptx("sm_90")));
            targets.push(("AMD", offload::OffloadTarget::amdgcn("gfx90a")));
        }
        for (what, target) in targets {
            let compiler = toolchain.compiler("prog.c").display();
            println!(
                "#   {what}: {compiler} {config} {} prog.c {link}",
                shell(toolchain.offload_args(&target))
            );
        }
        match llvm.runtime {
            Runtime::ProjectPlugins => {
                println!("#   run through LLVM 16's libomptarget with our plugins (LIBOMPTARGET_INFO=1: diagnostics):");
                for (name, value) in toolchain.run_env() {
                    println!("export {name}={}", value.to_string_lossy());
                }
            }
            Runtime::Stock { .. } => {
                println!("#   run as is (OMP_TARGET_OFFLOAD=MANDATORY to refuse the host fallback)")
            }
        }
    }
    Ok(())
}
