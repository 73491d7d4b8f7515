//! The commands the README and `docs/` show, run as written: every fenced block whose info
//! string is `sh runnable` runs in bash (`-euo pipefail`) from the checkout's root, so a command a
//! reader copies cannot rot. They run with a reader's environment ([`READER_ENVIRONMENT`]: none
//! of what cargo, the suite or its caller set), and one thing differs from a reader's machine:
//! the install prefix the blocks write, [`PREFIX`], is replaced by a scratch prefix under
//! `target/` (a reader installs into `/opt`, the suite may not). What a block needs beyond that,
//! it says itself (the README's `-isystem` for LLVM 22's `omp.h` on Debian 12).
//!
//! A page's blocks run in order, as a reader goes down it (a later block may run what an earlier
//! one linked); what they write into the checkout is removed after the page's last block: only
//! the files that were not there before.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use crate::{cmd, requirements};

/// The install prefix the README and docs use in their runnable blocks.
pub const PREFIX: &str = "/opt/omptarget-indirect";

/// The variables a reader's shell has that a block may use; every other one is cleared. `PATH`
/// loses the directories of rustup's toolchains, which cargo puts first for its children.
pub const READER_ENVIRONMENT: [&str; 8] =
    ["HOME", "USER", "LOGNAME", "LANG", "TERM", "SHELL", "XDG_CACHE_HOME", "OMPTARGET_INDIRECT_CACHE"];

/// The info string that marks a fenced block as run by the suite.
pub const RUNNABLE: &str = "sh runnable";

/// A runnable block: the file and line of its opening fence, and its text.
#[derive(Debug, PartialEq, Eq)]
pub struct Block {
    /// `README.md` or `docs/<page>.md`.
    pub file: String,
    /// The 1-based line of the opening fence.
    pub line: usize,
    /// The lines between the fences.
    pub text: String,
}

/// The runnable blocks of one Markdown text. An unclosed runnable block is an error: the file
/// would render the rest of the page as code.
pub fn runnable_blocks(file: &str, markdown: &str) -> Result<Vec<Block>> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, bool, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let fence = line.trim_start();
        match &mut open {
            None => {
                if let Some(info) = fence.strip_prefix("```") {
                    open = Some((i + 1, info.trim() == RUNNABLE, String::new()));
                }
            }
            Some((start, runnable, text)) => {
                // A closing fence has no info string: "```sh runnable" inside a block is text.
                if fence.starts_with("```") && fence.trim_end().trim_start_matches('`').is_empty() {
                    if *runnable {
                        blocks.push(Block {
                            file: file.to_string(),
                            line: *start,
                            text: std::mem::take(text),
                        });
                    }
                    open = None;
                } else {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    if let Some((start, true, _)) = open {
        bail!("{file}:{start}: a `{RUNNABLE}` block is never closed");
    }
    Ok(blocks)
}

/// `README.md` and then every `docs/*.md` in name order, relative to the checkout: the pages a
/// reader reads.
pub fn pages(workspace: &Path) -> Result<Vec<PathBuf>> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(workspace.join("docs"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter_map(|p| p.strip_prefix(workspace).ok().map(Path::to_path_buf))
        .collect();
    docs.sort();
    pages.extend(docs);
    Ok(pages)
}

/// Every runnable block of `README.md` and `docs/*.md`, in file order.
pub fn all_blocks(workspace: &Path) -> Result<Vec<Block>> {
    let mut blocks = Vec::new();
    for page in pages(workspace)? {
        let text = std::fs::read_to_string(workspace.join(&page))
            .with_context(|| format!("reading {}", page.display()))?;
        blocks.extend(runnable_blocks(&page.to_string_lossy(), &text)?);
    }
    Ok(blocks)
}

/// Runs every runnable block (see the module's documentation); fails on the first that fails,
/// naming its file and line and showing its output.
pub fn check(workspace: &Path) -> Result<String> {
    let blocks = all_blocks(workspace)?;
    ensure!(blocks.iter().any(|b| b.file == "README.md"), "the README has no `{RUNNABLE}` block");
    let scratch = workspace.join("target/doc-commands");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)?;
    }
    std::fs::create_dir_all(&scratch)?;
    let prefix = scratch.join("prefix");
    let path = reader_path();
    let mut files = BTreeSet::new();
    let before = untracked(workspace)?;
    for (n, block) in blocks.iter().enumerate() {
        let script = scratch.join(format!("block-{n}.sh"));
        std::fs::write(&script, block.text.replace(PREFIX, &prefix.to_string_lossy()))?;
        let mut c = Command::new(requirements::program("bash"));
        c.current_dir(workspace).arg("-euo").arg("pipefail").arg(&script);
        c.env_clear().env("PATH", &path);
        for name in READER_ENVIRONMENT {
            if let Some(value) = std::env::var_os(name) {
                c.env(name, value);
            }
        }
        let outcome = cmd::output(&mut c).map(|out| {
            print!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
        });
        let page_done = blocks.get(n + 1).is_none_or(|next| next.file != block.file);
        // Removing what is new leaves the checkout as it was before the first block.
        if page_done || outcome.is_err() {
            for new in untracked(workspace)?.difference(&before) {
                std::fs::remove_file(workspace.join(new)).with_context(|| format!("removing {new}"))?;
            }
        }
        outcome
            .with_context(|| format!("{}:{}: the block failed:\n{}", block.file, block.line, block.text))?;
        files.insert(block.file.as_str());
    }
    std::fs::remove_dir_all(&scratch)?;
    Ok(format!(
        "{} blocks of {} ran ({})",
        blocks.len(),
        files.len(),
        files.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

/// `PATH` as a reader's shell has it: without the toolchain directories rustup and cargo add.
fn reader_path() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !dir.to_string_lossy().contains("/.rustup/toolchains/"))
        .collect();
    std::env::join_paths(kept).unwrap_or(path)
}

/// The checkout's untracked files that git does not ignore.
fn untracked(workspace: &Path) -> Result<BTreeSet<String>> {
    let listed = cmd::stdout(Command::new(requirements::program("git")).current_dir(workspace).args([
        "ls-files",
        "--others",
        "--exclude-standard",
        "-z",
    ]))?;
    Ok(listed.split('\0').filter(|f| !f.is_empty()).map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_blocks_marked_runnable_are_taken_with_their_fence_line() {
        let page = "# t\n```sh\nnot run\n```\ntext\n```sh runnable\necho a\necho b\n```\n  ```sh runnable\nx\n  ```\n";
        let blocks = runnable_blocks("README.md", page).unwrap();
        assert_eq!(
            blocks,
            vec![
                Block { file: "README.md".into(), line: 6, text: "echo a\necho b\n".into() },
                Block { file: "README.md".into(), line: 10, text: "x\n".into() },
            ]
        );
    }

    #[test]
    fn a_fence_inside_another_language_block_does_not_open_a_runnable_one() {
        let page = "```text\n```sh runnable\n```\nafter\n";
        assert!(runnable_blocks("docs/x.md", page).unwrap().is_empty());
    }

    #[test]
    fn an_unclosed_runnable_block_is_refused_with_its_line() {
        let err = runnable_blocks("docs/x.md", "a\n```sh runnable\necho\n").unwrap_err();
        assert!(err.to_string().contains("docs/x.md:2"), "{err}");
    }
}
