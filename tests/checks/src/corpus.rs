//! The stock-parity corpus (`tests/corpus/`): small programs that include real libraries'
//! headers (Boost, nlohmann-json, fmt, spdlog, glm, Eigen, the C++ library) inside and beside
//! `declare target` regions, each built by clang 22 stock and with the project's configuration
//! file for x86_64, sm_90 and gfx90a (real GPU links: what only a GPU refuses shows here). The
//! project must build every one stock builds; its x86_64 builds must print on the strict device
//! what stock's print on the x86_64 device. The report is a table of device image bytes, stock
//! against project (`target/tests/corpus/table.md`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::e2e::extract_image;
use crate::offload::OffloadTarget;
use crate::toolchain::{Llvm, Toolchain};
use crate::tools::Tools;

/// The corpus programs (`tests/corpus/<name>.cpp`), each printing `<name>: ...` lines.
pub const PROGRAMS: &[&str] = &[
    "map_store",
    "inherited_print",
    "iostream_region",
    "glm_device",
    "eigen_device",
    "json_region",
    "fmt_spdlog",
    "boost_region",
];

/// How a program is built ([`compile`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Build {
    /// Stock clang 22: the OpenMP flags and LLVM 22's runtime, nothing of the project.
    Stock,
    /// The README's way: the same with `--config=clang-22.cfg`.
    Project,
}

/// Builds and checks the corpus (module documentation); returns the summary for the report.
pub fn check(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<String> {
    let toolchain = Toolchain::new(Llvm::reference(), tools, dist);
    let targets = [OffloadTarget::x86_64(), OffloadTarget::nvptx("sm_90"), OffloadTarget::amdgcn("gfx90a")];
    let out = workspace.join("target/tests/corpus");
    let mut table = String::from("| program |");
    for target in &targets {
        table.push_str(&format!(" {0} stock | {0} project |", target.name));
    }
    table.push_str(&format!("\n|---|{}\n", "---|---|".repeat(targets.len())));
    let mut failures = Vec::new();
    let (mut stock_built, mut project_built, mut runs, mut stubs) = (0, 0, 0, 0);
    // Every compile first, side by side (each executable a file of its own), then the checks.
    let builds: Vec<(&str, &OffloadTarget, Build)> = PROGRAMS
        .iter()
        .flat_map(|name| {
            targets.iter().flat_map(move |t| [(*name, t, Build::Stock), (*name, t, Build::Project)])
        })
        .collect();
    let mut built = cmd::in_parallel(builds, |(name, target, how)| {
        build(workspace, &toolchain, target, name, &out.join(&target.name).join(name), how)
    })
    .into_iter();
    for name in PROGRAMS {
        table.push_str(&format!("| {name} |"));
        for target in &targets {
            let dir = out.join(&target.name).join(name);
            let (Some(stock), Some(project)) = (built.next(), built.next()) else {
                bail!("fewer builds than programs and targets")
            };
            for exe in [&stock, &project] {
                let cell = match exe {
                    Ok(exe) => format!(" {} |", image_bytes(tools, exe, target)?),
                    Err(_) => " fails |".to_string(),
                };
                table.push_str(&cell);
            }
            stock_built += usize::from(stock.is_ok());
            project_built += usize::from(project.is_ok());
            match (&stock, &project) {
                (Ok(_), Err(err)) => failures.push(format!(
                    "{name} for {}: stock builds it, the project does not: {err:#}",
                    target.name
                )),
                (Ok(stock), Ok(project)) if !target.is_gpu() => {
                    if let Err(err) = same_output(&toolchain, stock, project, name) {
                        failures.push(format!("{err:#}"));
                    }
                    match remarks_hold(workspace, &toolchain, target, name, &dir) {
                        Ok(count) => stubs += count,
                        Err(err) => failures.push(format!("{err:#}")),
                    }
                    runs += 1;
                }
                _ => {}
            }
        }
        table.push('\n');
    }
    std::fs::write(out.join("table.md"), &table)?;
    if !failures.is_empty() {
        bail!("{}\n\ndevice image bytes:\n{table}", failures.join("\n"));
    }
    Ok(format!(
        "{} programs for {}: stock builds {stock_built}, the project {project_built}; {runs} x86_64 builds print the \
         same on the strict device as stock's; {stubs} stubs the remarks announce are in the device IR; image bytes \
         in {}",
        PROGRAMS.len(),
        targets.map(|t| t.name).join(", "),
        out.join("table.md").display()
    ))
}

/// Compiles and links `tests/corpus/<name>.cpp` for `target` into `dir` (as `stock` or
/// `project`).
pub fn build(
    workspace: &Path,
    toolchain: &Toolchain,
    target: &OffloadTarget,
    name: &str,
    dir: &Path,
    how: Build,
) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let exe = dir.join(match how {
        Build::Stock => "stock",
        Build::Project => "project",
    });
    let source = workspace.join("tests/corpus").join(format!("{name}.cpp"));
    compile(toolchain, target, &source, &exe, how)
        .with_context(|| format!("{name}, built for {}", target.name))?;
    Ok(exe)
}

/// Compiles and links the C++ program `source` for `target` into `exe` as its user would, at
/// `-O2`: stock, or with the release's configuration file (which links the device library).
pub fn compile(
    toolchain: &Toolchain,
    target: &OffloadTarget,
    source: &Path,
    exe: &Path,
    how: Build,
) -> Result<()> {
    let _ = std::fs::remove_file(exe);
    let mut args: Vec<OsString> = toolchain.offload_args(target);
    if how == Build::Project {
        args.extend(toolchain.pass_plugin_args());
    }
    args.extend(["-O2".into(), "-Wall".into(), "-o".into(), exe.into()]);
    args.push(source.into());
    args.extend(toolchain.link_args_with_config());
    args.extend(toolchain.device_link_args(target));
    let name = source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    cmd::output(Command::new(toolchain.compiler(&name)).args(&args))?;
    Ok(())
}

/// The size of `exe`'s device image for `target`.
fn image_bytes(tools: &Tools, exe: &Path, target: &OffloadTarget) -> Result<u64> {
    let dir = exe.parent().context("no parent")?;
    let image = extract_image(&tools.packager, exe, target, dir)?;
    let bytes = std::fs::metadata(&image)?.len();
    std::fs::rename(&image, exe.with_extension(format!("image.{}", target.name)))?;
    Ok(bytes)
}

/// Runs the stock build on the x86_64 device and the project's on the strict device: both must
/// exit 0 and print the same.
fn same_output(toolchain: &Toolchain, stock: &Path, project: &Path, name: &str) -> Result<()> {
    let expected = run(toolchain, stock, false)?;
    let found = run(toolchain, project, true)?;
    if expected != found || !expected.starts_with(&format!("{name}: ")) {
        bail!("{name}: the project's build prints on the strict device\n{found}\nstock's prints\n{expected}");
    }
    Ok(())
}

/// What an x86_64 build `exe` prints on the x86_64 device, or with `strict` on the strict device;
/// an error unless it exits 0.
pub fn run(toolchain: &Toolchain, exe: &Path, strict: bool) -> Result<String> {
    let mut c = Command::new(exe);
    c.env_remove("LD_PRELOAD").env_remove("LIBOMPTARGET_INFO").envs(toolchain.run_env());
    if strict {
        c.env("LD_PRELOAD", toolchain.dist().strict_lib());
    }
    let out = c.output().with_context(|| format!("cannot run {}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "{} exited with {}:\n{stdout}{}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(stdout)
}

/// Compiles `name`'s device module for `target` with the project and `-Rpass=omptarget-indirect`,
/// and checks each remark that announces a stub against the IR: the pass plugin's (`vtable slots
/// of <mangled> hold a stub`) name a stub the module defines and a function it no longer
/// declares; the frontend plugin's (`` `Class::f` is not compiled for the device``) name a
/// function some stub stands for. Returns how many stubs the module defines.
fn remarks_hold(
    workspace: &Path,
    toolchain: &Toolchain,
    target: &OffloadTarget,
    name: &str,
    dir: &Path,
) -> Result<usize> {
    let ir = dir.join("device.ll");
    let output = Command::new(toolchain.compiler("corpus.cpp"))
        .args(toolchain.offload_args(target))
        .args(toolchain.pass_plugin_args())
        .args(["-O2", "--offload-device-only", "-S", "-emit-llvm", "-Rpass=omptarget-indirect", "-o"])
        .arg(&ir)
        .arg(workspace.join("tests/corpus").join(format!("{name}.cpp")))
        .output()
        .with_context(|| format!("cannot compile {name}'s device IR"))?;
    let remarks = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        bail!("{name}: the device IR does not compile:\n{remarks}");
    }
    let module = std::fs::read_to_string(&ir)?;
    let stub_prefix = "@__omptarget_indirect_not_on_device.";
    let stubs: Vec<&str> = module
        .lines()
        .filter(|l| l.starts_with("define "))
        .filter_map(|l| l.split(stub_prefix).nth(1))
        .filter_map(|rest| rest.split('(').next())
        .collect();
    for line in remarks.lines() {
        if let Some(rest) = line.split("remark: vtable slots of ").nth(1) {
            let mangled = rest.split_whitespace().next().unwrap_or_default();
            if !stubs.contains(&mangled)
                || module.lines().any(|l| l.starts_with("declare ") && l.contains(&format!("@{mangled}(")))
            {
                bail!(
                    "{name}: a remark says {mangled} is stubbed, the device IR ({}) disagrees",
                    ir.display()
                );
            }
        } else if line.contains("is not compiled for the device") {
            // `A::B::f` -> its mangled names hold `1f`; `A::~A` -> `1AD` (D0, D1, D2).
            let qualified = line.split('`').nth(1).unwrap_or_default();
            let function = qualified.rsplit("::").next().unwrap_or_default();
            let piece = match function.strip_prefix('~') {
                Some(class) => format!("{}{class}D", class.len()),
                None => format!("{}{function}", function.len()),
            };
            // The remark speaks of vtable slots: a function no vtable of this module names (a
            // base destructor a derived one calls, whose vtable the C++ library holds) has none.
            let named = module.lines().filter(|l| l.starts_with("@_ZTV")).any(|l| {
                l.split("ptr @")
                    .skip(1)
                    .any(|slot| !slot.starts_with(&stub_prefix[1..]) && slot.contains(&piece))
            });
            if named && !stubs.iter().any(|stub| stub.contains(&piece)) {
                bail!("{name}: a remark says `{qualified}` is not on the device, but no stub in {} stands for it", ir.display());
            }
        }
    }
    Ok(stubs.len())
}
