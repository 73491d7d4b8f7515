//! The toolchain of each supported release ([`Llvm`]), and how it compiles, links and runs an
//! OpenMP program against the project's device library, as its release record says:
//!
//! - [`Runtime::ProjectPlugins`] (clang 19): linked and run against LLVM 16's libomptarget, which
//!   loads this project's plugins (`target/dist/lib/libomptarget.rtl.*.so`); they install the
//!   function-pointer map.
//! - [`Runtime::Stock`] (clang 22): the release's stock libomptarget, which loads no plugin from
//!   outside and fills its own table in `__omp_rtl_device_environment`, where the device library
//!   finds it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::dist::Dist;
pub use crate::llvm::Llvm;
use crate::llvm::{DeviceRtl, Runtime};
use crate::offload::{OffloadTarget, Vendor};
use crate::tools::{ReleaseTools, Tools};

/// The flag that gives each nvptx64 device compile the DeviceRTL bitcode to link (a device-LTO
/// compile links none, and clang calls the flag unused there).
pub const NVPTX_DEVICE_RTL_FLAG: &str = "--libomptarget-nvptx-bc-path=";

/// One toolchain with the tools and the dist tree it uses.
pub struct Toolchain<'a> {
    /// Which release.
    pub llvm: Llvm,
    tools: &'a Tools,
    dist: &'a Dist,
}

impl<'a> Toolchain<'a> {
    /// The toolchain of `llvm`.
    pub fn new(llvm: Llvm, tools: &'a Tools, dist: &'a Dist) -> Self {
        Toolchain { llvm, tools, dist }
    }

    /// The toolchain whose programs run through the project's libomptarget 16 plugins
    /// ([`Runtime::ProjectPlugins`]): the benchmarks' and the plugins' own checks'.
    pub fn project_plugins(tools: &'a Tools, dist: &'a Dist) -> Self {
        let llvm =
            Llvm::all().find(|l| l.runs_project_plugins()).expect("a release runs the project's plugins");
        Toolchain::new(llvm, tools, dist)
    }

    /// Every supported release's toolchain, oldest first.
    pub fn all(tools: &'a Tools, dist: &'a Dist) -> impl Iterator<Item = Toolchain<'a>> {
        Llvm::all().map(move |llvm| Toolchain::new(llvm, tools, dist))
    }

    /// The tools located for every release (and those every toolchain shares: the packager,
    /// `llvm-ar`).
    pub fn tools(&self) -> &'a Tools {
        self.tools
    }

    /// The programs and runtime of its own release.
    pub fn release(&self) -> &'a ReleaseTools {
        self.tools.of(self.llvm)
    }

    /// The dist tree it links against.
    pub fn dist(&self) -> &'a Dist {
        self.dist
    }

    /// For reports: the compiler and the runtime programs run with.
    pub fn describe(&self) -> String {
        let major = self.llvm.major;
        match self.llvm.runtime {
            Runtime::ProjectPlugins => {
                format!("clang {major} through libomptarget 16 and the project's plugin")
            }
            Runtime::Stock { .. } => {
                format!("clang {major} through its stock libomptarget {major} (no plugin of the project)")
            }
        }
    }

    /// The C or C++ driver for `source`.
    pub fn compiler(&self, source: &str) -> &'a Path {
        let release = self.release();
        if is_fortran(source) {
            let flang = self.tools.of(self.fortran()).flang.as_deref();
            return flang.expect("a release with flang has it located");
        }
        if source.ends_with(".cpp") {
            &release.clangxx
        } else {
            &release.clang
        }
    }

    /// The release whose flang compiles this toolchain's Fortran units: its own where its flang
    /// compiles the programs ([`Release::flang`]), else the newest that does (docs/fortran.md).
    ///
    /// [`Release::flang`]: crate::llvm::Release::flang
    pub fn fortran(&self) -> Llvm {
        if self.llvm.flang {
            self.llvm
        } else {
            Llvm::fortran().expect("a release whose flang compiles the programs")
        }
    }

    /// The offload packager that reads what this clang links: LLVM 19's, or the release's own
    /// where LLVM 19's cannot read its offload binaries.
    pub fn packager(&self) -> &'a Path {
        self.release().packager.as_deref().unwrap_or(&self.tools.packager)
    }

    /// `opt` of the same release, which reads the IR this clang writes.
    pub fn opt(&self) -> &'a Path {
        &self.release().opt
    }

    /// The flags that compile and link OpenMP code for `target` (before the program's own flags).
    ///
    /// A stock runtime's `omp.h` comes from its own directory (`target/tools/llvm22`). A DeviceRTL
    /// built from source ([`DeviceRtl::FromSource`], LLVM 22): nvptx64 links its bitcode into each
    /// device compile ([`Toolchain::device_link_args`] gives the device link its
    /// `libompdevice.a`); amdgcn is compiled `-nogpulib`: clang 22 emits code object v6, whose ROCm
    /// device libraries (`oclc_abi_version_600`) Debian 12 lacks, and the flag also drops the
    /// DeviceRTL, which [`Toolchain::device_link_args`] then links by name (`docs/gpu-devicertl.md`).
    pub fn offload_args(&self, target: &OffloadTarget) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["-fopenmp".into()];
        match target.vendor() {
            Vendor::Nvidia => {
                args.push(format!("--offload-arch={}", target.arch).into());
                args.push(prefixed("--cuda-path=", &self.tools.cuda));
            }
            Vendor::Amd => args.push(format!("--offload-arch={}", target.arch).into()),
            Vendor::Host => args.push(format!("-fopenmp-targets={}", target.triple()).into()),
        }
        let release = self.release();
        match (self.llvm.device_rtl, &release.device_rtl, target.vendor()) {
            (DeviceRtl::Debian, _, Vendor::Nvidia) => {
                args.push(prefixed(NVPTX_DEVICE_RTL_FLAG, &self.debian_lib()))
            }
            (DeviceRtl::Debian, _, Vendor::Amd) => {
                args.push(prefixed("--rocm-device-lib-path=", &self.tools.rocm_device_libs))
            }
            (DeviceRtl::FromSource { .. }, Some(built), Vendor::Nvidia) => {
                args.push(prefixed(NVPTX_DEVICE_RTL_FLAG, &built.join(target.triple())))
            }
            // amdgcn with a DeviceRTL built from source: linked by name (device_link_args); no
            // DeviceRTL at all: device IR only.
            (DeviceRtl::FromSource { .. }, _, Vendor::Amd) | (DeviceRtl::None, _, _) if target.is_gpu() => {
                args.push("-nogpulib".into())
            }
            _ => {}
        }
        if let Some(openmp) = &release.openmp {
            args.push("-isystem".into());
            args.push(openmp.join("include").into());
        }
        args
    }

    /// The flags a link for `target` needs beyond [`Toolchain::offload_args`]: where clang 22's
    /// linker wrapper finds LLVM 22's `libompdevice.a` (a compile with `-c` would call the flag
    /// unused), and for amdgcn, whose `-nogpulib` leaves it out, the library itself.
    pub fn device_link_args(&self, target: &OffloadTarget) -> Vec<OsString> {
        let Some(built) = &self.release().device_rtl else { return Vec::new() };
        let mut args = vec!["-Xoffload-linker".into(), prefixed("-L", &built.join(target.triple()))];
        match target.vendor() {
            Vendor::Nvidia => args,
            Vendor::Amd => {
                args.extend(["-Xoffload-linker".into(), "-lompdevice".into()]);
                args
            }
            Vendor::Host => Vec::new(),
        }
    }

    /// The flag that loads the pass plugin (and the frontend plugin) into every compile: the dist tree's
    /// configuration file for this release, as users are told to pass it.
    pub fn pass_plugin_args(&self) -> Vec<OsString> {
        vec![prefixed("--config=", &self.dist.clang_config(self.llvm))]
    }

    /// [`Toolchain::pass_plugin_args`] for a unit in `source`'s language: flang's own
    /// configuration file for Fortran.
    pub fn pass_plugin_args_for(&self, source: &str) -> Vec<OsString> {
        if is_fortran(source) {
            vec![prefixed("--config=", &self.dist.flang_config(self.fortran()))]
        } else {
            self.pass_plugin_args()
        }
    }

    /// [`Toolchain::offload_args`] for a unit in `source`'s language. flang takes no C include
    /// directory; a Fortran unit finds the `omptarget_indirect` module in the dist tree (which the
    /// configuration file also says, but the builds without it need it too).
    pub fn offload_args_for(&self, target: &OffloadTarget, source: &str) -> Vec<OsString> {
        let mut args = self.offload_args(target);
        if is_fortran(source) {
            if let Some(at) = args.iter().position(|a| a == "-isystem") {
                args.drain(at..at + 2);
            }
            // flang takes no --cuda-path (it finds CUDA through the ptxas on PATH:
            // `fortran_path`) nor a DeviceRTL bitcode path: the link finds the DeviceRTL's
            // archive (`device_link_args`).
            args.retain(|a| {
                let a = a.to_string_lossy();
                !a.starts_with("--cuda-path=") && !a.starts_with(NVPTX_DEVICE_RTL_FLAG)
            });
            args.push(prefixed("-I", &self.dist.fortran_module_dir(self.fortran())));
        }
        args
    }

    /// What a flang compile or link for `target` needs in its environment: for nvptx, `PATH`
    /// with the CUDA tools' `bin` first. flang takes no `--cuda-path`: it finds the CUDA
    /// installation through the `ptxas` on `PATH` (by its real path; without one, flang 22 picks
    /// PTX ISA 4.2, which sm_90 refuses, and flang 23 stops); `None` elsewhere.
    pub fn fortran_path(&self, target: &OffloadTarget) -> Option<OsString> {
        if target.vendor() != Vendor::Nvidia {
            return None;
        }
        let mut path = OsString::from(self.tools.cuda.join("bin"));
        if let Some(rest) = std::env::var_os("PATH") {
            path.push(":");
            path.push(rest);
        }
        Some(path)
    }

    /// The flags of a build with the pass plugin alone, loaded directly instead of through the
    /// configuration file (which also loads the frontend plugin): the negative control of the
    /// programs that need the frontend plugin.
    pub fn pass_plugin_only_args(&self) -> Vec<OsString> {
        vec![prefixed("-fpass-plugin=", &self.dist.pass_plugin(self.llvm))]
    }

    /// The flags of a build whose host compiles the pass plugin does not run in: both plugins
    /// loaded directly, the pass plugin into the device compiles alone (`-Xarch_device`). The
    /// negative control of what its host side does (vtable records, an entry per function).
    pub fn device_only_pass_plugin_args(&self) -> Vec<OsString> {
        vec![
            prefixed("-fplugin=", &self.dist.frontend_plugin(self.llvm)),
            "-Xarch_device".into(),
            prefixed("-fpass-plugin=", &self.dist.pass_plugin(self.llvm)),
        ]
    }

    /// The pass plugin the configuration file loads.
    pub fn pass_plugin(&self) -> PathBuf {
        self.dist.pass_plugin(self.llvm)
    }

    /// The link flags after the program's objects when no configuration file links for it (as
    /// pkg-config gives them): where libomptarget (16, or the stock release's) and libomp are,
    /// then the device library, and with a stock runtime the registration library and its rpath
    /// (the vtables, and LLVM 21's x86_64 table).
    pub fn link_args(&self) -> Vec<OsString> {
        let mut args = self.runtime_link_args();
        args.extend([prefixed("-L", &self.dist.lib_dir()), "-lomptarget-indirect".into()]);
        if self.llvm.needs_register() {
            args.push("-lomptarget-indirect-register".into());
            args.push(prefixed("-Wl,-rpath,", &self.dist.lib_dir()));
        }
        args
    }

    /// The link flags of a link that passes [`Toolchain::pass_plugin_args`] too: clang 22's
    /// configuration file links the device library itself ([`Release::config_links`]), and
    /// naming the archive twice would put its device code in the image twice (duplicate
    /// symbols); clang 19's cannot.
    ///
    /// [`Release::config_links`]: crate::llvm::Release::config_links
    pub fn link_args_with_config(&self) -> Vec<OsString> {
        if self.llvm.config_links {
            self.runtime_link_args()
        } else {
            self.link_args()
        }
    }

    /// Where libomptarget (16) or a stock runtime's libomp is found, when its clang does not
    /// find it itself.
    pub fn runtime_link_args(&self) -> Vec<OsString> {
        let runtime = match (self.llvm.runtime, &self.release().openmp) {
            (Runtime::ProjectPlugins, _) => Some(self.tools.plugins_runtime_lib.clone()),
            (Runtime::Stock { .. }, openmp) => openmp.as_ref().map(|openmp| openmp.join("lib")),
        };
        runtime.map(|runtime| prefixed("-L", &runtime)).into_iter().collect()
    }

    /// The environment a program needs to run: with the project's plugins, our plugin directory
    /// first, then LLVM 16's runtime (which holds no plugin of its own); with a stock runtime,
    /// nothing but mandatory offload (the libraries are installed, and no directory of ours is on
    /// the path).
    pub fn run_env(&self) -> Vec<(&'static str, OsString)> {
        let mandatory = ("OMP_TARGET_OFFLOAD", OsString::from("MANDATORY"));
        match self.llvm.runtime {
            Runtime::ProjectPlugins => {
                let mut path = OsString::from(self.dist.lib_dir());
                path.push(":");
                path.push(&self.tools.plugins_runtime_lib);
                vec![("LD_LIBRARY_PATH", path), mandatory]
            }
            Runtime::Stock { .. } => vec![mandatory],
        }
    }

    /// The libomptarget an executable must depend on (`DT_NEEDED`): clang 19 silently links its
    /// own `libomptarget.so.19.1` when `-L` finds nothing.
    pub fn libomptarget_soname(&self) -> &'static str {
        match self.llvm.runtime {
            Runtime::ProjectPlugins => "libomptarget.so.16",
            Runtime::Stock { soname, .. } => soname,
        }
    }

    /// The libomptarget file, for rebuilding what was linked against an older one.
    pub fn libomptarget(&self) -> PathBuf {
        self.release().libomptarget.clone()
    }

    /// Where the end-to-end programs of `target` are built: `target/tests/<e2e tree>/<target>`
    /// ([`Release::e2e_tree`]).
    ///
    /// [`Release::e2e_tree`]: crate::llvm::Release::e2e_tree
    pub fn e2e_dir(&self, workspace: &Path, target: &OffloadTarget) -> PathBuf {
        workspace.join("target/tests").join(self.llvm.e2e_tree).join(&target.name)
    }

    /// The command that runs `exe`, an executable this toolchain linked: through the root's
    /// `enter` when the release lives in a root of its own ([`Release::root`]).
    ///
    /// [`Release::root`]: crate::llvm::Release::root
    pub fn run_command(&self, exe: &Path) -> std::process::Command {
        self.release().run_command(exe)
    }

    /// Debian's `lib/` of this release (its per-architecture DeviceRTL bitcode: clang 19 does not
    /// find it for nvptx by itself).
    fn debian_lib(&self) -> PathBuf {
        self.release().clang.ancestors().nth(2).map(|p| p.join("lib")).unwrap_or_default()
    }
}

fn prefixed(flag: &str, path: &Path) -> OsString {
    let mut arg = OsString::from(flag);
    arg.push(path);
    arg
}

/// Whether `source` is Fortran (`.f90`, or `.F90`, which flang preprocesses).
pub fn is_fortran(source: &str) -> bool {
    source.ends_with(".f90") || source.ends_with(".F90")
}

/// Where a compile of `source` writes the module files of the modules it defines: `dir` for
/// Fortran (`-module-dir`; flang writes them into the current directory otherwise), nothing for
/// other languages.
pub fn module_dir_args(source: &str, dir: &Path) -> Vec<OsString> {
    if is_fortran(source) {
        vec!["-module-dir".into(), dir.into()]
    } else {
        Vec::new()
    }
}
