//! The offload targets: the triple and arch of each device image (how each toolchain compiles for
//! them is in `toolchain`).

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

    /// The target of an `sm_NN` or a `gfxNNN`.
    pub fn of_arch(arch: &str) -> Self {
        if arch.starts_with("gfx") {
            OffloadTarget::amdgcn(arch)
        } else {
            OffloadTarget::nvptx(arch)
        }
    }

    /// The host-offload "device".
    pub fn x86_64() -> Self {
        OffloadTarget { name: "x86_64".to_string(), triple: "x86_64-pc-linux-gnu", arch: String::new() }
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
