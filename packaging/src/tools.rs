//! The external tools the build and the checks use, located once, up front.
//!
//! Two kinds: the tools that build what every release shares (the device images, the fat
//! library, the GPU bundle's kernels: LLVM 19's, the oldest release, which every newer LLVM reads;
//! the CUDA 11.8 tools unpacked under `target/tools/cuda` by `scripts/fetch-cuda-tools.sh`; LLVM
//! 16's offload runtime under `target/tools/llvm16`), and each supported release's own
//! ([`ReleaseTools`], [`Tools::of`]), named by its record (`Llvm::requirements`): its clang, opt,
//! flang, its runtime's files and its DeviceRTL built from source. All of them are lines of
//! `scripts/requirements.txt`, which `scripts/setup.sh` installs from and [`Tools::locate`]
//! checks first.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::llvm::{DeviceRtl, Llvm, Runtime, PROJECT_PLUGINS_RUNTIME};
use crate::requirements::{self, Need};

/// Paths of every tool used by `cargo xtask build` and `cargo xtask test`: the shared ones, of
/// the oldest release ([`Llvm::oldest`], `NN` below), and each release's ([`Tools::of`]).
pub struct Tools {
    /// `clang-NN`: compiles and links OpenMP programs, embeds offload objects.
    pub clang: PathBuf,
    /// `clang++-NN`: the same for C++.
    pub clangxx: PathBuf,
    /// `clang-offload-packager-NN`: makes and unpacks OffloadBinary images.
    pub packager: PathBuf,
    /// `llvm-dis-NN`: proves bitcode is readable by the oldest release.
    pub llvm_dis: PathBuf,
    /// `llvm-readelf-NN`: decodes AMDGPU ELF headers.
    pub llvm_readelf: PathBuf,
    /// `llvm-objdump-NN`: disassembles amdgcn code.
    pub llvm_objdump: PathBuf,
    /// `llvm-ar-NN`: writes the static libraries.
    pub llvm_ar: PathBuf,
    /// `llvm-strip-NN`: strips executables and shared libraries as release installs do.
    pub llvm_strip: PathBuf,
    /// `llvm-link-NN`: links the GPU bundle's kernels with the device runtime's bitcode.
    pub llvm_link: PathBuf,
    /// `llvm-extract-NN`: takes LLVM's lookup out of its DeviceRTL bitcode.
    pub llvm_extract: PathBuf,
    /// `opt-NN`: the device-LTO optimisation (inlining) of linked kernels.
    pub opt: PathBuf,
    /// `llc-NN`: bitcode to PTX.
    pub llc: PathBuf,
    /// A CUDA 11.8 directory that clang accepts as `--cuda-path` (bin/ptxas, nvvm/libdevice, ...).
    pub cuda: PathBuf,
    /// ROCm device libraries (ocml, ockl, oclc_*): clang 19 refuses AMDGPU OpenMP links without.
    pub rocm_device_libs: PathBuf,
    /// LLVM 16's `libomptarget.so.16` and `libomp.so.5` with their unversioned links, and no
    /// plugins (`scripts/fetch-llvm16-runtime.sh`): what programs link against and run with.
    pub plugins_runtime_lib: PathBuf,
    /// The tools and runtime of each release, in [`Llvm::all`]'s order ([`Tools::of`]).
    releases: Vec<ReleaseTools>,
}

/// The programs and runtime files of one LLVM release, from the requirements its [`Release`]
/// record names (`clang-NN`, ...).
///
/// [`Release`]: crate::llvm::Release
pub struct ReleaseTools {
    /// `clang-NN`.
    pub clang: PathBuf,
    /// `clang++-NN`.
    pub clangxx: PathBuf,
    /// `opt-NN`: reads (and verifies) the IR this clang writes.
    pub opt: PathBuf,
    /// `llc-NN`.
    pub llc: PathBuf,
    /// `llvm-link-NN`.
    pub llvm_link: PathBuf,
    /// `llvm-extract-NN`.
    pub llvm_extract: PathBuf,
    /// `flang-NN`, where the release's flang compiles the programs ([`Release::flang`]).
    ///
    /// [`Release::flang`]: crate::llvm::Release::flang
    pub flang: Option<PathBuf>,
    /// `llvm-nm-NN`, where listed.
    pub llvm_nm: Option<PathBuf>,
    /// `clang-offload-packager-NN`, where listed: LLVM 19's cannot read the offload binaries of
    /// LLVM 23 (a newer version of the format).
    pub packager: Option<PathBuf>,
    /// Its `llvm-config` (`llvm-config-NN`; a release in a root of its own: the wrapper that
    /// answers the root's directories as this machine sees them).
    pub llvm_config: PathBuf,
    /// The root's `enter`, which runs an executable this release linked ([`Release::root`]).
    ///
    /// [`Release::root`]: crate::llvm::Release::root
    pub enter: Option<PathBuf>,
    /// The libomptarget its programs link and run with: LLVM 16's (`libomptarget.so.16`) or the
    /// release's stock one.
    pub libomptarget: PathBuf,
    /// The directory holding the release's `include/omp.h` and `lib/libomp.so` when its
    /// runtime is stock (`target/tools/llvm22`), else `None` (Debian's libomp-NN-dev).
    pub openmp: Option<PathBuf>,
    /// The directory of its GPU DeviceRTL built from source, one subdirectory per triple
    /// (`target/tools/llvm22-devicertl/lib`), else `None` (Debian's).
    pub device_rtl: Option<PathBuf>,
}

impl ReleaseTools {
    /// The command that runs `exe`, an executable this release linked: through the root's
    /// `enter` when the release lives in a root of its own.
    pub fn run_command(&self, exe: &Path) -> std::process::Command {
        match &self.enter {
            Some(enter) => {
                let mut command = std::process::Command::new(enter);
                command.arg(exe);
                command
            }
            None => std::process::Command::new(exe),
        }
    }

    fn locate(llvm: Llvm, found: &requirements::Located) -> ReleaseTools {
        // Every name here is one of `llvm.requirements()`, which the preflight found.
        let tool = |name: &str| found.path(&llvm.requirement(name));
        let optional = |name: &str| found.get(&llvm.requirement(name));
        let (libomptarget, openmp) = match llvm.runtime {
            Runtime::ProjectPlugins => (found.path(PROJECT_PLUGINS_RUNTIME), None),
            // <dir>/include/omp.h
            Runtime::Stock { library, openmp, .. } => (
                found.path(library),
                openmp.and_then(|openmp| found.path(openmp).ancestors().nth(2).map(Path::to_path_buf)),
            ),
        };
        let device_rtl = match llvm.device_rtl {
            DeviceRtl::Debian | DeviceRtl::None => None,
            // <dir>/lib/nvptx64-nvidia-cuda/libomptarget-nvptx.bc
            DeviceRtl::FromSource { nvptx } => found.path(nvptx).ancestors().nth(2).map(Path::to_path_buf),
        };
        ReleaseTools {
            clang: tool("clang"),
            clangxx: tool("clang++"),
            opt: tool("opt"),
            llc: tool("llc"),
            llvm_link: tool("llvm-link"),
            llvm_extract: tool("llvm-extract"),
            flang: if llvm.flang { Some(tool("flang")) } else { None },
            llvm_nm: optional("llvm-nm"),
            packager: optional("clang-offload-packager"),
            llvm_config: tool("llvm-config"),
            enter: llvm.root.map(|enter| found.path(enter)),
            libomptarget,
            openmp,
            device_rtl,
        }
    }
}

impl Tools {
    /// The tools and runtime of `llvm`.
    pub fn of(&self, llvm: Llvm) -> &ReleaseTools {
        &self.releases[Llvm::all().position(|l| l == llvm).expect("a supported release")]
    }

    /// Runs the suite's preflight over `scripts/requirements.txt` (failing with one line per
    /// missing requirement and its package), then takes every tool's path from it.
    pub fn locate(root: &Path) -> Result<Tools> {
        Tools::locate_for(root, &[Need::Suite])
    }

    /// The same for a command of `needs` ([`requirements::locate_for`]): the tools it does not need
    /// are at their listed locations, present or not.
    pub fn locate_for(root: &Path, needs: &[Need]) -> Result<Tools> {
        let found = requirements::locate_for(root, needs)?;
        let dir_of = |name: &str, up: usize| {
            let mut dir = found.path(name);
            for _ in 0..up {
                dir.pop();
            }
            dir
        };
        // The oldest release's tools build and read what every release shares.
        let shared = |tool: &str| found.path(&Llvm::oldest().requirement(tool));
        Ok(Tools {
            clang: shared("clang"),
            clangxx: shared("clang++"),
            packager: shared("clang-offload-packager"),
            llvm_dis: shared("llvm-dis"),
            llvm_readelf: shared("llvm-readelf"),
            llvm_objdump: shared("llvm-objdump"),
            llvm_ar: shared("llvm-ar"),
            llvm_strip: shared("llvm-strip"),
            llvm_link: shared("llvm-link"),
            llvm_extract: shared("llvm-extract"),
            opt: shared("opt"),
            llc: shared("llc"),
            // target/tools/cuda/bin/ptxas
            cuda: dir_of("ptxas", 2),
            // .../amdgcn/bitcode/ocml.bc
            rocm_device_libs: dir_of("rocm-device-libs", 1),
            // the directory of libomptarget.so.16
            plugins_runtime_lib: dir_of(PROJECT_PLUGINS_RUNTIME, 1),
            releases: Llvm::all().map(|llvm| ReleaseTools::locate(llvm, &found)).collect(),
        })
    }

    /// `llc-19 -O3 -mcpu=<sm>` of `bitcode` into `ptx` ([`compile_ptx`]).
    pub fn compile_ptx(&self, bitcode: &Path, sm: &str, ptx: &Path) -> Result<()> {
        compile_ptx(&self.llc, bitcode, sm, ptx)
    }

    /// `ptxas` from CUDA 11.8.
    pub fn ptxas(&self) -> PathBuf {
        self.cuda.join("bin/ptxas")
    }

    /// The oldest release's own OpenMP DeviceRTL for an `sm_NN` or a `gfxNNN`, in its Debian
    /// `lib/` (libomp-NN-dev), beside its `bin/clang`.
    pub fn llvm_device_rtl(&self, arch: &str) -> PathBuf {
        let name = crate::offload::OffloadTarget::of_arch(arch).record.device_rtl_name;
        let clang = &self.of(Llvm::oldest()).clang;
        let lib = clang.ancestors().nth(2).map(|prefix| prefix.join("lib")).unwrap_or_default();
        lib.join(format!("libomptarget-{name}-{arch}.bc"))
    }

    /// `cuobjdump` from CUDA 11.8.
    pub fn cuobjdump(&self) -> PathBuf {
        self.cuda.join("bin/cuobjdump")
    }
}

/// `llc -O3 -mcpu=<sm>` of `bitcode` into `ptx`: what clang's offload linker does with the LTO'd
/// device module.
pub fn compile_ptx(llc: &Path, bitcode: &Path, sm: &str, ptx: &Path) -> Result<()> {
    crate::cmd::output(
        std::process::Command::new(llc).args(["-O3", &format!("-mcpu={sm}")]).arg(bitcode).arg("-o").arg(ptx),
    )?;
    Ok(())
}
