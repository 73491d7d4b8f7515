//! What a release's clang and flang do by themselves, beside the same code with the project: the
//! table of [`page`], measured. Its subjects: the end-to-end programs written as users write them
//! ([`Program::unmodified`]), the corpus of third-party C++ libraries (`tests/corpus/`) and LLVM's
//! own offload tests of indirect and virtual calls (`llvmNN-offload-tests` of the requirements, from
//! the newest release whose source the project fetches, as LLVM wrote them). Each is built with nothing of the project ([`Build::Stock`]): whether it
//! links and what it does on the x86_64 device, loose and strict; what its device code is for
//! sm_90 and gfx90a (each unit compiled to device IR by the stock compiler: the calls it translates
//! through `__llvm_omp_indirect_call_lookup`, those it leaves untranslated, the vtables it defines,
//! the functions it calls that no unit of its image defines); and built with the configuration
//! file, run loose and strict. The end-to-end programs must pass with the project, and every
//! subject wherever stock passes; the page's table must be the one measured: when the release's
//! behaviour changes, the step fails and names the rows.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};

use super::compile::{build, build_as, needed, shared_library_of};
use super::programs::{Build, Program, Unit, PROGRAMS};
use super::x86_64::{device_link_error, run_with, Device, MapSetup};
use crate::llvm::{DeviceRtl, Llvm};
use crate::offload::OffloadTarget;
use crate::toolchain::{is_fortran, module_dir_args, Toolchain};
use crate::{cmd, corpus, requirements};

/// The page that holds `llvm`'s table, between [`BEGIN`] and [`END`].
pub fn page(llvm: Llvm) -> String {
    format!("docs/llvm{}.md", llvm.major)
}
const BEGIN: &str = "<!-- the suite measures the table below: begin -->";
const END: &str = "<!-- the suite measures the table above: end -->";

/// The GPU targets whose device code the table describes.
fn gpu_targets() -> [OffloadTarget; 2] {
    [OffloadTarget::nvptx("sm_90"), OffloadTarget::amdgcn("gfx90a")]
}

/// One row's subject.
enum Subject {
    /// An end-to-end program of `tests/e2e/`.
    Program(&'static Program),
    /// One C or C++ file that prints its own verdict: a corpus program (it prints `<name>: ...`
    /// lines and exits 0) or one of LLVM's offload tests (its `// CHECK:` lines, in order).
    File { name: String, source: PathBuf, expected: Vec<String> },
}

impl Subject {
    fn name(&self) -> String {
        match self {
            Subject::Program(program) => program.name.to_string(),
            Subject::File { name, .. } => name.clone(),
        }
    }

    /// Whether a run that exited with `code` and printed `output` did what the subject checks.
    fn passed(&self, code: i32, output: &str) -> bool {
        let name = self.name();
        match self {
            Subject::Program(_) => {
                let summary = output.lines().find(|l| l.starts_with(&format!("{name}: "))).unwrap_or("");
                code == 0 && summary.ends_with(" 0 failed")
            }
            Subject::File { expected, .. } => {
                let mut rest = output;
                code == 0
                    && expected.iter().all(|e| match rest.find(e.as_str()) {
                        Some(at) => {
                            rest = &rest[at + e.len()..];
                            true
                        }
                        None => false,
                    })
            }
        }
    }
}

/// Every subject of the table for `toolchain`: the end-to-end programs, the corpus, LLVM's tests.
fn subjects(workspace: &Path, toolchain: &Toolchain) -> Result<Vec<Subject>> {
    let mut subjects: Vec<Subject> = PROGRAMS
        .iter()
        .filter(|p| p.unmodified && p.runs_with(toolchain.llvm))
        .map(Subject::Program)
        .collect();
    for name in corpus::PROGRAMS {
        let source = workspace.join("tests/corpus").join(format!("{name}.cpp"));
        subjects.push(Subject::File { name: name.to_string(), source, expected: vec![format!("{name}: ")] });
    }
    // LLVM's tests come with its source, which the project fetches for the releases whose
    // DeviceRTL it builds from source.
    let from_source = Llvm::all()
        .rev()
        .find(|llvm| matches!(llvm.device_rtl, DeviceRtl::FromSource { .. }))
        .context("no release's DeviceRTL is built from source")?;
    let one = requirements::program(&format!("llvm{}-offload-tests", from_source.major));
    let tests = one.parent().and_then(Path::parent).context("the offload tests' directory")?;
    let mut sources = Vec::new();
    for dir in ["api", "offloading"] {
        for entry in std::fs::read_dir(tests.join(dir))? {
            sources.push(entry?.path());
        }
    }
    sources.sort();
    for source in sources {
        let text = std::fs::read_to_string(&source)?;
        // FileCheck's patterns up to their first variable or regular expression.
        let expected = text
            .lines()
            .filter_map(|l| l.split_once("// CHECK: ").map(|(_, p)| p))
            .map(|p| p.split("[[").next().unwrap_or(p).split("{{").next().unwrap_or(p).trim().to_string())
            .filter(|p| !p.is_empty())
            .collect();
        let file = source.file_name().context("a test's name")?.to_string_lossy();
        let dir = source.parent().and_then(Path::file_name).context("a test's directory")?.to_string_lossy();
        subjects.push(Subject::File { name: format!("LLVM {dir}/{file}"), source, expected });
    }
    Ok(subjects)
}

/// Measures the table for `toolchain`'s release and compares it with its [`page`]'s.
pub fn check(workspace: &Path, toolchain: &Toolchain) -> Result<String> {
    ensure!(!toolchain.llvm.runs_project_plugins(), "the table shows a stock runtime by itself");
    let subjects = subjects(workspace, toolchain)?;
    let mut rows = Vec::new();
    let mut regressions = Vec::new();
    for subject in &subjects {
        let row = row(workspace, toolchain, subject).with_context(|| subject.name())?;
        let stock_passes = row.x86_64.starts_with("links; passes; strict device: passes");
        let must_pass = matches!(subject, Subject::Program(_)) || stock_passes;
        if must_pass && row.project != PROJECT_PASSES {
            regressions.push(format!("{}: with the project it {}", row.name, row.project));
        }
        rows.push(row);
    }
    let table = render(toolchain, &rows);
    let measured = toolchain.e2e_dir(workspace, &OffloadTarget::x86_64()).join("by-itself.md");
    std::fs::write(&measured, &table)?;
    ensure!(
        regressions.is_empty(),
        "with the project, what must pass does not (measured: {}):\n{}",
        measured.display(),
        regressions.join("\n")
    );
    let page = page(toolchain.llvm);
    let text = std::fs::read_to_string(workspace.join(&page))?;
    let documented =
        between(&text, BEGIN, END).with_context(|| format!("{page} has no {BEGIN} ... {END}"))?;
    let differing: Vec<&str> = {
        let documented: HashSet<String> = documented.lines().map(comparable).collect();
        table.lines().filter(|l| !documented.contains(&comparable(l))).collect()
    };
    ensure!(
        differing.is_empty() && documented.trim().lines().count() == table.trim().lines().count(),
        "{page}'s table is not what clang {} does now (measured: {}); rows that differ:\n{}",
        toolchain.llvm.major,
        measured.display(),
        differing.join("\n")
    );
    let links = rows.iter().filter(|r| r.x86_64.starts_with("links")).count();
    let passes = rows.iter().filter(|r| r.x86_64.starts_with("links; passes; strict device: passes")).count();
    let project = rows.iter().filter(|r| r.project == PROJECT_PASSES).count();
    Ok(format!(
        "{} subjects: stock clang {major} links {links} for x86_64, {passes} of them pass by themselves, loose and \
         strict (reported as such); with the project {project} pass, loose and strict; the table is {page}'s",
        rows.len(),
        major = toolchain.llvm.major
    ))
}

/// A row as the page and a run compare it: the host function the strict device stopped at is the
/// first one a run called, which for a program whose threads call several varies from run to run
/// (the page names the one its run met).
fn comparable(row: &str) -> String {
    const STOP: &str = "stopped at the call of host function ";
    let mut out = String::new();
    let mut rest = row.trim();
    while let Some(at) = rest.find(STOP) {
        out.push_str(&rest[..at + STOP.len()]);
        rest = &rest[at + STOP.len()..];
        let end = rest.find([' ', '|', ';']).unwrap_or(rest.len());
        out.push('_');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The project column of a subject that passes.
const PROJECT_PASSES: &str = "passes, loose and strict";

/// One subject's row.
struct Row {
    name: String,
    x86_64: String,
    gpus: Vec<String>,
    project: String,
}

fn row(workspace: &Path, toolchain: &Toolchain, subject: &Subject) -> Result<Row> {
    let x86_64 = match stock_build(workspace, toolchain, subject)? {
        Ok(exe) => {
            let loose = outcome(toolchain, subject, &exe, Device::Loose)?;
            let strict = outcome(toolchain, subject, &exe, Device::Strict)?;
            format!("links; {loose}; strict device: {strict}")
        }
        Err(error) => error,
    };
    let gpus = gpu_targets()
        .iter()
        .map(|target| device_code(workspace, toolchain, subject, target))
        .collect::<Result<Vec<_>>>()?;
    let project = match project_build(workspace, toolchain, subject) {
        Ok(exe) => {
            let loose = outcome(toolchain, subject, &exe, Device::Loose)?;
            let strict = outcome(toolchain, subject, &exe, Device::Strict)?;
            if loose == "passes" && strict == "passes" {
                PROJECT_PASSES.to_string()
            } else {
                format!("{loose}; strict device: {strict}")
            }
        }
        Err(err) => build_failure(&format!("{err:#}")),
    };
    Ok(Row { name: subject.name(), x86_64, gpus, project })
}

/// `subject` built for x86_64 with nothing of the project (checked: nothing of it is linked), or
/// how its build failed.
fn stock_build(
    workspace: &Path,
    toolchain: &Toolchain,
    subject: &Subject,
) -> Result<std::result::Result<PathBuf, String>> {
    let target = OffloadTarget::x86_64();
    let built = match subject {
        Subject::Program(program) => build_as(workspace, toolchain, &target, program, Build::Stock),
        Subject::File { name, source, .. } => compile_file(workspace, toolchain, name, source, false),
    };
    let exe = match built {
        Ok(exe) => exe,
        Err(err) => return Ok(Err(build_failure(&format!("{err:#}")))),
    };
    let library = match subject {
        Subject::Program(program) => shared_library_of(program, &exe),
        Subject::File { .. } => None,
    };
    for object in std::iter::once(exe.clone()).chain(library) {
        let ours = needed(&object)?.into_iter().find(|n| n.contains("omptarget-indirect"));
        ensure!(ours.is_none(), "the stock build {} links {}", object.display(), ours.unwrap_or_default());
    }
    Ok(Ok(exe))
}

/// `subject` built for x86_64 as the README says (the configuration file).
fn project_build(workspace: &Path, toolchain: &Toolchain, subject: &Subject) -> Result<PathBuf> {
    match subject {
        Subject::Program(program) => build(workspace, toolchain, &OffloadTarget::x86_64(), program),
        Subject::File { name, source, .. } => compile_file(workspace, toolchain, name, source, true),
    }
}

/// Compiles and links the one-file subject `source` for x86_64 at `-O2`, stock or `with_project`
/// (the configuration file), into the table's build directory.
fn compile_file(
    workspace: &Path,
    toolchain: &Toolchain,
    name: &str,
    source: &Path,
    with_project: bool,
) -> Result<PathBuf> {
    let target = OffloadTarget::x86_64();
    let dir = toolchain.e2e_dir(workspace, &target).join("by-itself").join(name.replace(['/', ' '], "_"));
    std::fs::create_dir_all(&dir)?;
    let exe = dir.join(if with_project { "project" } else { "stock" });
    let _ = std::fs::remove_file(&exe);
    let file = source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut c = Command::new(toolchain.compiler(&file));
    c.args(toolchain.offload_args(&target));
    if with_project {
        c.args(toolchain.pass_plugin_args());
    }
    c.args(["-O2", "-o"]).arg(&exe).arg(source);
    c.args(if with_project { toolchain.link_args_with_config() } else { toolchain.runtime_link_args() });
    cmd::output(&mut c)?;
    Ok(exe)
}

/// A build's failure in the table's words: `does not link: <symbol>` or `does not compile: <error>`.
fn build_failure(text: &str) -> String {
    match device_link_error(text) {
        Some(error) => format!("does not link: {}", error.replace(['`', '\''], "")),
        None => format!("does not compile: {}", first_error(text)),
    }
}

/// What `exe`, a build of `subject`, does on `device` in the table's words: `passes`, `stopped at
/// the <what>` (the strict device's one line), `fails its checks`, or `dies (exit N)`.
fn outcome(toolchain: &Toolchain, subject: &Subject, exe: &Path, device: Device) -> Result<String> {
    let (code, output) = run_with(toolchain, exe, &[], MapSetup::Indexed, false, device)?;
    if subject.passed(code, &output) {
        return Ok("passes".into());
    }
    let strict = output.lines().find_map(|l| l.strip_prefix("omptarget-indirect strict: "));
    if let (70, Some(line)) = (code, strict) {
        // `call of host function `square` at 0x... in /path by device code at ...`: the
        // address and the path differ from run to run and machine to machine.
        let what = line.split(" by device code").next().unwrap_or(line);
        let what = what.split(" at 0x").next().unwrap_or(what);
        return Ok(format!("stopped at the {}", what.replace('`', "")));
    }
    Ok(if output.lines().any(|l| l.starts_with("FAIL ")) {
        "fails its checks".into()
    } else {
        format!("dies (exit {code})")
    })
}

/// The first `error:` line of a failed build's output that says what is wrong (not flang's
/// `Semantic errors in <file>`), without its file and line, or the output's first line.
fn first_error(text: &str) -> String {
    let said = |l: &&str| l.contains("error: ") && !l.contains("Semantic errors in ");
    let line = text.lines().find(said).or_else(|| text.lines().next()).unwrap_or("");
    let error = line.split_once("error: ").map_or(line, |(_, e)| e);
    error.trim().replace(['`', '|'], "'")
}

/// What the stock compiler makes of `subject`'s device code for `target`: every unit compiled to
/// device IR alone (`--offload-device-only`), the image's units read together.
fn device_code(
    workspace: &Path,
    toolchain: &Toolchain,
    subject: &Subject,
    target: &OffloadTarget,
) -> Result<String> {
    let out =
        toolchain.e2e_dir(workspace, target).join("by-itself").join(subject.name().replace(['/', ' '], "_"));
    std::fs::create_dir_all(&out)?;
    let (images, gpu_flags): (Vec<Vec<Source>>, &[&str]) = match subject {
        // A library's units first: a Fortran program's units use their modules.
        Subject::Program(program) => {
            let sources = |units: &[&'static Unit]| -> Vec<Source> {
                units
                    .iter()
                    .map(|u| Source { path: workspace.join("tests/e2e").join(u.source), flags: u.flags })
                    .collect()
            };
            let own: Vec<&Unit> = program.library.iter().chain(program.units).collect();
            let shared: Vec<&Unit> = program.shared_library.iter().collect();
            (vec![sources(&own), sources(&shared)], program.gpu_flags)
        }
        Subject::File { source, .. } => (vec![vec![Source { path: source.clone(), flags: &[] }]], &[]),
    };
    let mut cells = Vec::new();
    for (image, sources) in images.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
        let mut modules = Vec::new();
        for source in sources {
            match device_ir(toolchain, target, source, gpu_flags, &out)? {
                Ok(ir) => modules.push(ir),
                Err(error) => return Ok(format!("does not compile: {error}")),
            }
        }
        let prefix = if image == 1 { "its shared library: " } else { "" };
        cells.push(format!("{prefix}{}", DeviceCode::of(&modules).describe()));
    }
    Ok(cells.join("; "))
}

/// A source file and the flags its build adds.
struct Source {
    path: PathBuf,
    flags: &'static [&'static str],
}

/// Compiles `source` to device IR for `target` in `out`; the compiler's first error if it cannot.
fn device_ir(
    toolchain: &Toolchain,
    target: &OffloadTarget,
    source: &Source,
    gpu_flags: &[&str],
    out: &Path,
) -> Result<std::result::Result<String, String>> {
    let file = source.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let ir = out.join(format!("{file}.{}.ll", target.name));
    let mut compiler = Command::new(toolchain.compiler(&file));
    if let (true, Some(path)) = (is_fortran(&file), toolchain.fortran_path(target)) {
        compiler.env("PATH", path);
    }
    let mut flags = toolchain.offload_args_for(target, &file);
    flags.retain(|f| !f.to_string_lossy().starts_with("-I"));
    compiler
        .args(flags)
        .args(gpu_flags)
        .args(module_dir_args(&file, out))
        .args(["-O2", "--offload-device-only", "-S", "-emit-llvm"])
        .args(source.flags)
        .arg(&source.path)
        .arg("-o")
        .arg(&ir);
    if let Err(err) = cmd::output(&mut compiler) {
        return Ok(Err(first_error(&format!("{err:#}"))));
    }
    Ok(Ok(std::fs::read_to_string(&ir)?))
}

/// What an image's device IR does with indirect calls.
#[derive(Debug, Default, PartialEq, Eq)]
struct DeviceCode {
    /// Calls of `__llvm_omp_indirect_call_lookup`.
    lookups: usize,
    /// Indirect calls whose callee comes from a lookup's result (directly, or loaded from the
    /// vtable a lookup gave).
    translated: usize,
    /// Indirect calls whose callee does not.
    untranslated: usize,
    /// Vtables (`_ZTV`) the image defines.
    vtables: usize,
    /// Functions the image's code calls or takes the address of that none of its units defines
    /// and no runtime provides (a host function the device would jump into, or a missing link).
    missing: BTreeSet<String>,
}

/// Functions the device runtimes and libraries provide (DeviceRTL, the GPU math and C
/// libraries, flang's runtime), by prefix, and intrinsics.
const PROVIDED_PREFIXES: &[&str] = &[
    "llvm.",
    "__kmpc_",
    "omp_",
    "__llvm_omp_",
    "__nv_",
    "__ocml_",
    "__ockl_",
    "_Fortran",
    "__cxa_",
    "__gxx_",
];
const PROVIDED: &[&str] = &[
    "malloc",
    "free",
    "printf",
    "vprintf",
    "puts",
    "__assert_fail",
    "__assertfail",
    "memcpy",
    "memset",
    "memcmp",
    "strlen",
    "abort",
    "_Znwm",
    "_Znam",
    "_ZdlPv",
    "_ZdlPvm",
    "_ZdaPv",
    "_ZdaPvm",
];

impl DeviceCode {
    /// Reads the IR modules of one image.
    fn of(modules: &[String]) -> DeviceCode {
        let mut code = DeviceCode::default();
        let mut defined = HashSet::new();
        let mut declared = BTreeSet::new();
        for module in modules {
            // Values derived from a lookup's result, in the function being read.
            let mut from_lookup: HashSet<&str> = HashSet::new();
            for line in module.lines() {
                if let Some(rest) = line.strip_prefix("define ") {
                    from_lookup.clear();
                    defined.extend(global_name(rest));
                    continue;
                }
                if let Some(rest) = line.strip_prefix("declare ") {
                    declared.extend(global_name(rest));
                    continue;
                }
                if line.starts_with("@_ZTV") && !line.contains(" external ") {
                    code.vtables += 1;
                    continue;
                }
                let trimmed = line.trim_start();
                let (result, instruction) = match trimmed.split_once(" = ") {
                    Some((name, rest)) if name.starts_with('%') => (Some(name), rest),
                    _ => (None, trimmed),
                };
                if instruction.contains("@__llvm_omp_indirect_call_lookup(") {
                    code.lookups += 1;
                    from_lookup.extend(result);
                    continue;
                }
                if let Some(callee) = indirect_callee(instruction) {
                    if from_lookup.contains(callee) {
                        code.translated += 1;
                    } else {
                        code.untranslated += 1;
                    }
                    continue;
                }
                let derives = ["getelementptr", "load ", "bitcast", "phi ", "select ", "addrspacecast"];
                let derived = derives.iter().any(|d| instruction.contains(d))
                    && values(instruction).any(|v| from_lookup.contains(v));
                if let (true, Some(result)) = (derived, result) {
                    from_lookup.insert(result);
                }
            }
        }
        code.missing = declared
            .into_iter()
            .filter(|name| !defined.contains(name))
            .filter(|name| !PROVIDED.contains(&name.as_str()))
            .filter(|name| !PROVIDED_PREFIXES.iter().any(|p| name.starts_with(p)))
            .collect();
        code
    }

    /// The table cell.
    fn describe(&self) -> String {
        let calls = self.translated + self.untranslated;
        let mut cell = format!(
            "{} lookups; {calls} indirect calls, {} untranslated; {} vtables",
            self.lookups, self.untranslated, self.vtables
        );
        if !self.missing.is_empty() {
            let names: Vec<&str> = self.missing.iter().map(String::as_str).collect();
            cell.push_str(&format!("; calls what it does not define: {}", names.join(", ")));
        }
        cell
    }
}

/// The `@name` of a `define` or `declare` line.
fn global_name(line: &str) -> Option<String> {
    let at = line.find('@')?;
    let name: String = line[at + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
        .collect();
    Some(name.trim_matches('"').to_string())
}

/// The callee of an indirect `call` or `invoke`: the first `%value(` of the instruction.
fn indirect_callee(instruction: &str) -> Option<&str> {
    let rest = ["call ", "invoke "].iter().find_map(|k| instruction.split_once(k).map(|(_, r)| r))?;
    let callee = rest.split_whitespace().find(|t| t.starts_with('%') || t.starts_with('@'))?;
    let (name, _) = callee.split_once('(')?;
    name.starts_with('%').then_some(name)
}

/// The `%values` an instruction names.
fn values(instruction: &str) -> impl Iterator<Item = &str> {
    instruction
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '%' | '_' | '.')))
        .filter(|t| t.starts_with('%') && t.len() > 1)
}

/// The text between `begin` and `end`.
fn between<'a>(page: &'a str, begin: &str, end: &str) -> Option<&'a str> {
    let (_, rest) = page.split_once(begin)?;
    Some(rest.split_once(end)?.0)
}

/// The table, as the page has it.
fn render(toolchain: &Toolchain, rows: &[Row]) -> String {
    let major = toolchain.llvm.major;
    let mut header = format!("| program | stock clang/flang {major}, x86_64 device |");
    for target in gpu_targets() {
        header.push_str(&format!(" stock device code, {} |", target.name));
    }
    header.push_str(" with the project, x86_64 device |");
    let mut table = format!("\n{header}\n|{}\n", "---|".repeat(3 + gpu_targets().len()));
    for row in rows {
        table.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            row.name,
            row.x86_64,
            row.gpus.join(" | "),
            row.project
        ));
    }
    table.push('\n');
    table
}

#[cfg(test)]
mod tests {
    use super::DeviceCode;

    #[test]
    fn calls_through_a_looked_up_vtable_are_translated_and_others_are_not() {
        let ir = "\
@_ZTV5Shape = protected unnamed_addr constant { [4 x ptr] } { [4 x ptr] [ptr null] }, align 8
@_ZTV4Hole = external constant { [3 x ptr] }
define internal void @__omp_offloading_fd00_1_main_l10(ptr %0) {
  %vtable = load ptr, ptr %0, align 8
  %1 = tail call ptr @__llvm_omp_indirect_call_lookup(ptr %vtable) #3
  %2 = getelementptr inbounds i8, ptr %1, i64 8
  %3 = load ptr, ptr %2, align 8
  %4 = tail call noundef i32 %3(ptr noundef %0, i32 noundef 6) #4
  %5 = load ptr, ptr %0, align 8
  %6 = call i32 %5(i32 1)
  call void @host_only()
  ret void
}
declare ptr @__llvm_omp_indirect_call_lookup(ptr)
declare void @host_only()
declare i32 @__kmpc_target_init(ptr, ptr)
";
        let code = DeviceCode::of(&[ir.to_string()]);
        assert_eq!((code.lookups, code.translated, code.untranslated, code.vtables), (1, 1, 1, 1));
        assert_eq!(code.missing.into_iter().collect::<Vec<_>>(), ["host_only"]);
    }

    #[test]
    fn a_function_another_unit_defines_is_not_missing() {
        let caller = "define void @f() {\n  call void @g()\n  ret void\n}\ndeclare void @g()\n";
        let callee = "define void @g() {\n  ret void\n}\n";
        let code = DeviceCode::of(&[caller.to_string(), callee.to_string()]);
        assert!(code.missing.is_empty());
        assert_eq!(code.untranslated, 0);
    }
}
