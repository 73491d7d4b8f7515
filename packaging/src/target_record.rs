//! The offload targets the project builds for, one record each ([`TARGETS`]), data only as the
//! release records are: the triple of their device images, how their architectures are named,
//! which the build makes by default, the device library's Rust target and files, the DeviceRTL's
//! name. Code elsewhere reads these fields instead of naming a triple or an architecture prefix
//! (`packaging/tests/target_literals.rs` fails on one elsewhere); adding a target is a record here
//! plus what truly differs (`docs/design.md`, "Adding an offload target").

/// Whose device it is: what differs in how clang compiles for it and how its images link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// NVIDIA GPUs: clang's `--offload-arch=sm_NN` with CUDA's tools (`--cuda-path`), images
    /// linked by `ptxas` and `nvlink`.
    Nvidia,
    /// AMD GPUs: clang's `--offload-arch=gfxNNN`, images linked by `ld.lld` into code objects.
    Amd,
    /// The x86_64 host-offload device: `-fopenmp-targets=<triple>`, images are shared objects.
    Host,
}

/// What the project knows of one offload target.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    /// Whose it is.
    pub vendor: Vendor,
    /// The triple of the device images clang writes for it.
    pub triple: &'static str,
    /// How its architectures are named (`sm_90`, `gfx90a`): the prefix; empty where it has none.
    pub arch_prefix: &'static str,
    /// The architectures `cargo xtask build` makes the device library for when none is given.
    pub default_archs: &'static [&'static str],
    /// The Rust target the device library is built for.
    pub rust_target: &'static str,
    /// The device library's files for it in the dist tree: (rustc `--emit` kind, file name).
    pub device_library: &'static [(&'static str, &'static str)],
    /// Its directory of the dist tree's `device/` (one folder per architecture below it).
    pub dist_dir: &'static str,
    /// LLVM's DeviceRTL for it is `libomptarget-<name>.bc` (Debian's per architecture:
    /// `libomptarget-<name>-<arch>.bc`); empty where there is none (host offload).
    pub device_rtl_name: &'static str,
}

/// NVIDIA GPUs.
pub const NVIDIA: Target = Target {
    vendor: Vendor::Nvidia,
    triple: "nvptx64-nvidia-cuda",
    arch_prefix: "sm_",
    // Volta and Hopper.
    default_archs: &["sm_70", "sm_90"],
    rust_target: "nvptx64-nvidia-cuda",
    device_library: &[("llvm-bc", "device_rtl.bc")],
    dist_dir: "nvptx64",
    device_rtl_name: "nvptx",
};

/// AMD GPUs.
pub const AMD: Target = Target {
    vendor: Vendor::Amd,
    triple: "amdgcn-amd-amdhsa",
    arch_prefix: "gfx",
    // MI200, MI300, RDNA3.
    default_archs: &["gfx90a", "gfx942", "gfx1100"],
    rust_target: "amdgcn-amd-amdhsa",
    device_library: &[("llvm-bc", "device_rtl.bc"), ("obj", "device_rtl.o")],
    dist_dir: "amdgcn",
    device_rtl_name: "amdgpu",
};

/// The x86_64 host-offload device.
pub const HOST: Target = Target {
    vendor: Vendor::Host,
    triple: "x86_64-pc-linux-gnu",
    arch_prefix: "",
    default_archs: &[],
    rust_target: "x86_64-unknown-linux-gnu",
    device_library: &[("llvm-bc", "device_rtl.bc"), ("obj", "device_rtl.o")],
    dist_dir: "x86_64",
    device_rtl_name: "",
};

/// Every offload target, the GPUs first.
pub const TARGETS: [&Target; 3] = [&NVIDIA, &AMD, &HOST];

impl Target {
    /// The GPU target whose architectures `arch` is named like (`sm_90`, `gfx90a`), if any.
    pub fn of_arch(arch: &str) -> Option<&'static Target> {
        TARGETS.into_iter().find(|t| !t.arch_prefix.is_empty() && arch.starts_with(t.arch_prefix))
    }
}
