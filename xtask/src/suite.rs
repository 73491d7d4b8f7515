//! `cargo xtask test`: every check that runs without a GPU, with a closing summary.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{ensure, Context, Result};

use checks::images::{self, SYMBOLS, TRANSLATE};
use checks::{
    cluster_install, corpus, demo, doc_commands, doc_truth, e2e, foreign_llvm, fuzz, install_check, metrics,
    repository, spack_install, troubleshooting,
};

use crate::build;
use crate::cmd;
use crate::dist::{Archs, Dist};
use crate::llvm::DeviceRtl;
use crate::offload::OffloadTarget;
use crate::requirements;
use crate::toolchain::{Llvm, Toolchain};
use crate::tools::Tools;
use checks::e2e::Device;

/// The step every other step needs.
const BUILD_STEP: &str = "cargo xtask build";
/// The step that stands for every requirement of `scripts/requirements.txt` when one is missing.
const PREFLIGHT_STEP: &str = "preflight: scripts/requirements.txt";

/// The last step: what the suite wrote went under `target/` or scratch directories.
const TREE_STEP: &str = "the suite left the source tree as it found it (git status)";

/// Collects step outcomes and prints them as they finish.
#[derive(Default)]
struct Report {
    steps: Vec<(String, Result<String, String>)>,
    /// Its steps run beside another lane's (`Report::lanes`): a step's name is printed with its
    /// outcome, in one piece, so that the two lanes' lines do not interleave.
    in_lane: bool,
}

/// A sequence of steps that shares no files with the other lanes of its `Report::lanes` call.
type Lane<'a> = Box<dyn FnOnce(&mut Report) + Send + 'a>;

impl Report {
    fn step(&mut self, name: impl Into<String>, run: impl FnOnce() -> Result<String>) -> bool {
        let name = name.into();
        if !Report::wanted(&name) {
            return true;
        }
        if !self.in_lane {
            println!("\n=== {name}");
        }
        let started = Instant::now();
        let outcome = run().map_err(|e| format!("{e:#}"));
        let secs = started.elapsed().as_secs_f64();
        let ended = match &outcome {
            Ok(detail) => format!("--- ok ({secs:.1} s) {name}: {detail}"),
            Err(err) => format!("--- FAILED ({secs:.1} s) {name}: {err}"),
        };
        if self.in_lane {
            println!("\n=== {name}\n{ended}");
        } else {
            println!("{ended}");
        }
        let ok = outcome.is_ok();
        self.steps.push((name, outcome));
        ok
    }

    /// Runs `lanes` as many at a time as the machine has cores, each lane's steps in order, and
    /// keeps their outcomes in the lanes' order. Most steps run one single-threaded compile or
    /// program after another; side by side they use the second core, which the suite would
    /// otherwise leave idle for most of its length.
    fn lanes(&mut self, lanes: Vec<Lane<'_>>) {
        let outcomes = cmd::in_parallel(lanes, |lane| {
            let mut report = Report { steps: Vec::new(), in_lane: true };
            lane(&mut report);
            report.steps
        });
        self.steps.extend(outcomes.into_iter().flatten());
    }

    /// Whether the step `name` runs: with XTASK_STEPS=<text>[|<text>...], only the steps whose
    /// name holds one of the texts, the preflight (a missing requirement stops every step) and the
    /// build (while working on one part; the suite's verdict is a run without it).
    fn wanted(name: &str) -> bool {
        name == BUILD_STEP || name == PREFLIGHT_STEP || cmd::picked_by("XTASK_STEPS", name)
    }

    fn finish(self) -> Result<()> {
        println!("\n=== summary");
        let failed = self.steps.iter().filter(|(_, o)| o.is_err()).count();
        for (name, outcome) in &self.steps {
            match outcome {
                Ok(detail) => println!("  ok      {name}: {detail}"),
                Err(err) => println!("  FAILED  {name}: {}", err.lines().next().unwrap_or("")),
            }
        }
        println!("xtask: {} passed, {failed} failed", self.steps.len() - failed);
        ensure!(failed == 0, "{failed} test step(s) failed");
        Ok(())
    }
}

/// `compiler/pass-plugin/tests/device_ir.rs`'s tests: every indirect call translated, loop-invariant
/// translations hoisted, and kernels stock clang devirtualizes devirtualized the same.
const DEVICE_IR_TRANSLATED: &str = "every_indirect_call_is_translated_and_the_module_verifies";
const DEVICE_IR_HOISTED: &str = "loop_invariant_translations_are_hoisted";
const DEVICE_IR_DEVIRTUALIZED: &str = "devirtualizable_kernels_fold_like_stock";

/// Runs one of the pass plugin's device-IR tests (ignored unless asked for, as here) for `llvm`'s
/// clang and `target`; returns the line it reports.
fn device_ir_test(workspace: &Path, llvm: Llvm, target: &OffloadTarget, test: &str) -> Result<String> {
    let printed = cmd::stdout(
        cmd::cargo()
            .current_dir(workspace)
            .args(["test", "--quiet", "-p", "omptarget-indirect-pass", "--test", "device_ir", "--"])
            .args(["--ignored", "--exact", test, "--nocapture"])
            .env("OMPTARGET_INDIRECT_IR_CLANG", llvm.major)
            .env("OMPTARGET_INDIRECT_IR_TARGET", &target.name),
    )?;
    printed
        .lines()
        .find_map(|l| l.strip_prefix("device IR: ").map(str::to_string))
        .with_context(|| format!("{test} reported nothing:\n{printed}"))
}

/// Runs the whole suite; fails if any step failed (after running all of them).
pub fn run(workspace: &Path) -> Result<()> {
    let mut report = Report::default();
    let tree_before = repository::tree_status(workspace);
    // Before anything runs: every program and file of scripts/requirements.txt, each missing one
    // named with its package on a line of its own.
    let tools = match Tools::locate(workspace) {
        Ok(tools) => tools,
        Err(err) => {
            report.step(PREFLIGHT_STEP, || Err(err));
            return report.finish();
        }
    };
    println!(
        "preflight: all {} requirements of scripts/requirements.txt are here",
        requirements::all().len()
    );
    report.step("the repository describes the project (no words of how its work is organised)", || {
        repository::check_words(workspace)
    });
    report.step(
        "the docs' links resolve; the releases and configuration files they name are the records'",
        || doc_truth::check(workspace),
    );
    report.step("every message the project prints has an entry in docs/troubleshooting.md", || {
        troubleshooting::check(workspace)
    });
    report.step("cargo fmt --check", || cargo_step(workspace, &["fmt", "--all", "--", "--check"]));
    report.step("cargo clippy -D warnings", || {
        cargo_step(workspace, &["clippy", "--workspace", "--all-targets", "--quiet", "--", "-D", "warnings"])
    });
    let archs = Archs::default();
    if !report.step(BUILD_STEP, || build::build(workspace, &tools, &archs).map(|_| String::new())) {
        return report.finish();
    }
    let dist = Dist::new(workspace);
    std::thread::scope(|scope| {
        // The cluster and Spack installs (vendored builds as another user, and Spack's: about 20
        // minutes in all, cargo and Spack's own Python) run one after the other beside the steps
        // from here on, each with its own copy of the release archive and its own scratch; their
        // outcomes are reported last.
        let installs = scope.spawn(|| InstallsBeside::run(workspace, &tools, &dist));
        steps_after_build(workspace, &tools, &dist, &archs, &mut report);
        let steps_ended = Instant::now();
        match installs.join() {
            Ok(installs) => installs.report(&mut report, steps_ended),
            Err(_) => {
                report.step(cluster_step(), || Err(anyhow::anyhow!("the installs' thread panicked")));
            }
        }
    });
    report.step(TREE_STEP, || repository::check_tree_unchanged(workspace, tree_before.as_deref()));
    report.finish()
}

/// Runs `cargo <args>` in the workspace, its output shown.
fn cargo_step(workspace: &Path, args: &[&str]) -> Result<String> {
    let mut c = cmd::cargo();
    c.current_dir(workspace).args(args);
    cmd::status(&mut c).map(|()| String::new())
}

/// The name of the cluster install's step, for the reference release (`Llvm::reference`).
fn cluster_step() -> String {
    format!(
        "install on a cluster: LLVM {} only at another prefix (Debian's hidden), as uid 65534, no network, from \
         `cargo xtask vendor`'s tarball, and with EasyBuild; a C++ program through --config and CMake on the strict \
         device; the release archive against that prefix",
        Llvm::reference().major
    )
}

/// The name of the Spack install's step.
const SPACK_STEP: &str = "install with Spack, offline: the release tarball (site repository, sha256), spack test, spack \
                          load with --config and find_package on the strict device, the plugin removed fails, spack \
                          dev-build of the checkout, spack uninstall leaves nothing";

/// The outcomes of the installs that run beside the other steps (`None`: not asked for), each
/// with the seconds it ran.
struct InstallsBeside {
    cluster: Option<(Result<String>, f64)>,
    spack: Option<(Result<String>, f64)>,
}

impl InstallsBeside {
    fn run(workspace: &Path, tools: &Tools, dist: &Dist) -> InstallsBeside {
        let timed = |install: &dyn Fn() -> Result<String>| {
            let started = Instant::now();
            (install(), started.elapsed().as_secs_f64())
        };
        let cluster = Report::wanted(&cluster_step()).then(|| {
            timed(&|| {
                let own = workspace.join("target/release-archive-cluster");
                let archive = packaging::install::archive_in(workspace, dist, &own)?;
                cluster_install::check(workspace, tools, &crate::vendor::tarball(workspace)?, &archive)
            })
        });
        // After the cluster install, which writes the same release tarball.
        let spack = Report::wanted(SPACK_STEP)
            .then(|| timed(&|| spack_install::check(workspace, tools, &crate::vendor::tarball(workspace)?)));
        InstallsBeside { cluster, spack }
    }

    /// Reports both; `steps_ended` is when the steps beside them ended.
    fn report(self, report: &mut Report, steps_ended: Instant) {
        let waited = steps_ended.elapsed().as_secs_f64();
        for (name, outcome) in [(cluster_step(), self.cluster), (SPACK_STEP.to_string(), self.spack)] {
            report.step(name, || {
                let (outcome, secs) = outcome.context("it did not run")?;
                outcome.map(|detail| {
                    format!("{detail} ({secs:.0} s beside the other steps; waited {waited:.0} s for it)")
                })
            });
        }
    }
}

/// The steps that need the dist tree, in order (but the installs beside them).
fn steps_after_build(workspace: &Path, tools: &Tools, dist: &Dist, archs: &Archs, report: &mut Report) {
    cargo_test_steps(workspace, report);
    device_library_steps(workspace, tools, dist, archs, report);
    x86_64_steps(workspace, tools, dist, report);
    gpu_image_steps(workspace, tools, dist, report);
    install_steps(workspace, tools, dist, report);
    measurement_steps(workspace, tools, dist, archs, report);
    gpu_bundle_steps(workspace, tools, dist, report);
}

/// The workspace's own tests, natively and under valgrind.
fn cargo_test_steps(workspace: &Path, report: &mut Report) {
    // After the build: the plugin tests load device images linked with the dist archive.
    report.step("unit, property and plugin C-ABI tests (cargo test --workspace)", || {
        cargo_step(workspace, &["test", "--workspace"])
    });
    report.step("plugin C-ABI and hostile-input tests under valgrind (leaks, invalid accesses)", || {
        let mut c = cmd::cargo();
        c.current_dir(workspace)
            .args([
                "test",
                "--quiet",
                "-p",
                "omptarget-rtl-x86_64",
                "--test",
                "c_abi",
                "--test",
                "hostile",
                "--",
            ])
            // The 3470 malformed images, the 1316 structural mutations and the replacement
            // stress run take minutes under valgrind; they run natively in the step before.
            .args([
                "--test-threads=1",
                "--skip",
                "malformed_images",
                "--skip",
                "a_launch_sees",
                "--skip",
                "unloading_waits",
                "--skip",
                "structurally_corrupted",
            ])
            .env(
                "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
                format!("{} {VALGRIND_OPTIONS}", requirements::program("valgrind").display()),
            );
        cmd::output(&mut c).map(|_| "no definite or indirect leaks, no memory errors".to_string())
    });
}

/// The device library's images per architecture, and the pass plugin's rewrite tests per release.
fn device_library_steps(workspace: &Path, tools: &Tools, dist: &Dist, archs: &Archs, report: &mut Report) {
    for sm in &archs.sms {
        let dir = dist.nvptx_dir(sm);
        report.step(format!("nvptx64 {sm}: PTX, cubin, bitcode"), || {
            images::check_ptx(&dir.join("device_rtl.ptx"))?;
            images::check_bitcode(tools, &dir.join("device_rtl.bc"), false)?;
            let cubin = dir.join("device_rtl.cubin");
            let elf = images::elf_summary(&cmd::read(&cubin)?, &SYMBOLS)?;
            elf.expect_defined_once(&cubin.display().to_string(), &SYMBOLS)?;
            let regs = images::cubin_registers(tools, &cubin)?;
            Ok(format!("{TRANSLATE}: {regs} registers (ptxas 11.8)"))
        });
    }
    for gfx in &archs.gfxs {
        let dir = dist.amdgcn_dir(gfx);
        report.step(format!("amdgcn {gfx}: code object v5, bitcode"), || {
            images::check_bitcode(tools, &dir.join("device_rtl.bc"), false)?;
            images::check_amdgcn_object(tools, &dir.join("device_rtl.o"), gfx)
        });
    }
    report.step("x86_64: bitcode", || {
        images::check_bitcode(tools, &dist.x86_64_dir().join("device_rtl.bc"), true).map(|()| String::new())
    });
    // The oldest release's plugin is the crate's default, which the workspace's own tests cover.
    // Each release's build has a target directory of its own: a lane each.
    let lanes = Llvm::all()
        .filter(|&l| l != Llvm::oldest())
        .map(|llvm| -> Lane<'_> {
            Box::new(move |report: &mut Report| pass_plugin_step(workspace, tools, llvm, report))
        })
        .collect();
    report.lanes(lanes);
}

/// The pass plugin built for `llvm` and its in-process rewrite tests.
fn pass_plugin_step(workspace: &Path, tools: &Tools, llvm: Llvm, report: &mut Report) {
    report.step(format!("pass plugin built for LLVM {}: in-process rewrite tests", llvm.major), || {
        let mut c = cmd::cargo();
        c.current_dir(workspace)
            .args(["test", "--quiet", "--release", "-p", "omptarget-indirect-pass", "--no-default-features"])
            .args(["--features", &llvm.pass_plugin_feature()])
            .env("CARGO_TARGET_DIR", workspace.join(format!("target/llvm{}", llvm.major)))
            .env("OMPTARGET_INDIRECT_LLVM_CONFIG", &tools.of(llvm).llvm_config);
        // Tests that link a libLLVM of a root of its own run in that root.
        if let Some(enter) = &tools.of(llvm).enter {
            c.env("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER", enter);
        }
        // Captured, beside another lane; a failure's error holds all of it.
        cmd::output(&mut c).map(|_| String::new())
    });
}

/// The end-to-end programs on the x86_64 device, loose and strict, per release; the stress steps; stock clang by itself against the project.
fn x86_64_steps(workspace: &Path, tools: &Tools, dist: &Dist, report: &mut Report) {
    // A lane per release: each builds into a tree of its own (`Toolchain::e2e_dir`). Stock clang
    // by itself builds the newest release's programs too, so it follows them in their lane. The
    // newest first: theirs is the longest lane.
    let lanes = Llvm::all()
        .rev()
        .map(|llvm| -> Lane<'_> {
            Box::new(move |report: &mut Report| {
                let toolchain = Toolchain::new(llvm, tools, dist);
                report.step(
                    format!(
                        "strict device, {}: host globals read and written and a host function called by device code are \
                         stopped",
                        toolchain.describe()
                    ),
                    || e2e::strict_stops(workspace, &toolchain),
                );
                for program in e2e::PROGRAMS.iter().filter(|p| p.runs_with(toolchain.llvm)) {
                    report.step(
                        format!(
                            "end to end on x86_64, {}: {} ({})",
                            toolchain.describe(),
                            program.name,
                            program.about
                        ),
                        || e2e::run_x86_64(workspace, &toolchain, program),
                    );
                }
                if llvm == Llvm::newest() {
                    by_itself_step(workspace, &toolchain, report);
                }
            })
        })
        .collect();
    report.lanes(lanes);
    for llvm in Llvm::all() {
        let toolchain = Toolchain::new(llvm, tools, dist);
        for device in [Device::Loose, Device::Strict] {
            report.step(
                format!(
                    "stress, {}, {} device: the concurrency program {} times (racing first launches, nowait \
                     tasks, device memory from several threads, a dlopened library's region among them), no crash, hang or wrong \
                     answer",
                    toolchain.describe(),
                    format!("{device:?}").to_lowercase(),
                    e2e::stress::RUNS
                ),
                || e2e::stress::check(workspace, &toolchain, device),
            );
        }
        if !toolchain.llvm.runs_project_plugins() {
            report.step(
                format!(
                    "stock clang {major} and libomptarget {major} by themselves: a library loaded while threads launch \
                     on devices that have run kernels hangs (tests/e2e/late_dlopen.c, no part of the project; at most \
                     {} runs, to the first hang)",
                    e2e::stress::LATE_DLOPEN_RUNS,
                    major = toolchain.llvm.major
                ),
                || e2e::stress::stock_late_dlopen(workspace, &toolchain),
            );
            report.step(
                format!(
                    "libomptarget {}: how often each x86_64 device image is closed at exit, stock and with the project \
                     (tests/e2e/close_count.c counts the dlclose calls)",
                    toolchain.llvm.major
                ),
                || e2e::image_closes::check(workspace, &toolchain),
            );
        }
    }
}

/// Stock clang and flang of `newest` by themselves, beside the project's builds of the same
/// programs.
fn by_itself_step(workspace: &Path, newest: &Toolchain, report: &mut Report) {
    report.step(
        format!(
            "stock clang {major} and flang {major} by themselves against the project: every end-to-end program written as \
             users write them, built with nothing of the project (x86_64: links? runs? the strict device?; sm_90 and \
             gfx90a device code: lookups, untranslated calls, vtables, what it lacks) beside the project's build; the \
             table is {}'s",
            e2e::by_itself::page(newest.llvm),
            major = newest.llvm.major
        ),
        || e2e::by_itself::check(workspace, newest),
    );
}

/// Whether the suite checks `llvm`'s GPU side (its end-to-end programs built for GPUs, its GPU
/// bundle part, its device IR checks) besides its x86_64 programs: for the oldest release (its
/// runtime and plugins differ), the reference one (its bundle part carries the corpus and the
/// demo) and the newest two; for every release with XTASK_EVERY_RELEASE=1. A release's GPU side
/// takes about 7 minutes of the 90 CI gives the suite (docs/testing.md, "Its time").
fn gpu_side_checked(llvm: Llvm) -> bool {
    std::env::var("XTASK_EVERY_RELEASE").is_ok_and(|every| every == "1")
        || llvm == Llvm::oldest()
        || llvm == Llvm::reference()
        || Llvm::all().rev().take(2).any(|newest| newest == llvm)
}

/// The end-to-end programs built for GPUs and their images checked; the corpus; the device IR checks per release and target.
fn gpu_image_steps(workspace: &Path, tools: &Tools, dist: &Dist, report: &mut Report) {
    let left_out: Vec<String> =
        Llvm::all().filter(|&l| !gpu_side_checked(l)).map(|l| l.major.to_string()).collect();
    if !left_out.is_empty() {
        println!(
            "\nLLVM {}: GPU images, GPU bundle part and device IR checks left out, as docs/testing.md (\"Its time\") says; \
             XTASK_EVERY_RELEASE=1 runs them",
            left_out.join(", ")
        );
    }
    for toolchain in Toolchain::all(tools, dist).filter(|t| gpu_side_checked(t.llvm)) {
        for target in toolchain.llvm.gpu_check_archs.iter().map(|arch| OffloadTarget::of_arch(arch)) {
            let name = match toolchain.llvm.device_rtl {
                // (gpu_check_archs names none for a release without a DeviceRTL.)
                DeviceRtl::Debian | DeviceRtl::None => format!("end-to-end programs built for {}", target.name),
                DeviceRtl::FromSource { .. } => format!(
                    "end-to-end programs built for {} by clang {major} with LLVM {major}'s DeviceRTL (built from source)",
                    target.name,
                    major = toolchain.llvm.major
                ),
            };
            report.step(name, || e2e::build_gpu(workspace, &toolchain, &target));
        }
    }
    report.step(
        format!("stock parity corpus (tests/corpus/): real libraries' headers in and beside declare target regions, built by clang {} stock and with the project for x86_64, sm_90 and gfx90a; the project builds every one stock builds, and runs the x86_64 ones on the strict device with stock's output", Llvm::reference().major),
        || corpus::check(workspace, tools, dist),
    );
    // The device IR tests only read what the workspace's tests built: a lane per release.
    let lanes = Llvm::all()
        .filter(|&l| gpu_side_checked(l))
        .map(|llvm| -> Lane<'_> {
            Box::new(move |report: &mut Report| device_ir_steps(workspace, llvm, report))
        })
        .collect();
    report.lanes(lanes);
}

/// The pass plugin's device IR tests with `llvm`'s clang, per target.
fn device_ir_steps(workspace: &Path, llvm: Llvm, report: &mut Report) {
    for target in [OffloadTarget::x86_64(), OffloadTarget::nvptx("sm_90"), OffloadTarget::amdgcn("gfx90a")] {
        let clang = format!("clang {}", llvm.major);
        if target.is_gpu() {
            report.step(
                format!(
                    "pass plugin on {} device IR ({clang}): every indirect call translated, verified",
                    target.name
                ),
                || device_ir_test(workspace, llvm, &target, DEVICE_IR_TRANSLATED),
            );
        }
        report.step(
            format!("pass plugin on {} device IR ({clang}): translation hoisted out of loops", target.name),
            || device_ir_test(workspace, llvm, &target, DEVICE_IR_HOISTED),
        );
        report.step(
            format!(
                "pass plugin on {} device IR ({clang}): kernels stock clang devirtualizes, the same with the project",
                target.name
            ),
            || device_ir_test(workspace, llvm, &target, DEVICE_IR_DEVIRTUALIZED),
        );
    }
}

/// The demo, the install to a prefix, the plugins in a foreign compiler, the docs' runnable blocks.
fn install_steps(workspace: &Path, tools: &Tools, dist: &Dist, report: &mut Report) {
    report.step(
        "demo (cargo xtask demo): examples/scene.cpp rendered on the device equals the host's render, stopped without the project; examples/indirect_calls.c",
        || demo::run(workspace, tools, dist, &OffloadTarget::x86_64())?.check(),
    );
    report.step(
        "install: a relocated prefix used through CMake, pkg-config and clang --config; the release archive; uninstall",
        || install_check::check(workspace, tools, dist),
    );
    report.step(
        "the plugins in a compiler they are not built for: the pass plugin without its libLLVM (as in a statically linked or vendor clang) refuses in one line, the frontend plugin in another release stays inactive with one; in their own, they load",
        || foreign_llvm::check(dist),
    );
    report.step(
        "the README's and docs' `sh runnable` blocks run as written (install, compile examples/, run, strict mode)",
        || doc_commands::check(workspace),
    );
}

/// Fuzzing, and the static metrics of the translation.
fn measurement_steps(workspace: &Path, tools: &Tools, dist: &Dist, archs: &Archs, report: &mut Report) {
    report.step(
        format!(
            "fuzzing: {} targets of fuzz/, {} s each (cargo fuzz)",
            fuzz::TARGETS.len(),
            fuzz::SUITE_SECONDS
        ),
        || fuzz::run(workspace, tools, dist, fuzz::SUITE_SECONDS),
    );
    let metrics_step = format!(
        "static metrics: registers and SASS of ours vs LLVM {}'s lookup (target/bench/)",
        Llvm::oldest().major
    );
    report.step(metrics_step, || metrics::run(workspace, tools, dist, &archs.sms));
}

/// The GPU bundle's parts: built, self-checked, run if a GPU is here.
fn gpu_bundle_steps(workspace: &Path, tools: &Tools, dist: &Dist, report: &mut Report) {
    for part in gpu_bundle::Part::all().into_iter().filter(|p| gpu_side_checked(p.compiler())) {
        report.step(
            format!(
                "GPU bundle, part {} (cargo xtask gpu-test --part {0}): built, self-checked, run if a GPU is here",
                part.name()
            ),
            || {
                let (bundle, summary) = gpu_bundle::build(workspace, tools, dist, part)?;
                let ran = gpu_bundle::run(&bundle, false, false, None)?;
                if ran.contains("no NVIDIA GPU") {
                    // Without a GPU nothing may report green where a GPU run was asked for.
                    ensure!(
                        gpu_bundle::run(&bundle, true, false, None).is_err(),
                        "run.sh --require-gpu succeeded on a machine without a GPU"
                    );
                    for step in ["lookup", "plugin-abi", "bench"] {
                        let status = Command::new(bundle.join("bin/gpu-test")).arg(step).status()?;
                        ensure!(
                            status.code() == Some(3),
                            "gpu-test {step} without a GPU exited with {status}, expected 3 (no GPU)"
                        );
                    }
                    return Ok(format!(
                        "{summary}; {ran}; --require-gpu fails and every gpu-test step says no GPU"
                    ));
                }
                Ok(format!("{summary}; {ran}"))
            },
        );
    }
}

/// A leak or memory error makes valgrind exit 99, failing the test run.
const VALGRIND_OPTIONS: &str = "--quiet --leak-check=full --errors-for-leak-kinds=definite,indirect \
                               --show-leak-kinds=definite,indirect --error-exitcode=99";
