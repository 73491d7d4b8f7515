//! The external tools the build and the checks use, located once, up front.
//!
//! LLVM 19 tools come from Debian's `clang-19 clang-tools-19 llvm-19 lld-19` packages; the CUDA
//! 11.8 tools from Debian's `nvidia-cuda-toolkit`, unpacked under `target/tools/cuda` by
//! `scripts/fetch-cuda-tools.sh`; LLVM 16's offload runtime, unpacked under `target/tools/llvm16`
//! by `scripts/fetch-llvm16-runtime.sh`. `scripts/setup.sh` installs all of them.

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
}

const LLVM_BIN: &str = "/usr/lib/llvm-19/bin";
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
        })
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
