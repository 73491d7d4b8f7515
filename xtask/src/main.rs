//! `cargo xtask build | test | demo | env | bench | gpu-test | gpu-bench`: the project's build,
//! test, demo and benchmark driver.

mod bench;
mod build;
mod demo;
mod env;
mod gpu_test;
mod install;
mod llvm_c_api;
mod suite;
mod vendor;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use checks::fuzz;
use dist::Archs;
use packaging::{cmd, dist, llvm, offload, requirements, toolchain, tools};
use tools::Tools;

pub(crate) const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  build [--sm sm_70,sm_90] [--gfx gfx90a,...]   build the device runtime and target/dist
  test                                          run every test that needs no GPU
  demo                                          build, then show examples/: a C++ scene rendered on the
                                                device (target/demo/scene.png), the same program stopped
                                                without the project, C function pointers (clang 19;
                                                NVIDIA GPU 0 if present, else x86_64 host offload)
  env                                           print the compile flags and environment for users
  bench [frontend|lookup|stock|virtual]         build, then time set_function_ptr_map, the
                                                device lookup at every table size against LLVM's,
                                                the translation the pass plugin inserts, each release's
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
            demo::run(&workspace)
        }
        "env" => {
            no_options(command, rest)?;
            env::run(&workspace)
        }
        "bench" => bench::run(&workspace, rest),
        "gpu-test" => gpu_test::run(&workspace, rest),
        "install" => install::run(&workspace, &install::parse(rest)?),
        "uninstall" => match rest {
            [flag, dir] if flag == "--prefix" => install::uninstall(Path::new(dir)),
            _ => bail!("`{command}` takes --prefix DIR\n{USAGE}"),
        },
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
            install::check(&workspace)
        }
        "dist" => {
            no_options(command, rest)?;
            install::archive(&workspace)
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
            gpu_test::bench(&workspace)
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
