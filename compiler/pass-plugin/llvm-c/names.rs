//! The LLVM-C names the pass plugin's Rust code uses: every identifier of `src/*.rs` that starts
//! with `LLVM` and an upper-case letter (functions, types, enum constants). Shared by build.rs,
//! which checks that `llvm-c/api.c` declares each of them, and by `cargo xtask llvm-c-api`, which
//! writes that file.

use std::collections::BTreeSet;
use std::path::Path;

/// The names used in the `.rs` files of `src` (sorted, each once).
pub fn used_in(src: &Path) -> std::io::Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut files: Vec<_> = std::fs::read_dir(src)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        names.extend(in_text(&text));
    }
    Ok(names)
}

/// The names in `text`: identifiers `LLVM[A-Z]...` not part of a longer identifier.
pub fn in_text(text: &str) -> BTreeSet<String> {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < bytes.len() {
        if ident(bytes[i]) {
            let start = i;
            while i < bytes.len() && ident(bytes[i]) {
                i += 1;
            }
            let word = &text[start..i];
            if word.len() > 4 && word.starts_with("LLVM") && word.as_bytes()[4].is_ascii_uppercase() {
                names.insert(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The names `api` (the text of `llvm-c/api.c`) declares: each declaration there is one line
/// that ends with its name in a comment, `/* NAME */`.
pub fn declared_in_api(api: &str) -> BTreeSet<String> {
    api.lines()
        .filter_map(|line| line.trim_end().strip_suffix("*/")?.rsplit_once("/* "))
        .map(|(_, name)| name.trim().to_string())
        .collect()
}
