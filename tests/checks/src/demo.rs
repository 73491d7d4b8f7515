//! `cargo xtask demo` and the suite's check of it: the programs of `examples/`, built with the
//! commands the README gives, and what they show.
//!
//! 1. `examples/scene.cpp`: a C++ scene that only host code constructs, rendered on the x86_64
//!    device with clang 22, its stock libomptarget 22 and this project's configuration file;
//!    written as a PNG, with each device copy's call count.
//! 2. The same program built without the project, on the strict device: the one line that says
//!    where a GPU would fault (the host's vtable).
//! 3. `examples/indirect_calls.c`: C function pointers through clang 19 and libomptarget 16.
//!
//! The suite's check asserts what the demo shows: the device's picture equals the host's render
//! of the same scene, the PNG holds exactly those pixels, the control stops at a host vtable, and
//! the C table runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use crate::corpus::{self, Build};
use crate::dist::Dist;
use crate::offload::OffloadTarget;
use crate::toolchain::{Llvm, Toolchain};
use crate::tools::Tools;
use crate::{cmd, png};

/// What the demo made and printed.
pub struct Demo {
    /// The device's render of the scene.
    pub picture: PathBuf,
    /// The host's render of the same scene (PPM), for the check.
    pub host_render: PathBuf,
    /// The device's render as the program wrote it (PPM).
    pub device_render: PathBuf,
    /// What the scene program printed: the device copies' call counts and its verdict.
    pub scene: String,
    /// What the scene program printed on the strict device.
    pub scene_strict: String,
    /// The strict device's line for the program built without the project.
    pub control: String,
    /// Its exit status.
    pub control_status: Option<i32>,
    /// The C function-pointer table of `examples/indirect_calls.c`, and the target it ran on.
    pub table: String,
    /// Where the C table ran.
    pub table_target: String,
    /// The release whose clang and stock runtime built and ran the scene ([`Llvm::reference`]).
    pub scene_release: &'static str,
}

/// Builds and runs the three parts under `target/demo/`; `c_target` is where the C table runs
/// (x86_64, or the NVIDIA GPU the machine has). Fails if a part does not run as it should.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist, c_target: &OffloadTarget) -> Result<Demo> {
    let out = workspace.join("target/demo");
    std::fs::create_dir_all(&out)?;
    let x86 = OffloadTarget::x86_64();
    let reference = Toolchain::new(Llvm::reference(), tools, dist);
    let scene_source = workspace.join("examples/scene.cpp");
    let compile = |exe: &Path, how: Build| corpus::compile(&reference, &x86, &scene_source, exe, how);

    let scene = out.join("scene");
    compile(&scene, Build::Project)?;
    let (device_render, host_render) = (out.join("scene.ppm"), out.join("scene-host.ppm"));
    let run =
        cmd::output(Command::new(&scene).arg(&device_render).arg(&host_render).envs(reference.run_env()))
            .context(
            "the scene program failed: run it with LIBOMPTARGET_INFO=-1 to see libomptarget's diagnostics",
        )?;
    let rendered = cmd::read(&device_render)?;
    let (width, height, pixels) = read_ppm(&rendered)?;
    // The same run on the strict device, which would stop at any host code or data the device
    // touched: it is a GPU's view of the program.
    let strict = cmd::output(
        Command::new(&scene)
            .arg(out.join("scene-strict.ppm"))
            .envs(reference.run_env())
            .env("LD_PRELOAD", dist.strict_lib()),
    )
    .context("the scene program failed on the strict device")?;
    let picture = out.join("scene.png");
    std::fs::write(&picture, png::encode_rgb(width, height, pixels))?;

    let control = out.join("scene-without-the-project");
    compile(&control, Build::Stock)?;
    // Bound at load: a team thread's first call of a library function would otherwise have the
    // loader bind it during the window, through a page the strict device opens for it, which
    // holds `Plane`'s vtable too; the other thread then read the host vtable and stopped at the
    // call instead (about one run in ten: docs/strict.md, "Limits").
    let stopped = Command::new(&control)
        .arg(out.join("scene-without-the-project.ppm"))
        .envs(reference.run_env())
        .env("LD_BIND_NOW", "1")
        .env("LD_PRELOAD", dist.strict_lib())
        .output()
        .with_context(|| format!("cannot run {}", control.display()))?;
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    let line = stderr.lines().find(|l| l.starts_with("omptarget-indirect strict: ")).unwrap_or_default();

    let clang19 = Toolchain::project_plugins(tools, dist);
    let table_exe = out.join(&c_target.name).join("indirect_calls");
    std::fs::create_dir_all(table_exe.parent().context("no parent")?)?;
    cmd::output(
        Command::new(clang19.compiler("indirect_calls.c"))
            .args(clang19.offload_args(c_target))
            .args(["-O2", "-Wall"])
            .arg(workspace.join("examples/indirect_calls.c"))
            .args(clang19.link_args())
            .arg("-o")
            .arg(&table_exe),
    )?;
    let table = cmd::stdout(Command::new(&table_exe).envs(clang19.run_env())).context(
        "examples/indirect_calls.c failed: run it with LIBOMPTARGET_INFO=1 to see the plugin's diagnostics",
    )?;

    Ok(Demo {
        picture,
        host_render,
        device_render,
        scene: String::from_utf8_lossy(&run.stdout).trim_end().to_string(),
        scene_strict: String::from_utf8_lossy(&strict.stdout).trim_end().to_string(),
        control: line.to_string(),
        control_status: stopped.status.code(),
        table: table.trim_end().to_string(),
        table_target: c_target.name.clone(),
        scene_release: reference.llvm.major,
    })
}

impl Demo {
    /// The demo's text, as `cargo xtask demo` prints it.
    pub fn report(&self) -> String {
        let indent = |text: &str| text.lines().map(|l| format!("   {l}\n")).collect::<String>();
        format!(
            "\n1. A C++ scene only the host constructs, rendered on the x86_64 device by clang {release} and its \
             stock libomptarget {release}\n   with --config=clang-{release}.cfg (examples/scene.cpp):\n{}   picture: {}\n   \
             on the strict device too (LD_PRELOAD=libomptarget-indirect-strict.so): {}\n\
             \n2. The same program built without this project, on the strict device (which faults where a GPU \
             would):\n{}   exit status {}: device code read the host's vtable{}, which a GPU cannot reach\n\
             \n3. C function pointers on the {} device through clang 19 and libomptarget 16 \
             (examples/indirect_calls.c):\n{}",
            indent(&self.scene),
            self.picture.display(),
            if self.scene_strict.contains("the same as the host's render") { "the same picture" } else { "FAILED" },
            indent(&self.control),
            self.control_status.map_or("(killed by a signal)".to_string(), |c| c.to_string()),
            vtable_class(&self.control).map_or(String::new(), |class| format!(" of {class}")),
            self.table_target,
            indent(&self.table),
            release = self.scene_release,
        )
    }

    /// What the suite asserts: the pictures are equal and the PNG holds them, the device copies
    /// ran, the control stopped at a host vtable with the strict device's status.
    pub fn check(&self) -> Result<String> {
        let device = cmd::read(&self.device_render)?;
        let host = cmd::read(&self.host_render)?;
        ensure!(device == host, "the device's render differs from the host's render of the same scene");
        let (width, height, pixels) = read_ppm(&device)?;
        ensure!(
            cmd::read(&self.picture)? == png::encode_rgb(width, height, pixels),
            "{} does not hold the device's render",
            self.picture.display()
        );
        for (output, device) in [(&self.scene, "x86_64"), (&self.scene_strict, "strict")] {
            ensure!(
                output.contains("the same as the host's render") && output.contains("Sphere::hit"),
                "the scene program printed no verdict on the {device} device:\n{output}"
            );
        }
        ensure!(
            self.control_status == Some(70)
                && self.control.contains("read of host variable `_ZTV")
                && self.control.ends_with("on a GPU this faults"),
            "the program built without the project was not stopped at a host vtable (exit {:?}): {}",
            self.control_status,
            self.control
        );
        ensure!(self.table.lines().count() >= 4, "the C table is short:\n{}", self.table);
        Ok(format!(
            "{width}x{height} scene equal to the host's render ({}); without the project the strict device stops: {}",
            self.scene.lines().next().unwrap_or_default(),
            self.control.split(" at 0x").next().unwrap_or_default()
        ))
    }
}

/// The class whose vtable a strict-device line names (`_ZTV5Plane` is Plane's), for classes at
/// namespace scope.
fn vtable_class(line: &str) -> Option<&str> {
    let mangled = line.split_once("`_ZTV")?.1;
    let digits = mangled.find(|c: char| !c.is_ascii_digit())?;
    let len: usize = mangled[..digits].parse().ok()?;
    mangled.get(digits..digits + len)
}

/// The width, height and RGB bytes of a binary PPM (`P6`, maxval 255) as the scene writes it.
fn read_ppm(bytes: &[u8]) -> Result<(u32, u32, &[u8])> {
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        let start = at;
        while bytes.get(at).is_some_and(|b| !b.is_ascii_whitespace()) {
            at += 1;
        }
        ensure!(at > start, "a truncated PPM header");
        fields.push(std::str::from_utf8(&bytes[start..at])?);
    }
    let [magic, width, height, maxval] = fields[..] else { unreachable!("four fields") };
    ensure!(magic == "P6" && maxval == "255", "not a binary 8-bit PPM ({magic}, maxval {maxval})");
    let (width, height): (u32, u32) = (width.parse()?, height.parse()?);
    let pixels = &bytes[at + 1..];
    if pixels.len() != (width * height * 3) as usize {
        bail!("a {width}x{height} PPM with {} bytes of pixels", pixels.len());
    }
    Ok((width, height, pixels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vtables_are_named_by_their_class() {
        let line = "omptarget-indirect strict: read of host variable `_ZTV5Plane`+0x20 at 0x5558 in x";
        assert_eq!(vtable_class(line), Some("Plane"));
        assert_eq!(vtable_class("read of host variable `_ZTVN2ns5PlaneE`+0x10"), None);
        assert_eq!(vtable_class("call of host function `f`"), None);
    }

    #[test]
    fn ppm_headers_are_read() {
        let mut ppm = b"P6\n2 1\n255\n".to_vec();
        ppm.extend([1, 2, 3, 4, 5, 6]);
        assert_eq!(read_ppm(&ppm).unwrap(), (2, 1, &[1, 2, 3, 4, 5, 6][..]));
        assert!(read_ppm(b"P6\n2 1\n255\n\x01").is_err());
        assert!(read_ppm(b"P3\n1 1\n255\n\x01\x02\x03").is_err());
    }
}
