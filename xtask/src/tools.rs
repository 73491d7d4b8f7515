//! The external tools the build and the checks use, located once, up front.
//!
//! LLVM 19 tools come from Debian's `clang-19 clang-tools-19 llvm-19 lld-19` packages; the CUDA
//! 11.8 tools from Debian's `nvidia-cuda-toolkit`, unpacked under `target/tools/cuda` by
//! `scripts/fetch-cuda-tools.sh`; LLVM 16's offload runtime, unpacked under `target/tools/llvm16`
//! by `scripts/fetch-llvm16-runtime.sh`; clang 22 and its libomptarget from Debian's `clang-22
//! llvm-22-dev liboffload-22-dev`, with LLVM 22's `omp.h` (and a `libomp.so` link) unpacked under
//! `target/tools/llvm22` by `scripts/fetch-llvm22-openmp.sh`. `scripts/setup.sh` installs all of
//! them.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

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
    /// `opt` of LLVM 22: verifies the IR clang 22 writes.
    pub opt22: PathBuf,
    /// LLVM 22's stock `libomptarget.so.22.1` (Debian's liboffload-22).
    pub libomptarget22: PathBuf,
    /// `target/tools/llvm22`: `include/omp.h` of LLVM 22 and `lib/libomp.so` (libomp-22-dev's,
    /// which conflicts with libomp-19-dev as a package).
    pub llvm22_openmp: PathBuf,
}

const LLVM_BIN: &str = "/usr/lib/llvm-19/bin";
/// Debian's LLVM 22 prefix.
const LLVM22: &str = "/usr/lib/llvm-22";
const ROCM_DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";
/// libomptarget 16 links against it.
const LIBLLVM16: &str = "/usr/lib/x86_64-linux-gnu/libLLVM-16.so.1";
const SETUP_HINT: &str = "run scripts/setup.sh (or scripts/test.sh, which calls it) to install it";

impl Tools {
    /// Finds every tool, failing with one message that lists all that are missing.
    pub fn locate(root: &Path) -> Result<Tools> {
        let mut missing = Vec::new();
        let mut llvm = |name: &str| {
            let path = Path::new(LLVM_BIN).join(name);
            if !path.is_file() {
                missing.push(format!("{} (Debian package {})", path.display(), llvm_package(name)));
            }
            path
        };
        let clang = llvm("clang");
        let clangxx = llvm("clang++");
        let packager = llvm("clang-offload-packager");
        let llvm_dis = llvm("llvm-dis");
        let llvm_readelf = llvm("llvm-readelf");
        let llvm_objdump = llvm("llvm-objdump");
        let llvm_ar = llvm("llvm-ar");
        let llvm_link = llvm("llvm-link");
        let llvm_extract = llvm("llvm-extract");
        let opt = llvm("opt");
        let llc = llvm("llc");
        let cuda = root.join("target/tools/cuda");
        for needed in ["bin/ptxas", "bin/cuobjdump", "nvvm/libdevice/libdevice.10.bc"] {
            if !cuda.join(needed).is_file() {
                missing.push(format!("{} (scripts/fetch-cuda-tools.sh)", cuda.join(needed).display()));
            }
        }
        let rocm_device_libs = PathBuf::from(ROCM_DEVICE_LIBS);
        if !rocm_device_libs.join("ocml.bc").is_file() {
            missing.push(format!("{ROCM_DEVICE_LIBS}/ocml.bc (Debian package rocm-device-libs)"));
        }
        let llvm16_lib = root.join("target/tools/llvm16/lib");
        for needed in ["libomptarget.so.16", "libomptarget.so", "libomp.so.5"] {
            if !llvm16_lib.join(needed).exists() {
                missing
                    .push(format!("{} (scripts/fetch-llvm16-runtime.sh)", llvm16_lib.join(needed).display()));
            }
        }
        if !Path::new(LIBLLVM16).is_file() {
            missing.push(format!("{LIBLLVM16} (Debian package libllvm16)"));
        }
        let mut llvm22 = |name: &str, package: &str| {
            let path = Path::new(LLVM22).join(name);
            if !path.exists() {
                missing.push(format!("{} (Debian package {package})", path.display()));
            }
            path
        };
        let clang22 = llvm22("bin/clang", "clang-22");
        let clangxx22 = llvm22("bin/clang++", "clang-22");
        let opt22 = llvm22("bin/opt", "llvm-22");
        llvm22("bin/llvm-config", "llvm-22-dev");
        // The unversioned link clang-22's `-lomptarget` needs.
        llvm22("lib/libomptarget.so", "liboffload-22-dev");
        let libomptarget22 = llvm22("lib/libomptarget.so.22.1", "liboffload-22");
        let llvm22_openmp = root.join("target/tools/llvm22");
        for needed in ["include/omp.h", "lib/libomp.so"] {
            if !llvm22_openmp.join(needed).exists() {
                missing.push(format!(
                    "{} (scripts/fetch-llvm22-openmp.sh)",
                    llvm22_openmp.join(needed).display()
                ));
            }
        }
        if !missing.is_empty() {
            bail!("missing tools: {}; {SETUP_HINT}", missing.join(", "));
        }
        Ok(Tools {
            clang,
            clangxx,
            packager,
            llvm_dis,
            llvm_readelf,
            llvm_objdump,
            llvm_ar,
            llvm_link,
            llvm_extract,
            opt,
            llc,
            cuda,
            rocm_device_libs,
            llvm16_lib,
            clang22,
            clangxx22,
            opt22,
            libomptarget22,
            llvm22_openmp,
        })
    }

    /// `llc-19 -O3 -mcpu=<sm>` of `bitcode` into `ptx`: what clang's offload linker does with the
    /// LTO'd device module.
    pub fn compile_ptx(&self, bitcode: &Path, sm: &str, ptx: &Path) -> Result<()> {
        crate::cmd::output(
            std::process::Command::new(&self.llc)
                .args(["-O3", &format!("-mcpu={sm}")])
                .arg(bitcode)
                .arg("-o")
                .arg(ptx),
        )?;
        Ok(())
    }

    /// `ptxas` from CUDA 11.8.
    pub fn ptxas(&self) -> PathBuf {
        self.cuda.join("bin/ptxas")
    }

    /// LLVM 19's own OpenMP DeviceRTL for `sm` (Debian's libomp-19-dev).
    pub fn llvm_device_rtl(&self, sm: &str) -> PathBuf {
        Path::new(crate::offload::LLVM19_LIB).join(format!("libomptarget-nvptx-{sm}.bc"))
    }

    /// `cuobjdump` from CUDA 11.8.
    pub fn cuobjdump(&self) -> PathBuf {
        self.cuda.join("bin/cuobjdump")
    }
}

fn llvm_package(tool: &str) -> &'static str {
    match tool {
        "clang" | "clang++" => "clang-19",
        "clang-offload-packager" => "clang-tools-19",
        _ => "llvm-19",
    }
}
