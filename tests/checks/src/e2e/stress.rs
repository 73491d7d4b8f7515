//! The stress step: the `concurrency` program (`tests/e2e/concurrency.c`) run [`RUNS`] times on
//! one path, loose or strict, each run [`ROUNDS`] rounds of its shapes after its racing first
//! launches, each bounded by [`RUN_LIMIT`]; every crash, hang and wrong answer is counted and
//! the first one shown. A race that fails one run in 50 fails a step of 100 runs with
//! probability 1 - (49/50)^100, 87 %; the rounds inside a run repeat the shapes that do not need
//! a fresh process twice as often. Its negative control, the program with a race of its own
//! ([`CONCURRENCY_UNORDERED`]), must fail it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use super::compile::{build, needed};
use super::programs::{Program, CONCURRENCY_UNORDERED, PROGRAMS};
use super::x86_64::{device_command, Device};
use crate::cmd;
use crate::offload::OffloadTarget;
use crate::requirements;
use crate::toolchain::Toolchain;

/// Runs of the program a step makes.
pub const RUNS: usize = 100;

/// Rounds of the shapes each run makes after its first launches (the program's argument): a
/// round takes about 0.4 s on 2 cores, mostly waiting (its 64 chained tasks).
pub const ROUNDS: &str = "2";

/// Runs at a time: a run waits more than it computes (0.3 s of CPU in 4 s), and several at once
/// also make each run's threads contend more.
pub const AT_ONCE: usize = 4;

/// The longest a run may take: a run takes well under a second; one that takes this long hangs.
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

/// How one run ended.
enum Outcome {
    /// Exit 0 with its summary line saying `0 failed`.
    Passed,
    /// Any other exit: a signal (`None`), an abort, failed checks.
    Failed(Option<i32>, String),
    /// Still running after [`RUN_LIMIT`]: killed, after its threads' stacks were read
    /// ([`stacks_of`]).
    Hung(String),
}

/// A run in progress.
struct Running {
    run: usize,
    child: std::process::Child,
    log: PathBuf,
    started: Instant,
}

/// Starts `command`, its output in `log`.
fn start(mut command: Command, run: usize, log: PathBuf) -> Result<Running> {
    let file = std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    command.stdin(Stdio::null()).stdout(file.try_clone()?).stderr(file);
    let child = command.spawn().context("cannot start the concurrency program")?;
    Ok(Running { run, child, log, started: Instant::now() })
}

/// How `running` ended, if it has (killed after `limit`).
fn finished(running: &mut Running, program: &str, limit: Duration) -> Result<Option<(Outcome, Duration)>> {
    let status = match running.child.try_wait()? {
        Some(status) => status,
        None if running.started.elapsed() > limit => {
            // The program is the child itself: `enter` and `unshare` exec it.
            let stacks = stacks_of(running.child.id(), &running.log.with_extension("stacks"));
            let _ = running.child.kill();
            let _ = running.child.wait();
            return Ok(Some((Outcome::Hung(stacks), running.started.elapsed())));
        }
        None => return Ok(None),
    };
    let took = running.started.elapsed();
    let text = std::fs::read_to_string(&running.log).unwrap_or_default();
    let passed = status.success()
        && text.lines().any(|l| l.starts_with(&format!("{program}: ")) && l.ends_with(" 0 failed"));
    if passed {
        let _ = std::fs::remove_file(&running.log);
    }
    Ok(Some((if passed { Outcome::Passed } else { Outcome::Failed(status.code(), text) }, took)))
}

/// How long gdb may take to attach to a hung run and print its stacks.
const STACKS_LIMIT: Duration = Duration::from_secs(60);

/// The stacks of the hung process `pid`, read with gdb before it is killed: the full backtraces
/// go to `file`; the answer names each distinct stack once (innermost frames first, at most six
/// functions) with how many threads stand in it, which is what tells a lock cycle from a spin.
/// Never fails: what went wrong reading them is the answer instead.
fn stacks_of(pid: u32, file: &Path) -> String {
    let mut gdb = Command::new(requirements::program("gdb"));
    gdb.args(["-nx", "-batch", "-p"]).arg(pid.to_string());
    gdb.args(["-ex", "set pagination off", "-ex", "thread apply all bt 24"]);
    let Ok(out) = std::fs::File::create(file) else {
        return format!("no stacks: cannot create {}", file.display());
    };
    let Ok(err) = out.try_clone() else { return "no stacks: cannot share the stacks file".into() };
    let spawned = gdb.stdin(Stdio::null()).stdout(out).stderr(err).spawn();
    let Ok(mut child) = spawned else { return "no stacks: gdb did not start".into() };
    let started = Instant::now();
    while matches!(child.try_wait(), Ok(None)) {
        if started.elapsed() > STACKS_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return format!("no stacks: gdb still attaching after {} s", STACKS_LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let summary = summarize_stacks(&text);
    if summary.is_empty() {
        return format!("no stacks in gdb's output ({})", file.display());
    }
    format!("{summary} (gdb's backtraces: {})", file.display())
}

/// gdb's `thread apply all bt` output reduced to one line per distinct stack: `N x f < g < h`.
fn summarize_stacks(gdb_output: &str) -> String {
    fn finish(stack: Option<Vec<String>>, stacks: &mut Vec<(Vec<String>, usize)>) {
        let Some(stack) = stack.filter(|s| !s.is_empty()) else { return };
        match stacks.iter_mut().find(|(s, _)| *s == stack) {
            Some((_, n)) => *n += 1,
            None => stacks.push((stack, 1)),
        }
    }
    let mut stacks: Vec<(Vec<String>, usize)> = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in gdb_output.lines() {
        if line.starts_with("Thread ") {
            finish(current.take(), &mut stacks);
            current = Some(Vec::new());
        } else if let (Some(stack), Some(frame)) = (current.as_mut(), line.strip_prefix('#')) {
            // `#3  0x... in name (args) at file:line` or `#0  name (args) ...`
            let after = frame.split_once(" in ").map_or(frame, |(_, rest)| rest);
            let name = after.trim_start_matches(|c: char| c.is_ascii_digit() || c == ' ');
            let name = name.split([' ', '(']).next().unwrap_or_default();
            if !name.is_empty() && stack.len() < 6 {
                stack.push(name.to_string());
            }
        }
    }
    finish(current, &mut stacks);
    stacks.iter().map(|(s, n)| format!("{n} x {}", s.join(" < "))).collect::<Vec<_>>().join("; ")
}

/// Runs `runs` commands made by `command`, [`AT_ONCE`] at a time, each killed after `limit`,
/// and hands each outcome to `each` (with the run's number) as it comes; stops early when `each`
/// says so.
fn run_all(
    runs: usize,
    limit: Duration,
    logs: &Path,
    program: &str,
    command: impl Fn() -> Command,
    mut each: impl FnMut(usize, Outcome, Duration) -> bool,
) -> Result<()> {
    let mut running: Vec<Running> = Vec::new();
    let mut next = 1;
    loop {
        while running.len() < AT_ONCE && next <= runs {
            running.push(start(command(), next, logs.with_extension(format!("{next}.log")))?);
            next += 1;
        }
        if running.is_empty() {
            return Ok(());
        }
        let mut i = 0;
        while i < running.len() {
            if let Some((outcome, took)) = finished(&mut running[i], program, limit)? {
                let done = running.swap_remove(i);
                if !each(done.run, outcome, took) {
                    for mut other in running {
                        let _ = other.child.kill();
                        let _ = other.child.wait();
                    }
                    return Ok(());
                }
            } else {
                i += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The number of the first of `runs` runs (as [`run_all`] makes them) whose outcome is
/// `wanted`, stopping there; `None` if none was.
fn first_run_that(
    runs: usize,
    logs: &Path,
    program: &str,
    command: impl Fn() -> Command,
    wanted: impl Fn(&Outcome) -> bool,
) -> Result<Option<usize>> {
    let mut found = None;
    run_all(runs, RUN_LIMIT, logs, program, command, |run, outcome, _| {
        if wanted(&outcome) {
            found = Some(run);
        }
        found.is_none()
    })?;
    Ok(found)
}

/// What [`RUNS`] runs gave.
struct Tally {
    passed: usize,
    failed: usize,
    hung: usize,
    slowest: Duration,
    first_failure: Option<String>,
}

fn stress(toolchain: &Toolchain, exe: &Path, program: &Program, device: Device) -> Result<Tally> {
    let logs = exe.with_extension(format!("{device:?}-stress").to_lowercase());
    let mut tally = Tally { passed: 0, failed: 0, hung: 0, slowest: Duration::ZERO, first_failure: None };
    let command = || device_command(toolchain, exe, &[ROUNDS], device);
    run_all(RUNS, RUN_LIMIT, &logs, program.name, command, |run, outcome, took| {
        tally.slowest = tally.slowest.max(took);
        let failure = match outcome {
            Outcome::Passed => {
                tally.passed += 1;
                None
            }
            Outcome::Failed(code, text) => {
                tally.failed += 1;
                let tail: Vec<&str> = text.lines().rev().take(12).collect();
                let last = tail.first().copied().unwrap_or("(nothing printed)");
                let shown: Vec<&str> = tail.iter().rev().copied().collect();
                // The last line first: a report's first line is all some readers see.
                Some(format!("run {run} exited with {code:?}: {last}\n{}", shown.join("\n")))
            }
            Outcome::Hung(stacks) => {
                tally.hung += 1;
                Some(format!(
                    "run {run} still ran after {} s: killed; its threads: {stacks}",
                    RUN_LIMIT.as_secs()
                ))
            }
        };
        if tally.first_failure.is_none() {
            tally.first_failure = failure;
        }
        true
    })?;
    Ok(tally)
}

/// Runs of the helper-team control before it must have failed: it crashes every run.
const HELPER_TEAM_CONTROL_RUNS: usize = 10;

/// With libomptarget 16 (and its libomp 16): the plugins not starting libomp's hidden helper
/// team early (`OMPTARGET_INDIRECT_HELPER_TEAM=0`), the program must crash, as it does with LLVM
/// 16's own x86_64 plugin (llvm-project#87117): the control of the plugins' workaround.
fn helper_team_control(toolchain: &Toolchain, exe: &Path, program: &Program) -> Result<String> {
    let logs = exe.with_extension("helper-team");
    let command = || {
        let mut command = device_command(toolchain, exe, &[ROUNDS], Device::Loose);
        command.env("OMPTARGET_INDIRECT_HELPER_TEAM", "0");
        command
    };
    let crashed = first_run_that(HELPER_TEAM_CONTROL_RUNS, &logs, program.name, command, |outcome| {
        matches!(outcome, Outcome::Failed(None, _))
    })?;
    match crashed {
        Some(run) => {
            Ok(format!("; with OMPTARGET_INDIRECT_HELPER_TEAM=0 libomp 16 crashed at run {run} (llvm-project#87117)"))
        }
        None => bail!(
            "with OMPTARGET_INDIRECT_HELPER_TEAM=0 the program ran {HELPER_TEAM_CONTROL_RUNS} times without the \
             crash of libomp 16 (llvm-project#87117) that the plugins' early helper team avoids"
        ),
    }
}

/// The stress step of `toolchain` on `device`: every run passes, and the control fails (it runs
/// loose only, once per toolchain: its race is the program's, not the device's).
pub fn check(workspace: &Path, toolchain: &Toolchain, device: Device) -> Result<String> {
    let program = PROGRAMS.iter().find(|p| p.name == "concurrency").context("no concurrency program")?;
    let exe = build(workspace, toolchain, &OffloadTarget::x86_64(), program)?;
    let tally = stress(toolchain, &exe, program, device)?;
    let summary = format!(
        "{RUNS} runs of {ROUNDS} round(s), {AT_ONCE} at a time: {} passed, {} failed, {} hung (slowest {:.2} s)",
        tally.passed,
        tally.failed,
        tally.hung,
        tally.slowest.as_secs_f64()
    );
    if let Some(first) = &tally.first_failure {
        bail!("{summary}; the first: {first}");
    }
    if device == Device::Strict {
        return Ok(summary);
    }
    let mut summary = summary;
    if toolchain.llvm.runs_project_plugins() {
        summary.push_str(&helper_team_control(toolchain, &exe, program)?);
    }
    let control = build(workspace, toolchain, &OffloadTarget::x86_64(), &CONCURRENCY_UNORDERED)?;
    let logs = control.with_extension("control");
    let command = || device_command(toolchain, &control, &[ROUNDS], Device::Loose);
    let failed = first_run_that(RUNS, &logs, CONCURRENCY_UNORDERED.name, command, |outcome| {
        matches!(outcome, Outcome::Failed(..))
    })?;
    match failed {
        Some(run) => Ok(format!(
            "{summary}; negative control: without its depend clauses the program failed at run {run}"
        )),
        None => {
            bail!("{summary}; negative control: the program without its depend clauses passed {RUNS} runs")
        }
    }
}

/// Runs of `late_dlopen` before the step concludes that the stock runtime no longer hangs: it
/// hung about one run in three (libomptarget 22: 35 of 100, 4 at a time on 2 cores), and even
/// one run in ten would leave 100 runs without a hang once in 30 000 steps.
pub const LATE_DLOPEN_RUNS: usize = 100;

/// How long a `late_dlopen` run may take before it counts as hung: it takes 0.03 s.
const LATE_DLOPEN_LIMIT: Duration = Duration::from_secs(10);

/// What the stock runtime of `toolchain` does by itself with a library loaded while other
/// threads launch on devices that have all run kernels (`tests/e2e/late_dlopen.c`, built by stock
/// clang, no part of the project linked or loaded): runs until the first hang, which
/// `docs/concurrency.md` reports; fails if none of [`LATE_DLOPEN_RUNS`] hung (the stock runtime
/// changed and the docs must say so).
pub fn stock_late_dlopen(workspace: &Path, toolchain: &Toolchain) -> Result<String> {
    ensure!(!toolchain.llvm.runs_project_plugins(), "late_dlopen shows a stock runtime by itself");
    let target = OffloadTarget::x86_64();
    let out = toolchain.e2e_dir(workspace, &target).join("late_dlopen");
    std::fs::create_dir_all(&out)?;
    let sources = workspace.join("tests/e2e");
    let library = out.join("libconcurrency_library.so");
    let exe = out.join("late_dlopen");
    let stock = |source: &str| {
        let mut c = Command::new(toolchain.compiler(source));
        c.args(toolchain.offload_args_for(&target, source)).args(["-O2", "-Wall", "-Werror"]);
        c.arg(sources.join(source)).args(toolchain.runtime_link_args());
        c
    };
    cmd::output(stock("concurrency_lib.c").args(["-fPIC", "-shared", "-o"]).arg(&library))?;
    cmd::output(stock("late_dlopen.c").args(["-ldl", "-o"]).arg(&exe))?;
    let ours = needed(&exe)?.into_iter().chain(needed(&library)?).find(|n| n.contains("omptarget-indirect"));
    ensure!(ours.is_none(), "the stock build of late_dlopen links {}", ours.unwrap_or_default());
    let logs = exe.with_extension("runs");
    let library_arg = library.to_str().context("the library's path is not UTF-8")?;
    let command = || device_command(toolchain, &exe, &[library_arg], Device::Loose);
    let (mut passed, mut failed, mut hung) = (0, 0, None);
    let mut first_failure = None;
    run_all(LATE_DLOPEN_RUNS, LATE_DLOPEN_LIMIT, &logs, "late_dlopen", command, |run, outcome, _| {
        match outcome {
            Outcome::Passed => passed += 1,
            Outcome::Failed(code, text) => {
                failed += 1;
                first_failure
                    .get_or_insert_with(|| format!("run {run} exited with {code:?}: {}", text.trim()));
            }
            Outcome::Hung(_) => hung = Some(run),
        }
        hung.is_none()
    })?;
    let failures = match &first_failure {
        Some(first) => format!(", {failed} failed (the first: {first})"),
        None => String::new(),
    };
    match hung {
        Some(run) => Ok(format!(
            "stock clang {}, no configuration file: run {run} hung (killed after {} s; {passed} runs passed meanwhile{failures}) \
             (docs/concurrency.md)",
            toolchain.llvm.major,
            LATE_DLOPEN_LIMIT.as_secs()
        )),
        None => bail!(
            "{LATE_DLOPEN_RUNS} runs of late_dlopen by stock clang {} did not hang ({passed} passed{failures}): the stock \
             runtime no longer hangs there, and docs/concurrency.md must say so",
            toolchain.llvm.major
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::summarize_stacks;

    #[test]
    fn threads_in_the_same_stack_are_counted_once() {
        let gdb = "\
[New LWP 12]
Thread 3 (Thread 0x7f (LWP 14) \"concurrency\"):
#0  futex_wait (private=0, expected=2, futex_word=0x55) at ../sysdeps/nptl/futex-internal.h:146
#1  0x00007f in __GI___lll_lock_wait (futex=0x55, private=0) at ./nptl/lowlevellock.c:49
#2  0x00007f in lock () from /usr/lib/llvm-24/lib/libomptarget.so.24.0
Thread 2 (Thread 0x7e (LWP 13) \"concurrency\"):
#0  futex_wait (private=0, expected=2, futex_word=0x55) at ../sysdeps/nptl/futex-internal.h:146
#1  0x00007f in __GI___lll_lock_wait (futex=0x55, private=0) at ./nptl/lowlevellock.c:49
#2  0x00007f in lock () from /usr/lib/llvm-24/lib/libomptarget.so.24.0
Thread 1 (Thread 0x7d (LWP 12) \"concurrency\"):
#0  0x00007f in __GI___clock_nanosleep () at clock_nanosleep.c:78
#1  0x00007f in main ()
";
        assert_eq!(
            summarize_stacks(gdb),
            "2 x futex_wait < __GI___lll_lock_wait < lock; 1 x __GI___clock_nanosleep < main"
        );
        assert_eq!(summarize_stacks("ptrace: Operation not permitted."), "");
    }
}
