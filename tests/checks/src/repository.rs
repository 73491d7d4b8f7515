//! What the repository says of itself, checked: its tracked files describe the project, not how
//! its work is organised (no numbers of the project's own tracker, no sessions or stops of the
//! people working on it), and a run of the suite leaves the source tree as it found it (what it
//! writes goes under `target/` or a scratch directory, never into tracked or untracked files).

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::cmd;
use crate::requirements;

/// Lines that may hold one of the words because they mean something else there: (file, text of
/// the line). The CUDA plugin test's `Session` is a CUDA context and its buffers.
const ALLOWED: &[(&str, &str)] = &[
    ("gpu-tests/runner/src/plugin_abi.rs", "Session"),
    // This file, whose tests name the words.
    ("tests/checks/src/repository.rs", ""),
];

/// What in `line` speaks of how the work is organised, if anything: "issue N" / "issues N" of the
/// project's tracker (an upstream project's issue is named as such: "upstream issue #N", "LLVM
/// issue"), "session(s)", "stop N" / "stops N" (Fortran's `stop 1` statement excepted by the
/// caller).
pub fn organisation_word(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_ascii_alphanumeric() && c != '#').filter(|w| !w.is_empty()).collect();
    for (i, pair) in words.windows(2).enumerate() {
        let number = pair[1].trim_start_matches('#');
        let numbered = !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
        let before = if i > 0 { words[i - 1] } else { "" };
        let upstream = ["upstream", "llvm", "github", "gcc", "spack"].contains(&before);
        if numbered && matches!(pair[0], "issue" | "issues") && !upstream {
            return Some(format!("{} {}", pair[0], pair[1]));
        }
        if numbered && matches!(pair[0], "stop" | "stops") {
            return Some(format!("{} {}", pair[0], pair[1]));
        }
    }
    words.iter().find(|w| matches!(**w, "session" | "sessions")).map(|w| w.to_string())
}

/// Every tracked text file of the checkout at `workspace`, read line by line: no line speaks of
/// how the work is organised ([`organisation_word`]) but those of [`ALLOWED`]. Fortran sources
/// are exempt from "stop N" (a statement there).
pub fn check_words(workspace: &Path) -> Result<String> {
    let listed = cmd::stdout(
        Command::new(requirements::program("git")).current_dir(workspace).args(["ls-files", "-z"]),
    )?;
    let mut found = Vec::new();
    let mut files = 0;
    for file in listed.split('\0').filter(|f| !f.is_empty()) {
        let Ok(text) = std::fs::read_to_string(workspace.join(file)) else { continue };
        files += 1;
        let fortran = [".f90", ".F90"].iter().any(|e| file.ends_with(e));
        for (n, line) in text.lines().enumerate() {
            let Some(word) = organisation_word(line) else { continue };
            if fortran && word.starts_with("stop") {
                continue;
            }
            if ALLOWED.iter().any(|(f, t)| *f == file && line.contains(t)) {
                continue;
            }
            found.push(format!("{file}:{}: `{word}`: {}", n + 1, line.trim()));
        }
    }
    ensure!(
        found.is_empty(),
        "tracked files speak of how the work is organised (describe the project instead):\n{}",
        found.join("\n")
    );
    Ok(format!("{files} tracked text files describe the project"))
}

/// `git status --porcelain` of the checkout at `workspace`, untracked files included; `None`
/// where it is no git checkout (an unpacked release archive).
pub fn tree_status(workspace: &Path) -> Option<String> {
    if !workspace.join(".git").exists() {
        return None;
    }
    let mut git = Command::new(requirements::program("git"));
    git.current_dir(workspace).args(["status", "--porcelain", "--untracked-files=all"]);
    cmd::stdout(&mut git).ok()
}

/// The suite left the tree as `before` ([`tree_status`] at its start) found it.
pub fn check_tree_unchanged(workspace: &Path, before: Option<&str>) -> Result<String> {
    let Some(before) = before else { return Ok("not a git checkout: nothing to compare".into()) };
    let after = tree_status(workspace).context("git status failed after the suite")?;
    let old: std::collections::BTreeSet<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().filter(|l| !old.contains(l)).collect();
    ensure!(
        new.is_empty(),
        "the suite changed the source tree (it must write under target/ or a scratch directory):\n{}",
        new.join("\n")
    );
    Ok(format!("git status as before the suite ({} entries)", old.len()))
}

#[cfg(test)]
mod tests {
    use super::organisation_word;

    #[test]
    fn words_of_the_work_are_found_and_upstream_issues_are_not() {
        assert_eq!(organisation_word("the goal of issue 52 is met").as_deref(), Some("issue 52"));
        assert_eq!(organisation_word("(Issue 29)").as_deref(), Some("issue 29"));
        assert_eq!(organisation_word("measured on this session's machine").as_deref(), Some("session"));
        assert_eq!(organisation_word("Before stop 13 each check").as_deref(), Some("stop 13"));
        assert_eq!(organisation_word("upstream issue #206900, an open pull request"), None);
        assert_eq!(organisation_word("an issue with the table"), None);
        assert_eq!(organisation_word("the loop stops when the key is found"), None);
    }
}
