//! A built part's self-check: every file it needs is there, its script parses, its memcheck
//! verdict holds; and its size.

use super::*;

/// Every file the part needs is there (`carried`: what [`corpus_and_demo`] added), the script
/// parses, and its memcheck verdict holds on recorded reports. Returns the files checked.
pub(crate) fn self_check(
    workspace: &Path,
    root: &Path,
    part: Part,
    carried: &[PathBuf],
) -> Result<Vec<PathBuf>> {
    let mut expected: Vec<PathBuf> = vec![
        "run.sh".into(),
        "common.sh".into(),
        "bin/gpu-test".into(),
        "bench/virtual_arrays_gpu".into(),
        "kernels/llvm_lookup.release".into(),
    ];
    expected.extend(part.libraries().iter().map(|l| PathBuf::from("lib").join(l)));
    for module in ["lookup_inlined", "lookup_called", "llvm_lookup"] {
        expected.push(format!("kernels/{module}.ptx").into());
        expected.push(format!("kernels/{module}.{BUNDLE_SM}.cubin").into());
    }
    if let Part::Stock(_) = part {
        expected.push(VTABLES_OFF_CONTROLS.into());
        expected.push(TRAP_ARGUMENTS.into());
        expected.push("bench/translation_gpu".into());
        expected.push("memcheck-control/out_of_bounds".into());
        expected.push("part.env".into());
    }
    if part.carries_loader() {
        expected.push("runtime.tar.xz".into());
    }
    if part == Part::ProjectPlugins {
        for (name, _) in PROBE_IMAGES {
            expected.push(format!("images/{name}.{BUNDLE_SM}.cubin").into());
            expected.push(format!("images/{name}.entries").into());
        }
    }
    for (dir, _, programs) in part.programs() {
        ensure!(!programs.is_empty(), "the bundle's {dir} would hold no program");
        expected.extend(programs.iter().map(|p| PathBuf::from(dir).join(p.name)));
    }
    expected.extend(carried.iter().cloned());
    for file in &expected {
        ensure!(root.join(file).is_file(), "the bundle lacks {}", file.display());
    }
    for cubin in expected.iter().filter(|f| f.extension().is_some_and(|e| e == "cubin")) {
        let elf = images::elf_summary(&cmd::read(&root.join(cubin))?, &[])?;
        ensure!(elf.machine == 190 && elf.flags & 0xff == 90, "{}: not an sm_90 cubin", cubin.display());
    }
    if part.carries_loader() {
        loads_with_carried_loader(workspace, root, &expected)?;
    }
    for script in ["run.sh", "common.sh", "report.sh"] {
        cmd::output(Command::new(requirements::program("bash")).arg("-n").arg(root.join(script)))?;
    }
    // The memcheck step's verdict, on reports shaped as compute-sanitizer prints them.
    let verdict = cmd::stdout(
        Command::new(requirements::program("bash"))
            .arg(workspace.join("gpu-tests/bundle/memcheck-verdict-test.sh")),
    )?;
    ensure!(verdict.contains(" 0 failed"), "the memcheck verdict's own test: {verdict}");
    Ok(expected)
}

pub(crate) fn size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() { size(&entry.path())? } else { meta.len() };
    }
    Ok(total)
}

pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}
