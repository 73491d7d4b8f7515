//! `cargo xtask build | test | demo | bench`: the project's build, test and demo driver.

mod build;
mod checks;
mod cmd;
mod offload;
mod suite;
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};

use build::Archs;
use tools::Tools;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  build [--sm sm_70,sm_90] [--gfx gfx90a,...]   build the device runtime and target/dist
  test                                          run every test that needs no GPU
  demo                                          build, then translate a sample table on x86_64
  bench                                         build, then time set_function_ptr_map (target/bench/)

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
        "bench" => {
            no_options(command, rest)?;
            bench(&workspace)
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

/// `--sm a,b` / `--sm=a,b` / repeated; same for `--gfx`. Either one replaces its default list.
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
        archs.sms = sms;
    }
    if !gfxs.is_empty() {
        archs.gfxs = gfxs;
    }
    archs.validate()?;
    Ok(archs)
}

/// Builds the dist tree, then compiles and runs `examples/translate_table.c` against the x86_64
/// archive: the device runtime's lookup through its C ABI, on the CPU.
fn demo(workspace: &Path) -> Result<()> {
    let tools = Tools::locate(workspace)?;
    let dist = build::build(workspace, &tools, &Archs::default())?;
    let exe = workspace.join("target/demo/translate_table");
    std::fs::create_dir_all(exe.parent().context("no parent")?)?;
    cmd::output(
        Command::new("cc")
            .args(["-std=c11", "-O2", "-Wall"])
            .arg(workspace.join("examples/translate_table.c"))
            .arg(dist.x86_64_archive())
            .arg("-o")
            .arg(&exe),
    )?;
    println!("\n__kmpc_target_translate_fptr on x86_64, table installed as the plugin installs it:\n");
    cmd::status(&mut Command::new(&exe))
}

/// Builds the dist tree, then runs the plugin benchmark (release profile) through the installed
/// plugin: `set_function_ptr_map` against sort + memcpy, figures in `target/bench/`.
fn bench(workspace: &Path) -> Result<()> {
    let tools = Tools::locate(workspace)?;
    build::build(workspace, &tools, &Archs::default())?;
    cmd::status(Command::new(env!("CARGO")).current_dir(workspace).args([
        "bench",
        "-p",
        "plugin-x86_64",
        "--bench",
        "set_function_ptr_map",
    ]))
}
