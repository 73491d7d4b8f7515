//! The programs a part carries beside the end-to-end ones: the corpus and the demo, the plugin
//! test's probe images, the memcheck control; and how they travel (`programs.tar.xz`).

use super::*;

/// The stock-parity corpus (`tests/corpus/`) and the demo's `examples/scene.cpp`, which CI builds
/// with the reference release alone, built for the bundle's GPU as their user builds them:
/// `corpus/<name>` the project's build with `<name>.expected`, what stock's x86_64 build prints
/// on the x86_64 device; `corpus-stock/<name>` stock's build with `<name>.expect`, `prints` where
/// stock's x86_64 build prints the same on the strict device and `faults` where the strict device
/// stops it (what a GPU then does); `demo/scene` and `demo-control/scene` (stock: must fault). A
/// program whose GPU build fails, stock's or the project's, is not carried (CI's corpus table
/// shows which; `docs/gpu-bundle.md` why). Returns the carried executables, relative to `root`.
pub(crate) fn corpus_and_demo(
    workspace: &Path,
    toolchain: &Toolchain,
    target: &OffloadTarget,
    root: &Path,
) -> Result<Vec<PathBuf>> {
    use corpus::Build::{Project, Stock};
    let work = workspace.join("target/gpu-bundle-build/corpus");
    let x86 = OffloadTarget::x86_64();
    let builds: Vec<(&str, &OffloadTarget, corpus::Build)> = corpus::PROGRAMS
        .iter()
        .flat_map(|name| [(*name, target, Project), (*name, target, Stock), (*name, &x86, Stock)])
        .collect();
    let built = cmd::in_parallel(builds, |(name, t, how)| {
        corpus::build(workspace, toolchain, t, name, &work.join(&t.name).join(name), how)
    });
    let mut carried = Vec::new();
    for dir in ["corpus", "corpus-stock", "demo", "demo-control"] {
        fs::create_dir_all(root.join(dir))?;
    }
    for (name, builds) in corpus::PROGRAMS.iter().zip(built.chunks(3)) {
        let [project, stock, on_x86] = builds else { bail!("fewer corpus builds than programs") };
        let (Ok(project), Ok(stock)) = (project, stock) else { continue };
        let on_x86 = on_x86.as_ref().map_err(|err| anyhow::anyhow!("{err:#}"))?;
        let expected = corpus::run(toolchain, on_x86, false)?;
        let strict = Command::new(on_x86)
            .env_remove("LD_PRELOAD")
            .env_remove("LIBOMPTARGET_INFO")
            .envs(toolchain.run_env())
            .env("LD_PRELOAD", toolchain.dist().strict_lib())
            .output()?;
        let expect = if strict.status.success() && String::from_utf8_lossy(&strict.stdout) == expected {
            "prints"
        } else if String::from_utf8_lossy(&strict.stderr).contains("omptarget-indirect strict: ") {
            "faults"
        } else {
            bail!("{name}: stock's x86_64 build neither prints its output on the strict device nor is stopped there")
        };
        copy(project, &root.join("corpus").join(name))?;
        fs::write(root.join("corpus").join(format!("{name}.expected")), &expected)?;
        copy(stock, &root.join("corpus-stock").join(name))?;
        fs::write(root.join("corpus-stock").join(format!("{name}.expect")), format!("{expect}\n"))?;
        carried.extend([PathBuf::from("corpus").join(name), PathBuf::from("corpus-stock").join(name)]);
    }
    ensure!(!carried.is_empty(), "no corpus program builds for {}", target.name);
    let scene = workspace.join("examples/scene.cpp");
    for (dir, how) in [("demo", Project), ("demo-control", Stock)] {
        corpus::compile(toolchain, target, &scene, &root.join(dir).join("scene"), how)
            .with_context(|| format!("examples/scene.cpp for the bundle's {dir}"))?;
        carried.push(PathBuf::from(dir).join("scene"));
    }
    Ok(carried)
}

/// The list of the `e2e/` programs whose objects the host builds, one name a line: `run-stock.sh`
/// runs each without the vtables in the table (`OMPTARGET_INDIRECT_VTABLES=0`), which must fault.
pub(crate) const VTABLES_OFF_CONTROLS: &str = "e2e/vtables-off.controls";

/// The `e2e/` programs with a trap argument, `<name> <argument>` a line: `run-stock.sh` runs each
/// with it, which must stop with the stub's line.
pub(crate) const TRAP_ARGUMENTS: &str = "e2e/trap.arguments";

/// The folders that travel as they are; every other folder of a part holds executables (and the
/// shared libraries and expected outputs beside them), which `pack_programs` packs.
pub(crate) const UNPACKED_FOLDERS: [&str; 5] = ["bin", "lib", "kernels", "images", "debs"];

/// Packs the part's executables into `programs.tar.xz` (ELF executables shrink about twenty
/// times: what lets one call carry every program), which `run.sh` unpacks into its cache
/// (`unpack_programs` in `common.sh`), and checks that it holds every one of `checked` that
/// lived in those folders.
pub(crate) fn pack_programs(root: &Path, checked: &[PathBuf]) -> Result<()> {
    let mut folders: Vec<String> = Vec::new();
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() && !UNPACKED_FOLDERS.contains(&name.as_str()) {
            folders.push(name);
        }
    }
    folders.sort();
    let archive = root.join("programs.tar.xz");
    cmd::output(
        Command::new(requirements::program("tar"))
            .args(["--sort=name", "-cJf"])
            .arg(&archive)
            .arg("-C")
            .arg(root)
            .args(&folders),
    )?;
    let listed = cmd::stdout(Command::new(requirements::program("tar")).arg("-tJf").arg(&archive))?;
    let listed: Vec<&str> = listed.lines().collect();
    for file in checked.iter().filter(|f| is_packed(f)) {
        ensure!(listed.contains(&&*file.to_string_lossy()), "programs.tar.xz lacks {}", file.display());
    }
    for folder in &folders {
        fs::remove_dir_all(root.join(folder))?;
    }
    Ok(())
}

/// Whether `path` is an ELF file (an executable or a library, not a list or an expected output).
pub(crate) fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    fs::File::open(path).and_then(|mut file| file.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

/// Whether `file` (relative to a part) travels in `programs.tar.xz`.
pub(crate) fn is_packed(file: &Path) -> bool {
    let mut parts = file.components();
    match (parts.next(), parts.next()) {
        (Some(folder), Some(_)) => !UNPACKED_FOLDERS.iter().any(|f| folder.as_os_str() == *f),
        _ => false,
    }
}

/// The plugin test's images: `probe.c` as is and with functions of its own (name, define).
pub(crate) const PROBE_IMAGES: [(&str, Option<&str>); 2] =
    [("probe", None), ("probe_second", Some("-DPROBE_SECOND"))];

/// Strips the host symbols of a carried executable that needs none of them at run time (no
/// vtables the registration library looks up by name): the part must fit its device call.
pub(crate) fn strip(tools: &Tools, exe: &Path) -> Result<()> {
    cmd::output(Command::new(&tools.llvm_strip).arg("--strip-all").arg(exe))?;
    Ok(())
}

/// `memcheck-control/out_of_bounds`: `gpu-tests/bundle/out_of_bounds.c` built by `toolchain` as a
/// user builds it. Its kernel writes one element past a device allocation, which faults nowhere
/// but under compute-sanitizer: the memcheck step must fail on it.
pub(crate) fn memcheck_control(workspace: &Path, toolchain: &Toolchain, root: &Path) -> Result<()> {
    let target = OffloadTarget::nvptx(BUNDLE_SM);
    let work =
        workspace.join("target/device/gpu-memcheck-control").join(format!("llvm{}", toolchain.llvm.major));
    fs::create_dir_all(&work)?;
    let dir = root.join("memcheck-control");
    fs::create_dir_all(&dir)?;
    let object = bench::virtual_calls::compile_object(
        toolchain,
        &target,
        &work.join("out_of_bounds.o"),
        &workspace.join("gpu-tests/bundle/out_of_bounds.c"),
        true,
        &[],
    )?;
    link_as_configured(toolchain, &target, &[object], &dir.join("out_of_bounds"))
}

/// Links `objects` into `exe` as a program built with `toolchain`'s configuration file is (a
/// stock runtime's programs need its registration library).
pub(crate) fn link_as_configured(
    toolchain: &Toolchain,
    target: &OffloadTarget,
    objects: &[PathBuf],
    exe: &Path,
) -> Result<()> {
    cmd::output(
        Command::new(toolchain.compiler("main.cpp"))
            .args(toolchain.offload_args(target))
            .args(toolchain.pass_plugin_args())
            .args(objects)
            .args(toolchain.link_args_with_config())
            .args(toolchain.device_link_args(target))
            .arg("-o")
            .arg(exe),
    )?;
    Ok(())
}

/// `gpu-tests/images/probe.c` built like an end-to-end program (with `define`, if any); its sm_90
/// image and the names clang gave its indirect functions' globals and its kernel (they carry a
/// per-file id) as `<name>.sm_90.cubin` and `<name>.entries`.
pub(crate) fn probe_image(
    workspace: &Path,
    tools: &Tools,
    dist: &Dist,
    dir: &Path,
    name: &str,
    define: Option<&str>,
) -> Result<()> {
    let target = OffloadTarget::nvptx(BUNDLE_SM);
    let work = workspace.join("target/device/gpu-probes").join(name);
    fs::create_dir_all(&work)?;
    let exe = work.join("probe");
    let toolchain = Toolchain::project_plugins(tools, dist);
    cmd::output(
        Command::new(&tools.clang)
            .args(toolchain.offload_args(&target))
            .args(["-O2", "-Wall", "-Werror"])
            .args(define)
            .arg(workspace.join("gpu-tests/images/probe.c"))
            .args(toolchain.link_args())
            .arg("-o")
            .arg(&exe),
    )?;
    let image = e2e::extract_image(&tools.packager, &exe, &target, &work)?;
    let data = cmd::read(&image)?;
    let names = images::offload_symbols(&data)?;
    ensure!(
        names.indirect.len() == 2 && names.kernels.len() == 1,
        "{}: expected 2 indirect globals and 1 kernel, found {:?} and {:?}",
        image.display(),
        names.indirect,
        names.kernels
    );
    let mut manifest = String::new();
    for name in &names.indirect {
        manifest.push_str(&format!("indirect {name}\n"));
    }
    manifest.push_str(&format!("kernel {}\n", names.kernels[0]));
    fs::write(dir.join(format!("{name}.entries")), manifest)?;
    copy(&image, &dir.join(format!("{name}.{BUNDLE_SM}.cubin")))
}
