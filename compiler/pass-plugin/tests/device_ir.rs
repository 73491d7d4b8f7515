//! The pass plugin checked on device IR, for the GPU targets where nothing can run here, with each
//! toolchain (clang 22 with `-nogpulib`: Debian ships no GPU DeviceRTL for it): each unmodified
//! end-to-end program compiled for the device only (`--offload-device-only -emit-llvm -S`) at
//! `-O0` and `-O2` with the plugin. In the IR every indirect call's callee must be the
//! result of `__kmpc_target_translate_fptr`, the module must verify (`opt -passes=verify`), and
//! `-Rpass=omptarget-indirect` must report each translation at `-O0`. And on the `-O2` IR of
//! `bench/programs/translation_loops.c`, the translation of a loop-invariant pointer must be hoisted
//! out of its loop.
//!
//! Both need the built dist tree and the toolchains: they are ignored unless asked for, and
//! `scripts/test.sh` runs them for each clang and target with [`CLANG_ENV`] and [`TARGET_ENV`] set.
//! Each prints one line beginning with `device IR: ` for the suite's report.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use checks::e2e::{Program, PROGRAMS};
use packaging::cmd;
use packaging::dist::Dist;
use packaging::llvm::Llvm;
use packaging::offload::OffloadTarget;
use packaging::toolchain::{is_fortran, module_dir_args, Toolchain};
use packaging::tools::Tools;

/// The clang to check with: a supported major (`19`, `21`, `22`, `23`).
const CLANG_ENV: &str = "OMPTARGET_INDIRECT_IR_CLANG";
/// The device to compile for: `x86_64`, an `sm_NN` or a `gfxNNN`.
const TARGET_ENV: &str = "OMPTARGET_INDIRECT_IR_TARGET";

/// The workspace, its tools and dist tree, and the toolchain and target the environment names.
fn asked() -> Result<(PathBuf, Tools, Dist, Llvm, OffloadTarget)> {
    let workspace =
        Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).context("no workspace")?.to_path_buf();
    let clang = std::env::var(CLANG_ENV).with_context(|| format!("set {CLANG_ENV}"))?;
    let llvm = Llvm::of_major(&clang).with_context(|| format!("{CLANG_ENV}={clang}"))?;
    let target = match std::env::var(TARGET_ENV).with_context(|| format!("set {TARGET_ENV}"))? {
        name if name == "x86_64" => OffloadTarget::x86_64(),
        name if name.starts_with("sm_") => OffloadTarget::nvptx(&name),
        name if name.starts_with("gfx") => OffloadTarget::amdgcn(&name),
        name => bail!("{TARGET_ENV}={name}: expected x86_64, sm_NN or gfxNNN"),
    };
    let tools = Tools::locate(&workspace)?;
    let dist = Dist::new(&workspace);
    Ok((workspace, tools, dist, llvm, target))
}

/// Runs `check` for the toolchain and target the environment names and prints its report.
fn run_asked(check: fn(&Path, &Toolchain, &OffloadTarget) -> Result<String>) {
    let report = asked().and_then(|(workspace, tools, dist, llvm, target)| {
        check(&workspace, &Toolchain::new(llvm, &tools, &dist), &target)
    });
    println!("device IR: {}", report.unwrap_or_else(|e| panic!("{e:#}")));
}

#[test]
#[ignore = "needs the dist tree and the toolchains: scripts/test.sh runs it per clang and target"]
fn every_indirect_call_is_translated_and_the_module_verifies() {
    run_asked(check);
}

#[test]
#[ignore = "needs the dist tree and the toolchains: scripts/test.sh runs it per clang and target"]
fn loop_invariant_translations_are_hoisted() {
    run_asked(check_hoisting);
}

#[test]
#[ignore = "needs the dist tree and the toolchains: scripts/test.sh runs it per clang and target"]
fn devirtualizable_kernels_fold_like_stock() {
    run_asked(check_devirtualized);
}

const TRANSLATE_CALL: &str = "@__kmpc_target_translate_fptr(";

/// Compiles every unmodified program's device code for `target` and checks it as above.
fn check(workspace: &Path, toolchain: &Toolchain, target: &OffloadTarget) -> Result<String> {
    let out = ir_dir(workspace, toolchain, target);
    std::fs::create_dir_all(&out)?;
    let mut translated = 0;
    let mut files = 0;
    let runs = |p: &&Program| p.unmodified && p.runs_with(toolchain.llvm);
    for program in PROGRAMS.iter().filter(runs) {
        for unit in program.units {
            for level in ["-O0", "-O2"] {
                let ir = out.join(format!("{}{level}.ll", unit.source));
                let source = workspace.join("tests/e2e").join(unit.source);
                let mut flags = vec![level, "-Rpass=omptarget-indirect"];
                flags.extend(unit.flags);
                let (text, remarks) = device_ir(toolchain, target, &source, &flags, &ir, true)?;
                if !unit.has_device_code() {
                    // Compiled for the module file the next units use; no device code to check.
                    continue;
                }
                let what =
                    format!("{} {level} for {} (clang {})", unit.source, target.name, toolchain.llvm.major);
                let (calls, missing) = indirect_calls(&text);
                ensure!(
                    missing.is_empty(),
                    "{what}: indirect calls without a translation:\n{}",
                    missing.join("\n")
                );
                let translations =
                    text.lines().filter(|l| l.contains(TRANSLATE_CALL) && !l.starts_with("declare")).count();
                ensure!(calls > 0 && translations > 0, "{what}: no translated indirect call at all");
                if level == "-O0" {
                    // An indirect call's callee, a vtable pointer: one remark per translation,
                    // those of code the host-only stubs removed included (their remarks say how many).
                    let announced = remarks.lines().filter(|l| l.contains("remark: translated ")).count();
                    let removed: usize = remarks.lines().filter_map(removed_translations).sum();
                    ensure!(
                        announced == translations + removed,
                        "{what}: {translations} translations (and {removed} removed with stubbed code) but \
                         {announced} remarks"
                    );
                }
                cmd::output(
                    Command::new(toolchain.opt()).args(["-passes=verify", "-disable-output"]).arg(&ir),
                )
                .with_context(|| format!("{what}: the rewritten IR does not verify"))?;
                translated += calls;
                files += 1;
            }
        }
    }
    Ok(format!(
        "{files} device modules (-O0, -O2): {translated} indirect calls, each through __kmpc_target_translate_fptr; \
         all verify; one remark per translation at -O0"
    ))
}

/// The `N` of a remark's `; N translations removed with it` (the host-only stubs').
fn removed_translations(remark: &str) -> Option<usize> {
    let (before, _) = remark.split_once(" translations removed with it")?;
    before.rsplit(' ').next()?.parse().ok()
}

/// `target/tests/pass-ir/llvm<NN>/<target>`.
fn ir_dir(workspace: &Path, toolchain: &Toolchain, target: &OffloadTarget) -> PathBuf {
    workspace.join("target/tests/pass-ir").join(format!("llvm{}", toolchain.llvm.major)).join(&target.name)
}

/// Compiles `source`'s device code for `target` with the project (its configuration file: the
/// plugins) or stock, and `flags`, into textual IR at `ir`; returns the IR and what clang printed
/// on stderr (the remarks).
fn device_ir(
    toolchain: &Toolchain,
    target: &OffloadTarget,
    source: &Path,
    flags: &[&str],
    ir: &Path,
    project: bool,
) -> Result<(String, String)> {
    let name = source.to_string_lossy();
    let plugins = if project { toolchain.pass_plugin_args_for(&name) } else { Vec::new() };
    let mut compiler = Command::new(toolchain.compiler(&name));
    if let (true, Some(path)) = (is_fortran(&name), toolchain.fortran_path(target)) {
        compiler.env("PATH", path);
    }
    let compiled = cmd::output(
        compiler
            .args(module_dir_args(&name, ir.parent().unwrap_or(ir)))
            .args(toolchain.offload_args_for(target, &name))
            .args(plugins)
            .args(["--offload-device-only", "-emit-llvm", "-S"])
            .args(flags)
            .arg(source)
            .arg("-o")
            .arg(ir),
    )?;
    let text = String::from_utf8_lossy(&cmd::read(ir)?).into_owned();
    Ok((text, String::from_utf8_lossy(&compiled.stderr).into_owned()))
}

/// Counts the indirect calls in textual IR and lists those whose callee is not the result of a
/// translation (nor a phi or select of translations). Inline asm is not an indirect call.
fn indirect_calls(ir: &str) -> (usize, Vec<String>) {
    let mut count = 0;
    let mut missing = Vec::new();
    for body in functions(ir) {
        let definitions: HashMap<&str, &str> = body
            .lines()
            .filter_map(|l| l.trim().split_once(" = "))
            .filter(|(name, _)| name.starts_with('%'))
            .collect();
        for line in body.lines().skip(1) {
            let line = line.trim();
            let Some(callee) = indirect_callee(line) else { continue };
            count += 1;
            if !is_translation(callee, &definitions, &mut HashSet::new())
                && !is_translated_vtable_slot(callee, &definitions)
            {
                missing.push(line.to_string());
            }
        }
    }
    (count, missing)
}

/// Each function definition of textual IR, from its `define` line to its closing brace.
fn functions(ir: &str) -> impl Iterator<Item = &str> {
    ir.split("\ndefine ").skip(1).map(|f| f.split("\n}").next().unwrap_or(f))
}

/// The callee of a call or invoke line if it is indirect: the first `%name` directly followed by
/// `(`. Inline asm is not an indirect call.
fn indirect_callee(line: &str) -> Option<&str> {
    let call_site = line.contains("call ") || line.contains("invoke ");
    if !call_site || line.contains(" asm ") {
        return None;
    }
    for (start, _) in line.match_indices('%') {
        let len = line[start + 1..]
            .find(|c: char| !(c.is_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(line.len() - start - 1);
        let end = start + 1 + len;
        if line[end..].starts_with('(') {
            return Some(&line[start..end]);
        }
    }
    None
}

/// Whether `value` is read from a slot of a translated vtable: `load ptr, ptr %p` where `%p` is a
/// translation, or a GEP (or address-space cast) of one. The slot holds a device address, so the
/// pass plugin leaves such a call as it is.
fn is_translated_vtable_slot(value: &str, definitions: &HashMap<&str, &str>) -> bool {
    let Some(definition) = definitions.get(value) else { return false };
    if !definition.starts_with("load ptr") {
        return false;
    }
    let Some(mut address) = definition.split_once(", ").and_then(|(_, rest)| first_operand(rest)) else {
        return false;
    };
    for _ in 0..4 {
        if is_translation(address, definitions, &mut HashSet::new()) {
            return true;
        }
        let Some(next) = definitions.get(address) else { return false };
        let moves = next.starts_with("getelementptr") || next.starts_with("addrspacecast");
        match first_operand(next) {
            Some(base) if moves => address = base,
            _ => return false,
        }
    }
    false
}

/// The first `%value` operand of an instruction's text.
fn first_operand(text: &str) -> Option<&str> {
    text.split([' ', ',', '(', ')']).find(|t| t.starts_with('%'))
}

/// Whether `value` is a translation: the call, an address-space cast of one, or a phi or select
/// every value of which is one, a function, null, or the key of a cached translation it also picks. A phi met again on the way (the loop cache's
/// registers are carried around a loop) adds no other value.
fn is_translation<'a>(
    value: &'a str,
    definitions: &HashMap<&'a str, &'a str>,
    seen: &mut HashSet<&'a str>,
) -> bool {
    if !seen.insert(value) {
        return true;
    }
    let Some(definition) = definitions.get(value) else { return false };
    if definition.contains(TRANSLATE_CALL) {
        return true;
    }
    // `addrspacecast ptr %t to ptr addrspace(1)`: amdgcn calls through global-space pointers.
    if let Some(rest) = definition.strip_prefix("addrspacecast ptr ") {
        let operand = rest.split_whitespace().next().unwrap_or("");
        return seen.len() < 64 && is_translation(operand, definitions, seen);
    }
    // Values a phi or select picks from: `[ %v, %block ]` pairs, or the last two operands.
    let picks: Vec<&str> = if let Some(rest) = definition.strip_prefix("phi ptr ") {
        rest.split('[').skip(1).filter_map(|pair| pair.split(',').next()).map(str::trim).collect()
    } else if let Some(rest) = definition.strip_prefix("select ") {
        rest.split(", ptr ").skip(1).filter_map(|v| v.split(',').next()).map(str::trim).collect()
    } else {
        return false;
    };
    // The loop cache answers a key outside the table's range with itself: next to the cached or
    // guarded translation of that key, the key is one of its results.
    let cached_keys: Vec<&str> = picks
        .iter()
        .filter_map(|v| definitions.get(v))
        .filter(|d| {
            d.contains(TRANSLATE_CALL)
                && (d.contains("!omptarget-indirect.cached") || d.contains("!omptarget-indirect.guarded"))
        })
        .filter_map(|d| d.split(TRANSLATE_CALL).nth(1).and_then(first_operand))
        .collect();
    seen.len() < 64
        && !picks.is_empty()
        && picks.iter().all(|v| {
            v.starts_with('@')
                || *v == "null"
                || cached_keys.contains(v)
                || is_translation(v, definitions, seen)
        })
}

/// Measures, on `target`'s `-O2` device IR of `bench/programs/translation_loops.c`, that the
/// translation of a loop-invariant pointer is hoisted out of its loop, and the translation of a
/// pointer picked per iteration stays in it (on the GPU targets called only for a key in the
/// table's range).
fn check_hoisting(workspace: &Path, toolchain: &Toolchain, target: &OffloadTarget) -> Result<String> {
    let out = ir_dir(workspace, toolchain, target);
    std::fs::create_dir_all(&out)?;
    let ir = out.join("translation_loops-O2.ll");
    let source = workspace.join("bench/programs/translation_loops.c");
    let (text, _) = device_ir(toolchain, target, &source, &["-O2", "-DVARIANT=translated"], &ir, true)?;
    let invariant = placement(&text, "invariant_loop_translated")?;
    ensure!(
        invariant == Placement::BeforeTheLoop,
        "{}: the translation of a loop-invariant pointer is not hoisted ({invariant:?})",
        target.name
    );
    // On the GPU targets behind the key-range test, on x86_64 beside its call (loop_cache.rs).
    let x86_64 = !target.is_gpu();
    let varying = placement(&text, "varying_loop_translated")?;
    let expected = if x86_64 { Placement::WithTheCall } else { Placement::Guarded };
    ensure!(
        varying == expected,
        "{}: the translation of a pointer picked per iteration is not where expected ({varying:?}, not {expected:?})",
        target.name
    );
    // A virtual call in a loop over objects: the vtable pointer's translation is cached.
    let ir = out.join("virtual_sweeps-O2.ll");
    let source = workspace.join("bench/programs/virtual_sweeps.cpp");
    let (text, _) = device_ir(toolchain, target, &source, &["-O2", "-DVARIANT=translated"], &ir, true)?;
    let sweep = placement(&text, "_Z25virtual_sweeps_translatedPKPK2Opll")?;
    ensure!(
        sweep == Placement::Cached,
        "{}: the vtable pointer's translation in a loop over objects is not cached ({sweep:?})",
        target.name
    );
    Ok(format!(
        "-O2: hoisted out of the loop for a loop-invariant pointer, {}; a vtable pointer's in a loop over objects \
         cached (a lookup when the class changes{})",
        if x86_64 { "once per call for a varying one" } else { "a varying one's looked up only in the key range" },
        if x86_64 { "" } else { " to a key in the range" }
    ))
}

/// Compiles `devirtualizable.cpp` (beside this file) for `target` at `-O2` with the project and
/// stock, and checks that every kernel's body is stock's (metadata attachments aside): no
/// translation and no indirect call left where stock clang devirtualized and folded.
fn check_devirtualized(workspace: &Path, toolchain: &Toolchain, target: &OffloadTarget) -> Result<String> {
    let out = ir_dir(workspace, toolchain, target);
    std::fs::create_dir_all(&out)?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/devirtualizable.cpp");
    let compile = |file: &str, project: bool| {
        device_ir(toolchain, target, &source, &["-O2"], &out.join(file), project).map(|(ir, _)| ir)
    };
    let (project, stock) =
        (compile("devirtualizable-O2.ll", true)?, compile("devirtualizable-stock-O2.ll", false)?);
    // In definition order, which the two compiles need not share.
    let kernels = |ir: &str| -> Vec<String> {
        let mut kernels: Vec<String> = functions(ir)
            .filter(|f| f.lines().next().is_some_and(|l| l.contains("@__omp_offloading_")))
            .map(without_metadata)
            .collect();
        kernels.sort_by_key(|k| k.split('(').next().unwrap_or_default().to_string());
        kernels
    };
    let (project, stock) = (kernels(&project), kernels(&stock));
    ensure!(!stock.is_empty() && project.len() == stock.len(), "{}: kernels differ in number", target.name);
    // A stock clang that inserts its own lookup keeps it, and the indirect call it feeds, where
    // the project folds: the project's kernel is then no longer than stock's, instead of equal.
    let own_lookup = toolchain.llvm.inserts_own_lookup;
    let mut kept_by_stock = 0;
    for (ours, theirs) in project.iter().zip(&stock) {
        if own_lookup {
            kept_by_stock += theirs.lines().filter(|l| indirect_callee(l).is_some()).count();
            ensure!(
                ours.lines().count() <= theirs.lines().count(),
                "{}: a kernel is longer than stock clang's:\n--- project\n{ours}\n--- stock\n{theirs}",
                target.name
            );
        } else {
            ensure!(
                ours == theirs,
                "{}: a kernel differs from stock clang's:\n--- project\n{ours}\n--- stock\n{theirs}",
                target.name
            );
        }
        ensure!(
            !ours.contains(TRANSLATE_CALL) && !ours.lines().any(|l| indirect_callee(l).is_some()),
            "{}: an indirect call or translation is left in:\n{ours}",
            target.name
        );
    }
    if own_lookup {
        return Ok(format!(
            "-O2: {} kernels (an object on the stack, one placed by new, a function pointer taken in device \
             code) devirtualized and folded, no translation left, each no longer than stock clang {}'s, whose own \
             lookup keeps {kept_by_stock} indirect calls",
            project.len(),
            toolchain.llvm.major
        ));
    }
    Ok(format!(
        "-O2: {} kernels (an object on the stack, one placed by new, a function pointer taken in device code) \
         devirtualized and folded as stock clang does: no translation left",
        project.len()
    ))
}

/// A function's text without its metadata attachments (`, !tbaa !12`, ` !dbg !3`) and attribute
/// group references (`#4`), whose numbering differs between two modules.
fn without_metadata(function: &str) -> String {
    function
        .lines()
        .map(|line| {
            let mut kept = String::new();
            let mut words = line.split(' ').peekable();
            while let Some(word) = words.next() {
                if word.starts_with('!') && words.peek().is_some_and(|next| next.starts_with('!')) {
                    words.next();
                    continue;
                }
                if word
                    .strip_prefix('#')
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                {
                    continue;
                }
                kept.push_str(word);
                kept.push(' ');
            }
            kept.trim_end().trim_end_matches(',').to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a function's one translation is relative to its one indirect call.
#[derive(Debug, PartialEq, Eq)]
enum Placement {
    /// In another block, one that does not close a loop (no `!llvm.loop` branch).
    BeforeTheLoop,
    /// In the indirect call's block.
    WithTheCall,
    /// In the loop cache's miss path (`crate::loop_cache`): called when the key changed.
    Cached,
    /// Behind the loop cache's range check alone (a function pointer): called for a key in the
    /// table's range.
    Guarded,
    /// Anything else, described.
    Other(String),
}

fn placement(ir: &str, function: &str) -> Result<Placement> {
    let body = functions(ir)
        .find(|f| f.lines().next().is_some_and(|l| l.contains(&format!("@{function}("))))
        .with_context(|| format!("no function {function} in the IR"))?;
    // Blocks: the entry block, then one per label line (`7:` or `loop:`).
    let mut blocks: Vec<Vec<&str>> = vec![Vec::new()];
    for line in body.lines().skip(1) {
        let label = line.split(';').next().unwrap_or("").trim_end();
        if !line.starts_with(' ') && label.ends_with(':') {
            blocks.push(Vec::new());
        }
        blocks.last_mut().expect("one block").push(line);
    }
    let block_of = |wanted: &dyn Fn(&str) -> bool| -> Vec<usize> {
        (0..blocks.len()).filter(|&b| blocks[b].iter().any(|l| wanted(l))).collect()
    };
    let translation = block_of(&|l| l.contains(TRANSLATE_CALL));
    let calls = block_of(&|l| indirect_callee(l).is_some());
    let (&[t], &[c]) = (translation.as_slice(), calls.as_slice()) else {
        return Ok(Placement::Other(format!(
            "translations in blocks {translation:?}, indirect calls in {calls:?}"
        )));
    };
    let closes_loop = |b: usize| blocks[b].iter().any(|l| l.contains("!llvm.loop"));
    let marked = |kind: &str| blocks[t].iter().any(|l| l.contains(TRANSLATE_CALL) && l.contains(kind));
    Ok(if marked("!omptarget-indirect.cached") {
        Placement::Cached
    } else if marked("!omptarget-indirect.guarded") {
        Placement::Guarded
    } else if t == c {
        Placement::WithTheCall
    } else if !closes_loop(t) {
        Placement::BeforeTheLoop
    } else {
        Placement::Other(format!("translation in loop block {t}, call in block {c}"))
    })
}

#[cfg(test)]
mod tests {
    use super::indirect_calls;

    #[test]
    fn finds_untranslated_indirect_calls() {
        let ir = "x\ndefine void @f(ptr %0, i1 %c) {\n  %2 = call ptr @__kmpc_target_translate_fptr(ptr %0)\n  \
                  call void %2()\n  %s = select i1 %c, ptr %2, ptr @g\n  call void %s()\n  call void %0(i32 1)\n  \
                  call void @g()\n  call void asm sideeffect \"\", \"\"()\n  ret void\n}\n";
        let (count, missing) = indirect_calls(ir);
        assert_eq!(count, 3);
        assert_eq!(missing, vec!["call void %0(i32 1)".to_string()]);
    }

    #[test]
    fn a_call_through_a_translated_vtables_slot_is_translated_and_one_through_a_plain_one_is_not() {
        let ir = "x\ndefine void @f(ptr %obj) {\n  %vt = load ptr, ptr %obj, align 8\n  \
                  %t = call ptr @__kmpc_target_translate_fptr(ptr %vt)\n  \
                  %slot = getelementptr inbounds ptr, ptr %t, i64 2\n  %fn = load ptr, ptr %slot, align 8\n  \
                  call void %fn(ptr %obj)\n  %first = load ptr, ptr %t, align 8\n  call void %first(ptr %obj)\n  \
                  %raw = getelementptr inbounds ptr, ptr %vt, i64 1\n  %host = load ptr, ptr %raw, align 8\n  \
                  call void %host(ptr %obj)\n  ret void\n}\n";
        let (count, missing) = indirect_calls(ir);
        assert_eq!(count, 3);
        assert_eq!(missing, vec!["call void %host(ptr %obj)".to_string()]);
    }
}
