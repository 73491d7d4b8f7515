//! How clang 19 compiles an OpenMP program for each offload target against our device library.

use std::ffi::OsString;

use crate::tools::Tools;

/// Where Debian's clang 19 keeps its OpenMP DeviceRTL bitcode (it does not find it for nvptx).
pub const LLVM19_LIB: &str = "/usr/lib/llvm-19/lib";

/// An offload target: the triple of its device images and the arch clang is asked for.
#[derive(Clone, Debug)]
pub struct OffloadTarget {
    /// Short name used in paths and reports: the sm / gfx name, or `x86_64`.
    pub name: String,
    /// Triple of the device images clang writes for it.
    pub triple: &'static str,
    /// `arch=` of those images in the OffloadBinary (empty for host offload).
    pub arch: String,
}

impl OffloadTarget {
    /// NVIDIA `sm_NN`.
    pub fn nvptx(sm: &str) -> Self {
        OffloadTarget { name: sm.to_string(), triple: "nvptx64-nvidia-cuda", arch: sm.to_string() }
    }

    /// AMD `gfxNNN`.
    pub fn amdgcn(gfx: &str) -> Self {
        OffloadTarget { name: gfx.to_string(), triple: "amdgcn-amd-amdhsa", arch: gfx.to_string() }
    }

    /// The host-offload "device".
    pub fn x86_64() -> Self {
        OffloadTarget { name: "x86_64".to_string(), triple: "x86_64-pc-linux-gnu", arch: String::new() }
    }

    /// The clang 19 flags that compile and link OpenMP code for this target (before the user's
    /// `-L<dist>/lib -lomptarget-indirect`).
    pub fn clang_args(&self, tools: &Tools) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["-fopenmp".into()];
        match self.triple {
            "nvptx64-nvidia-cuda" => {
                args.push(format!("--offload-arch={}", self.arch).into());
                let mut cuda = OsString::from("--cuda-path=");
                cuda.push(&tools.cuda);
                args.push(cuda);
                args.push(format!("--libomptarget-nvptx-bc-path={LLVM19_LIB}").into());
            }
            "amdgcn-amd-amdhsa" => {
                args.push(format!("--offload-arch={}", self.arch).into());
                let mut rocm = OsString::from("--rocm-device-lib-path=");
                rocm.push(&tools.rocm_device_libs);
                args.push(rocm);
            }
            triple => args.push(format!("-fopenmp-targets={triple}").into()),
        }
        args
    }

    /// The packager's `--image=` argument for this target's image in `file`: packs it into an
    /// OffloadBinary, or extracts it from a linked program.
    pub fn image_selector(&self, file: &std::path::Path) -> String {
        let mut selector = format!("--image=file={},triple={},kind=openmp", file.display(), self.triple);
        if !self.arch.is_empty() {
            selector.push_str(&format!(",arch={}", self.arch));
        }
        selector
    }
}
