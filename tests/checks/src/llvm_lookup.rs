//! LLVM's own indirect-call lookup (`__llvm_omp_indirect_call_lookup`), extracted from a
//! release's DeviceRTL bitcode: what the static metrics compare the project's translation with,
//! and what the GPU bundle's benchmarks link their LLVM variants with.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Result};

use crate::cmd;
use crate::offload::{OffloadTarget, Vendor};
use crate::toolchain::Llvm;
use crate::tools::Tools;

/// LLVM 19's indirect-call lookup in its DeviceRTL bitcode.
pub use omptarget_indirect_abi::LLVM_LOOKUP;
/// The device environment LLVM's lookup and our fallback read LLVM's table from, defined as
/// LLVM 19's DeviceRTL defines it (`DeviceEnvironmentTy`, device-rtl/src/environment.rs; LLVM 22's
/// is the same) for the kernel modules, which link no DeviceRTL.
const DEVICE_ENVIRONMENT_LL: &str = r#"target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "{triple}"
%struct.DeviceEnvironmentTy = type { i32, i32, i32, i32, i64, i64, i64, i64 }
@__omp_rtl_device_environment = protected addrspace(4) externally_initialized global %struct.DeviceEnvironmentTy zeroinitializer, align 8
"#;

/// Where LLVM's own `__llvm_omp_indirect_call_lookup` comes from, and the tools of that LLVM
/// that read its bitcode.
pub struct LlvmLookup<'a> {
    /// `LLVM 19` or `LLVM 22`: how reports name it (`kernels/llvm_lookup.release`).
    pub release: String,
    /// The DeviceRTL bitcode that defines it.
    pub device_rtl: PathBuf,
    /// What the DeviceRTL belongs to, for the error when it is missing.
    pub provider: String,
    /// That LLVM's `llvm-link`.
    pub llvm_link: &'a Path,
    /// That LLVM's `llvm-extract`.
    pub llvm_extract: &'a Path,
    /// That LLVM's `opt`.
    pub opt: &'a Path,
    /// That LLVM's `llc`.
    pub llc: &'a Path,
}

impl<'a> LlvmLookup<'a> {
    /// `llvm`'s, for an `sm_NN` or a `gfxNNN`: from Debian's DeviceRTL bitcode of that
    /// architecture, or from the nvptx64 DeviceRTL built from LLVM's source (one bitcode for every
    /// sm, `DeviceRtl::FromSource`).
    pub fn of(tools: &'a Tools, llvm: Llvm, arch: &str) -> Self {
        let release = tools.of(llvm);
        let (device_rtl, provider) = match &release.device_rtl {
            None => (tools.llvm_device_rtl(arch), format!("Debian package libomp-{}-dev", llvm.major)),
            Some(built) => (
                built.join("nvptx64-nvidia-cuda/libomptarget-nvptx.bc"),
                format!("scripts/fetch-llvm{}-devicertl.sh", llvm.major),
            ),
        };
        LlvmLookup {
            release: format!("LLVM {}", llvm.major),
            device_rtl,
            provider,
            llvm_link: &release.llvm_link,
            llvm_extract: &release.llvm_extract,
            opt: &release.opt,
            llc: &release.llc,
        }
    }

    /// The lookup alone, extracted into `work`, for an `sm_NN` or a `gfxNNN`; for NVIDIA with a
    /// definition of the device environment it reads (ptxas needs one). Returns the bitcode.
    pub fn bitcode(&self, arch: &str, work: &Path) -> Result<PathBuf> {
        ensure!(self.device_rtl.is_file(), "{} is missing ({})", self.device_rtl.display(), self.provider);
        fs::create_dir_all(work)?;
        let extracted = work.join("llvm_lookup_only.bc");
        cmd::output(
            Command::new(self.llvm_extract)
                .arg(format!("--func={LLVM_LOOKUP}"))
                .arg(&self.device_rtl)
                .arg("-o")
                .arg(&extracted),
        )?;
        if OffloadTarget::of_arch(arch).vendor() != Vendor::Nvidia {
            return Ok(extracted);
        }
        let out = work.join("llvm_lookup.bc");
        cmd::output(
            Command::new(self.llvm_link).arg(&extracted).arg(device_environment(work)?).arg("-o").arg(&out),
        )?;
        Ok(out)
    }
}

/// LLVM 19's lookup for an `sm_NN` or a `gfxNNN` ([`LlvmLookup::bitcode`]).
pub fn llvm_lookup_bitcode(tools: &Tools, arch: &str, work: &Path) -> Result<PathBuf> {
    LlvmLookup::of(tools, Llvm::oldest(), arch).bitcode(arch, work)
}

/// Writes [`DEVICE_ENVIRONMENT_LL`] (for NVIDIA's triple) to `work` and returns its path.
pub fn device_environment(work: &Path) -> Result<PathBuf> {
    let environment = work.join("device_environment.ll");
    fs::write(
        &environment,
        DEVICE_ENVIRONMENT_LL.replace("{triple}", packaging::target_record::NVIDIA.triple),
    )?;
    Ok(environment)
}
