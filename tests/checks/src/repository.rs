//! What the repository says of itself, checked: its tracked files describe the project, not how
//! its work is organised (no numbers of its own tracker, no names of the periods its work was
//! done in: the words are [`TRACKER_WORDS`], [`PERIOD_WORDS`], [`NUMBERED_PERIOD_WORDS`]), and a
//! run of the suite leaves the source tree as it found it (what it writes goes under `target/` or
//! a scratch directory, never into tracked or untracked files).

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::cmd;
use crate::requirements;

/// Words that, followed by a number, name an item of the project's own tracker (an upstream
/// project's is named with its project before it: [`UPSTREAM`]).
const TRACKER_WORDS: [&str; 2] = ["issue", "issues"];

/// The projects whose tracker's items may be named by number.
const UPSTREAM: [&str; 5] = ["upstream", "llvm", "github", "gcc", "spack"];

/// Words that name a period of the work.
const PERIOD_WORDS: [&str; 2] = ["session", "sessions"];

/// Words that, followed by a number, name the end of a period of the work (Fortran's `stop 1`
/// statement is excepted by [`check_words`]).
const NUMBERED_PERIOD_WORDS: [&str; 2] = ["stop", "stops"];

/// Lines that may hold one of the words because they mean something else there: (file, text of
/// the line). The CUDA plugin test's `Session` is a CUDA context and its buffers.
const ALLOWED: &[(&str, &str)] = &[
    ("gpu-tests/runner/src/plugin_abi.rs", "Session"),
    // This file, which lists the words.
    ("tests/checks/src/repository.rs", ""),
];

/// What in `line` speaks of how the work is organised, if anything (the words above).
pub fn organisation_word(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_ascii_alphanumeric() && c != '#').filter(|w| !w.is_empty()).collect();
    for (i, pair) in words.windows(2).enumerate() {
        let number = pair[1].trim_start_matches('#');
        let numbered = !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
        let before = if i > 0 { words[i - 1] } else { "" };
        let tracker = TRACKER_WORDS.contains(&pair[0]) && !UPSTREAM.contains(&before);
        if numbered && (tracker || NUMBERED_PERIOD_WORDS.contains(&pair[0])) {
            return Some(format!("{} {}", pair[0], pair[1]));
        }
    }
    words.iter().find(|w| PERIOD_WORDS.contains(w)).map(|w| w.to_string())
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
            if fortran && NUMBERED_PERIOD_WORDS.iter().any(|w| word.starts_with(w)) {
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
    use super::*;

    #[test]
    fn words_of_the_work_are_found_and_upstream_items_are_not() {
        let [tracker, _] = TRACKER_WORDS;
        let [period, _] = PERIOD_WORDS;
        let [end, ends] = NUMBERED_PERIOD_WORDS;
        let found = |line: String| organisation_word(&line);
        assert_eq!(found(format!("the goal of {tracker} 52 is met")), Some(format!("{tracker} 52")));
        assert_eq!(found(format!("({} 29)", tracker.to_uppercase())), Some(format!("{tracker} 29")));
        assert_eq!(found(format!("measured in this {period}'s run")), Some(period.to_string()));
        assert_eq!(found(format!("Before {end} 13 each check")), Some(format!("{end} 13")));
        assert_eq!(found(format!("upstream {tracker} #206900, an open pull request")), None);
        assert_eq!(found(format!("a {tracker} with the table")), None);
        assert_eq!(found(format!("the loop {ends} when the key is found")), None);
    }
}
