//! The LLVM releases the project supports, one record each ([`RELEASES`]): what each is called,
//! which plugins and files the dist tree gets for it, which offload runtime runs its programs,
//! where its GPU DeviceRTL comes from, and which requirements the setup installs for it. Code
//! elsewhere reads these fields instead of naming a release; adding one is an entry here plus
//! what truly differs in C++ (`docs/llvm.md`'s checklist).

/// The requirement (`scripts/requirements.txt`) of LLVM 16's `libomptarget.so.16`, the runtime
/// of [`Runtime::ProjectPlugins`].
pub const PROJECT_PLUGINS_RUNTIME: &str = "libomptarget-16";

/// The offload runtime that runs the programs a release's clang builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// LLVM 16's libomptarget (`scripts/fetch-llvm16-runtime.sh`), which loads this project's
    /// plugins (`libomptarget.rtl.*.so`): they install the function-pointer map. (clang 19's own
    /// libomptarget 19 loads no plugin from outside.)
    ProjectPlugins,
    /// The release's own stock libomptarget, which loads nothing of ours and fills its table in
    /// `__omp_rtl_device_environment`; `libomptarget-indirect-register.so` adds the vtables.
    Stock {
        /// The requirement (`scripts/requirements.txt`) of its shared library.
        library: &'static str,
        /// Its soname, which executables must depend on.
        soname: &'static str,
        /// The requirement of the release's `omp.h`, under a directory with `include/` and
        /// `lib/libomp.so` (a release's libomp package conflicts with another's), when its clang
        /// does not find them itself (Debian 12's clang 22; a release in a root of its own has its
        /// own).
        openmp: Option<&'static str>,
        /// Whether it fills its table of indirect functions for the x86_64 host-offload device
        /// too (LLVM 22+: libomptarget does it for every device; LLVM 18-21: only the GPU plugins
        /// do, and the registration library installs the project's table when the device image
        /// loads: `host-plugin/register/src/x86_64_table.rs`).
        fills_x86_64_table: bool,
        /// Whether its x86_64 host plugin calls a kernel with one argument array (`void
        /// kernel(void **args)`, LLVM 23+) rather than each argument in its place (libffi, LLVM
        /// 22): flang's kernels, built as GPU kernels, then run only through the adapter the pass
        /// plugin gives them (`compiler/pass-plugin/src/flang_kernels.rs`, whose build script
        /// enables it from LLVM 23 on).
        kernels_take_argument_array: bool,
    },
}

/// Where a release's GPU DeviceRTL comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceRtl {
    /// Debian's per-architecture bitcode in the release's `lib/` (`libomptarget-nvptx-sm_90.bc`),
    /// with the ROCm device libraries for amdgcn (code object v5).
    Debian,
    /// Built from LLVM's source by a script (Debian ships none): one directory per triple holding
    /// `libomptarget-{nvptx,amdgpu}.bc` and `libompdevice.a`. amdgcn compiles are `-nogpulib`
    /// (code object v6, whose ROCm device libraries Debian 12 lacks) and link `-lompdevice`.
    FromSource {
        /// The requirement of its nvptx64 bitcode, `<dir>/lib/nvptx64-nvidia-cuda/...`.
        nvptx: &'static str,
    },
    /// None yet (Debian sid ships none for 21 or 23, and none is built from source): GPU
    /// compiles are device IR only (`-nogpulib`), no GPU image is linked.
    None,
}

/// What the project knows of one LLVM release.
#[derive(Debug, PartialEq, Eq)]
pub struct Release {
    /// The major version, as in `clang-22`.
    pub major: &'static str,
    /// The version the suite runs (Debian's package of it), which the EasyBuild recipe names.
    pub tested_version: &'static str,
    /// The requirement of the `enter` program of the root it lives in, when its packages need
    /// another C library than the machine's (Debian sid's LLVM 21 and 23,
    /// `scripts/sid-llvm-root.sh`): its programs are wrappers that run in the root, and the
    /// executables it links run through `enter`. `None`: Debian 12's own packages.
    pub root: Option<&'static str>,
    /// The offload runtime its programs run with.
    pub runtime: Runtime,
    /// Its GPU DeviceRTL.
    pub device_rtl: DeviceRtl,
    /// The pass plugin's file name in `lib/` (clang refuses a plugin of another release, so
    /// there is one per release; LLVM 19's keeps its first, unsuffixed name).
    pub pass_plugin_file: &'static str,
    /// Whether its flang compiles the Fortran programs (flang 19 rejects `indirect`:
    /// docs/fortran.md); the dist tree then holds its `flang-NN.cfg` and module file.
    pub flang: bool,
    /// Whether its flang compiles a type-bound procedure call in a target region (flang 21 and
    /// 22 stop: `cannot find binding`, `failed to legalize operation 'fir.dispatch'`).
    pub flang_type_bound_calls: bool,
    /// Whether its clang configuration files take link-only lines (`$`-prefixed, LLVM 20+): the
    /// configuration file then links the device library and the registration library itself.
    pub config_links: bool,
    /// The GPU architectures the suite builds its end-to-end programs for and checks the images of.
    pub gpu_check_archs: &'static [&'static str],
    /// Where its end-to-end programs are built, under `target/tests`.
    pub e2e_tree: &'static str,
    /// Whether its stock clang inserts LLVM's own lookup (`__llvm_omp_indirect_call_lookup`)
    /// before virtual calls in device code (LLVM 23): the pass plugin makes those calls the
    /// project's translation, and stock kernels keep indirect calls the project folds.
    pub inserts_own_lookup: bool,
    /// Its NVPTX target's data layout (what its clang writes in nvptx64 modules).
    pub nvptx_data_layout: &'static str,
    /// What its clang prints when it compiles inline functions of `begin declare target indirect`
    /// without the frontend plugin, and what that means: (text to find, words for reports).
    pub inline_indirect_without_frontend: (&'static str, &'static str),
    /// For LLVM's unreleased main branch: the version of the Debian experimental snapshot (source
    /// package `llvm-toolchain-snapshot`, `1:24~++<date><time>+<commit>-1~exp1`) its root is made
    /// of, pinned (`scripts/sid-llvm-root.sh` names the same: a unit test compares them).
    pub snapshot: Option<&'static str>,
}

/// Every supported release, oldest first. The oldest writes the shared device images and the fat
/// library (LLVM reads bitcode and offload binaries of older releases, never newer).
pub const RELEASES: [Release; 5] = [
    Release {
        major: "19",
        tested_version: "19.1.7",
        root: None,
        runtime: Runtime::ProjectPlugins,
        device_rtl: DeviceRtl::Debian,
        pass_plugin_file: "libomptarget-indirect-pass.so",
        flang: false,
        flang_type_bound_calls: false,
        config_links: false,
        gpu_check_archs: &["sm_90", "gfx90a"],
        e2e_tree: "e2e",
        nvptx_data_layout: "e-i64:64-i128:128-v16:16-v32:32-n16:32:64",
        inserts_own_lookup: false,
        inline_indirect_without_frontend: ("Stack dump", "clang 19 crashes"),
        snapshot: None,
    },
    Release {
        major: "21",
        tested_version: "21.1.8",
        root: Some("sid-llvm21-enter"),
        runtime: Runtime::Stock {
            library: "libomptarget-21",
            soname: "libomptarget.so.21.1",
            openmp: None,
            fills_x86_64_table: false,
            kernels_take_argument_array: false,
        },
        device_rtl: DeviceRtl::FromSource { nvptx: "llvm21-devicertl-nvptx" },
        pass_plugin_file: "libomptarget-indirect-pass-llvm21.so",
        flang: true,
        flang_type_bound_calls: false,
        config_links: true,
        gpu_check_archs: &["sm_90", "gfx90a"],
        e2e_tree: "e2e-llvm21",
        nvptx_data_layout: "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64",
        inserts_own_lookup: false,
        inline_indirect_without_frontend: ("Stack dump", "clang 21 crashes"),
        snapshot: None,
    },
    Release {
        major: "22",
        tested_version: "22.1.8",
        root: None,
        runtime: Runtime::Stock {
            library: "libomptarget-22",
            soname: "libomptarget.so.22.1",
            openmp: Some("llvm22-omp-h"),
            fills_x86_64_table: true,
            kernels_take_argument_array: false,
        },
        device_rtl: DeviceRtl::FromSource { nvptx: "llvm22-devicertl-nvptx" },
        pass_plugin_file: "libomptarget-indirect-pass-llvm22.so",
        flang: true,
        flang_type_bound_calls: false,
        config_links: true,
        gpu_check_archs: &["sm_90", "gfx90a", "gfx942"],
        e2e_tree: "e2e-llvm22",
        nvptx_data_layout: "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64",
        inserts_own_lookup: false,
        inline_indirect_without_frontend: (
            "the address is invalid",
            "clang 22 stops: the indirect entry's address is invalid",
        ),
        snapshot: None,
    },
    Release {
        major: "23",
        tested_version: "23.1.4",
        root: Some("sid-llvm23-enter"),
        runtime: Runtime::Stock {
            library: "libomptarget-23",
            soname: "libomptarget.so.23.1",
            openmp: None,
            fills_x86_64_table: true,
            kernels_take_argument_array: true,
        },
        // Built from 23.1.1's source: the archive does not serve 23.1.4's (same release branch).
        device_rtl: DeviceRtl::FromSource { nvptx: "llvm23-devicertl-nvptx" },
        pass_plugin_file: "libomptarget-indirect-pass-llvm23.so",
        flang: true,
        flang_type_bound_calls: true,
        config_links: true,
        gpu_check_archs: &["sm_90", "gfx90a"],
        e2e_tree: "e2e-llvm23",
        nvptx_data_layout: "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64",
        inserts_own_lookup: true,
        inline_indirect_without_frontend: (
            "the address is invalid",
            "clang 23 stops: the indirect entry's address is invalid",
        ),
        snapshot: None,
    },
    Release {
        major: "24",
        tested_version: "24.0.0",
        root: Some("sid-llvm24-enter"),
        runtime: Runtime::Stock {
            library: "libomptarget-24",
            soname: "libomptarget.so.24.0",
            openmp: None,
            fills_x86_64_table: true,
            kernels_take_argument_array: true,
        },
        // Debian serves no source of the snapshot's packages to build one from.
        device_rtl: DeviceRtl::None,
        pass_plugin_file: "libomptarget-indirect-pass-llvm24.so",
        flang: true,
        flang_type_bound_calls: true,
        config_links: true,
        gpu_check_archs: &[],
        e2e_tree: "e2e-llvm24",
        nvptx_data_layout: "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64",
        inserts_own_lookup: true,
        inline_indirect_without_frontend: (
            "the address is invalid",
            "clang 24 stops: the indirect entry's address is invalid",
        ),
        snapshot: Some("1:24~++20261025103442+7e3c57157096-1~exp1"),
    },
];

/// A supported LLVM release: a handle on its [`Release`] record (ordered oldest first).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Llvm(usize);

impl std::fmt::Debug for Llvm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LLVM {}", self.major)
    }
}

impl std::ops::Deref for Llvm {
    type Target = Release;
    fn deref(&self) -> &Release {
        &RELEASES[self.0]
    }
}

impl Llvm {
    /// Every supported release, oldest first.
    pub fn all() -> impl DoubleEndedIterator<Item = Llvm> + Clone {
        (0..RELEASES.len()).map(Llvm)
    }

    /// The newest release.
    pub fn newest() -> Llvm {
        Llvm(RELEASES.len() - 1)
    }

    /// The oldest release: its tools build what every release shares (device images, the fat
    /// library, the GPU bundle's kernels).
    pub fn oldest() -> Llvm {
        Llvm(0)
    }

    /// The release of major version `major`, if supported.
    pub fn of_major(major: &str) -> Option<Llvm> {
        Llvm::all().find(|l| l.major == major)
    }

    /// The release of major version `major`; panics if it is not supported (a programming error:
    /// a fixed version named in code).
    pub fn major_version(major: &str) -> Llvm {
        Llvm::of_major(major).unwrap_or_else(|| panic!("LLVM {major} is not in llvm::RELEASES"))
    }

    /// The supported majors, as `19, 21, 22, 23`: for messages.
    pub fn list() -> String {
        Llvm::all().map(|l| l.major).collect::<Vec<_>>().join(", ")
    }

    /// The pass plugin's cargo feature (`compiler/pass-plugin/Cargo.toml`).
    pub fn pass_plugin_feature(self) -> String {
        format!("llvm{}", self.major)
    }

    /// The frontend plugin's file name in `lib/` (built against this release's clang headers and
    /// `libclang-cpp`; clang loads only a plugin of its own release).
    pub fn frontend_plugin_file(self) -> String {
        format!("libomptarget-indirect-frontend-llvm{}.so", self.major)
    }

    /// The clang configuration file's name in `share/omptarget-indirect`.
    pub fn clang_config_file(self) -> String {
        format!("clang-{}.cfg", self.major)
    }

    /// The flang configuration file's name in `share/omptarget-indirect` ([`Release::flang`]).
    pub fn flang_config_file(self) -> String {
        format!("flang-{}.cfg", self.major)
    }

    /// Where the `omptarget_indirect` module file this release's flang reads lies, under the
    /// tree's root.
    pub fn fortran_module_dir(self) -> String {
        format!("include/omptarget-indirect/flang-{}", self.major)
    }

    /// The name of program `tool` of this release in `scripts/requirements.txt` (`clang-22`).
    pub fn requirement(self, tool: &str) -> String {
        format!("{tool}-{}", self.major)
    }

    /// Every line of `scripts/requirements.txt` the suite needs for this release: its programs
    /// (clang, clang++, opt, llc, llvm-link, llvm-extract, llvm-config, and flang where
    /// [`Release::flang`]),
    /// its runtime's files and its DeviceRTL built from source. The setup installs them.
    pub fn requirements(self) -> Vec<String> {
        let mut names: Vec<String> =
            ["clang", "clang++", "opt", "llc", "llvm-link", "llvm-extract", "llvm-config"]
                .into_iter()
                .chain(self.flang.then_some("flang"))
                .map(|tool| self.requirement(tool))
                .collect();
        match self.runtime {
            Runtime::ProjectPlugins => names.push(PROJECT_PLUGINS_RUNTIME.into()),
            Runtime::Stock { library, openmp, .. } => {
                names.push(library.into());
                names.extend(openmp.map(String::from));
            }
        }
        if let DeviceRtl::FromSource { nvptx } = self.device_rtl {
            names.push(nvptx.into());
        }
        names.extend(self.root.map(String::from));
        names
    }

    /// The release whose flang compiles the Fortran programs: the newest with [`Release::flang`].
    pub fn fortran() -> Option<Llvm> {
        Llvm::fortran_releases().next_back()
    }

    /// Every release whose flang compiles the Fortran programs (each has its module file and
    /// `flang-NN.cfg` in the dist tree), oldest first.
    pub fn fortran_releases() -> impl DoubleEndedIterator<Item = Llvm> {
        Llvm::all().filter(|l| l.flang)
    }

    /// Whether its programs run with the project's libomptarget 16 plugins.
    pub fn runs_project_plugins(self) -> bool {
        self.runtime == Runtime::ProjectPlugins
    }

    /// Whether this project installs the x86_64 device's table: its plugins do, or the
    /// registration library where the stock runtime fills none
    /// ([`Runtime::Stock::fills_x86_64_table`]). The plugins' switches (`OMPTARGET_INDIRECT_MAP`,
    /// `OMPTARGET_INDIRECT_INDEX`) then apply.
    pub fn project_installs_x86_64_map(self) -> bool {
        match self.runtime {
            Runtime::ProjectPlugins => true,
            Runtime::Stock { fills_x86_64_table, .. } => !fills_x86_64_table,
        }
    }

    /// Whether stock flang's x86_64 kernels cannot run on its runtime at all
    /// ([`Runtime::Stock::kernels_take_argument_array`]).
    pub fn stock_flang_kernels_fail_on_x86_64(self) -> bool {
        matches!(self.runtime, Runtime::Stock { kernels_take_argument_array: true, .. })
    }

    /// The reference release: the newest with a GPU DeviceRTL whose stock clang builds every
    /// program the demo and the stock-parity corpus compare the project with (stock clang 23
    /// cannot link an x86_64 program with a virtual call: [`Release::inserts_own_lookup`]). The
    /// demo's, the corpus's, and the one whose DeviceRTL says what a GPU link provides.
    pub fn reference() -> Llvm {
        Llvm::all()
            .filter(|l| l.device_rtl != DeviceRtl::None && !l.inserts_own_lookup)
            .next_back()
            .expect("a release with a DeviceRTL whose stock clang inserts no lookup")
    }

    /// Whether the dist tree needs `libomptarget-indirect-register.so` for it (a stock runtime).
    pub fn needs_register(self) -> bool {
        !self.runs_project_plugins()
    }

    /// The link flags pkg-config gives after `-L${libdir}`: what its configuration file links.
    pub fn pkg_config_libs(self) -> &'static str {
        if self.needs_register() {
            "-lomptarget-indirect -lomptarget-indirect-register -Wl,-rpath,${libdir}"
        } else {
            "-lomptarget-indirect"
        }
    }

    /// The text of the clang configuration file (`--config=`), with paths relative to the file's
    /// own directory (`<CFGDIR>`, clang 16+) in a tree laid out as `target/dist` and an install
    /// prefix are: `share/omptarget-indirect/` beside `lib/`, so the tree works wherever it is.
    /// It loads the frontend plugin into every compile (it acts in device compiles only: clang
    /// forwards no `-fplugin=` to one side alone), when the tree has one (`frontend`), and the
    /// pass plugin into host and device compiles (the host side records its vtables); with [`Release::config_links`] it also links the
    /// device library (`$`-prefixed lines apply only to links; `$-L` is ignored there, `$-Wl,-L`
    /// is not).
    pub fn clang_config(self, frontend: bool) -> String {
        let mut text = format!(
            "# omptarget-indirect for clang {major}: loads the frontend plugin, which makes device compiles\n\
             # define what host code hands to device code (indirect functions, vtables), and the pass plugin\n\
             # (every -O level, -foffload-lto too): in device compiles indirect calls then reach the device\n\
             # copies, host compiles record where their vtables are (stripped and hidden ones included).\n",
            major = self.major,
        );
        if frontend {
            text.push_str(&format!("-fplugin=<CFGDIR>/../../lib/{}\n", self.frontend_plugin_file()));
        } else {
            text.push_str(
                "# (No frontend plugin: this LLVM had no clang development headers when it was built; C++\n\
                 # classes that only host code constructs, and inline functions in `begin declare target\n\
                 # indirect`, need it: docs/frontend.md.)\n",
            );
        }
        text.push_str(&format!("-fpass-plugin=<CFGDIR>/../../lib/{}\n", self.pass_plugin_file));
        if !self.config_links {
            text.push_str(&format!(
                "# clang {} cannot hold link-only options here: link with -L<prefix>/lib -lomptarget-indirect.\n",
                self.major
            ));
        } else {
            text.push_str("# Links the device library (link steps only).\n$-Wl,-L<CFGDIR>/../../lib\n$-lomptarget-indirect\n");
            if self.needs_register() {
                text.push_str(
                    "# Links, ahead of libomptarget, the library that adds the images' vtables to libomptarget's\n\
                     # table and installs one table per device with its hash index (docs/virtual.md).\n\
                     $-lomptarget-indirect-register\n$-Wl,-rpath,<CFGDIR>/../../lib\n",
                );
            }
        }
        text
    }

    /// The text of its flang configuration file (`--config=`, [`Release::flang`]), paths relative
    /// to its directory as in [`Llvm::clang_config`]. flang has no `-Xarch_device`: the pass plugin
    /// is loaded into the host compile too, where it adds the indirect entries of the procedures
    /// named through the `omptarget_indirect` module, whose module file `-I` finds.
    pub fn flang_config(self) -> String {
        let mut text = format!(
            "# omptarget-indirect for flang {major}: loads the pass plugin into the host and device compiles (the\n\
             # host side adds the indirect entries of the procedures named through `use omptarget_indirect`),\n\
             # finds that module, and links the device library (link steps only).\n\
             -fpass-plugin=<CFGDIR>/../../lib/{plugin}\n\
             -I<CFGDIR>/../../{module_dir}\n\
             $-Wl,-L<CFGDIR>/../../lib\n\
             $-lomptarget-indirect\n",
            major = self.major,
            plugin = self.pass_plugin_file,
            module_dir = self.fortran_module_dir(),
        );
        if self.needs_register() {
            text.push_str(
                "# Links, ahead of libomptarget, the library that installs one table per device with its\n\
                 # hash index (docs/stock-runtime-table.md).\n\
                 $-lomptarget-indirect-register\n$-Wl,-rpath,<CFGDIR>/../../lib\n",
            );
        }
        text
    }
}

/// An LLVM installation the build is given (`--llvm DIR`): where its programs, libraries and
/// headers are, and its release, read from its own `llvm-config`.
#[derive(Clone, Debug)]
pub struct LlvmInstall {
    /// The supported release it is.
    pub release: Llvm,
    /// `llvm-config --version`, e.g. `22.1.8`.
    pub version: String,
    /// `llvm-config --bindir`.
    pub bin: std::path::PathBuf,
    /// `llvm-config --libdir`.
    pub lib: std::path::PathBuf,
    /// `llvm-config --includedir`.
    pub include: std::path::PathBuf,
    /// Its `llvm-config`.
    pub llvm_config: std::path::PathBuf,
}

impl LlvmInstall {
    /// Reads the LLVM at `dir`: an install prefix (`DIR/bin/llvm-config`), its `bin` directory, or
    /// an `llvm-config` itself. Fails, naming the path and what it found, when there is no
    /// `llvm-config` there, or it is an LLVM the plugins cannot work with
    /// ([`crate::llvm_identity`]: another release, a vendor's, one linked statically).
    pub fn probe(dir: &std::path::Path) -> anyhow::Result<LlvmInstall> {
        use anyhow::{bail, Context};
        // Absolute: the builds it feeds run in other directories (cargo runs build scripts in
        // their package's).
        let dir = &std::path::absolute(dir).with_context(|| format!("{}: no such path", dir.display()))?;
        let llvm_config = [dir.join("bin/llvm-config"), dir.join("llvm-config"), dir.to_path_buf()]
            .into_iter()
            .find(|p| p.is_file())
            .with_context(|| {
                format!("{}: no bin/llvm-config there (give an LLVM install prefix)", dir.display())
            })?;
        let query = |arg: &str| -> anyhow::Result<String> {
            let out = crate::cmd::stdout(std::process::Command::new(&llvm_config).arg(arg))?;
            Ok(out.trim().to_string())
        };
        let version = query("--version")?;
        let bin: std::path::PathBuf = query("--bindir")?.into();
        // What its clang says of itself names a vendor's compiler (the version alone may not).
        let clang_version = std::process::Command::new(bin.join("clang"))
            .arg("--version")
            .output()
            .ok()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
        let release = crate::llvm_identity::release_of(&version, clang_version.as_deref())
            .map_err(|why| anyhow::anyhow!("{} refused: {why}", llvm_config.display()))?;
        let cmake_dir: std::path::PathBuf = query("--cmakedir")?.into();
        for compiler in ["clang", "flang"].map(|name| bin.join(name)) {
            if let Some(why) = crate::llvm_identity::linked_statically(&compiler, &cmake_dir) {
                bail!("{} refused: {why}", llvm_config.display());
            }
        }
        Ok(LlvmInstall {
            release,
            version,
            bin,
            lib: query("--libdir")?.into(),
            include: query("--includedir")?.into(),
            llvm_config,
        })
    }

    /// The program `name` of this LLVM (`clang`, `llvm-ar`, ...).
    pub fn tool(&self, name: &str) -> std::path::PathBuf {
        self.bin.join(name)
    }

    /// One line for what was built with it: `LLVM 22.1.8 (/opt/llvm/22)`.
    pub fn describe(&self) -> String {
        let prefix = self.bin.parent().unwrap_or(&self.bin);
        format!("LLVM {} ({})", self.version, prefix.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_snapshot_release_is_pinned_to_the_version_its_root_is_made_of() {
        let script = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/sid-llvm-root.sh"),
        )
        .unwrap();
        for llvm in Llvm::all() {
            let pin = script
                .lines()
                .find_map(|l| l.strip_prefix(&format!("SNAPSHOT_{}=", llvm.major)))
                .map(|v| v.trim_matches('\''));
            assert_eq!(pin, llvm.snapshot, "LLVM {}", llvm.major);
        }
    }

    /// A directory with a `bin/llvm-config` that answers `version` and its directories.
    fn fake_llvm(version: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir()
            .join(format!("omptarget-indirect-fake-llvm-{version}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let script = dir.join("bin/llvm-config");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ncase $1 in --version) echo {version};; --bindir) echo {d}/bin;; \
                 --libdir) echo {d}/lib;; --includedir) echo {d}/include;; \
                 --cmakedir) echo {d}/lib/cmake/llvm;; esac\n",
                d = dir.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    #[test]
    fn a_configuration_file_loads_the_frontend_plugin_only_when_there_is_one() {
        for llvm in Llvm::all() {
            let with = llvm.clang_config(true);
            assert!(with.contains(&format!("-fplugin=<CFGDIR>/../../lib/{}", llvm.frontend_plugin_file())));
            let without = llvm.clang_config(false);
            assert!(!without.lines().any(|l| l.starts_with("-fplugin")), "{without}");
            assert!(without.contains(llvm.pass_plugin_file));
        }
    }

    #[test]
    fn every_release_needs_only_what_the_requirements_list_names() {
        let listed: Vec<&str> = crate::requirements::all().into_iter().map(|r| r.name).collect();
        for llvm in Llvm::all() {
            for name in llvm.requirements() {
                assert!(
                    listed.contains(&name.as_str()),
                    "{llvm:?} needs {name}, which scripts/requirements.txt lacks"
                );
            }
        }
        // scripts/setup.sh runs the scripts in the list's order: a DeviceRTL built with the clang
        // of a release's root comes after the root.
        let position = |name: &str| listed.iter().position(|l| *l == name).unwrap();
        for llvm in Llvm::all() {
            if let (Some(root), DeviceRtl::FromSource { nvptx }) = (llvm.root, llvm.device_rtl) {
                assert!(position(nvptx) > position(root), "{llvm:?}: {nvptx} is listed before {root}");
            }
        }
        assert_eq!(Llvm::oldest(), Llvm::all().next().unwrap());
        assert!(Llvm::all()
            .zip(Llvm::all().skip(1))
            .all(|(a, b)| a.major.parse::<u32>().unwrap() < b.major.parse::<u32>().unwrap()));
    }

    /// The release comes from `llvm-config`; an unsupported one, or none, is refused.
    #[test]
    fn the_release_is_read_from_llvm_config() {
        let dir = fake_llvm("22.1.8");
        for given in [dir.clone(), dir.join("bin"), dir.join("bin/llvm-config")] {
            let llvm = LlvmInstall::probe(&given).unwrap();
            assert_eq!((llvm.release, llvm.version.as_str()), (Llvm::major_version("22"), "22.1.8"));
            assert_eq!(llvm.tool("clang"), dir.join("bin/clang"));
            assert_eq!(llvm.include, dir.join("include"));
        }
        std::fs::remove_dir_all(dir).unwrap();

        // In the same test: a fake written while another test's thread forks can be held open for
        // writing by that child, and running it then fails with "text file busy".
        let dir = fake_llvm("20.1.8");
        let err = LlvmInstall::probe(&dir).unwrap_err().to_string();
        assert!(err.contains("LLVM 20.1.8") && err.contains(&Llvm::list()), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
        // A prefix laid out as a static build: refused before anything is built.
        let dir = fake_llvm("22.1.8");
        // An ELF executable that needs only the C library, as a static clang needs no libLLVM.
        std::fs::copy("/bin/true", dir.join("bin/clang")).unwrap();
        let err = LlvmInstall::probe(&dir).unwrap_err().to_string();
        assert!(err.contains("linked in statically") && err.contains("bin/clang"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
        let err = LlvmInstall::probe(Path::new("/nonexistent/llvm")).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/llvm") && err.contains("no bin/llvm-config"), "{err}");
    }
}
