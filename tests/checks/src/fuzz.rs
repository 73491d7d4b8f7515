//! `cargo xtask fuzz [--seconds N]` and the suite's bounded run: the cargo-fuzz targets of
//! `fuzz/` (the readers of untrusted bytes), each seeded with real bytes the build and the tests
//! made, each run for a bounded time. A crash fails the step and leaves its input in
//! `target/fuzz/artifacts/<target>/`; such an input becomes a regression test.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::e2e::{self, PROGRAMS};
use crate::offload::OffloadTarget;
use crate::toolchain::{Llvm, Toolchain};
use crate::tools::Tools;

/// The fuzz targets (`fuzz/fuzz_targets/<name>.rs`).
pub const TARGETS: [&str; 6] =
    ["x86_64_image", "x86_64_load", "offload_binary", "offload_entries", "gpu_image", "register_descriptor"];

/// Seconds each target runs in `scripts/test.sh`.
pub const SUITE_SECONDS: u32 = 60;

/// Seeds every target's corpus and runs each for `seconds`. Returns a summary line.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist, seconds: u32) -> Result<String> {
    let version = cmd::cargo().args(["fuzz", "--version"]).output();
    if !version.is_ok_and(|o| o.status.success()) {
        bail!("cargo-fuzz is not installed: run scripts/setup.sh (it runs `cargo +stable install cargo-fuzz --locked`)");
    }
    let root = workspace.join("target/fuzz");
    let seeds = seed(workspace, tools, dist, &root.join("seeds"))?;
    // The targets built once, then run side by side (each libFuzzer process is one thread).
    let build = cmd::cargo()
        .current_dir(workspace.join("fuzz"))
        .args(["fuzz", "build", "-O", "--target-dir"])
        .arg(root.join("build"))
        .env_remove("RUSTFLAGS")
        .output()
        .context("cannot run cargo fuzz build")?;
    ensure!(build.status.success(), "cargo fuzz build failed:\n{}", String::from_utf8_lossy(&build.stderr));
    let summary = cmd::in_parallel(TARGETS.to_vec(), |target| -> Result<String> {
        let corpus = root.join("corpus").join(target);
        fs::create_dir_all(&corpus)?;
        for seed in &seeds[target_index(target)] {
            let name = seed.file_name().context("seed without a name")?;
            fs::copy(seed, corpus.join(name))?;
        }
        let artifacts = root.join("artifacts").join(target);
        fs::create_dir_all(&artifacts)?;
        let mut fuzz = cmd::cargo();
        if target == "x86_64_load" {
            fuzz.env("OMPTARGET_INDIRECT_FUZZ_IMAGE", load_image(&seeds[target_index("x86_64_image")])?);
        }
        let out = fuzz
            .current_dir(workspace.join("fuzz"))
            .args(["fuzz", "run", "-O", "--target-dir"])
            .arg(root.join("build"))
            .arg(target)
            .arg(&corpus)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg("-rss_limit_mb=2048")
            .arg("-timeout=10")
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .env_remove("RUSTFLAGS")
            .output()
            .context("cannot run cargo fuzz")?;
        let log = String::from_utf8_lossy(&out.stderr);
        // The suite's summary shows an error's first line: libFuzzer's verdict goes there.
        let verdict = log
            .lines()
            .find(|l| {
                l.contains("ERROR: libFuzzer:")
                    || l.starts_with("SUMMARY: libFuzzer:")
                    || l.contains("panicked at")
            })
            .unwrap_or("no libFuzzer verdict (see the log below)");
        ensure!(
            out.status.success(),
            "fuzz target {target} failed: {verdict} (input saved in {}):\n{}",
            artifacts.display(),
            log.lines()
                .filter(|l| !l.starts_with("omptarget-indirect ("))
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        );
        let runs = log
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("Done ").and_then(|r| r.split_whitespace().next()))
            .unwrap_or("?");
        Ok(format!("{target}: {runs} runs from {} seeds", seeds[target_index(target)].len()))
    })
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    Ok(format!("{seconds} s each, no crash: {}", summary.join("; ")))
}

/// The image x86_64_load corrupts: a real clang device image of an end-to-end program.
fn load_image(x86_seeds: &[PathBuf]) -> Result<PathBuf> {
    x86_seeds
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("e2e-")))
        .cloned()
        .context(
            "no end-to-end x86_64 image to corrupt: run the end-to-end tests first (cargo xtask test does)",
        )
}

fn target_index(target: &str) -> usize {
    TARGETS.iter().position(|t| *t == target).expect("a known target")
}

/// Writes the seed files under `dir` and returns them per target (in [`TARGETS`] order): the
/// x86_64 images of the plugin tests and of the end-to-end programs, those wrapped in an
/// OffloadBinary and the fat archive's OffloadBinary, the entry tables of the end-to-end programs
/// (every release's: both layouts), and the GPU images of the dist tree and the programs;
/// x86_64_load gets a few single-field changes (its image is [`load_image`]).
fn seed(workspace: &Path, tools: &Tools, dist: &Dist, dir: &Path) -> Result<[Vec<PathBuf>; 6]> {
    fs::create_dir_all(dir)?;
    let mut seeds: [Vec<PathBuf>; 6] = Default::default();
    let [x86, changes, wrapped, entries, gpu, descriptors] = &mut seeds;
    for name in ["indirect", "plain", "wrong_size"] {
        let built = workspace.join("target/tmp").join(format!("{name}.so"));
        if built.is_file() {
            x86.push(built);
        }
    }
    let x86_target = OffloadTarget::x86_64();
    // Every release's end-to-end programs: their images (each read by its release's packager) and
    // their entry tables (the legacy layout's section, or LLVM 20+'s).
    for llvm in Llvm::all() {
        let toolchain = Toolchain::new(llvm, tools, dist);
        let tree = llvm.e2e_tree;
        for program in PROGRAMS {
            let exe = toolchain.e2e_dir(workspace, &x86_target).join(program.name).join(program.name);
            if !exe.is_file() {
                continue;
            }
            let image = dir.join(format!("{tree}-{}.so", program.name));
            if let Ok(extracted) = e2e::extract_image(
                toolchain.packager(),
                &exe,
                &x86_target,
                exe.parent().context("no parent")?,
            ) {
                fs::copy(&extracted, &image)?;
                x86.push(image);
            }
            for section in ["omp_offloading_entries", "llvm_offload_entries"] {
                if let Some(bytes) = section_bytes(&exe, section)? {
                    let table = dir.join(format!("{tree}-{}.entries", program.name));
                    fs::write(&table, bytes)?;
                    entries.push(table);
                    break;
                }
            }
        }
    }
    // x86_64_load's inputs are changes to one real image (fuzz_targets/x86_64_load.rs): a field's
    // index (u16) and its new value (u64), up to four of them. A few single changes to start.
    for i in 0u16..16 {
        let path = dir.join(format!("change-{i}.bin"));
        let value = [0u64, 7, 0x6fff_fffe, 0x12][usize::from(i % 4)];
        fs::write(&path, [(i * 37).to_le_bytes().as_slice(), &value.to_le_bytes()].concat())?;
        changes.push(path);
    }
    for (i, image) in x86.clone().iter().enumerate() {
        let offload = dir.join(format!("wrapped-{i}.offload"));
        cmd::output(
            Command::new(&tools.packager).arg("-o").arg(&offload).arg(x86_target.image_selector(image)),
        )?;
        wrapped.push(offload);
    }
    // register_descriptor's inputs (fuzz_targets/register_descriptor.rs): one real image and the
    // entries of the device library's three globals, a vtable word and an indirect function.
    for (i, image) in x86.iter().take(4).enumerate() {
        let path = dir.join(format!("descriptor-{i}.bin"));
        let mut input = vec![1u8, 5];
        for (name, flags, size) in [(0u8, 0u32, 8u8), (1, 0, 8), (2, 0, 48), (3, 0x08, 8), (4, 0x08, 8)] {
            let mut entry = [0u8; 32];
            entry[1] = 1; // version
            entry[2] = 1; // OpenMP
            entry[3..7].copy_from_slice(&flags.to_le_bytes());
            entry[7..15].copy_from_slice(&(0x1000u64 * (u64::from(name) + 1)).to_le_bytes());
            entry[15] = size / 8;
            entry[31] = name;
            input.extend_from_slice(&entry);
        }
        input.extend_from_slice(&cmd::read(image)?);
        fs::write(&path, input)?;
        descriptors.push(path);
    }
    let fat = workspace.join("target/device/fat/omptarget-indirect.offload");
    if fat.is_file() {
        wrapped.push(fat);
    }
    // What `cargo xtask build` makes by default (the suite's build).
    let archs = crate::dist::Archs::default();
    for sm in &archs.sms {
        gpu.extend(["device_rtl.cubin", "device_rtl.ptx"].map(|f| dist.nvptx_dir(sm).join(f)));
    }
    gpu.extend(archs.gfxs.iter().map(|gfx| dist.amdgcn_dir(gfx).join("device_rtl.o")));
    gpu.retain(|p| p.is_file());
    ensure!(
        seeds.iter().all(|s| !s.is_empty()),
        "no seeds for some fuzz target: run the build and the tests first (cargo xtask test does)"
    );
    Ok(seeds)
}

/// The bytes of section `name` of the ELF file at `path`, if it has one.
fn section_bytes(path: &Path, name: &str) -> Result<Option<Vec<u8>>> {
    use object::{Object, ObjectSection};
    let data = cmd::read(path)?;
    let file = object::File::parse(&*data)?;
    Ok(match file.section_by_name(name) {
        Some(section) => Some(section.data()?.to_vec()),
        None => None,
    })
}
