//! A stock part's runtime: the libraries its libomptarget and its programs load, as Debian
//! packages or, for a release in a root of its own, `runtime.tar.xz` with that root's C library
//! and loader; `part.env`.

use super::*;

/// The libraries the release's stock libomptarget loads (`ldd`, in the release's root when it
/// lives in one), as that system names them (`/usr/lib/...`): libomptarget first.
pub(crate) fn runtime_libraries(tools: &Tools, llvm: Llvm) -> Result<Vec<PathBuf>> {
    let release = tools.of(llvm);
    let libomptarget = in_release_root(tools, llvm, &release.libomptarget);
    let mut libraries = vec![libomptarget.clone()];
    libraries.extend(linked_libraries(tools, llvm, &libomptarget)?);
    Ok(libraries)
}

/// The path `path` (of this machine) has in the root `llvm` lives in, if it lives in one: the
/// root's `/usr` is the release's own.
pub(crate) fn in_release_root(tools: &Tools, llvm: Llvm, path: &Path) -> PathBuf {
    let Some(root) = release_root(tools, llvm) else { return path.to_path_buf() };
    path.strip_prefix(&root).map(|inside| Path::new("/").join(inside)).unwrap_or_else(|_| path.to_path_buf())
}

/// The root `llvm` lives in (beside its `enter`), if any.
pub(crate) fn release_root(tools: &Tools, llvm: Llvm) -> Option<PathBuf> {
    tools.of(llvm).enter.as_ref().and_then(|enter| enter.parent()).map(|dir| dir.join("root"))
}

/// What `ldd` (run as the release runs its programs) says `file` loads: each library's path,
/// the loader included.
pub(crate) fn linked_libraries(tools: &Tools, llvm: Llvm, file: &Path) -> Result<Vec<PathBuf>> {
    let mut ldd = tools.of(llvm).run_command(Path::new("ldd"));
    ldd.arg(file);
    let listed = cmd::stdout(&mut ldd)?;
    let mut found = Vec::new();
    for line in listed.lines() {
        let line = line.trim();
        ensure!(!line.contains("not found"), "{}: {line}", file.display());
        let path = match line.split_once("=>") {
            Some((_, resolved)) => resolved.trim().split(' ').next().unwrap_or_default(),
            None => line.split(' ').next().unwrap_or_default(),
        };
        if path.starts_with('/') {
            found.push(PathBuf::from(path));
        }
    }
    Ok(found)
}

/// `runtime.tar.xz` of a part that carries its loader: every library its libomptarget and its
/// programs load, the C library and the loader (`ld-linux-x86-64.so.2`) included, flat, under
/// the names they are loaded by; and `part.env`. Packed once per set of libraries
/// (`target/gpu-bundle-runtimes/`): xz takes a minute.
pub(crate) fn private_runtime(workspace: &Path, tools: &Tools, part: Part, root: &Path) -> Result<()> {
    let Part::Stock(llvm) = part else { bail!("part {} carries no runtime of its own", part.name()) };
    let release_root = release_root(tools, llvm).context("a release in a root of its own")?;
    let mut libraries = runtime_libraries(tools, llvm)?;
    // Every carried executable and library: the program folders, the benches, the memcheck
    // control and ours in lib/.
    let folders = part.programs().into_iter().map(|(dir, _, _)| dir);
    for dir in folders.chain(["bench", "memcheck-control", "lib"]) {
        let Ok(entries) = fs::read_dir(root.join(dir)) else { continue };
        for entry in entries {
            let path = entry?.path();
            // Executables and libraries (a list of controls, an expected output lie beside them).
            if is_elf(&path) {
                libraries.extend(linked_libraries(tools, llvm, &path)?);
            }
        }
    }
    let carried = |path: &Path| !path.starts_with(root) && !path.starts_with(workspace.join("target"));
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for library in libraries.iter().filter(|l| carried(l)) {
        let name = library.file_name().context("a library's name")?.to_string_lossy().into_owned();
        if files.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let inside = release_root.join(library.strip_prefix("/").unwrap_or(library));
        let file = fs::canonicalize(&inside).with_context(|| format!("{} in the root", library.display()))?;
        files.push((name, file));
    }
    files.sort();
    ensure!(
        files.iter().any(|(n, _)| n == "ld-linux-x86-64.so.2") && files.iter().any(|(n, _)| n == "libc.so.6"),
        "the runtime of part {} lacks its loader or C library: {files:?}",
        part.name()
    );
    let manifest: String = files
        .iter()
        .map(|(name, file)| Ok(format!("{name} {} {}\n", file.display(), fs::metadata(file)?.len())))
        .collect::<Result<String>>()?;
    let cache = workspace.join("target/gpu-bundle-runtimes").join(part.name());
    let packed = cache.join("runtime.tar.xz");
    if fs::read_to_string(cache.join("manifest")).ok().as_deref() != Some(manifest.as_str())
        || !packed.is_file()
    {
        let staging = cache.join("lib");
        if cache.exists() {
            fs::remove_dir_all(&cache)?;
        }
        fs::create_dir_all(&staging)?;
        for (name, file) in &files {
            copy(file, &staging.join(name))?;
        }
        let partial = cache.join("runtime.tar.xz.partial");
        cmd::output(
            Command::new(requirements::program("tar"))
                .env("XZ_OPT", "-6 -T0")
                .arg("-cJf")
                .arg(&partial)
                .arg("-C")
                .arg(&staging)
                .args(files.iter().map(|(name, _)| name)),
        )?;
        fs::rename(&partial, &packed)?;
        fs::remove_dir_all(&staging)?;
        fs::write(cache.join("manifest"), &manifest)?;
    }
    copy(&packed, &root.join("runtime.tar.xz"))?;
    write_part_env(root, llvm, tools, "private", "")
}

/// `part.env` of a stock part (`run-stock.sh` reads it): the release, its libomptarget's file
/// name, how its runtime travels, and for packages the paths in them of what it loads.
pub(crate) fn write_part_env(
    root: &Path,
    llvm: Llvm,
    tools: &Tools,
    runtime: &str,
    libraries: &str,
) -> Result<()> {
    let libomptarget = tools
        .of(llvm)
        .libomptarget
        .file_name()
        .context("libomptarget's name")?
        .to_string_lossy()
        .into_owned();
    fs::write(
        root.join("part.env"),
        format!(
            "RELEASE={}\nLIBOMPTARGET={libomptarget}\nRUNTIME={runtime}\nRUNTIME_LIBRARIES=\"{libraries}\"\n",
            llvm.major
        ),
    )?;
    Ok(())
}

/// Unpacks the part's `runtime.tar.xz` and lists, through its loader, what libomptarget and every
/// carried program load: nothing may be `not found`.
pub(crate) fn loads_with_carried_loader(workspace: &Path, root: &Path, expected: &[PathBuf]) -> Result<()> {
    let unpacked = workspace.join("target/gpu-bundle-runtimes/check");
    if unpacked.exists() {
        fs::remove_dir_all(&unpacked)?;
    }
    fs::create_dir_all(&unpacked)?;
    cmd::output(
        Command::new(requirements::program("tar"))
            .arg("-xJf")
            .arg(root.join("runtime.tar.xz"))
            .arg("-C")
            .arg(&unpacked),
    )?;
    let env = fs::read_to_string(root.join("part.env"))?;
    let libomptarget = env
        .lines()
        .find_map(|l| l.strip_prefix("LIBOMPTARGET="))
        .context("part.env names no LIBOMPTARGET")?;
    let mut programs = vec![unpacked.join(libomptarget)];
    programs.extend(expected.iter().filter(|f| is_packed(f)).map(|f| root.join(f)).filter(|f| is_elf(f)));
    let library_path = format!("{}:{}", root.join("lib").display(), unpacked.display());
    for program in &programs {
        let listed = cmd::stdout(
            Command::new(unpacked.join("ld-linux-x86-64.so.2"))
                .args(["--library-path", &library_path, "--list"])
                .arg(program),
        )?;
        ensure!(!listed.contains("not found"), "{} through the carried loader:\n{listed}", program.display());
    }
    fs::remove_dir_all(&unpacked)?;
    Ok(())
}

pub(crate) fn copy(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    Ok(())
}
