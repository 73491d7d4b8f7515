//! The pass plugin in a compiler that does not run on the `libLLVM` it is linked against (a
//! statically linked clang, a vendor's clang on its own `libLLVM`: `docs/static-llvm.md`): a small
//! C program stands in for such a compiler, loading the plugin as clang does (`dlopen`, then
//! `llvmGetPassPluginInfo`) without `libLLVM`, and the plugin must refuse in one line (plugin API
//! version 0, which clang rejects). The control is the same program linked to that `libLLVM`,
//! which a Debian clang runs on: there the plugin gives its headers' API version. And the frontend
//! plugin, which takes clang's symbols from the clang that loads it, stays inactive with one line
//! in another release's clang (and acts, silently, in its own).

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::llvm::Llvm;
use crate::requirements;

/// Loads a pass plugin as clang and opt do and prints the API version it answers. The struct is
/// larger than every release's `PassPluginLibraryInfo`: returned through memory, the plugin writes
/// only its own fields.
const LOADER: &str = r#"#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
struct info { uint32_t api_version; const char *name, *version; void *callbacks, *more[4]; };
int main(int argc, char **argv) {
  void *plugin = dlopen(argv[1], RTLD_LAZY | RTLD_GLOBAL);
  if (!plugin) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  struct info (*get)(void) = (struct info (*)(void))dlsym(plugin, "llvmGetPassPluginInfo");
  if (!get) return 3;
  printf("api %u\n", get().api_version);
  return 0;
}
"#;

/// Runs the check for every release of Debian's own (the loader runs on this machine's C
/// library); returns what each answered.
pub fn check(dist: &Dist) -> Result<String> {
    let dir = std::env::temp_dir().join(format!("omptarget-indirect-foreign-llvm-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    let result = check_in(dist, &dir);
    let _ = fs::remove_dir_all(&dir);
    result
}

fn check_in(dist: &Dist, dir: &Path) -> Result<String> {
    let source = dir.join("loader.c");
    fs::write(&source, LOADER)?;
    let mut said = Vec::new();
    for llvm in Llvm::all().filter(|l| l.root.is_none()) {
        let plugin = dist.pass_plugin(llvm);
        let libdir = cmd::stdout(
            Command::new(requirements::program(&llvm.requirement("llvm-config"))).arg("--libdir"),
        )?;
        let libdir = libdir.trim();
        let without = dir.join(format!("without-llvm{}", llvm.major));
        let with = dir.join(format!("with-llvm{}", llvm.major));
        let cc = || {
            let mut c = Command::new(requirements::program("gcc"));
            c.arg(&source).arg("-ldl");
            c
        };
        cmd::output(cc().arg("-o").arg(&without))?;
        cmd::output(
            cc().args([
                "-Wl,--no-as-needed",
                &format!("-L{libdir}"),
                "-lLLVM",
                &format!("-Wl,-rpath,{libdir}"),
            ])
            .arg("-o")
            .arg(&with),
        )?;

        let out = Command::new(&without).arg(&plugin).output().context("cannot run the loader")?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        ensure!(
            out.status.success()
                && stdout.trim() == "api 0"
                && lines.len() == 1
                && lines[0].starts_with("omptarget-indirect: ")
                && lines[0].contains("does not run on")
                && lines[0].contains("libLLVM"),
            "LLVM {}: loaded without libLLVM, the pass plugin answered `{}` ({}) and said:\n{stderr}",
            llvm.major,
            stdout.trim(),
            out.status
        );

        let out = Command::new(&with).arg(&plugin).output().context("cannot run the loader")?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        ensure!(
            out.status.success()
                && stdout.trim() != "api 0"
                && stdout.starts_with("api ")
                && out.stderr.is_empty(),
            "LLVM {}: loaded by a program on its libLLVM, the pass plugin answered `{}` and said:\n{}",
            llvm.major,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr)
        );
        said.push(format!("LLVM {}: refused without it, {} on it", llvm.major, stdout.trim()));
    }
    said.push(frontend_in_another_release(dist, dir)?);
    Ok(said.join("; "))
}

/// The newest Debian release's frontend plugin in the oldest's clang, and in its own.
fn frontend_in_another_release(dist: &Dist, dir: &Path) -> Result<String> {
    let debian = || Llvm::all().filter(|l| l.root.is_none());
    let (oldest, newest) =
        (debian().next().context("no release")?, debian().next_back().context("no release")?);
    ensure!(oldest != newest, "one release of Debian's own: no other to load the plugin into");
    let plugin = dist.frontend_plugin(newest);
    let source = dir.join("plain.c");
    fs::write(&source, "int answer(void) { return 42; }\n")?;
    let compile = |llvm: Llvm| -> Result<(bool, String)> {
        let out = Command::new(requirements::program(&llvm.requirement("clang")))
            .arg(format!("-fplugin={}", plugin.display()))
            .arg("-c")
            .arg(&source)
            .arg("-o")
            .arg(dir.join(format!("plain-{}.o", llvm.major)))
            .output()?;
        Ok((out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned()))
    };
    let (built, said) = compile(oldest)?;
    let lines: Vec<&str> = said.lines().collect();
    ensure!(
        built
            && lines.len() == 1
            && lines[0].starts_with(&format!(
                "omptarget-indirect: the frontend plugin is built for LLVM's clang {}, not ",
                newest.major
            )),
        "clang {} with clang {}'s frontend plugin said:\n{said}",
        oldest.major,
        newest.major
    );
    let (built, said) = compile(newest)?;
    ensure!(built && said.is_empty(), "clang {} with its own frontend plugin said:\n{said}", newest.major);
    Ok(format!(
        "clang {}'s frontend plugin inactive in clang {} with one line, silent in its own",
        newest.major, oldest.major
    ))
}
