//! The LLVM releases the project supports: what differs between them in names of built files.

/// An LLVM release the project builds its pass plugin for and runs its programs with (ordered
/// oldest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Llvm {
    /// clang 19 with LLVM 16's libomptarget and the project's plugins.
    V19,
    /// clang 22 with its own libomptarget 22.
    V22,
}

impl Llvm {
    /// Every supported release, oldest first.
    pub const ALL: [Llvm; 2] = [Llvm::V19, Llvm::V22];

    /// The major version, as in `clang-19`.
    pub fn major(self) -> &'static str {
        match self {
            Llvm::V19 => "19",
            Llvm::V22 => "22",
        }
    }

    /// The pass plugin's cargo feature (`compiler/pass-plugin/Cargo.toml`).
    pub fn pass_plugin_feature(self) -> &'static str {
        match self {
            Llvm::V19 => "llvm19",
            Llvm::V22 => "llvm22",
        }
    }

    /// The pass plugin's file name in `target/dist/lib` (clang refuses a plugin of another
    /// release, so there is one per release).
    pub fn pass_plugin_file(self) -> &'static str {
        match self {
            Llvm::V19 => "libomptarget-indirect-pass.so",
            Llvm::V22 => "libomptarget-indirect-pass-llvm22.so",
        }
    }

    /// The text of the clang configuration file (`--config=`), with paths relative to the file's
    /// own directory (`<CFGDIR>`, clang 16+) in a tree laid out as `target/dist` and an install
    /// prefix are: `share/omptarget-indirect/` beside `lib/`, so the tree works wherever it is.
    /// It loads the frontend plugin into every compile (it acts in device compiles only: clang
    /// forwards no `-fplugin=` to one side alone), when the tree has one (`frontend`), and the
    /// pass plugin into the device compiles; clang 22's also links the device library
    /// (`$`-prefixed lines apply only to links, LLVM 20+; `$-L` is ignored there, `$-Wl,-L` is not).
    pub fn clang_config(self, frontend: bool) -> String {
        let mut text = format!(
            "# omptarget-indirect for clang {major}: loads the frontend plugin, which makes device compiles\n\
             # define what host code hands to device code (indirect functions, vtables), and the pass plugin\n\
             # into the device compiles (every -O level, -foffload-lto too), so that indirect calls in device\n\
             # code reach the device copies.\n",
            major = self.major(),
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
        text.push_str(&format!(
            "-Xarch_device -fpass-plugin=<CFGDIR>/../../lib/{}\n",
            self.pass_plugin_file()
        ));
        match self {
            Llvm::V19 => text.push_str(
                "# clang 19 cannot hold link-only options here: link with -L<prefix>/lib -lomptarget-indirect.\n",
            ),
            Llvm::V22 => text.push_str(
                "# Links the device library (link steps only).\n$-Wl,-L<CFGDIR>/../../lib\n$-lomptarget-indirect\n\
                 # Links, ahead of libomptarget, the library that adds the images' vtables to the table\n\
                 # libomptarget builds (docs/virtual.md).\n\
                 $-lomptarget-indirect-register\n$-Wl,-rpath,<CFGDIR>/../../lib\n",
            ),
        }
        text
    }

    /// The frontend plugin's file name in `target/dist/lib` (built against this release's clang
    /// headers and `libclang-cpp`; clang loads only a plugin of its own release).
    pub fn frontend_plugin_file(self) -> &'static str {
        match self {
            Llvm::V19 => "libomptarget-indirect-frontend-llvm19.so",
            Llvm::V22 => "libomptarget-indirect-frontend-llvm22.so",
        }
    }

    /// The clang configuration file's name in `target/dist/share/omptarget-indirect`.
    pub fn clang_config_file(self) -> String {
        format!("clang-{}.cfg", self.major())
    }
}

/// The flang configuration file's name in `share/omptarget-indirect` (flang 22 only: flang 19
/// cannot compile the programs, docs/fortran.md).
pub const FLANG_CONFIG_FILE: &str = "flang-22.cfg";

/// Where the `omptarget_indirect` module file flang 22 reads lies, under the tree's root.
pub const FORTRAN_MODULE_DIR: &str = "include/omptarget-indirect/flang-22";

/// The text of flang 22's configuration file (`--config=`), paths relative to its directory as in
/// [`Llvm::clang_config`]. flang has no `-Xarch_device`: the pass plugin is loaded into the host
/// compile too, where it adds the indirect entries of the procedures named through the
/// `omptarget_indirect` module, whose module file `-I` finds.
pub fn flang_config() -> String {
    format!(
        "# omptarget-indirect for flang 22: loads the pass plugin into the host and device compiles (the\n\
         # host side adds the indirect entries of the procedures named through `use omptarget_indirect`),\n\
         # finds that module, and links the device library (link steps only).\n\
         -fpass-plugin=<CFGDIR>/../../lib/{plugin}\n\
         -I<CFGDIR>/../../{FORTRAN_MODULE_DIR}\n\
         $-Wl,-L<CFGDIR>/../../lib\n\
         $-lomptarget-indirect\n",
        plugin = Llvm::V22.pass_plugin_file(),
    )
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
    /// an `llvm-config` itself. Fails, naming the path, when there is no `llvm-config` there or it
    /// is of a release the project does not build for.
    pub fn probe(dir: &std::path::Path) -> anyhow::Result<LlvmInstall> {
        use anyhow::{bail, Context};
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
        let release = match version.split('.').next() {
            Some("19") => Llvm::V19,
            Some("22") => Llvm::V22,
            _ => bail!(
                "{} is LLVM {version}: omptarget-indirect builds for LLVM 19 and 22 (its pass plugin \
                 uses each release's C++ API)",
                llvm_config.display()
            ),
        };
        Ok(LlvmInstall {
            release,
            version,
            bin: query("--bindir")?.into(),
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
                 --libdir) echo {d}/lib;; --includedir) echo {d}/include;; esac\n",
                d = dir.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    #[test]
    fn a_configuration_file_loads_the_frontend_plugin_only_when_there_is_one() {
        for llvm in Llvm::ALL {
            let with = llvm.clang_config(true);
            assert!(with.contains(&format!("-fplugin=<CFGDIR>/../../lib/{}", llvm.frontend_plugin_file())));
            let without = llvm.clang_config(false);
            assert!(!without.lines().any(|l| l.starts_with("-fplugin")), "{without}");
            assert!(without.contains(llvm.pass_plugin_file()));
        }
    }

    /// The release comes from `llvm-config`; an unsupported one, or none, is refused.
    #[test]
    fn the_release_is_read_from_llvm_config() {
        let dir = fake_llvm("22.1.8");
        for given in [dir.clone(), dir.join("bin"), dir.join("bin/llvm-config")] {
            let llvm = LlvmInstall::probe(&given).unwrap();
            assert_eq!((llvm.release, llvm.version.as_str()), (Llvm::V22, "22.1.8"));
            assert_eq!(llvm.tool("clang"), dir.join("bin/clang"));
            assert_eq!(llvm.include, dir.join("include"));
        }
        std::fs::remove_dir_all(dir).unwrap();

        // In the same test: a fake written while another test's thread forks can be held open for
        // writing by that child, and running it then fails with "text file busy".
        let dir = fake_llvm("21.1.0");
        let err = LlvmInstall::probe(&dir).unwrap_err().to_string();
        assert!(err.contains("LLVM 21.1.0") && err.contains("19 and 22"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
        let err = LlvmInstall::probe(Path::new("/nonexistent/llvm")).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/llvm") && err.contains("no bin/llvm-config"), "{err}");
    }
}
