//! Running the end-to-end programs on the x86_64 device, loose and strict, with each map setup,
//! and their negative controls (without the map, without the vtables, without the pass or the
//! frontend plugin).

use std::path::Path;

use anyhow::{bail, ensure, Context, Result};

use super::compile::{build, build_as, extract_image, shared_library_of};
use super::programs::{Build, FrontendControl, Program, PROGRAMS};
use crate::cmd;
use crate::images;
use crate::offload::OffloadTarget;
use crate::toolchain::{is_fortran, Toolchain};
use omptarget_indirect_abi::host_calls::{HOST_CALLS_ENV, REPORT_WORDS, STOP_EXIT_STATUS};
use omptarget_indirect_abi::HOST_DEVICE_MIN_INDEXED_KEYS;

/// How the project installs the map in a run, set through its environment switches (its plugins
/// with LLVM 19, the registration library with LLVM 21; libomptarget 22 and later install
/// their own table, always).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapSetup {
    /// The default: table and hash index.
    Indexed,
    /// `OMPTARGET_INDIRECT_INDEX=0`: the table alone, binary-searched on the device.
    SearchOnly,
    /// `OMPTARGET_INDIRECT_MAP=0`: nothing installed (the negative control).
    None,
    /// `OMPTARGET_INDIRECT_VTABLES=0`: functions paired, vtables not (the negative control of
    /// virtual calls on host-built objects).
    NoVtables,
    /// `OMPTARGET_INDIRECT_SLOT_COPIES=0`: vtables paired with their images' copies only, whatever
    /// their slots name (the negative control of classes over another image's).
    NoSlotCopies,
}

/// The longest one run of an end-to-end program may take: they take seconds; one that takes
/// this long hangs, and the step fails instead of the suite waiting for ever.
const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `c` (the program `exe`), its output in files beside it; kills it after `limit`. Returns
/// (exit code, -1 for a signal; stdout then stderr).
fn output_within(
    mut c: std::process::Command,
    exe: &Path,
    limit: std::time::Duration,
) -> Result<(i32, String)> {
    let (out_path, err_path) = (exe.with_extension("run-stdout"), exe.with_extension("run-stderr"));
    let out =
        std::fs::File::create(&out_path).with_context(|| format!("cannot create {}", out_path.display()))?;
    let err =
        std::fs::File::create(&err_path).with_context(|| format!("cannot create {}", err_path.display()))?;
    let mut child = c
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let shown = String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
            bail!(
                "{} still ran after {} s: killed (it hangs); its stderr:\n{shown}",
                exe.display(),
                limit.as_secs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let read = |path: &Path| String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
    let mut text = read(&out_path);
    text.push_str(&read(&err_path));
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Ok((status.code().unwrap_or(-1), text))
}

/// Runs an x86_64 build with the map installed as `setup` says. Returns (exit code, stdout and
/// stderr). With LLVM 22 it also proves, from the dynamic loader's trace (`LD_DEBUG=libs`), that
/// the run used libomptarget 22 and loaded no library of the project's dist tree: the stock
/// runtime and the device library did the work alone.
pub fn run(toolchain: &Toolchain, exe: &Path, setup: MapSetup) -> Result<(i32, String)> {
    run_with(toolchain, exe, &[], setup, false, Device::Loose)
}

/// How forgiving the x86_64 device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// Plain host offload: device code may touch the host program (as no GPU lets it).
    Loose,
    /// Under `LD_PRELOAD=libomptarget-indirect-strict.so`: the host program is unreachable while
    /// device code runs, as on a GPU.
    Strict,
}

/// [`run`] with `args`, with `LIBOMPTARGET_INFO=1` where `info`, on the `device` given.
pub fn run_with(
    toolchain: &Toolchain,
    exe: &Path,
    args: &[&str],
    setup: MapSetup,
    info: bool,
    device: Device,
) -> Result<(i32, String)> {
    let strict_lib = (device == Device::Strict).then(|| toolchain.dist().strict_lib());
    run_command(toolchain, exe, command(toolchain, exe, args, setup, info, strict_lib.as_deref()))
}

/// Runs `c`, the [`command`] of `exe`; with a stock libomptarget also checks, from the loader's
/// trace, what the run loaded.
fn run_command(toolchain: &Toolchain, exe: &Path, mut c: std::process::Command) -> Result<(i32, String)> {
    let trace = exe.with_extension("ld-debug");
    let stock = !toolchain.llvm.runs_project_plugins();
    if stock {
        let _ = std::fs::remove_dir_all(&trace);
        std::fs::create_dir_all(&trace)?;
        c.env("LD_DEBUG", "libs").env("LD_DEBUG_OUTPUT", trace.join("trace"));
    }
    let (code, text) = output_within(c, exe, RUN_LIMIT)?;
    if stock {
        let loaded = initialised_objects(&trace)?;
        let ours = toolchain.dist().lib_dir();
        let foreign: Vec<&String> = loaded
            .iter()
            .filter(|o| {
                let o = Path::new(o);
                let allowed = [toolchain.dist().strict_lib(), toolchain.dist().register_lib()];
                (o.starts_with(&ours) && !allowed.iter().any(|a| a == o))
                    || o.to_string_lossy().contains("libomptarget.rtl.")
            })
            .collect();
        ensure!(foreign.is_empty(), "{} loaded plugins with libomptarget 22: {foreign:?}", exe.display());
        let runtime = toolchain.libomptarget_soname();
        ensure!(
            loaded.iter().any(|o| o.ends_with(&format!("/{runtime}"))),
            "{} did not load {runtime}; it loaded {loaded:?}",
            exe.display()
        );
    }
    Ok((code, text))
}

/// The command that runs `exe` with `args` on `toolchain`'s runtime, the map set up as `setup`
/// says, with `LIBOMPTARGET_INFO=1` where `info`, and `preload` (a strict-mode library) as the
/// only `LD_PRELOAD`.
fn command(
    toolchain: &Toolchain,
    exe: &Path,
    args: &[&str],
    setup: MapSetup,
    info: bool,
    preload: Option<&Path>,
) -> std::process::Command {
    let mut c = toolchain.run_command(exe);
    c.args(args).env_remove("LD_LIBRARY_PATH").envs(toolchain.run_env()).env_remove("LIBOMPTARGET_INFO");
    c.env_remove("LD_PRELOAD");
    if let Some(preload) = preload {
        c.env("LD_PRELOAD", preload);
    }
    if info {
        c.env("LIBOMPTARGET_INFO", "1");
    }
    c.env_remove("OMPTARGET_INDIRECT_MAP").env_remove("OMPTARGET_INDIRECT_INDEX").env_remove(HOST_CALLS_ENV);
    match setup {
        MapSetup::Indexed => {}
        MapSetup::SearchOnly => {
            c.env("OMPTARGET_INDIRECT_INDEX", "0");
        }
        MapSetup::None => {
            c.env("OMPTARGET_INDIRECT_MAP", "0");
        }
        MapSetup::NoVtables => {
            c.env("OMPTARGET_INDIRECT_VTABLES", "0");
        }
        MapSetup::NoSlotCopies => {
            c.env("OMPTARGET_INDIRECT_SLOT_COPIES", "0");
        }
    }
    c
}

/// `c` with the check of calls into host code turned off (`OMPTARGET_INDIRECT_HOST_CALLS=off`):
/// the strict device's own stops, and the host copies the loose device runs without the check.
fn without_host_call_check(mut c: std::process::Command) -> std::process::Command {
    c.env(HOST_CALLS_ENV, "off");
    c
}

/// [`command`] with the map as installed by default, on `device`.
pub fn device_command(
    toolchain: &Toolchain,
    exe: &Path,
    args: &[&str],
    device: Device,
) -> std::process::Command {
    let strict_lib = (device == Device::Strict).then(|| toolchain.dist().strict_lib());
    command(toolchain, exe, args, MapSetup::Indexed, false, strict_lib.as_deref())
}

/// The objects whose initialisers the dynamic loader ran (`calling init: <path>` lines of the
/// `LD_DEBUG=libs` trace files in `trace`): every library of the run, `dlopen`ed ones included.
fn initialised_objects(trace: &Path) -> Result<Vec<String>> {
    let mut objects = Vec::new();
    for file in std::fs::read_dir(trace)? {
        let text = std::fs::read_to_string(file?.path())?;
        objects.extend(
            text.lines().filter_map(|l| l.split_once("calling init: ")).map(|(_, o)| o.trim().to_string()),
        );
    }
    ensure!(!objects.is_empty(), "no LD_DEBUG trace in {}", trace.display());
    Ok(objects)
}

/// Builds and runs `program` on x86_64 host offload with `toolchain`. With our plugin (LLVM 19)
/// a program that needs the map runs again with the table alone (the device's binary search
/// instead of the index: same results expected), then with the map disabled, which must fail.
/// An unmodified program is also built and run at `-O0` and with `-foffload-lto`, and built
/// without the pass plugin, which must fail.
pub fn run_x86_64(workspace: &Path, toolchain: &Toolchain, program: &Program) -> Result<String> {
    let target = OffloadTarget::x86_64();
    let exe = build(workspace, toolchain, &target, program)?;
    // A program kept off GPUs may have its image use what its shared library's image defines
    // (flang 24 refers to a used module's variables there): said in the report, never hidden.
    let library_has_image = program.shared_library.iter().any(|u| u.has_device_code());
    let library_image = match shared_library_of(program, &exe) {
        Some(library) if !program.on_gpus && library_has_image => {
            let dir = exe.parent().context("no parent")?.join("library-image");
            std::fs::create_dir_all(&dir)?;
            Some(extract_image(toolchain.packager(), &library, &target, &dir)?)
        }
        _ => None,
    };
    let across = expect_gpu_linkable(toolchain, &exe, program.x86_64_only_symbols, library_image.as_deref())?;
    let ours = toolchain.llvm.runs_project_plugins();
    // The project installs the table (its plugins, or the registration library where the stock
    // runtime fills none for x86_64): its switches apply.
    let installs = toolchain.llvm.project_installs_x86_64_map();
    let setups: &[MapSetup] = if program.needs_map && installs {
        &[MapSetup::Indexed, MapSetup::SearchOnly]
    } else {
        &[MapSetup::Indexed]
    };
    let mut detail = String::new();
    for &setup in setups {
        let summary = expect_pass(toolchain, &exe, program, setup)?;
        if detail.is_empty() {
            detail = summary;
        } else {
            detail.push_str("; the same without the hash index");
        }
    }
    expect_pass_on(toolchain, &exe, program, MapSetup::Indexed, Device::Strict)?;
    detail.push_str("; the same on the strict device");
    if !program.host_call_mistakes.is_empty() {
        detail.push_str(&format!("; {}", expect_host_call_stops(toolchain, &exe, program)?));
    }
    if !across.is_empty() {
        detail.push_str(&format!(
            "; its device image uses what its shared library's image defines ({}), which no GPU link resolves",
            across.join(", ")
        ));
    }
    if program.unmodified {
        // flang has no -foffload-lto.
        let fortran = program.units.iter().any(|u| is_fortran(u.source));
        let builds: &[Build] = if fortran { &[Build::O0] } else { &[Build::O0, Build::OffloadLto] };
        for &how in builds {
            let exe = build_as(workspace, toolchain, &target, program, how)?;
            expect_pass(toolchain, &exe, program, MapSetup::Indexed)?;
        }
        detail.push_str(if fortran {
            "; the same at -O0"
        } else {
            "; the same at -O0 and with -foffload-lto"
        });
        // Without the configuration file a program that needs the frontend plugin does not
        // compile: its own control below shows that.
        if fortran && toolchain.llvm.stock_flang_kernels_fail_on_x86_64() {
            // Stock flang's kernels do not run on this runtime at all (no adapter): the control
            // of the translation is the build without naming (below).
            // A program whose device code calls a procedure that only the pass plugin gives the
            // device (a `non_overridable` binding, called directly) does not even link.
            match build_as(workspace, toolchain, &target, program, Build::WithoutPassPlugin) {
                Err(err) if device_link_error(&format!("{err:#}")).is_some() => {
                    let error = device_link_error(&format!("{err:#}")).unwrap_or_default();
                    detail.push_str(&format!(
                        "; compiled without the pass plugin (stock flang): its device code does not link ({error})"
                    ));
                }
                built => {
                    let control = built?;
                    let (code, _) = run(toolchain, &control, MapSetup::Indexed)?;
                    ensure!(
                        code != 0,
                        "{}: stock flang's kernels ran without the adapter",
                        control.display()
                    );
                    detail.push_str(&format!(
                        "; compiled without the pass plugin (stock flang): its kernels do not run on this runtime \
                         (exit {code})"
                    ));
                }
            }
        } else if program.frontend != FrontendControl::CompileFails {
            let control = build_as(workspace, toolchain, &target, program, Build::WithoutPassPlugin)?;
            let failed =
                expect_failure(toolchain, &control, MapSetup::Indexed, "compiled without the pass plugin")?;
            detail.push_str(&format!("; compiled without the pass plugin: {failed}"));
            let stopped = expect_strict_stop(
                toolchain,
                &control,
                MapSetup::Indexed,
                "compiled without the pass plugin",
            )?;
            detail.push_str(&format!(", and the strict device stops it at the {stopped}"));
            detail.push_str(" (negative controls)");
        }
    }
    detail.push_str(&frontend_controls(workspace, toolchain, program)?);
    if program.needs_host_pass {
        let what = "built with the pass plugin in device compiles only";
        let control = build_as(workspace, toolchain, &target, program, Build::WithoutHostPass)?;
        let failed = expect_failure(toolchain, &control, MapSetup::Indexed, what)?;
        let stopped = expect_strict_stop(toolchain, &control, MapSetup::Indexed, what)?;
        detail.push_str(&format!(
            "; {what}: {failed}, and the strict device stops it at the {stopped} (negative controls)"
        ));
    }
    if let Some(argument) = program.extension_components {
        detail.push_str(&extension_components(workspace, toolchain, program, argument)?);
    }
    if program.binding_copies {
        detail.push_str(&binding_copies_control(workspace, toolchain, program)?);
    }
    if !program.without_naming.is_empty() {
        let control = build_as(workspace, toolchain, &target, program, Build::WithoutNaming)?;
        let what = "compiled without naming its procedures";
        let failed = expect_failure(toolchain, &control, MapSetup::Indexed, what)?;
        let stopped = expect_strict_stop(toolchain, &control, MapSetup::Indexed, what)?;
        detail.push_str(&format!(
            "; {what}: {failed}, and the strict device stops it at the {stopped} (negative control)"
        ));
    }
    if program.host_vtables {
        let what = "with OMPTARGET_INDIRECT_VTABLES=0";
        let failed = expect_failure(toolchain, &exe, MapSetup::NoVtables, what)?;
        let stopped = expect_strict_stop(toolchain, &exe, MapSetup::NoVtables, what)?;
        detail.push_str(&format!(
            "; without the vtables in the map: {failed}, and the strict device stops it at the {stopped} \
             (negative controls)"
        ));
    }
    if program.slots_in_another_image {
        for device in [Device::Loose, Device::Strict] {
            let (code, output) = run_with(toolchain, &exe, &[], MapSetup::NoSlotCopies, false, device)?;
            let line = output.lines().find(|l| l.contains("is not compiled for the device"));
            ensure!(
                code != 0 && line.is_some(),
                "negative control: with OMPTARGET_INDIRECT_SLOT_COPIES=0, {} ({device:?} device) exited with \
                 {code}, expected the program image's weak trap to stop it:\n{output}",
                exe.display()
            );
        }
        detail.push_str(
            "; with OMPTARGET_INDIRECT_SLOT_COPIES=0 the program image's weak trap stops it, loose and strict \
             (negative controls)",
        );
    }
    if program.needs_map && installs {
        let failed = expect_failure(toolchain, &exe, MapSetup::None, "with OMPTARGET_INDIRECT_MAP=0")?;
        detail.push_str(&format!("; without the map: {failed}"));
        let stopped = expect_strict_stop(toolchain, &exe, MapSetup::None, "with OMPTARGET_INDIRECT_MAP=0")?;
        detail.push_str(&format!(", and the strict device stops it at the {stopped}"));
        detail.push_str(" (negative controls)");
        detail.push_str(&format!("; {}", check_diagnostics(toolchain, &exe, program)?));
    }
    if !ours && !installs && program.needs_map {
        detail.push_str(&format!("; {}", check_device_table(toolchain, &exe, program)?));
    }
    if !ours {
        detail.push_str(&format!(
            "; loaded {}, and of target/dist at most {}",
            toolchain.libomptarget_soname(),
            crate::dist::REGISTER.2
        ));
    }
    Ok(detail)
}

/// Each of the program's calls into host code ([`Program::host_call_mistakes`]) stops with the
/// line that names what was called and its object, loose and strict; with the check off the loose
/// device runs the host copies and the program passes (the negative control).
fn expect_host_call_stops(toolchain: &Toolchain, exe: &Path, program: &Program) -> Result<String> {
    for mistake in program.host_call_mistakes {
        let argument = [mistake.argument];
        for device in [Device::Loose, Device::Strict] {
            let (code, output) = run_with(toolchain, exe, &argument, MapSetup::Indexed, false, device)?;
            let line = output.lines().find(|l| l.contains(REPORT_WORDS)).unwrap_or_default();
            let object = format!("/{} ", mistake.object);
            ensure!(
                host_call_stop(code, &output).as_deref() == Some(mistake.called)
                    && line.contains(&object)
                    && line.contains("from the target region in `")
                    && output.lines().filter(|l| l.contains(REPORT_WORDS)).count() == 1,
                "{} {} on the {device:?} device exited with {code}; expected {STOP_EXIT_STATUS} and one line naming \
                 {} in {}:\n{output}",
                exe.display(),
                mistake.argument,
                mistake.called,
                mistake.object
            );
        }
        let c = command(toolchain, exe, &argument, MapSetup::Indexed, false, None);
        let (code, output) = run_command(toolchain, exe, without_host_call_check(c))?;
        ensure!(
            code == 0 && output.contains(&format!("{}: ", program.name)) && !output.contains(REPORT_WORDS),
            "negative control: {} {} with {HOST_CALLS_ENV}=off exited with {code}; expected the host copy to run:\n{output}",
            exe.display(),
            mistake.argument
        );
    }
    let named: Vec<String> =
        program.host_call_mistakes.iter().map(|m| format!("`{}` at {}", m.argument, m.called)).collect();
    Ok(format!(
        "stops {} (exit {STOP_EXIT_STATUS}, one line naming the object and the target region), loose and strict; with \
         {HOST_CALLS_ENV}=off each runs the host copy and passes (negative control)",
        named.join(", ")
    ))
}

/// The project's lines (`omptarget-indirect (...)`) in a run's output.
fn project_lines(text: &str) -> Vec<String> {
    text.lines().filter(|l| l.starts_with("omptarget-indirect (")).map(str::to_string).collect()
}

/// The project's lines of a passing run of `exe` with `LIBOMPTARGET_INFO=1`, after a run without
/// it printed none of them.
fn informed_lines(toolchain: &Toolchain, exe: &Path) -> Result<Vec<String>> {
    let (_, quiet) = run_with(toolchain, exe, &[], MapSetup::Indexed, false, Device::Loose)?;
    let printed = project_lines(&quiet);
    ensure!(printed.is_empty(), "{}: a passing run printed {printed:?}", exe.display());
    let (code, informed) = run_with(toolchain, exe, &[], MapSetup::Indexed, true, Device::Loose)?;
    ensure!(code == 0, "{} with LIBOMPTARGET_INFO=1 exited with {code}", exe.display());
    Ok(project_lines(&informed))
}

/// What the project prints around a passing run of `exe` where it installs the x86_64 table:
/// nothing by default (LLVM 19's CUDA and AMDGPU plugins, which find no device here, included);
/// with `LIBOMPTARGET_INFO=1` the summary of the map installed (by the x86_64 plugin, or by the
/// registration library where the stock runtime fills no table); with `OMPTARGET_INDIRECT_MAP=0`,
/// its notice once.
fn check_diagnostics(toolchain: &Toolchain, exe: &Path, program: &Program) -> Result<String> {
    let lines = informed_lines(toolchain, exe)?;
    let summary = lines
        .iter()
        .find(|l| {
            let installer = if toolchain.llvm.runs_project_plugins() {
                "omptarget-indirect (x86_64) info: device 0: "
            } else {
                "omptarget-indirect (register) info: x86_64 device image "
            };
            l.starts_with(installer) && l.contains(" indirect functions, ") && l.contains(" vtables (")
        })
        .with_context(|| {
            format!("{} printed no map summary with LIBOMPTARGET_INFO=1: {lines:?}", program.name)
        })?;
    ensure!(
        lines.iter().all(|l| !l.contains(") error: ")),
        "{}: error lines in a passing run: {lines:?}",
        program.name
    );
    let (_, unmapped) = run_with(toolchain, exe, &[], MapSetup::None, false, Device::Loose)?;
    let notices = project_lines(&unmapped)
        .into_iter()
        .filter(|l| l.contains(") notice: OMPTARGET_INDIRECT_MAP=0"))
        .count();
    ensure!(notices == 1, "{}: {notices} OMPTARGET_INDIRECT_MAP=0 notices, expected 1", program.name);
    let summary = summary.split(": ").last().unwrap_or(summary);
    Ok(format!("silent by default; LIBOMPTARGET_INFO=1: `{summary}`; OMPTARGET_INDIRECT_MAP=0: one notice"))
}

/// Where the stock runtime builds the x86_64 table (LLVM 22 and later: `fills_x86_64_table`): the registration library must
/// install one table on device 0 (`docs/stock-runtime-table.md`), with its hash index from
/// [`HOST_DEVICE_MIN_INDEXED_KEYS`] keys on and without one below, say so under
/// `LIBOMPTARGET_INFO=1`, and nothing by default; the program must pass without the index too
/// (the binary search over the same table).
fn check_device_table(toolchain: &Toolchain, exe: &Path, program: &Program) -> Result<String> {
    let lines = informed_lines(toolchain, exe)?;
    let summary = lines
        .iter()
        .find(|l| l.starts_with("omptarget-indirect (register) info: device 0: one table for "))
        .with_context(|| format!("{}: no table was installed on device 0: {lines:?}", program.name))?;
    // `<f> indirect functions and <w> vtable words, table <t> B, index <i> B, ...`
    let number_before = |words: &str| -> Option<usize> {
        let (before, _) = summary.split_once(words)?;
        before.rsplit(' ').next()?.parse().ok()
    };
    let keys = number_before(" indirect functions and ")
        .zip(number_before(" vtable words"))
        .map(|(functions, words)| functions + words)
        .with_context(|| format!("{}: no key count in `{summary}`", program.name))?;
    let indexed = !summary.contains("index 0 B");
    ensure!(
        indexed == (keys >= HOST_DEVICE_MIN_INDEXED_KEYS),
        "{}: {keys} keys {} an index on the x86_64 device (from {} keys on): `{summary}`",
        program.name,
        if indexed { "got" } else { "did not get" },
        HOST_DEVICE_MIN_INDEXED_KEYS
    );
    expect_pass(toolchain, exe, program, MapSetup::SearchOnly)?;
    let summary = summary.split(": ").last().unwrap_or(summary);
    Ok(format!(
        "one table per device, {} (LIBOMPTARGET_INFO=1: `{summary}`); the same without the hash index",
        if indexed { "with its index" } else { "scanned (fewer keys than the index pays for)" }
    ))
}

/// Runs `exe` and requires it to pass; returns its summary line.
fn expect_pass(toolchain: &Toolchain, exe: &Path, program: &Program, setup: MapSetup) -> Result<String> {
    expect_pass_on(toolchain, exe, program, setup, Device::Loose)
}

/// [`expect_pass`] on `device`.
fn expect_pass_on(
    toolchain: &Toolchain,
    exe: &Path,
    program: &Program,
    setup: MapSetup,
    device: Device,
) -> Result<String> {
    let (code, output) = run_with(toolchain, exe, &[], setup, false, device)?;
    let summary = output.lines().find(|l| l.starts_with(&format!("{}: ", program.name))).unwrap_or("");
    ensure!(
        code == 0 && summary.ends_with(" 0 failed"),
        "{} ({setup:?}, {device:?} device) exited with {code}:\n{output}",
        exe.display()
    );
    if let (Some(line), true) = (program.expect_line, toolchain.llvm.runs_project_plugins()) {
        ensure!(output.lines().any(|l| l == line), "{} did not print `{line}`:\n{output}", exe.display());
    }
    Ok(summary.to_string())
}

/// Fails if the x86_64 device image of `exe` needs a symbol that a GPU link would not find
/// ([`images::GpuProvided`]), `x86_64_only` excepted: the x86_64 device resolves host symbols from the host process, so
/// without this check its runs hide what only a GPU refuses. What `library_image` (the device
/// image of the program's shared library, for a program kept off GPUs) defines is returned
/// instead: only x86_64 images, shared objects, resolve one image's symbols from another.
pub fn expect_gpu_linkable(
    toolchain: &Toolchain,
    exe: &Path,
    x86_64_only: &[&str],
    library_image: Option<&Path>,
) -> Result<Vec<String>> {
    let dir = exe.parent().context("no parent")?;
    let image = extract_image(toolchain.packager(), exe, &OffloadTarget::x86_64(), dir)?;
    let undefined = images::undefined_symbols(&cmd::read(&image)?)?;
    let provided = images::GpuProvided::read(toolchain.tools())?;
    let from_library = match library_image {
        Some(library) => images::defined_symbols(&cmd::read(library)?)?,
        None => Default::default(),
    };
    let (across, missing): (Vec<&str>, Vec<&str>) = provided
        .missing(&undefined)
        .into_iter()
        .filter(|s| !x86_64_only.contains(s))
        .partition(|s| from_library.contains(*s));
    let missing = missing.join(", ");
    ensure!(
        missing.is_empty(),
        "{}: the x86_64 device image needs what no GPU provides (a GPU link would fail): {missing}",
        image.display()
    );
    Ok(across.into_iter().map(String::from).collect())
}

/// [`Program::extension_components`]: the program run with `argument` passes, loose and strict;
/// built without the polymorphic map sizes, its checks fail, and with `argument` it dies where the
/// stock flang's mapper does (flang 23), which the report says otherwise (flang 24).
fn extension_components(
    workspace: &Path,
    toolchain: &Toolchain,
    program: &Program,
    argument: &str,
) -> Result<String> {
    let target = OffloadTarget::x86_64();
    let exe = build(workspace, toolchain, &target, program)?;
    let passed = |text: &str| {
        text.lines().any(|l| l.starts_with(&format!("{}: ", program.name)) && l.ends_with(" 0 failed"))
    };
    for device in [Device::Loose, Device::Strict] {
        let (code, text) = run_with(toolchain, &exe, &[argument], MapSetup::Indexed, false, device)?;
        ensure!(
            code == 0 && passed(&text),
            "{} {argument} ({device:?} device) exited with {code}:\n{text}",
            exe.display()
        );
    }
    let what = "built with OMPTARGET_INDIRECT_POLYMORPHIC_MAPS=0 (flang's declared-type sizes)";
    let control = build_as(workspace, toolchain, &target, program, Build::WithoutPolymorphicMaps)?;
    // With flang's sizes the program may also die after its report (flang 23.1.4: a segmentation
    // fault at exit): the failed checks are the control, the exit need only be a failure.
    let failed = expect_failure(toolchain, &control, MapSetup::Indexed, what)?;
    let (code, text) = run_with(toolchain, &control, &[argument], MapSetup::Indexed, false, Device::Loose)?;
    // flang 23's mapper divides by the declared size, 0, and dies; a flang that maps the abstract
    // type without that needs nothing of the project there, which the report says.
    let empty = if code == 0 && passed(&text) {
        format!("`{argument}` passes by itself (stock flang {} maps it)", toolchain.llvm.major)
    } else {
        format!("`{argument}` dies (exit {code})")
    };
    Ok(format!(
        "; `{argument}` (an abstract type without components) passes, loose and strict; {what}: {failed}, and {empty} (negative controls)"
    ))
}

/// The linker's error, if a build failed at the device link because device code calls a procedure
/// the device does not have: the procedure is undefined, or, with the procedure's module in a
/// static archive, the archive's host member that defines it is pulled into the x86_64 device link
/// beside the module's device code (a multiple definition).
pub(super) fn device_link_error(build_error: &str) -> Option<String> {
    ["undefined reference to `", "multiple definition of `"].into_iter().find_map(|what| {
        let symbol = build_error.split(what).nth(1)?.split('\'').next()?;
        Some(format!("{what}{symbol}'"))
    })
}

/// [`Program::binding_copies`]' negative control: built without the copies, the program does not
/// link (device code calls a binding's procedure directly) or stops at its first type-bound call
/// with the stub's line, loose and strict.
fn binding_copies_control(workspace: &Path, toolchain: &Toolchain, program: &Program) -> Result<String> {
    let target = OffloadTarget::x86_64();
    let what = "built with OMPTARGET_INDIRECT_BINDING_COPIES=0 (flang's undef binding slots)";
    // Device code that calls a binding's procedure directly (a `non_overridable` one) does not
    // link without the copy.
    let control = match build_as(workspace, toolchain, &target, program, Build::WithoutBindingCopies) {
        Err(err) if device_link_error(&format!("{err:#}")).is_some_and(|e| e.contains("`_Q")) => {
            let error = device_link_error(&format!("{err:#}")).unwrap_or_default();
            return Ok(format!("; {what}: its device code does not link ({error}) (negative control)"));
        }
        built => built?,
    };
    let mut named = String::new();
    for device in [Device::Loose, Device::Strict] {
        let (code, output) = run_with(toolchain, &control, &[], MapSetup::Indexed, false, device)?;
        let line = output.lines().find(|l| l.contains("is not compiled for the device") && l.contains("=0"));
        ensure!(
            code != 0 && line.is_some(),
            "negative control: {what}, {} ({device:?} device) exited with {code}; expected the stub's line:\n{output}",
            control.display()
        );
        let line = line.unwrap_or_default();
        named = line
            .split_once(": ")
            .map_or(line, |(_, rest)| rest)
            .split(" is not compiled")
            .next()
            .unwrap_or_default()
            .to_string();
    }
    Ok(format!("; {what}: loose and strict stop at the stub of {named} (negative control)"))
}

/// Runs a negative control, which must fail: its checks (FAIL lines, a failing exit), or, where
/// its device code calls host code no image pairs, the check of such calls that stops it (exit
/// [`STOP_EXIT_STATUS`] and the line naming what was called). Returns how it failed.
fn expect_failure(toolchain: &Toolchain, exe: &Path, setup: MapSetup, what: &str) -> Result<Failure> {
    let (code, output) = run(toolchain, exe, setup)?;
    let checks = output.lines().filter(|l| l.starts_with("FAIL ")).count();
    let stopped_at = host_call_stop(code, &output);
    ensure!(
        (code != 0 && checks > 0) || stopped_at.is_some(),
        "negative control: {what}, {} exited with {code} and {checks} failed checks; it must fail:\n{output}",
        exe.display()
    );
    Ok(Failure { checks, exit: code, stopped_at })
}

/// What the check of calls into host code stopped a run at (`host function `f``, `a virtual
/// function through the host's vtable of class `C``), when it did: exit [`STOP_EXIT_STATUS`] and its one line.
pub fn host_call_stop(code: i32, output: &str) -> Option<String> {
    let line = output.lines().find(|l| l.starts_with("omptarget-indirect (") && l.contains(REPORT_WORDS))?;
    let called = line.split_once(REPORT_WORDS)?.1.split(" at 0x").next()?.trim();
    (code == STOP_EXIT_STATUS).then(|| called.to_string())
}

/// How a negative control failed: its failed checks, and its exit (1, or -1 where the program
/// gone wrong then died of a signal, which the report says); or what the check of calls into
/// host code stopped it at.
struct Failure {
    checks: usize,
    exit: i32,
    stopped_at: Option<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(called) = &self.stopped_at {
            return write!(f, "it stops where device code called {called} (exit {STOP_EXIT_STATUS})");
        }
        write!(f, "{} checks fail", self.checks)?;
        if self.exit != 1 {
            write!(f, " (then it dies: exit {})", self.exit)?;
        }
        Ok(())
    }
}

/// The checks of a program that needs the frontend plugin: built without it, it must fail as
/// [`Program::frontend`] says; asked to call a virtual function the device does not compile, it
/// must stop with the stub's line. Returns what they showed, for the report.
fn frontend_controls(workspace: &Path, toolchain: &Toolchain, program: &Program) -> Result<String> {
    let target = OffloadTarget::x86_64();
    let mut detail = String::new();
    if let Some(argument) = program.trap_argument {
        let exe = build(workspace, toolchain, &target, program)?;
        let mut stops = Vec::new();
        // The stub stops the loose device too: it would otherwise run the host copy, or jump to
        // nothing.
        for device in [Device::Loose, Device::Strict] {
            let (code, output) = run_with(toolchain, &exe, &[argument], MapSetup::Indexed, false, device)?;
            let line = output.lines().find(|l| l.contains("is not compiled for the device"));
            ensure!(
                code != 0 && line.is_some(),
                "{} {argument} on the {} device exited with {code}, expected the trap stub's line:\n{output}",
                exe.display(),
                format!("{device:?}").to_lowercase()
            );
            // `<mangled name>` for a C++ function, `type-bound procedure `b` of type `t`` for Fortran.
            let line = line.unwrap_or_default();
            let named = line.split_once(": ").map_or(line, |(_, rest)| rest);
            let named = named.split(" is not compiled").next().unwrap_or_default().to_string();
            stops.push((named, code));
        }
        if let [(named, loose), (_, strict)] = &stops[..] {
            detail.push_str(&format!(
                "; `{argument}` stops at the stub of {named} (exit {loose} loose, {strict} strict)"
            ));
        }
    }
    let what = "built without the frontend plugin";
    match program.frontend {
        FrontendControl::NotNeeded => {}
        FrontendControl::CompileFails => {
            let Err(err) = build_as(workspace, toolchain, &target, program, Build::WithoutFrontendPlugin)
            else {
                bail!("{}: {what}, it compiled; expected the compile to fail", program.name);
            };
            let err = format!("{err:#}");
            let (expected, shown) = toolchain.llvm.inline_indirect_without_frontend;
            ensure!(err.contains(expected), "{}: {what}, the compile failed otherwise:\n{err}", program.name);
            detail.push_str(&format!("; {what}: {shown} (negative control)"));
        }
        FrontendControl::StrictStop => {
            let control = build_as(workspace, toolchain, &target, program, Build::WithoutFrontendPlugin)?;
            let failed = expect_failure(toolchain, &control, MapSetup::Indexed, what)?;
            let stopped = expect_strict_stop(toolchain, &control, MapSetup::Indexed, what)?;
            detail.push_str(&format!(
                "; {what}: {failed}, and the strict device stops it at the {stopped} (negative controls)"
            ));
        }
    }
    Ok(detail)
}

/// Runs a negative control on the strict device (without the check of calls into host code,
/// which would stop it first), which must stop it at the first host function device code calls or
/// host variable it reads: exit status 70 and one line `omptarget-indirect
/// strict: call of host function `f` ...` (or `read of host variable `v`+0x10 ...`) naming it;
/// returns what it names ("call of host function `f`").
fn expect_strict_stop(toolchain: &Toolchain, exe: &Path, setup: MapSetup, what: &str) -> Result<String> {
    let strict = toolchain.dist().strict_lib();
    let (code, output) = run_command(
        toolchain,
        exe,
        without_host_call_check(command(toolchain, exe, &[], setup, false, Some(&strict))),
    )?;
    let lines: Vec<&str> = output.lines().filter(|l| l.starts_with("omptarget-indirect strict: ")).collect();
    let [line] = lines[..] else {
        bail!(
            "negative control on the strict device: {what}, {} exited with {code} and {} strict lines, expected 1:\n{output}",
            exe.display(),
            lines.len()
        )
    };
    ensure!(
        code == 70 && line.ends_with("on a GPU this faults"),
        "negative control on the strict device: {what}, {} exited with {code}:\n{output}",
        exe.display()
    );
    // "call of host function `f` at 0x...", "read of host variable `v`+0x10 at 0x...", or in a
    // stripped object, which names no symbol: "read of host address 0x... in /path/object by ...".
    let rest = line.strip_prefix("omptarget-indirect strict: ").unwrap_or_default();
    let named = rest
        .split_once(" at 0x")
        .map(|(touched, _)| touched.to_string())
        .filter(|t| t.contains("of host function `") || t.contains("of host variable `"));
    let unnamed = || {
        let (access, rest) = rest.split_once(" of host address 0x")?;
        let (_, object) = rest.split_once(" in ")?;
        let object = object.split(" by ").next()?.rsplit('/').next()?;
        Some(format!("{access} of host address in {object} (stripped: no symbol to name)"))
    };
    named.or_else(unnamed).with_context(|| {
        format!("{what}: the strict line names no host function, variable or object: {line}")
    })
}

/// `tests/e2e/strict.c`'s modes that touch the host program from device code (a host global
/// read and written, a host function called, each through a pointer passed as a value): the
/// loose x86_64 device lets each through (exit 0) without the check of calls into host code, the
/// strict device stops each with its line; with the check, the call stops at its line on both.
pub fn strict_stops(workspace: &Path, toolchain: &Toolchain) -> Result<String> {
    let program = PROGRAMS.iter().find(|p| p.name == "strict").context("no strict program")?;
    let exe = build(workspace, toolchain, &OffloadTarget::x86_64(), program)?;
    for (mode, expected) in [
        ("read", "read of host variable `host_counter`"),
        ("write", "write to host variable `host_counter`"),
        ("call", "call of host function `host_only`"),
        ("relro", "read of host variable `host_relro`"),
    ] {
        for device in [Device::Loose, Device::Strict] {
            let strict = (device == Device::Strict).then(|| toolchain.dist().strict_lib());
            let c = command(toolchain, &exe, &[mode], MapSetup::Indexed, false, strict.as_deref());
            let (code, text) = run_command(toolchain, &exe, without_host_call_check(c))?;
            let lines: Vec<&str> =
                text.lines().filter(|l| l.starts_with("omptarget-indirect strict: ")).collect();
            match device {
                Device::Loose => ensure!(
                    code == 0 && text.contains("touched") && lines.is_empty(),
                    "{mode} on the loose device exited with {code}:\n{text}"
                ),
                Device::Strict => ensure!(
                    code == 70 && lines.len() == 1 && lines[0].contains(expected) && lines[0].contains(" by device code at `__omp_offloading_") && lines[0].ends_with("on a GPU this faults") && !text.contains("touched"),
                    "{mode} on the strict device exited with {code}, expected 70 and one line with `{expected}`:\n{text}"
                ),
            }
        }
    }
    // With the check of calls into host code (the default), the call is stopped before it is
    // made, on both devices, by the line that names the function.
    for device in [Device::Loose, Device::Strict] {
        let (code, text) = run_with(toolchain, &exe, &["call"], MapSetup::Indexed, false, device)?;
        ensure!(
            host_call_stop(code, &text).as_deref() == Some("host function `host_only`") && !text.contains("touched"),
            "call on the {device:?} device with the check of calls into host code exited with {code}, expected \
             {STOP_EXIT_STATUS} and its line naming `host_only`:\n{text}"
        );
    }
    // Under another file name the library still keeps its own code open while it protects the
    // host program (it finds itself by address; by name it would close itself off and crash in
    // its own fault handler).
    let renamed = exe.with_file_name("renamed-strict-mode.so");
    std::fs::copy(toolchain.dist().strict_lib(), &renamed)?;
    let (code, text) = run_command(
        toolchain,
        &exe,
        command(toolchain, &exe, &[], MapSetup::Indexed, false, Some(&renamed)),
    )?;
    ensure!(
        code == 0 && text.lines().any(|l| l.starts_with("strict: ") && l.ends_with(" 0 failed")),
        "the strict library renamed to {}: {} exited with {code}:\n{text}",
        renamed.display(),
        exe.display()
    );
    Ok("without the check of calls into host code, the loose device lets device code read, write and call into \
        the host program and read its RELRO; the strict device stops each with its line (exit 70), naming the \
        symbol and the kernel; with the check, the call stops on both devices at the check's line; the strict \
        library renamed works the same"
        .to_string())
}
