//! The release records themselves, data only ([`RELEASES`]): this file imports nothing, so that
//! a build script includes it as it is (the pass plugin's derives its switches from it) and reads
//! the same record as the rest of the project ([`crate::llvm`], which says what each field
//! means to the build, the suite and the install).

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
        /// loads: `stock-runtime/src/x86_64_table.rs`).
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
    /// Whether its clang writes offload entries in their version-1 layout, in
    /// `llvm_offload_entries` (LLVM 20+), rather than `__tgt_offload_entry`'s in
    /// `omp_offloading_entries`: the pass plugin reads and writes them
    /// (`compiler/pass-plugin/src/offload_entries.rs`).
    pub offload_entries_v1: bool,
    /// The version of its pass-plugin API (`LLVM_PLUGIN_API_VERSION`): 2 added a field to
    /// `PassPluginLibraryInfo` (LLVM 22), 3 another (LLVM 24); the pass plugin's Rust mirror of the
    /// struct has the fields of the release's version (`compiler/pass-plugin/src/lib.rs`).
    pub pass_plugin_api: u32,
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
        offload_entries_v1: false,
        pass_plugin_api: 1,
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
        offload_entries_v1: true,
        pass_plugin_api: 1,
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
        offload_entries_v1: true,
        pass_plugin_api: 2,
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
        offload_entries_v1: true,
        pass_plugin_api: 2,
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
        offload_entries_v1: true,
        pass_plugin_api: 3,
        snapshot: Some("1:24~++20261025103442+7e3c57157096-1~exp1"),
    },
];
