//! One record per LLVM release (`packaging/src/release_record.rs`): the Rust code names no release
//! anywhere else. A release in code (`"22"`, `clang-19`, `llvm-22`, `llvm19`, `LLVM22_...`) is a
//! fact that drifts from its record when a release is added or dropped; code reads the record
//! (`Llvm::oldest()`, `Llvm::reference()`, `Release::major`, ...) instead.
//!
//! Comments are prose and may name a release; so may unit tests (from `#[cfg(test)]` to the end
//! of a file) and integration tests, whose samples are real file names. [`ALLOWED`] lists the
//! other places, each with why.
//!
//! Prose may not list the supported releases, though: a list or range of two or more of them in a
//! comment or a string (`clang 21, 22 and 23`, `libomptarget 21-23`, `-llvm{21,22,23}`) is the
//! record's, and goes stale when a release is added. Prose says what holds from a release on
//! (`LLVM 21 and later`), or reads the record. [`ALLOWED_LISTS`] lists the places where a list
//! states a fact of those releases alone (a layout LLVM's source has in exactly them).

mod tracked_sources;

use tracked_sources::code_of;

/// (file, text the line holds, why): the places where a release is named on purpose.
const ALLOWED: &[(&str, &str, &str)] = &[
    ("packaging/src/release_record.rs", "", "the release records themselves"),
    ("compiler/pass-plugin/build.rs", "", "derives the plugin's cfgs from the release it is built for"),
    ("compiler/pass-plugin/src/llvm.rs", "", "maps each release's cargo feature to its llvm-sys crate"),
    ("xtask/src/main.rs", "llvm16|llvm21", "the help text lists the bundle's parts"),
];

/// (file, text the line holds, why): the lists of releases in prose that state a fact of exactly
/// those releases, not which releases the project supports.
const ALLOWED_LISTS: &[(&str, &str, &str)] = &[
    ("packaging/src/release_record.rs", "", "the release records themselves"),
    (
        "abi/src/lib.rs",
        "LLVM 19-22",
        "the DeviceRTL's DeviceEnvironmentTy as those releases' source defines it",
    ),
    (
        "device-rtl/src/environment.rs",
        "LLVM 19-22",
        "the DeviceRTL's DeviceEnvironmentTy as those releases' source defines it",
    ),
    (
        "compiler/pass-plugin/src/policy.rs",
        "LLVM 19 and 22",
        "what those releases' DeviceRTLs define, as checked",
    ),
    (
        "gpu-tests/runner/src/measurements.rs",
        "LLVM 19 and 22",
        "the device environment's layout in those releases",
    ),
];

/// The majors of the supported releases, from the record.
fn supported_majors() -> Vec<&'static str> {
    packaging::llvm::RELEASES.iter().map(|r| r.major).collect()
}

/// Whether `prose` (a comment, or a string literal's text) lists two or more of the `supported`
/// releases after a name of LLVM's (`LLVM`, `clang`, `flang`, `libomptarget`, `liboffload`,
/// `llvm`): `clang 21, 22 and 23`, `LLVM 19-22`, `libomptarget 22 and 23`, `-llvm{21,22,23}`.
/// Returns the list as written.
fn lists_releases(prose: &str, supported: &[&str]) -> Option<String> {
    const NAMES: [&str; 5] = ["llvm", "clang", "flang", "libomptarget", "liboffload"];
    const SEPARATORS: [&str; 7] = [", ", " and ", " or ", " to ", "-", ",", "/"];
    let lower = prose.to_ascii_lowercase();
    for name in NAMES.iter().map(|n| n.to_ascii_lowercase()) {
        for (at, _) in lower.match_indices(name.as_str()) {
            let mut from = at + name.len();
            from += ["'s"].iter().find(|p| prose[from..].starts_with(**p)).map_or(0, |p| p.len());
            from += usize::from(prose[from..].starts_with([' ', '-', '{']));
            let two_digits = |at: usize| prose[at..].bytes().take_while(u8::is_ascii_digit).count() == 2;
            let (mut majors, mut end) = (Vec::new(), from);
            while two_digits(end) {
                majors.push(&prose[end..end + 2]);
                end += 2;
                match SEPARATORS.iter().find(|s| prose[end..].starts_with(**s)) {
                    Some(separator) if two_digits(end + separator.len()) => end += separator.len(),
                    _ => break,
                }
            }
            if majors.iter().filter(|m| supported.contains(m)).count() >= 2 {
                return Some(prose[at..end].to_string());
            }
        }
    }
    None
}

/// The prose of a line: the whole line for a comment, else the text of its string literals.
fn prose_of(line: &str) -> Vec<&str> {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") || trimmed.starts_with('*') || trimmed.starts_with("/*") {
        return vec![trimmed];
    }
    let code = code_of(line);
    let mut strings = Vec::new();
    let mut start = None;
    let bytes = code.as_bytes();
    for i in 0..bytes.len() {
        if bytes[i] == b'"' && (i == 0 || bytes[i - 1] != b'\\') {
            match start.take() {
                Some(s) => strings.push(&code[s..i]),
                None => start = Some(i + 1),
            }
        }
    }
    if let Some(comment) = line.get(code.len()..).filter(|rest| rest.trim_start().starts_with("//")) {
        strings.push(comment);
    }
    strings
}

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

#[test]
fn no_rust_code_outside_the_records_names_an_llvm_release() {
    let mut found = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    let mut lists = Vec::new();
    let mut lists_used = vec![false; ALLOWED_LISTS.len()];
    let supported = supported_majors();
    for (file, n, line) in tracked_sources::product_lines("") {
        for prose in prose_of(&line) {
            let Some(listed) = lists_releases(prose, &supported) else { continue };
            match ALLOWED_LISTS.iter().position(|(f, holds, _)| *f == file && line.contains(holds)) {
                Some(entry) => lists_used[entry] = true,
                None => lists.push(format!("{file}:{n}: `{listed}`: {}", line.trim())),
            }
        }
        let Some(named) = names_release(code_of(&line)) else { continue };
        match ALLOWED.iter().position(|(f, holds, _)| *f == file && line.contains(holds)) {
            Some(entry) => used[entry] = true,
            None => found.push(format!("{file}:{n}: `{named}`: {}", line.trim())),
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
    assert!(
        lists.is_empty(),
        "lists of the supported LLVM releases in prose, which go stale when a release is added: say what \
         holds from a release on (`LLVM 21 and later`), or read the record, or add the place to ALLOWED_LISTS \
         with why:\n{}",
        lists.join("\n")
    );
    let unused: Vec<_> =
        ALLOWED_LISTS.iter().zip(lists_used).filter(|(_, used)| !used).map(|(entry, _)| entry).collect();
    assert!(unused.is_empty(), "places of ALLOWED_LISTS that list no releases any more: {unused:?}");
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
fn lists_of_releases_in_prose_are_found() {
    let supported = ["19", "21", "22", "23", "24"];
    for (prose, listed) in [
        ("//! - clang 21, 22 and 23 through their stock libomptarget", "clang 21, 22 and 23"),
        ("(stock libomptarget 21-23)", "libomptarget 21-23"),
        ("lib/libomptarget-indirect-pass.so, ...-llvm{21,22,23}.so", "llvm{21,22,23"),
        ("/// with LLVM 19; libomptarget 22 and 23 install", "libomptarget 22 and 23"),
        ("Where the stock runtime builds it (LLVM 22, 23)", "LLVM 22, 23"),
        ("LLVM's struct of LLVM 19-22", "LLVM 19-22"),
    ] {
        assert_eq!(lists_releases(prose, &supported).as_deref(), Some(listed), "{prose}");
    }
    for prose in [
        "clang 21 and later",
        "LLVM 18-21's GPU plugins",
        "LLVM 20+ entries",
        "clang 16-19's 32-byte entries",
        "flang 22 stops at the clause",
        "sm_90, gfx90a",
        "CUDA 11.8's ptxas",
    ] {
        assert_eq!(lists_releases(prose, &supported), None, "{prose}");
    }
}

#[test]
fn the_prose_of_a_line_is_its_comment_or_its_strings() {
    assert_eq!(prose_of("    //! clang 21, 22"), vec!["//! clang 21, 22"]);
    assert_eq!(prose_of(r#"let a = "x 1"; let b = "y";"#), vec!["x 1", "y"]);
    assert_eq!(prose_of(r#"f("a"); // clang 21, 22"#), vec!["a", "// clang 21, 22"]);
}

#[test]
fn comments_are_not_code() {
    assert_eq!(code_of("    // clang-19 does this"), "");
    assert_eq!(code_of("    /// `clang-19`"), "");
    assert_eq!(code_of(r#"let a = "x"; // clang-19"#), r#"let a = "x"; "#);
    assert_eq!(code_of(r#"let url = "http://x"; // y"#), r#"let url = "http://x"; "#);
}
