//! The offload targets a build is for: one target record ([`crate::target_record`]) and, for a GPU,
//! one architecture (how each toolchain compiles for them is in `toolchain`).

pub use crate::target_record::{Target, Vendor};
use crate::target_record::{AMD, HOST, NVIDIA};

/// An offload target: the triple of its device images and the arch clang is asked for.
#[derive(Clone, Debug)]
pub struct OffloadTarget {
    /// Short name used in paths and reports: the sm / gfx name, or `x86_64`.
    pub name: String,
    /// Its record.
    pub record: &'static Target,
    /// `arch=` of those images in the OffloadBinary (empty for host offload).
    pub arch: String,
}

impl OffloadTarget {
    /// The GPU architecture `arch` of `record`.
    fn gpu(record: &'static Target, arch: &str) -> Self {
        OffloadTarget { name: arch.to_string(), record, arch: arch.to_string() }
    }

    /// NVIDIA `sm_NN`.
    pub fn nvptx(sm: &str) -> Self {
        Self::gpu(&NVIDIA, sm)
    }

    /// AMD `gfxNNN`.
    pub fn amdgcn(gfx: &str) -> Self {
        Self::gpu(&AMD, gfx)
    }

    /// The target of a GPU architecture (`sm_NN`, `gfxNNN`: [`Target::of_arch`]); an unknown
    /// name is taken for NVIDIA's, whose tools then say what is wrong with it.
    pub fn of_arch(arch: &str) -> Self {
        Self::gpu(Target::of_arch(arch).unwrap_or(&NVIDIA), arch)
    }

    /// The host-offload "device".
    pub fn x86_64() -> Self {
        OffloadTarget { name: HOST.dist_dir.to_string(), record: &HOST, arch: String::new() }
    }

    /// The triple of the device images clang writes for it.
    pub fn triple(&self) -> &'static str {
        self.record.triple
    }

    /// Whose device it is.
    pub fn vendor(&self) -> Vendor {
        self.record.vendor
    }

    /// Whether it is a GPU (not the host-offload device).
    pub fn is_gpu(&self) -> bool {
        self.record.vendor != Vendor::Host
    }

    /// The packager's `--image=` argument for this target's image in `file`: packs it into an
    /// OffloadBinary, or extracts it from a linked program.
    pub fn image_selector(&self, file: &std::path::Path) -> String {
        let mut selector = format!("--image=file={},triple={},kind=openmp", file.display(), self.triple());
        if !self.arch.is_empty() {
            selector.push_str(&format!(",arch={}", self.arch));
        }
        selector
    }
}
