//! One record per LLVM release (`packaging/src/release_record.rs`): the Rust code names no release
//! anywhere else. A release in code (`"22"`, `clang-19`, `llvm-22`, `llvm19`, `LLVM22_...`) is a
//! fact that drifts from its record when a release is added or dropped; code reads the record
//! (`Llvm::oldest()`, `Llvm::reference()`, `Release::major`, ...) instead.
//!
//! Comments are prose and may name releases; so may unit tests (from `#[cfg(test)]` to the end
//! of a file) and integration tests, whose samples are real file names. [`ALLOWED`] lists the
//! other places, each with why.

use std::path::Path;
use std::process::Command;

/// (file, text the line holds, why): the places where a release is named on purpose.
const ALLOWED: &[(&str, &str, &str)] = &[
    ("packaging/src/release_record.rs", "", "the release records themselves"),
    ("compiler/pass-plugin/build.rs", "", "derives the plugin's cfgs from the release it is built for"),
    ("compiler/pass-plugin/src/llvm.rs", "", "maps each release's cargo feature to its llvm-sys crate"),
    ("xtask/src/main.rs", "llvm16|llvm21", "the help text lists the bundle's parts"),
];

/// Whether `code` (a line with its comment removed) names a release: `llvm19`, `llvm-22`,
/// `LLVM22_LIB`, a tool of one (`clang-19`, `clang++-22`, `llc-19`, `llvm-link-21`), or a
/// major version as a whole string literal (`"22"`).
fn names_release(code: &str) -> Option<String> {
    let lower = code.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let is_major = |digits: &[u8]| {
        // LLVM 16 (the plugins' runtime) to 29: no CUDA version (11, 12) or year.
        digits.len() == 2 && (digits[0] == b'2' || (digits[0] == b'1' && digits[1] >= b'6'))
    };
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    for (at, _) in lower.match_indices(|c: char| c.is_ascii_digit()) {
        if at > 0 && bytes[at - 1].is_ascii_digit() {
            continue;
        }
        let end = bytes[at..].iter().position(|b| !b.is_ascii_digit()).map_or(bytes.len(), |n| at + n);
        if !is_major(&bytes[at..end]) || bytes.get(end).is_some_and(|b| b.is_ascii_digit()) {
            continue;
        }
        let before = &lower[..at];
        let quoted = before.ends_with('"') && bytes.get(end) == Some(&b'"');
        // `clang-19`, `clang++-22`, `llvm-link-21`: a name of letters, then `-NN`.
        let tool = before
            .strip_suffix('-')
            .and_then(|b| b.bytes().last())
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'+');
        let llvm = before.ends_with("llvm") || before.ends_with("llvm_");
        let versioned_name = (tool || llvm) && !bytes.get(end).is_some_and(|b| b.is_ascii_alphabetic());
        if quoted || versioned_name {
            let start =
                before.rfind(|c: char| !(is_word(c as u8) || "+-\"".contains(c))).map_or(0, |i| i + 1);
            return Some(code[start..end + usize::from(quoted)].to_string());
        }
    }
    None
}

/// The code of a line: what comes before a `//` comment (one that is not inside a string, as
/// far as a line can tell), nothing for a doc or block comment line.
fn code_of(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") || trimmed.starts_with('*') || trimmed.starts_with("/*") {
        return "";
    }
    let mut in_string = false;
    let bytes = line.as_bytes();
    for i in 0..bytes.len() {
        match bytes[i] {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
    }
    line
}

#[test]
fn no_rust_code_outside_the_records_names_an_llvm_release() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    let listed = Command::new("git")
        .current_dir(workspace)
        .args(["ls-files", "-z", "--", "*.rs"])
        .output()
        .expect("git ls-files");
    assert!(listed.status.success(), "git ls-files failed");
    let mut found = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for file in String::from_utf8_lossy(&listed.stdout).split('\0').filter(|f| !f.is_empty()) {
        let integration_test = file.split('/').any(|part| part == "tests") && !file.starts_with("tests/");
        if integration_test {
            continue;
        }
        let text = std::fs::read_to_string(workspace.join(file)).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            let Some(named) = names_release(code_of(line)) else { continue };
            let allowed = ALLOWED.iter().position(|(f, holds, _)| *f == file && line.contains(holds));
            if let Some(entry) = allowed {
                used[entry] = true;
            } else {
                found.push(format!("{file}:{}: `{named}`: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "LLVM releases named outside their records (packaging/src/release_record.rs): read the record instead, \
         or add the place to ALLOWED with why:\n{}",
        found.join("\n")
    );
    let unused: Vec<_> = ALLOWED.iter().zip(used).filter(|(_, used)| !used).map(|(entry, _)| entry).collect();
    assert!(unused.is_empty(), "places of ALLOWED that name no release any more: {unused:?}");
}

#[test]
fn the_forms_a_release_takes_in_code_are_found() {
    for (code, named) in [
        (r#"path("clang-19")"#, "\"clang-19"),
        (r#"path("clang++-22")"#, "\"clang++-22"),
        (r#"Path::new("/usr/lib/llvm-19/lib")"#, "llvm-19"),
        ("pub const LLVM19_LIB: &str", "LLVM19"),
        (r#"t.llvm.major == "22""#, "\"22\""),
        (r#"("llvm19", bc)"#, "\"llvm19"),
        (r#"cfg(feature = "llvm21")"#, "\"llvm21"),
    ] {
        assert_eq!(names_release(code).as_deref(), Some(named), "{code}");
    }
    for code in [
        "let x = 19;",
        "sm_90",
        "gfx90a",
        "\"x86_64-pc-linux-gnu\"",
        "llvm.major",
        "\"2026-11-29\"",
        "[u8; 16]",
        "\"omptarget-indirect-x86_64\"",
        "\"cuda-11.8\"",
    ] {
        assert_eq!(names_release(code), None, "{code}");
    }
}

#[test]
fn comments_are_not_code() {
    assert_eq!(code_of("    // clang-19 does this"), "");
    assert_eq!(code_of("    /// `clang-19`"), "");
    assert_eq!(code_of(r#"let a = "x"; // clang-19"#), r#"let a = "x"; "#);
    assert_eq!(code_of(r#"let url = "http://x"; // y"#), r#"let url = "http://x"; "#);
}
