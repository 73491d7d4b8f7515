//! The external tools the build and the checks use, located once, up front.
//!
//! LLVM 19 tools come from Debian's `clang-19 clang-tools-19 llvm-19 lld-19` packages; the CUDA
//! 11.8 tools from Debian's `nvidia-cuda-toolkit`, unpacked under `target/tools/cuda` by
//! `scripts/fetch-cuda-tools.sh`; LLVM 16's offload runtime, unpacked under `target/tools/llvm16`
//! by `scripts/fetch-llvm16-runtime.sh`; clang 22 and its libomptarget from Debian's `clang-22
//! llvm-22-dev liboffload-22-dev`, with LLVM 22's `omp.h` (and a `libomp.so` link) unpacked under
//! `target/tools/llvm22` by `scripts/fetch-llvm22-openmp.sh`, and LLVM 22's GPU DeviceRTL, built
//! from LLVM's source under `target/tools/llvm22-devicertl` by `scripts/fetch-llvm22-devicertl.sh`.
//! All of them are lines of `scripts/requirements.txt`, which
//! `scripts/setup.sh` installs from and [`Tools::locate`] checks first.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::requirements;

/// Paths of every tool used by `cargo xtask build` and `cargo xtask test`.
pub struct Tools {
    /// `clang-19`: compiles and links OpenMP programs, embeds offload objects.
    pub clang: PathBuf,
    /// `clang++-19`: the same for C++.
    pub clangxx: PathBuf,
    /// `clang-offload-packager-19`: makes and unpacks OffloadBinary images.
    pub packager: PathBuf,
    /// `llvm-dis-19`: proves bitcode is readable by LLVM 19.
    pub llvm_dis: PathBuf,
    /// `llvm-readelf-19`: decodes AMDGPU ELF headers.
    pub llvm_readelf: PathBuf,
    /// `llvm-objdump-19`: disassembles amdgcn code.
    pub llvm_objdump: PathBuf,
    /// `llvm-ar-19`: writes the static libraries.
    pub llvm_ar: PathBuf,
    /// `llvm-link-19`: links the GPU bundle's kernels with the device runtime's bitcode.
    pub llvm_link: PathBuf,
    /// `llvm-extract-19`: takes LLVM's lookup out of its DeviceRTL bitcode.
    pub llvm_extract: PathBuf,
    /// `opt-19`: the device-LTO optimisation (inlining) of linked kernels.
    pub opt: PathBuf,
    /// `llc-19`: bitcode to PTX.
    pub llc: PathBuf,
    /// A CUDA 11.8 directory that clang accepts as `--cuda-path` (bin/ptxas, nvvm/libdevice, ...).
    pub cuda: PathBuf,
    /// ROCm device libraries (ocml, ockl, oclc_*): clang 19 refuses AMDGPU OpenMP links without.
    pub rocm_device_libs: PathBuf,
    /// LLVM 16's `libomptarget.so.16` and `libomp.so.5` with their unversioned links, and no
    /// plugins (`scripts/fetch-llvm16-runtime.sh`): what programs link against and run with.
    pub llvm16_lib: PathBuf,
    /// `clang-22`, for the LLVM 22 toolchain.
    pub clang22: PathBuf,
    /// `clang++-22`.
    pub clangxx22: PathBuf,
    /// `flang` of LLVM 22: compiles the Fortran programs and the `omptarget_indirect` module.
    pub flang22: PathBuf,
    /// `opt` of LLVM 22: verifies the IR clang 22 writes.
    pub opt22: PathBuf,
    /// `llvm-link`, `llvm-extract` and `llc` of LLVM 22: the GPU bundle's kernels linked with
    /// LLVM 22's own lookup (its DeviceRTL's bitcode, which LLVM 19's tools cannot read).
    pub llvm_link22: PathBuf,
    /// `llvm-extract` of LLVM 22.
    pub llvm_extract22: PathBuf,
    /// `llc` of LLVM 22.
    pub llc22: PathBuf,
    /// `llvm-nm` of LLVM 22 (reads LLVM 22's bitcode).
    pub llvm_nm22: PathBuf,
    /// LLVM 22's stock `libomptarget.so.22.1` (Debian's liboffload-22).
    pub libomptarget22: PathBuf,
    /// `target/tools/llvm22`: `include/omp.h` of LLVM 22 and `lib/libomp.so` (libomp-22-dev's,
    /// which conflicts with libomp-19-dev as a package).
    pub llvm22_openmp: PathBuf,
    /// `target/tools/llvm22-devicertl/lib`: LLVM 22's GPU DeviceRTL, one directory per triple
    /// (`libomptarget-{nvptx,amdgpu}.bc`, `libompdevice.a`), built from LLVM's source by
    /// `scripts/fetch-llvm22-devicertl.sh` because Debian ships none.
    pub llvm22_devicertl: PathBuf,
}

impl Tools {
    /// Runs the preflight over `scripts/requirements.txt` (failing with one line per missing
    /// requirement and its package), then takes every tool's path from it.
    pub fn locate(root: &Path) -> Result<Tools> {
        let found = requirements::locate(root)?;
        let path = |name: &str| found.path(name);
        let dir_of = |name: &str, up: usize| {
            let mut dir = found.path(name);
            for _ in 0..up {
                dir.pop();
            }
            dir
        };
        Ok(Tools {
            clang: path("clang-19"),
            clangxx: path("clang++-19"),
            packager: path("clang-offload-packager-19"),
            llvm_dis: path("llvm-dis-19"),
            llvm_readelf: path("llvm-readelf-19"),
            llvm_objdump: path("llvm-objdump-19"),
            llvm_ar: path("llvm-ar-19"),
            llvm_link: path("llvm-link-19"),
            llvm_extract: path("llvm-extract-19"),
            opt: path("opt-19"),
            llc: path("llc-19"),
            // target/tools/cuda/bin/ptxas
            cuda: dir_of("ptxas", 2),
            // .../amdgcn/bitcode/ocml.bc
            rocm_device_libs: dir_of("rocm-device-libs", 1),
            // target/tools/llvm16/lib/libomptarget.so.16
            llvm16_lib: dir_of("libomptarget-16", 1),
            clang22: path("clang-22"),
            clangxx22: path("clang++-22"),
            flang22: path("flang-22"),
            opt22: path("opt-22"),
            llvm_link22: path("llvm-link-22"),
            llvm_extract22: path("llvm-extract-22"),
            llc22: path("llc-22"),
            llvm_nm22: path("llvm-nm-22"),
            libomptarget22: path("libomptarget-22"),
            // target/tools/llvm22/include/omp.h
            llvm22_openmp: dir_of("llvm22-omp-h", 2),
            // target/tools/llvm22-devicertl/lib/nvptx64-nvidia-cuda/libomptarget-nvptx.bc
            llvm22_devicertl: dir_of("llvm22-devicertl-nvptx", 2),
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

    /// LLVM 19's own OpenMP DeviceRTL for an `sm_NN` or a `gfxNNN` (Debian's libomp-19-dev).
    pub fn llvm_device_rtl(&self, arch: &str) -> PathBuf {
        let vendor = if arch.starts_with("gfx") { "amdgpu" } else { "nvptx" };
        Path::new(crate::offload::LLVM19_LIB).join(format!("libomptarget-{vendor}-{arch}.bc"))
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
