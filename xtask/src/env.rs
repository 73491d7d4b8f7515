//! `cargo xtask env`: the compile flags and run environment users need, per toolchain.

use std::path::Path;

use anyhow::Result;

use crate::dist;
use crate::llvm;
use crate::offload;
use crate::requirements;
use crate::toolchain;
use crate::tools::Tools;

/// `cargo xtask env`: what a user needs to build and run their own program with this project,
/// for each toolchain, as shell lines (`eval "$(cargo xtask env)"` sets the run environment of
/// the LLVM 19 toolchain; LLVM 22 needs none).
pub fn run(workspace: &Path) -> Result<()> {
    use llvm::{DeviceRtl, Runtime};
    use toolchain::{Llvm, Toolchain};
    let tools = Tools::locate_for(workspace, &[requirements::Need::Install])?;
    let dist = dist::Dist::new(workspace);
    let shell = |args: Vec<std::ffi::OsString>| {
        args.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
    };
    println!("# `cargo xtask build` makes {}.", dist.fat_lib().display());
    for llvm in Llvm::all() {
        let toolchain = Toolchain::new(llvm, &tools, &dist);
        let config = shell(toolchain.pass_plugin_args());
        let link = shell(toolchain.link_args_with_config());
        println!("# {}:", toolchain.describe());
        if llvm.config_links {
            println!(
                "#   ({config} loads the pass plugin and links the device library; without it, link with {})",
                shell(toolchain.link_args())
            );
        } else {
            println!("#   ({config} loads the pass plugin into device compiles)");
        }
        let mut targets = vec![("x86_64 host offload", offload::OffloadTarget::x86_64())];
        if llvm.device_rtl == DeviceRtl::Debian {
            // Debian ships no GPU DeviceRTL for the other releases: their GPU programs need one
            // built from LLVM's source (docs/gpu-devicertl.md).
            targets.push(("NVIDIA", offload::OffloadTarget::nvptx("sm_90")));
            targets.push(("AMD", offload::OffloadTarget::amdgcn("gfx90a")));
        }
        for (what, target) in targets {
            let compiler = toolchain.compiler("prog.c").display();
            println!(
                "#   {what}: {compiler} {config} {} prog.c {link}",
                shell(toolchain.offload_args(&target))
            );
        }
        match llvm.runtime {
            Runtime::ProjectPlugins => {
                println!("#   run through LLVM 16's libomptarget with our plugins (LIBOMPTARGET_INFO=1: diagnostics):");
                for (name, value) in toolchain.run_env() {
                    println!("export {name}={}", value.to_string_lossy());
                }
            }
            Runtime::Stock { .. } => {
                println!("#   run as is (OMP_TARGET_OFFLOAD=MANDATORY to refuse the host fallback)")
            }
        }
    }
    Ok(())
}
