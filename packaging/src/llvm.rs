//! The LLVM releases the project supports, one record each ([`RELEASES`]): what each is called,
//! which plugins and files the dist tree gets for it, which offload runtime runs its programs,
//! where its GPU DeviceRTL comes from, and which requirements the setup installs for it. Code
//! elsewhere reads these fields instead of naming a release; adding one is an entry here plus
//! what truly differs in C++ (`docs/llvm.md`'s checklist).

pub use crate::release_record::{DeviceRtl, Release, Runtime, PROJECT_PLUGINS_RUNTIME, RELEASES};

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
}
