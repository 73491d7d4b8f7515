//! What the README and `docs/` say of the project's own files and releases, checked against the
//! tree and the release records ([`crate::llvm`]):
//!
//! - every relative link (`[text](path)`, `#anchor` dropped) names a file or directory that
//!   exists, read from the page's own directory;
//! - every configuration file they name (`clang-NN.cfg`, `flang-NN.cfg`) is one a release record
//!   installs;
//! - every toolchain row of the README's support matrix (`| clang NN (...` with a `CI` cell) is a
//!   record, and every record has its rows there and in `docs/support.md`.
//!
//! Pages: README.md, CHANGELOG.md and every `docs/*.md`.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};

use crate::llvm::Llvm;

/// The pages checked, relative to the checkout: the README, `docs/*.md` and CHANGELOG.md.
fn pages(workspace: &Path) -> Result<Vec<PathBuf>> {
    let mut pages = crate::doc_commands::pages(workspace)?;
    pages.push(PathBuf::from("CHANGELOG.md"));
    Ok(pages)
}

/// The targets of the Markdown links of `text` that are relative paths (no scheme, not a bare
/// `#anchor`), each with its line number, anchors dropped.
pub fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            rest = &rest[end..];
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            links.push((n + 1, path.to_string()));
        }
    }
    links
}

/// The configuration files `text` names: `clang-NN.cfg` and `flang-NN.cfg` with a number for NN,
/// as (compiler, major).
pub fn config_files(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for compiler in ["clang", "flang"] {
        let needle = format!("{compiler}-");
        let mut rest = text;
        while let Some(at) = rest.find(&needle) {
            let after = &rest[at + needle.len()..];
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() && after[digits.len()..].starts_with(".cfg") {
                found.push((compiler.to_string(), digits));
            }
            rest = after;
        }
    }
    found
}

/// The toolchain rows of a support matrix in `text`: `| clang NN (` or `| flang NN (` rows with a
/// `CI` cell, as (compiler, major).
pub fn supported_rows(text: &str) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(first) = cells.get(1) else { continue };
        let mut words = first.split_whitespace();
        let (Some(compiler), Some(major)) = (words.next(), words.next()) else { continue };
        if ["clang", "flang"].contains(&compiler)
            && major.chars().all(|c| c.is_ascii_digit())
            && cells.contains(&"CI")
        {
            rows.push((compiler.to_string(), major.to_string()));
        }
    }
    rows
}

/// Whether a release record installs the configuration file of `compiler` for `major`.
fn recorded(compiler: &str, major: &str) -> bool {
    Llvm::of_major(major).is_some_and(|llvm| compiler == "clang" || llvm.flang)
}

/// Runs the checks of the module's documentation over the checkout at `workspace`; fails with one
/// line per finding.
pub fn check(workspace: &Path) -> Result<String> {
    let mut findings = Vec::new();
    let (mut links, mut configs) = (0, 0);
    for page in pages(workspace)? {
        let text = std::fs::read_to_string(workspace.join(&page))
            .with_context(|| format!("reading {}", page.display()))?;
        let dir = page.parent().unwrap_or(Path::new(""));
        for (line, target) in relative_links(&text) {
            links += 1;
            if !workspace.join(dir).join(&target).exists() {
                findings.push(format!("{}:{line}: the link `{target}` names no file", page.display()));
            }
        }
        for (compiler, major) in config_files(&text) {
            configs += 1;
            if !recorded(&compiler, &major) {
                findings.push(format!(
                    "{}: `{compiler}-{major}.cfg` is no release record's (packaging/src/release_record.rs)",
                    page.display()
                ));
            }
        }
    }
    let readme = std::fs::read_to_string(workspace.join("README.md"))?;
    let support = std::fs::read_to_string(workspace.join("docs/support.md"))?;
    let rows = supported_rows(&readme);
    for (compiler, major) in &rows {
        if !recorded(compiler, major) {
            findings.push(format!("README.md: the matrix's row `{compiler} {major}` is no release record's"));
        }
    }
    for llvm in Llvm::all() {
        let mut expected = vec![("clang", llvm.major)];
        if llvm.flang {
            expected.push(("flang", llvm.major));
        }
        for (compiler, major) in expected {
            if !rows.iter().any(|(c, m)| c == compiler && m == major) {
                findings.push(format!(
                    "README.md: the matrix has no row `{compiler} {major}` (a release record)"
                ));
            }
            let named = match compiler {
                "clang" => support.lines().any(|l| l.starts_with(&format!("| {major} "))),
                _ => support.lines().any(|l| l.starts_with(&format!("| flang {major} "))),
            };
            if !named {
                findings.push(format!("docs/support.md: no row for {compiler} {major} (a release record)"));
            }
        }
    }
    ensure!(findings.is_empty(), "{} findings:\n{}", findings.len(), findings.join("\n"));
    Ok(format!(
        "{links} relative links resolve, {configs} configuration files named are recorded, the {} matrix rows are the {} records'",
        rows.len(),
        Llvm::all().count()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_anchors_and_fences_are_read_as_a_reader_follows_them() {
        let text = "See [design](design.md#rules), [web](https://x.org/a.md), [here](#top).\n\
                    ```\n[not](in-a-fence.md)\n```\n[up](../README.md \"title\")\n";
        assert_eq!(relative_links(text), [(1, "design.md".to_string()), (5, "../README.md".to_string())]);
    }

    #[test]
    fn configuration_files_and_matrix_rows_are_found() {
        let text = "`clang-22.cfg`, `flang-23.cfg`, clang-NN.cfg, clang-22.cfgx\n\
                    | clang 21 (stock) | CI | CI |\n| clang 18 and older | not tried |\n| flang 19 (x) | no |\n";
        assert_eq!(
            config_files(text),
            [("clang".into(), "22".into()), ("clang".into(), "22".into()), ("flang".into(), "23".into())]
        );
        assert_eq!(supported_rows(text), [("clang".to_string(), "21".to_string())]);
    }

    /// A release no record has is a finding: the check can fail.
    #[test]
    fn an_unrecorded_release_is_refused() {
        assert!(!recorded("clang", "17"));
        assert!(!recorded("flang", Llvm::oldest().major) || Llvm::oldest().flang);
        assert!(recorded("clang", Llvm::reference().major));
    }
}
