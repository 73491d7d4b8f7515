//! The dist tree `cargo xtask build` writes under `target/dist`, laid out as an install prefix:
//! where each built file is, for the build, the install, the tests and the benchmarks.

use std::path::{Path, PathBuf};

use crate::llvm::Llvm;
use crate::target_record::{Target, AMD, HOST, NVIDIA};

/// Plugins built here: (cargo package, library file cargo writes, name libomptarget loads).
pub const PLUGINS: &[(&str, &str, &str)] = &[
    ("omptarget-rtl-x86_64", "libomptarget_rtl_x86_64.so", "libomptarget.rtl.x86_64.so"),
    ("omptarget-rtl-cuda", "libomptarget_rtl_cuda.so", "libomptarget.rtl.cuda.so"),
    ("omptarget-rtl-amdgpu", "libomptarget_rtl_amdgpu.so", "libomptarget.rtl.amdgpu.so"),
];

/// Strict mode (`strict/`): its cargo package, the library cargo writes, and the name it is
/// installed under (`LD_PRELOAD` it).
pub const STRICT: (&str, &str, &str) =
    ("omptarget-indirect-strict", "libomptarget_indirect_strict.so", "libomptarget-indirect-strict.so");

/// The registration library the configuration files of the stock releases (21, 22, 23) link (`stock-runtime`): its
/// cargo package, the library cargo writes, and its installed name.
pub const REGISTER: (&str, &str, &str) =
    ("omptarget-indirect-register", "libomptarget_indirect_register.so", "libomptarget-indirect-register.so");

/// The pass plugin's cargo package and the library file cargo writes.
pub const PASS_PLUGIN: (&str, &str) = ("omptarget-indirect-pass", "libomptarget_indirect_pass.so");

/// What a dist tree holds besides what every tree has (the device library, strict mode, the
/// header, the CMake and pkg-config files): the parts that depend on which LLVM releases the build
/// was given and what it found beside them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parts {
    /// The releases whose pass plugin and configuration file it holds, oldest first.
    pub releases: Vec<Llvm>,
    /// The releases whose frontend plugin it holds (their clang development headers were found).
    pub frontend: Vec<Llvm>,
    /// The releases whose flang's `omptarget_indirect` module file and configuration file it
    /// holds ([`Llvm::fortran_releases`]), oldest first.
    pub fortran: Vec<Llvm>,
    /// The libomptarget 16 plugins (for clang 19 programs).
    pub libomptarget16_plugins: bool,
}

impl Parts {
    /// Everything: what `cargo xtask build` makes from every release's LLVM.
    pub fn all() -> Parts {
        Parts {
            releases: Llvm::all().collect(),
            frontend: Llvm::all().collect(),
            fortran: Llvm::fortran_releases().collect(),
            libomptarget16_plugins: true,
        }
    }

    /// Whether it holds the registration library (the vtables of a stock libomptarget's table).
    pub fn register(&self) -> bool {
        self.releases.iter().any(|llvm| llvm.needs_register())
    }
}

/// Paths of a dist tree: `target/dist` of `cargo xtask build`, or the tree an install builds.
pub struct Dist {
    /// `target/dist`.
    pub root: PathBuf,
    /// What it holds.
    pub parts: Parts,
}

impl Dist {
    /// The dist tree of the workspace at `workspace`, with every part.
    pub fn new(workspace: &Path) -> Dist {
        Dist { root: workspace.join("target/dist"), parts: Parts::all() }
    }

    /// `lib/`: what users link against and what libomptarget loads.
    pub fn lib_dir(&self) -> PathBuf {
        self.root.join("lib")
    }

    /// Strict mode's library (`LD_PRELOAD` it).
    pub fn strict_lib(&self) -> PathBuf {
        self.lib_dir().join(STRICT.2)
    }

    /// The registration library the stock releases' configuration files link.
    pub fn register_lib(&self) -> PathBuf {
        self.lib_dir().join(REGISTER.2)
    }

    /// The fat device library for `clang -fopenmp ... -lomptarget-indirect`.
    pub fn fat_lib(&self) -> PathBuf {
        self.lib_dir().join("libomptarget-indirect.a")
    }

    /// The pass plugin for clang of `llvm` (`-fpass-plugin=`, host and device compiles).
    pub fn pass_plugin(&self, llvm: Llvm) -> PathBuf {
        self.lib_dir().join(llvm.pass_plugin_file)
    }

    /// The frontend plugin for clang of `llvm` (`-fplugin=`).
    pub fn frontend_plugin(&self, llvm: Llvm) -> PathBuf {
        self.lib_dir().join(llvm.frontend_plugin_file())
    }

    /// The clang configuration file of `llvm` that loads [`Dist::pass_plugin`] for device
    /// compiles.
    pub fn clang_config(&self, llvm: Llvm) -> PathBuf {
        self.root.join("share/omptarget-indirect").join(llvm.clang_config_file())
    }

    /// The flang configuration file of `llvm` ([`Release::flang`]).
    ///
    /// [`Release::flang`]: crate::llvm::Release::flang
    pub fn flang_config(&self, llvm: Llvm) -> PathBuf {
        self.root.join("share/omptarget-indirect").join(llvm.flang_config_file())
    }

    /// Where `omptarget_indirect.mod` of `llvm`'s flang is.
    pub fn fortran_module_dir(&self, llvm: Llvm) -> PathBuf {
        self.root.join(llvm.fortran_module_dir())
    }

    /// `device/x86_64/`.
    pub fn x86_64_dir(&self) -> PathBuf {
        self.root.join("device").join(HOST.dist_dir)
    }

    /// The plain x86_64 archive (the host's variant: no kernel runtime).
    pub fn x86_64_archive(&self) -> PathBuf {
        self.x86_64_dir().join("libdevice_rtl.a")
    }

    /// `device/<the target's folder>/<arch>/` of a GPU target.
    pub fn gpu_dir(&self, target: &Target, arch: &str) -> PathBuf {
        self.root.join("device").join(target.dist_dir).join(arch)
    }

    /// `device/nvptx64/<sm>/`.
    pub fn nvptx_dir(&self, sm: &str) -> PathBuf {
        self.gpu_dir(&NVIDIA, sm)
    }

    /// `device/amdgcn/<gfx>/`.
    pub fn amdgcn_dir(&self, gfx: &str) -> PathBuf {
        self.gpu_dir(&AMD, gfx)
    }
}

/// Which GPU architectures to build.
#[derive(Clone, Debug)]
pub struct Archs {
    /// `sm_NN` names.
    pub sms: Vec<String>,
    /// `gfxNNN` names.
    pub gfxs: Vec<String>,
}

impl Archs {
    /// Rejects names that are not of the `sm_NN` form, or AMDGPU processors the plugin's table
    /// does not know, before any work starts.
    pub fn validate(&self) -> anyhow::Result<()> {
        for sm in &self.sms {
            let digits = sm.strip_prefix(NVIDIA.arch_prefix).unwrap_or("");
            if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
                anyhow::bail!("--sm {sm}: expected a name like sm_90");
            }
        }
        for gfx in &self.gfxs {
            if amdgpu_hsa::code_object::mach_of_processor(gfx).is_none() {
                let known: Vec<&str> = amdgpu_hsa::code_object::processors().collect();
                anyhow::bail!("--gfx {gfx}: unknown AMDGPU processor (known: {})", known.join(", "));
            }
        }
        Ok(())
    }
}

impl Default for Archs {
    fn default() -> Self {
        Archs {
            sms: NVIDIA.default_archs.iter().map(|s| s.to_string()).collect(),
            gfxs: AMD.default_archs.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The Fortran module a program `use`s to name its indirect procedures, in the source tree.
pub const FORTRAN_MODULE_SOURCE: &str = "install/omptarget_indirect.f90";
