//! The one list of what the build, the tests, the demo and an install need from outside the
//! repository (`scripts/requirements.txt`, which `scripts/setup.sh` installs from), and the
//! preflight that checks the lines a command needs before anything runs: a missing program is
//! named with the package that provides it at once, never met as `cannot start ...` twenty
//! minutes into the suite.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// The list, as committed: the same file `scripts/setup.sh` reads.
const LIST: &str = include_str!("../../scripts/requirements.txt");

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// What the code asks for.
    pub name: &'static str,
    /// An absolute path, a path under the repository, or a program looked up on `PATH`.
    pub location: &'static str,
    /// `deb:PACKAGE`, `script:NAME`, `cargo:CRATE` or `rustup`.
    pub provider: &'static str,
    /// The commands that need it (`demo,install,suite`): [`Need`]'s names.
    pub needed_by: &'static str,
}

/// A command whose lines of the list the preflight checks ([`locate_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// `cargo xtask demo` (scripts/demo.sh).
    Demo,
    /// The demo on a machine with an NVIDIA driver: its C table runs on GPU 0.
    GpuDemo,
    /// `cargo xtask install` for Debian's LLVMs, and `cargo xtask env`.
    Install,
    /// `cargo xtask test` (scripts/test.sh) and every command that builds for every release.
    Suite,
}

impl Need {
    /// Every need, with the name the list's `for` column gives it.
    pub const ALL: [(&'static str, Need); 4] = [
        ("demo", Need::Demo),
        ("gpu-demo", Need::GpuDemo),
        ("install", Need::Install),
        ("suite", Need::Suite),
    ];

    fn name(self) -> &'static str {
        Need::ALL.iter().find(|(_, n)| *n == self).map(|(name, _)| *name).unwrap_or("suite")
    }
}

impl Requirement {
    /// Whether a command of `needs` needs it.
    pub fn is_needed_by(&self, needs: &[Need]) -> bool {
        self.needed_by.split(',').any(|name| needs.iter().any(|need| need.name() == name))
    }

    /// Where it is on this machine, if it is there.
    fn find(&self, root: &Path) -> Option<PathBuf> {
        if self.location.starts_with('/') {
            let path = PathBuf::from(self.location);
            path.exists().then_some(path)
        } else if self.location.contains('/') {
            let path = root.join(self.location);
            path.exists().then_some(path)
        } else {
            on_path(self.location)
        }
    }

    /// How to get it, for the one line that says it is missing.
    fn how_to_get(&self) -> String {
        match self.provider.split_once(':') {
            Some(("deb", package)) => format!("Debian package {package}"),
            Some(("script", script)) => format!("unpacked by scripts/{script}"),
            Some(("cargo", krate)) => format!("cargo +stable install {krate} --locked"),
            _ => "rustup (https://rustup.rs)".to_string(),
        }
    }
}

/// Every line of the list, in order. Panics on a malformed line: the list is part of the source
/// and its unit test parses it.
pub fn all() -> Vec<Requirement> {
    LIST.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let fields: Vec<&'static str> = line.split_whitespace().collect();
            let [name, location, provider, needed_by] = fields[..] else {
                panic!("scripts/requirements.txt: `{line}` is not `name location provider for`")
            };
            Requirement { name, location, provider, needed_by }
        })
        .collect()
}

/// The first directory of `PATH` holding an executable `program`.
pub fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The located list: every requirement's path on this machine.
pub struct Located {
    found: Vec<(Requirement, PathBuf)>,
}

impl Located {
    /// The path of the requirement `name`, or `None` when the list has no such line.
    pub fn get(&self, name: &str) -> Option<PathBuf> {
        self.found.iter().find(|(r, _)| r.name == name).map(|(_, p)| p.clone())
    }

    /// The path of the requirement `name`. Panics when `name` is not in the list: that is a
    /// programming error the unit test catches, not a machine's state.
    pub fn path(&self, name: &str) -> PathBuf {
        self.found
            .iter()
            .find(|(r, _)| r.name == name)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| panic!("`{name}` is not in scripts/requirements.txt"))
    }
}

/// The suite's preflight: every line of the list ([`locate_for`] with [`Need::Suite`]).
pub fn locate(root: &Path) -> Result<Located> {
    locate_for(root, &[Need::Suite])
}

/// The preflight of a command of `needs`: locates every requirement it needs, or fails with one
/// line per missing one, each naming what provides it, and the one thing to do. The lines it does
/// not need are taken at their listed location, present or not: nothing of that command reads
/// them.
pub fn locate_for(root: &Path, needs: &[Need]) -> Result<Located> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    let mut checked = 0;
    for r in all() {
        let needed = r.is_needed_by(needs);
        checked += usize::from(needed);
        match r.find(root) {
            Some(path) => found.push((r, path)),
            None if !needed => {
                let listed = if r.location.contains('/') && !r.location.starts_with('/') {
                    root.join(r.location)
                } else {
                    PathBuf::from(r.location)
                };
                found.push((r, listed));
            }
            None => missing.push(format!("  missing {} ({}): {}", r.name, r.location, r.how_to_get())),
        }
    }
    if !missing.is_empty() {
        let command = needs.first().copied().unwrap_or(Need::Suite).name();
        let setup = match needs.first() {
            Some(Need::Demo | Need::GpuDemo) => "scripts/demo.sh runs it",
            Some(Need::Install) => "then cargo xtask install",
            _ => "scripts/test.sh runs it",
        };
        bail!(
            "{} of the {checked} requirements of the {command} are missing; run scripts/setup.sh {command} ({setup}):\n{}",
            missing.len(),
            missing.join("\n")
        );
    }
    Ok(Located { found })
}

/// The path of program `name` of the list (on `PATH` or where the list says), for a
/// `Command::new`. Falls back to the bare location when it is missing: the preflight has said so.
pub fn program(name: &str) -> PathBuf {
    let requirement = all()
        .into_iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("`{name}` is not in scripts/requirements.txt"));
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(1).expect("packaging/ lies in the workspace");
    requirement.find(root).unwrap_or_else(|| PathBuf::from(requirement.location))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(1).unwrap().to_path_buf()
    }

    /// Every file under `dir` (not `target/`, not hidden) whose name ends with `suffix`.
    fn files(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                files(&path, suffix, out);
            } else if name.ends_with(suffix) {
                out.push(path);
            }
        }
    }

    /// The string literals passed to `Command::new(...)`, `program(...)` and
    /// `requirements::program(...)` in Rust source.
    fn rust_programs(source: &str) -> Vec<String> {
        let mut found = Vec::new();
        for call in ["Command::new(\"", "program(\""] {
            let mut rest = source;
            while let Some(at) = rest.find(call) {
                // `program(` alone, not the end of another name (`is_host_program(`).
                let whole = rest[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                rest = &rest[at + call.len()..];
                let end = rest.find('"').expect("a closed literal");
                if whole {
                    found.push(rest[..end].to_string());
                }
            }
        }
        found
    }

    /// Words that start a command in a shell script without starting a program of the list.
    const SHELL_WORDS: &[&str] = &[
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "in",
        "do",
        "done",
        "while",
        "until",
        "case",
        "esac",
        "function",
        "local",
        "set",
        "exit",
        "echo",
        "printf",
        "cd",
        "source",
        ".",
        "export",
        "return",
        "shift",
        "read",
        "test",
        "[",
        "[[",
        "]]",
        "]",
        "true",
        "false",
        "command",
        "exec",
        "break",
        "continue",
        "trap",
        "wait",
        "declare",
        "unset",
        "eval",
        "mapfile",
        "readarray",
        "pwd",
        "!",
        "{",
        "}",
        "time",
    ];

    /// The first word of every command of a bash script: after line starts, `;`, `|`, `&&`, `||`,
    /// `$(`, `(`, `then`, `do`, `else`, `exec` and `!`. Words that are variables, assignments,
    /// paths of their own (`"$cuda/bin/ptxas"`) or functions the script defines are left out.
    fn shell_programs(script: &str) -> Vec<String> {
        let functions: BTreeSet<String> = script
            .lines()
            .filter_map(|l| l.trim().split_once("() {").map(|(f, _)| f.trim().to_string()))
            .collect();
        let mut found = Vec::new();
        // The delimiter of the here-document being read (`<<EOF`, `<<'EOF'`, `<<-EOF`): its lines
        // are data, not commands.
        let mut here_document: Option<String> = None;
        for line in script.lines() {
            if let Some(delimiter) = &here_document {
                if line.trim() == delimiter {
                    here_document = None;
                }
                continue;
            }
            here_document = line.split_once("<<").and_then(|(_, rest)| {
                let word = rest.trim_start_matches('-').split_whitespace().next()?.trim_matches(['\'', '"']);
                (!word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                    .then(|| word.to_string())
            });
            let line = line.trim_start();
            if line.starts_with('#') {
                continue;
            }
            // Drop a trailing comment, quoted text (but not a `$(...)` inside double quotes) and
            // array values (`packages=(a b)`): none of them starts a command.
            let line = line.split(" #").next().unwrap_or("");
            let mut separated = String::new();
            let (mut single, mut double, mut array) = (false, false, false);
            let mut substitutions: Vec<bool> = Vec::new();
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    _ if single => single = c != '\'',
                    _ if array => array = c != ')',
                    '\'' if !double => single = true,
                    '"' => double = !double,
                    '$' if chars.peek() == Some(&'(') => {
                        chars.next();
                        substitutions.push(double);
                        double = false;
                        separated.push_str(" ; ");
                    }
                    ')' if !double && !substitutions.is_empty() => {
                        double = substitutions.pop().unwrap_or(false);
                        separated.push_str(" ; ");
                    }
                    '=' if !double && chars.peek() == Some(&'(') => {
                        chars.next();
                        array = true;
                        separated.push_str("= ");
                    }
                    _ if double => {}
                    '|' | '&' | '(' | ')' | '`' => separated.push_str(" ; "),
                    _ => separated.push(c),
                }
            }
            for command in separated.split(';') {
                let mut words = command.split_whitespace().peekable();
                while let Some(&word) = words.peek() {
                    if ["if", "elif", "while", "until", "then", "do", "else", "exec", "!", "{", "time", "env"]
                        .contains(&word)
                        || word.contains('=')
                    {
                        words.next();
                    } else {
                        break;
                    }
                }
                let Some(word) = words.next() else { continue };
                let word = word.trim_matches('"');
                if word.is_empty()
                    || word.starts_with('$')
                    || word.starts_with('-')
                    || word.contains(['/', '*', ':', '+', '=', '[', ']', '{', '}'])
                    || SHELL_WORDS.contains(&word)
                    || functions.contains(word)
                    || word.ends_with(')')
                    || word.ends_with("\\")
                    || !word.chars().next().unwrap().is_ascii_alphabetic()
                {
                    continue;
                }
                found.push(word.to_string());
            }
        }
        found
    }

    fn listed(name: &str) -> bool {
        all().iter().any(|r| r.name == name || r.location == name)
    }

    #[test]
    fn the_list_parses_and_names_each_requirement_once() {
        let list = all();
        assert!(list.len() > 40, "{} lines", list.len());
        let mut names = BTreeSet::new();
        for r in &list {
            assert!(names.insert(r.name), "{} is listed twice", r.name);
            for need in r.needed_by.split(',') {
                assert!(
                    Need::ALL.iter().any(|(name, _)| *name == need),
                    "{}: unknown command `{need}`",
                    r.name
                );
            }
            // The suite builds and checks everything the other commands use.
            assert!(r.is_needed_by(&[Need::Suite]), "{}: every line is the suite's too", r.name);
            assert!(
                r.provider == "rustup"
                    || ["deb:", "script:", "cargo:"].iter().any(|p| r.provider.starts_with(p)),
                "{}: unknown provider {}",
                r.name,
                r.provider
            );
            if let Some(script) = r.provider.strip_prefix("script:") {
                assert!(
                    workspace().join("scripts").join(script).is_file(),
                    "{}: no scripts/{script}",
                    r.name
                );
            }
        }
    }

    #[test]
    fn every_program_the_rust_code_starts_is_listed() {
        let mut sources = Vec::new();
        files(&workspace(), ".rs", &mut sources);
        let mut unlisted = Vec::new();
        let mut seen = 0;
        for file in &sources {
            if file.ends_with("packaging/src/requirements.rs") {
                continue;
            }
            for program in rust_programs(&std::fs::read_to_string(file).unwrap()) {
                seen += 1;
                if !listed(&program) {
                    unlisted.push(format!("{program} ({})", file.display()));
                }
            }
        }
        assert!(seen >= 10, "only {seen} programs found: the scan is broken");
        assert!(unlisted.is_empty(), "started but not in scripts/requirements.txt: {unlisted:?}");
    }

    #[test]
    fn every_program_the_scripts_start_is_listed() {
        let mut scripts = Vec::new();
        files(&workspace().join("scripts"), ".sh", &mut scripts);
        files(&workspace().join("tests"), ".sh", &mut scripts);
        scripts.push(workspace().join(".ci/run"));
        let mut unlisted = Vec::new();
        let mut seen = BTreeSet::new();
        for script in &scripts {
            for program in shell_programs(&std::fs::read_to_string(script).unwrap()) {
                if !listed(&program) {
                    unlisted.push(format!("{program} ({})", script.display()));
                }
                seen.insert(program);
            }
        }
        for expected in ["apt-get", "dpkg-deb", "cargo", "rustup", "bash", "awk"] {
            assert!(seen.contains(expected), "the scan missed {expected}: {seen:?}");
        }
        assert!(unlisted.is_empty(), "started but not in scripts/requirements.txt: {unlisted:?}");
    }

    /// The demo and an install need none of what only the suite uses: no Spack or EasyBuild, no
    /// Debian sid root, no DeviceRTL built from source, no fuzzer.
    #[test]
    fn the_demo_and_an_install_need_only_what_they_use() {
        let suite_only =
            ["fetch-spack", "fetch-easybuild", "sid", "devicertl", "cargo-fuzz", "mmdebstrap", "lmod"];
        for r in all().iter().filter(|r| r.is_needed_by(&[Need::Demo, Need::GpuDemo, Need::Install])) {
            assert!(
                !suite_only.iter().any(|s| r.provider.contains(s) || r.location.contains(s)),
                "{} ({}) is the suite's alone",
                r.name,
                r.provider
            );
        }
        let demo: Vec<&str> =
            all().into_iter().filter(|r| r.is_needed_by(&[Need::Demo])).map(|r| r.name).collect();
        for name in ["cargo", "clang-19", "clang++-22", "libomptarget-16", "llvm22-omp-h", "libffi-dev"] {
            assert!(demo.contains(&name), "the demo needs {name}");
        }
    }

    /// The scans themselves: a program that is not listed is found.
    #[test]
    fn an_unlisted_program_is_caught() {
        let rust = "let x = Command::new(\"frobnicate\").arg(\"cmake\"); is_host_program(\"cc\");";
        assert_eq!(rust_programs(rust), ["frobnicate"]);
        assert!(!listed("frobnicate"));
        let script =
            "#!/bin/bash\n# cmake is not run here\nx=$(frobnicate -q | sort)\nif cmake --version; then\n  \
                      echo 'zap it'\nfi\nhelper() {\n  true\n}\nhelper\n\"$dir/bin/ptxas\" --version\n";
        assert_eq!(shell_programs(script), ["frobnicate", "sort", "cmake"]);
    }

    #[test]
    fn a_missing_requirement_is_named_with_its_package() {
        let missing = Requirement {
            name: "cmake",
            location: "no-such-program-here",
            provider: "deb:cmake",
            needed_by: "suite",
        };
        assert!(missing.find(&workspace()).is_none());
        assert_eq!(missing.how_to_get(), "Debian package cmake");
        let present =
            Requirement { name: "bash", location: "bash", provider: "deb:bash", needed_by: "suite" };
        assert!(present.find(&workspace()).is_some());
    }
}
