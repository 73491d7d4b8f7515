//! `cargo xtask demo`: the programs of `examples/`, shown ([`checks::demo`]).

use std::path::Path;

use anyhow::Result;

use crate::build;
use crate::dist::{self, Archs};
use crate::offload;
use crate::requirements;
use crate::toolchain;
use crate::tools::Tools;

/// Builds the dist tree and shows the programs of `examples/` (`checks::demo`): the C++ scene
/// rendered on the x86_64 device with the reference release's clang (22), the same program
/// stopped on the strict device without the project, and the C function-pointer table through
/// clang 19 on the best offload target present (GPU 0 of the NVIDIA driver if there is one, else
/// x86_64 host offload). It needs only the demo's lines of `scripts/requirements.txt` and builds
/// only for those two releases.
pub fn run(workspace: &Path) -> Result<()> {
    use requirements::Need;
    let gpu = nvidia_gpu();
    let needs: &[Need] = if gpu.is_some() { &[Need::Demo, Need::GpuDemo] } else { &[Need::Demo] };
    let tools = Tools::locate_for(workspace, needs)?;
    let mut archs = Archs { sms: Vec::new(), gfxs: Vec::new() };
    let c_target = match &gpu {
        Some(sm) => {
            archs.sms.push(sm.clone());
            offload::OffloadTarget::nvptx(sm)
        }
        None => offload::OffloadTarget::x86_64(),
    };
    let releases = [toolchain::Llvm::oldest(), toolchain::Llvm::reference()];
    let inputs = build::Inputs::demo(&tools, &releases, gpu.is_some())?;
    let (dist, _) = build::build_from(workspace, &inputs, &archs, &dist::Dist::new(workspace).root)?;
    let shown = checks::demo::run(workspace, &tools, &dist, &c_target)?;
    println!("{}", shown.report());
    Ok(())
}

/// `sm_XY` of the NVIDIA driver's GPU 0, if this machine has a driver and a GPU.
fn nvidia_gpu() -> Option<String> {
    use cuda_driver::{attr, Driver};
    let driver = Driver::load(c"libcuda.so.1").ok()?;
    if driver.device_count().ok()? < 1 {
        return None;
    }
    let dev = driver.device(0).ok()?;
    let major = driver.attribute(dev, attr::COMPUTE_CAPABILITY_MAJOR).ok()?;
    let minor = driver.attribute(dev, attr::COMPUTE_CAPABILITY_MINOR).ok()?;
    Some(format!("sm_{major}{minor}"))
}
