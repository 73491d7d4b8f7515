//! The troubleshooting page against the product's messages: every message the project's code
//! prints to a user has an entry in `docs/troubleshooting.md` ([`PAGE`]), found by the fixed
//! text the code builds it from.
//!
//! The messages are read from the product sources as the code builds them (test code left out:
//! `#[cfg(test)]` items, `tests/`, `benches/`, `examples/`, `fuzz/` and the plugins' test-support
//! crate):
//!
//! - the plugins' and the registration library's lines, the strict device's report and the trap
//!   messages the pass plugin builds for the device: the literal of a formatting macro
//!   (`eprintln!`, `format!`, `write!`, ...) whose text, with the constants it names filled in
//!   (`{PREFIX}`, `{NAME}`, `{}` of a constant), starts with `omptarget-indirect (`,
//!   `omptarget-indirect strict:` or `omptarget-indirect:`; the common helper's lines
//!   (`host-table/src/diagnostics.rs`, `omptarget-indirect ({plugin}) error: ...`) once for
//!   each plugin name its callers pass;
//! - the messages given to that helper (`diagnostics::info(...)`, `diagnostics::notice_once(...)`)
//!   and the causes the plugins' error types print (`write!` in their `Display` impls);
//! - the compiler plugins' remarks (the literals that build the message of each `.emit(...)` of
//!   the pass plugin), their error causes (`ok_or("...")`, `map_err(|_| "...")`) and the clang
//!   diagnostics of the frontend plugin (`getCustomDiagID(level, "..." "...")`, `%N` arguments);
//! - the install's messages: `bail!`, `ensure!`, `anyhow!`, `.context("...")`, `println!`,
//!   `eprintln!` and the `format!` of a `.with_context(...)` in [`INSTALL_FILES`].
//!
//! Each message's key ([`key_of_text`]) is its fixed text up to its first argument once it has three
//! words of its own (a clause ending in `:` or `;` ends it too, 16 words at most), arguments
//! written `<>`. The page has an entry for it when its text, backticks dropped, whitespace
//! collapsed and every `<...>` read as `<>`, holds the key, an argument standing for any short
//! text (a `<name>` or a real value).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};

/// The page, relative to the workspace.
pub const PAGE: &str = "docs/troubleshooting.md";

/// Directories of product code whose messages are read (all of them, less test code).
pub const SOURCE_DIRS: [&str; 6] =
    ["host-table", "plugins", "stock-runtime", "strict", "device-rtl", "compiler"];

/// The host runtime's directories: the libomptarget 16 plugins, the registration library and the
/// table both stand on (their errors' `Display` texts are messages too).
const HOST_RUNTIME_DIRS: [&str; 3] = ["host-table/", "plugins/", "stock-runtime/"];

/// The install's files whose messages are read.
pub const INSTALL_FILES: [&str; 3] =
    ["packaging/src/install.rs", "packaging/src/llvm.rs", "xtask/src/install.rs"];

/// Directories never read: test code, and build output.
const SKIPPED_DIRS: [&str; 6] = ["tests", "benches", "examples", "fuzz", "target", "test-support"];

/// The longest text an argument of a key stands for on the page.
const MAX_ARGUMENT: usize = 200;

/// One source file: its path relative to the workspace and its text.
#[derive(Debug, Clone)]
pub struct Source {
    /// Path relative to the workspace, `/`-separated (it decides which rules apply).
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// One message the product prints, as found in its source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Message {
    /// Its key: the fixed text the page must hold ([`key`]).
    pub key: String,
    /// Where the code builds it: `path:line`.
    pub at: String,
}

/// Reads the product sources of `workspace` ([`SOURCE_DIRS`], [`INSTALL_FILES`]) and the page
/// ([`PAGE`]) and checks that every message has an entry ([`check_sources`]). Fails when a
/// directory or file is missing, when a kind of message is found nowhere (a changed helper would
/// otherwise hide its messages), or listing each message without an entry; returns
/// `"N messages (K distinct keys), each with an entry in docs/troubleshooting.md"`.
pub fn check(workspace: &Path) -> Result<String> {
    let mut sources = Vec::new();
    for dir in SOURCE_DIRS {
        let path = workspace.join(dir);
        ensure!(path.is_dir(), "{} is missing", path.display());
        collect(workspace, &path, &mut sources)?;
    }
    for file in INSTALL_FILES {
        let path = workspace.join(file);
        let text = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        sources.push(Source { path: file.to_string(), text });
    }
    let page_path = workspace.join(PAGE);
    let page =
        fs::read_to_string(&page_path).with_context(|| format!("cannot read {}", page_path.display()))?;
    check_sources(&sources, &page)
}

/// The core of [`check`]: the messages of `sources` ([`extract`]) against `page`. Fails when no
/// message of the plugins, the strict device, the compiler plugins or the install is found, or
/// naming each message (with where it is built) whose key the page does not hold.
pub fn check_sources(sources: &[Source], page: &str) -> Result<String> {
    let messages = extract(sources)?;
    for (area, prefix) in [
        ("the plugins", "plugins/"),
        ("the strict device", "strict/"),
        ("the compiler plugins", "compiler/"),
        ("the install", ""),
    ] {
        let found = messages.iter().any(|m| {
            if prefix.is_empty() {
                INSTALL_FILES.iter().any(|f| m.at.starts_with(&format!("{f}:")))
            } else {
                m.at.starts_with(prefix)
            }
        });
        ensure!(
            found,
            "no message of {area} found: the extraction no longer matches how the code builds them"
        );
    }
    let page = normalise(page);
    let mut missing: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for message in &messages {
        if !holds(&page, &message.key) {
            missing.entry(&message.key).or_default().push(&message.at);
        }
    }
    if !missing.is_empty() {
        let list: Vec<String> =
            missing.iter().map(|(key, at)| format!("  `{key}` ({})", at.join(", "))).collect();
        bail!("{} message(s) without an entry in {PAGE}:\n{}", missing.len(), list.join("\n"));
    }
    let keys: BTreeSet<&str> = messages.iter().map(|m| m.key.as_str()).collect();
    Ok(format!("{} messages ({} distinct keys), each with an entry in {PAGE}", messages.len(), keys.len()))
}

/// Every message of `sources`, in file order (see the module documentation for the rules).
/// Fails when a line of the common helper names its plugin (`{plugin}`) but no caller of the
/// helper says which plugins call it.
pub fn extract(sources: &[Source]) -> Result<Vec<Message>> {
    let files: Vec<(&Source, Vec<Token>)> = sources
        .iter()
        .map(|s| {
            let tokens = lex(&s.text, s.path.ends_with(".rs"));
            let tokens = if s.path.ends_with(".rs") { without_tests(tokens) } else { tokens };
            (s, tokens)
        })
        .collect();
    let consts = Consts::of(&files);
    let helpers = helper_plugins(&files, &consts);
    let mut messages = Vec::new();
    for (source, tokens) in &files {
        let found = if source.path.ends_with(".rs") {
            rust_messages(source, tokens, &consts, &helpers)?
        } else {
            cpp_messages(tokens)
        };
        for (line, segments) in found {
            if let Some(key) = key(&segments) {
                messages.push(Message { key, at: format!("{}:{line}", source.path) });
            }
        }
    }
    Ok(messages)
}

/// The `.rs`, `.cpp`, `.c` and `.h` files under `dir`, less [`SKIPPED_DIRS`], sorted.
fn collect(workspace: &Path, dir: &Path, out: &mut Vec<Source>) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_str()) && !name.starts_with('.') {
                collect(workspace, &path, out)?;
            }
        } else if [".rs", ".cpp", ".c", ".h"].iter().any(|e| name.ends_with(e)) {
            let text =
                fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let relative = path.strip_prefix(workspace).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            out.push(Source { path: relative, text });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Tokens

/// A token of Rust or C++ source, as far as the rules need.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An identifier or keyword.
    Ident(String),
    /// A string literal's value; `plain` for `"..."` and raw `r"..."` (not `b""`, `c""`).
    Str { value: String, plain: bool },
    /// A lifetime (`'static`).
    Lifetime,
    /// One punctuation character.
    Punct(char),
    /// A number or a character literal.
    Other,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

impl Token {
    fn is(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }

    fn ident(&self) -> Option<&str> {
        match &self.tok {
            Tok::Ident(s) => Some(s),
            _ => None,
        }
    }

    fn plain_str(&self) -> Option<&str> {
        match &self.tok {
            Tok::Str { value, plain: true } => Some(value),
            _ => None,
        }
    }
}

/// The tokens of `text` (Rust when `rust`, else C or C++); comments are dropped.
fn lex(text: &str, rust: bool) -> Vec<Token> {
    let c: Vec<char> = text.chars().collect();
    let n = c.len();
    let at = |i: usize| if i < n { c[i] } else { '\0' };
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < n {
        let ch = c[i];
        let start_line = line;
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 1;
            i += 2;
            while i < n && depth > 0 {
                if c[i] == '\n' {
                    line += 1;
                }
                if rust && c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            let value = quoted(&c, &mut i, &mut line, rust);
            out.push(Token { tok: Tok::Str { value, plain: true }, line: start_line });
        } else if ch.is_alphabetic() || ch == '_' {
            let begin = i;
            while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[begin..i].iter().collect();
            let next = at(i);
            if rust && matches!(word.as_str(), "r" | "br" | "cr") && (next == '"' || next == '#') {
                let mut hashes = 0;
                while at(i + hashes) == '#' {
                    hashes += 1;
                }
                if at(i + hashes) == '"' {
                    i += hashes + 1;
                    let begin = i;
                    while i < n && !(c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                        if c[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                    let value: String = c[begin..i.min(n)].iter().collect();
                    i += hashes + 1;
                    out.push(Token { tok: Tok::Str { value, plain: word == "r" }, line: start_line });
                    continue;
                }
            }
            let prefixes: &[&str] = if rust { &["b", "c"] } else { &["u8", "u", "U", "L"] };
            if next == '"' && prefixes.contains(&word.as_str()) {
                let value = quoted(&c, &mut i, &mut line, rust);
                out.push(Token { tok: Tok::Str { value, plain: !rust }, line: start_line });
                continue;
            }
            out.push(Token { tok: Tok::Ident(word), line: start_line });
        } else if ch == '\'' {
            if rust && at(i + 1) != '\\' && at(i + 2) != '\'' {
                // A lifetime or a label.
                i += 1;
                while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push(Token { tok: Tok::Lifetime, line: start_line });
            } else {
                i += 1;
                while i < n && c[i] != '\'' && c[i] != '\n' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(Token { tok: Tok::Other, line: start_line });
            }
        } else if ch.is_ascii_digit() {
            while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Other, line: start_line });
        } else {
            out.push(Token { tok: Tok::Punct(ch), line: start_line });
            i += 1;
        }
    }
    out
}

/// The value of the string literal whose opening quote is at `*i`; leaves `*i` after its closing
/// quote. Escapes are read as Rust reads them (in C++ too, as far as messages go); a Rust
/// backslash at the end of a line drops the line break and the next line's leading whitespace.
fn quoted(c: &[char], i: &mut usize, line: &mut usize, rust: bool) -> String {
    let n = c.len();
    let mut value = String::new();
    *i += 1;
    while *i < n && c[*i] != '"' {
        let ch = c[*i];
        if ch == '\\' && *i + 1 < n {
            let e = c[*i + 1];
            *i += 2;
            match e {
                'n' => value.push('\n'),
                't' => value.push('\t'),
                'r' => value.push('\r'),
                '0' => value.push('\0'),
                '\n' => {
                    *line += 1;
                    if rust {
                        while *i < n && c[*i].is_whitespace() {
                            if c[*i] == '\n' {
                                *line += 1;
                            }
                            *i += 1;
                        }
                    }
                }
                'x' => {
                    let hex: String = c[*i..(*i + 2).min(n)].iter().collect();
                    *i = (*i + 2).min(n);
                    value.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
                }
                'u' if rust && *i < n && c[*i] == '{' => {
                    let end = c[*i..].iter().position(|&x| x == '}').map_or(n, |p| *i + p);
                    let hex: String = c[*i + 1..end].iter().collect();
                    *i = end + 1;
                    value.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
                }
                other => value.push(other),
            }
        } else {
            if ch == '\n' {
                *line += 1;
            }
            value.push(ch);
            *i += 1;
        }
    }
    *i += 1;
    value
}

/// `tokens` less every item under `#[cfg(test)]` (a test module or function, up to the end of
/// its braces or its `;`).
fn without_tests(tokens: Vec<Token>) -> Vec<Token> {
    let is_cfg_test = |t: &[Token]| {
        t.len() >= 7
            && t[0].is('#')
            && t[1].is('[')
            && t[2].ident() == Some("cfg")
            && t[3].is('(')
            && t[4].ident() == Some("test")
            && t[5].is(')')
            && t[6].is(']')
    };
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if !is_cfg_test(&tokens[i..]) {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        i += 7;
        while i < tokens.len() {
            if tokens[i].is('{') {
                i = closing(&tokens, i) + 1;
                break;
            }
            if tokens[i].is(';') {
                i += 1;
                break;
            }
            i += 1;
        }
    }
    out
}

/// The index of the bracket closing the one at `open` (the last token when unbalanced).
fn closing(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    tokens.len().saturating_sub(1)
}

/// The top-level arguments of the bracket at `open`, as index ranges.
fn arguments(tokens: &[Token], open: usize) -> Vec<std::ops::Range<usize>> {
    let close = closing(tokens, open);
    let mut args = Vec::new();
    let (mut start, mut depth) = (open + 1, 0usize);
    for (j, token) in tokens.iter().enumerate().take(close).skip(open + 1) {
        match token.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => depth = depth.saturating_sub(1),
            Tok::Punct(',') if depth == 0 => {
                args.push(start..j);
                start = j + 1;
            }
            _ => {}
        }
    }
    if start < close {
        args.push(start..close);
    }
    args
}

// ---------------------------------------------------------------------------------------------
// Constants and the common helper

/// The string constants of the sources (`const NAME: &str = "..."`), per crate.
struct Consts {
    /// (crate, name) -> values.
    by_crate: BTreeMap<(String, String), BTreeSet<String>>,
    /// name -> values, every crate.
    everywhere: BTreeMap<String, BTreeSet<String>>,
    /// The plugins' names: `const NAME` of each `impl Backend for`.
    backends: BTreeSet<String>,
}

/// The crate of a source path: the directory above its `src/`, else its own directory.
fn crate_of(path: &str) -> String {
    match path.find("/src/") {
        Some(at) => path[..at].to_string(),
        None => path.rsplit_once('/').map_or(String::new(), |(dir, _)| dir.to_string()),
    }
}

impl Consts {
    fn of(files: &[(&Source, Vec<Token>)]) -> Consts {
        let mut consts =
            Consts { by_crate: BTreeMap::new(), everywhere: BTreeMap::new(), backends: BTreeSet::new() };
        for (source, t) in files.iter().filter(|(s, _)| s.path.ends_with(".rs")) {
            let krate = crate_of(&source.path);
            let impls = impl_blocks(t);
            for i in 0..t.len() {
                if t[i].ident() != Some("const") {
                    continue;
                }
                // const NAME : & ['a] str = "value" ;
                let Some(name) = t.get(i + 1).and_then(Token::ident) else { continue };
                let mut j = i + 2;
                if !(t.get(j).is_some_and(|x| x.is(':')) && t.get(j + 1).is_some_and(|x| x.is('&'))) {
                    continue;
                }
                j += 2;
                if t.get(j).is_some_and(|x| x.tok == Tok::Lifetime) {
                    j += 1;
                }
                if t.get(j).and_then(Token::ident) != Some("str") || !t.get(j + 1).is_some_and(|x| x.is('='))
                {
                    continue;
                }
                let Some(value) = t.get(j + 2).and_then(Token::plain_str) else { continue };
                consts
                    .by_crate
                    .entry((krate.clone(), name.to_string()))
                    .or_default()
                    .insert(value.to_string());
                consts.everywhere.entry(name.to_string()).or_default().insert(value.to_string());
                if name == "NAME" && impls.iter().any(|(tr, r)| tr == "Backend" && r.contains(&i)) {
                    consts.backends.insert(value.to_string());
                }
            }
        }
        consts
    }

    /// The value of constant `name` seen from `krate`: its crate's, else the one of that name
    /// anywhere, when there is exactly one.
    fn get(&self, krate: &str, name: &str) -> Option<&str> {
        fn only(set: &BTreeSet<String>) -> Option<&str> {
            set.first().map(String::as_str).filter(|_| set.len() == 1)
        }
        match self.by_crate.get(&(krate.to_string(), name.to_string())) {
            Some(set) => only(set),
            None => self.everywhere.get(name).and_then(only),
        }
    }
}

/// Each `impl ... Trait for Type { ... }` of `t`: the trait's last name and the range of tokens
/// of its body.
fn impl_blocks(t: &[Token]) -> Vec<(String, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    for i in 0..t.len() {
        if t[i].ident() != Some("impl") {
            continue;
        }
        let Some(open) = (i + 1..t.len()).find(|&j| t[j].is('{') || t[j].is(';')) else { continue };
        if !t[open].is('{') {
            continue;
        }
        let header = &t[i + 1..open];
        if let Some(at) = header.iter().position(|x| x.ident() == Some("for")) {
            if let Some(name) = header[..at].iter().rev().find_map(Token::ident) {
                out.push((name.to_string(), open..closing(t, open) + 1));
            }
        }
    }
    out
}

/// The name of the function whose body holds each token (None outside functions).
fn enclosing_functions(t: &[Token]) -> Vec<Option<String>> {
    let mut out = Vec::with_capacity(t.len());
    let mut stack: Vec<(String, usize)> = Vec::new();
    // Brace depth, parenthesis and bracket depth, and a `fn` whose body has not opened yet.
    let (mut depth, mut nest, mut pending): (usize, usize, Option<String>) = (0, 0, None);
    for (i, tok) in t.iter().enumerate() {
        match tok.tok {
            Tok::Ident(ref word) if word == "fn" => {
                pending = t.get(i + 1).and_then(Token::ident).map(str::to_string);
            }
            Tok::Punct('(' | '[') => nest += 1,
            Tok::Punct(')' | ']') => nest = nest.saturating_sub(1),
            // A declaration without a body (`fn f();` in a trait or an extern block).
            Tok::Punct(';') if nest == 0 => pending = None,
            Tok::Punct('{') => {
                if let Some(name) = pending.take() {
                    stack.push((name, depth));
                }
                depth += 1;
            }
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
            }
            _ => {}
        }
        out.push(stack.last().map(|(name, _)| name.clone()));
    }
    out
}

/// For each function of the common helper (`diagnostics::<function>(...)`), the plugin names its
/// callers pass: `NAME` (the caller's crate's), `B::NAME` or `plugin` (every plugin's).
fn helper_plugins(files: &[(&Source, Vec<Token>)], consts: &Consts) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (source, t) in files.iter().filter(|(s, _)| s.path.ends_with(".rs")) {
        let krate = crate_of(&source.path);
        for i in 0..t.len().saturating_sub(4) {
            if t[i].ident() != Some("diagnostics")
                || !t[i + 1].is(':')
                || !t[i + 2].is(':')
                || !t[i + 4].is('(')
            {
                continue;
            }
            let Some(function) = t[i + 3].ident() else { continue };
            let args = arguments(t, i + 4);
            let names = out.entry(function.to_string()).or_default();
            for arg in args {
                let arg = &t[arg];
                match arg {
                    [one] if one.ident() == Some("NAME") => {
                        names.extend(consts.get(&krate, "NAME").map(str::to_string))
                    }
                    [one] if one.ident() == Some("plugin") => names.extend(consts.backends.iter().cloned()),
                    [.., colon, last] if colon.is(':') && last.ident() == Some("NAME") => {
                        names.extend(consts.backends.iter().cloned())
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Messages

/// A piece of a message: fixed text, or an argument.
#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Text(String),
    Argument,
}

/// A placeholder of a Rust format string.
#[derive(Debug, Clone, PartialEq)]
enum Placeholder {
    Named(String),
    Positional(usize),
}

/// A Rust format string: its text and its placeholders.
fn format_string(s: &str) -> Vec<Result<String, Placeholder>> {
    let c: Vec<char> = s.chars().collect();
    let (mut out, mut text, mut next, mut i) = (Vec::new(), String::new(), 0, 0);
    while i < c.len() {
        match c[i] {
            '{' if c.get(i + 1) == Some(&'{') => {
                text.push('{');
                i += 2;
            }
            '}' if c.get(i + 1) == Some(&'}') => {
                text.push('}');
                i += 2;
            }
            '{' => {
                let end = c[i..].iter().position(|&x| x == '}').map_or(c.len(), |p| i + p);
                let inner: String = c[i + 1..end].iter().collect();
                let name = inner.split(':').next().unwrap_or("").trim().to_string();
                if !text.is_empty() {
                    out.push(Ok(std::mem::take(&mut text)));
                }
                out.push(Err(if name.is_empty() {
                    next += 1;
                    Placeholder::Positional(next - 1)
                } else if let Ok(index) = name.parse() {
                    Placeholder::Positional(index)
                } else {
                    Placeholder::Named(name)
                }));
                i = end + 1;
            }
            ch => {
                text.push(ch);
                i += 1;
            }
        }
    }
    if !text.is_empty() {
        out.push(Ok(text));
    }
    out
}

/// The plain literal alone in `range` of `t`, if that is all the argument is.
fn literal_argument<'t>(t: &'t [Token], range: &std::ops::Range<usize>) -> Option<&'t str> {
    match &t[range.clone()] {
        [one] => one.plain_str(),
        _ => None,
    }
}

/// The formatting macros and which argument is their format string.
fn format_macro(name: &str) -> Option<usize> {
    match name {
        "eprintln" | "eprint" | "println" | "print" | "format" | "format_args" | "bail" | "anyhow" => Some(0),
        "write" | "writeln" | "ensure" => Some(1),
        _ => None,
    }
}

/// Whether a message's text is one of the project's own lines (`omptarget-indirect (`,
/// `omptarget-indirect strict:`, `omptarget-indirect:`).
fn is_tool_line(segments: &[Segment]) -> bool {
    let Some(Segment::Text(first)) = segments.first() else { return false };
    ["omptarget-indirect (", "omptarget-indirect strict:", "omptarget-indirect:"]
        .iter()
        .any(|p| first.starts_with(p))
}

/// The messages of a Rust source: (line, segments) in order.
fn rust_messages(
    source: &Source,
    t: &[Token],
    consts: &Consts,
    helpers: &BTreeMap<String, BTreeSet<String>>,
) -> Result<Vec<(usize, Vec<Segment>)>> {
    let krate = crate_of(&source.path);
    let path = source.path.as_str();
    let install = INSTALL_FILES.contains(&path);
    let plugins = HOST_RUNTIME_DIRS.iter().any(|dir| path.starts_with(dir));
    let compiler = path.starts_with("compiler/");
    let functions = enclosing_functions(t);
    // Ranges whose formatted and plain literals are messages.
    let mut message_ranges: Vec<std::ops::Range<usize>> = Vec::new();
    let mut display_ranges: Vec<std::ops::Range<usize>> = Vec::new();
    if plugins {
        display_ranges.extend(impl_blocks(t).into_iter().filter(|(tr, _)| tr == "Display").map(|(_, r)| r));
    }
    for i in 0..t.len().saturating_sub(1) {
        let Some(name) = t[i].ident() else { continue };
        let call = t[i + 1].is('(');
        let method = i > 0 && t[i - 1].is('.');
        let helper = i >= 3
            && t[i - 1].is(':')
            && t[i - 2].is(':')
            && t[i - 3].ident() == Some("diagnostics")
            && matches!(name, "info" | "notice_once");
        if call
            && ((compiler && method && name == "emit")
                || (install && name == "with_context")
                || (plugins && helper))
        {
            message_ranges.push(i + 2..closing(t, i + 1));
        }
    }
    let inside = |ranges: &[std::ops::Range<usize>], i: usize| ranges.iter().any(|r| r.contains(&i));
    let mut out = Vec::new();
    // The format strings of the macros met, read as templates there, not again as literals.
    let mut templates = BTreeSet::new();
    let render = |template: &str, args: &[std::ops::Range<usize>]| -> Vec<(Option<String>, Segment)> {
        format_string(template)
            .into_iter()
            .map(|piece| match piece {
                Ok(text) => (None, Segment::Text(text)),
                Err(Placeholder::Named(name)) => match consts.get(&krate, &name) {
                    Some(value) => (None, Segment::Text(value.to_string())),
                    None => (Some(name), Segment::Argument),
                },
                Err(Placeholder::Positional(k)) => {
                    let value = args.get(k).and_then(|r| match &t[r.clone()] {
                        [.., last] => last
                            .ident()
                            .filter(|_| t[r.clone()].iter().all(|x| x.ident().is_some() || x.is(':'))),
                        [] => None,
                    });
                    match value.and_then(|v| consts.get(&krate, v)) {
                        Some(value) => (None, Segment::Text(value.to_string())),
                        None => (None, Segment::Argument),
                    }
                }
            })
            .collect()
    };
    for i in 0..t.len() {
        let line = t[i].line;
        // A formatting macro: name ! ( ... )
        if let (Some(name), Some(bang), Some(open)) = (t[i].ident(), t.get(i + 1), t.get(i + 2)) {
            if let (Some(index), true, true) = (format_macro(name), bang.is('!'), open.is('(')) {
                let args = arguments(t, i + 2);
                let Some(range) = args.get(index) else { continue };
                let Some(template) = literal_argument(t, range) else { continue };
                templates.insert(range.start);
                let rendered = render(template, &args[index + 1..]);
                let plain: Vec<Segment> = rendered.iter().map(|(_, s)| s.clone()).collect();
                let wanted = is_tool_line(&plain)
                    || inside(&message_ranges, i)
                    || (install && matches!(name, "bail" | "ensure" | "anyhow" | "println" | "eprintln"))
                    || (inside(&display_ranges, i) && matches!(name, "write" | "writeln"));
                if !wanted {
                    continue;
                }
                if rendered.iter().any(|(n, _)| n.as_deref() == Some("plugin")) && plugins {
                    let function = functions[i].clone().unwrap_or_default();
                    let names = helpers.get(&function).filter(|n| !n.is_empty()).with_context(|| {
                        format!(
                            "{path}:{line}: the line names its plugin, but no caller of diagnostics::{function} \
                             says which"
                        )
                    })?;
                    for plugin in names {
                        let segments = rendered
                            .iter()
                            .map(|(n, s)| match n.as_deref() {
                                Some("plugin") => Segment::Text(plugin.clone()),
                                _ => s.clone(),
                            })
                            .collect();
                        out.push((line, segments));
                    }
                } else {
                    out.push((line, plain));
                }
                continue;
            }
        }
        let Some(text) = t[i].plain_str().filter(|_| !templates.contains(&i)) else { continue };
        let before = |k: usize| i.checked_sub(k).map(|j| &t[j]);
        let after = |k: usize| t.get(i + k);
        let plain = vec![Segment::Text(text.to_string())];
        // "...".into() / .to_string() in a remark's message.
        let converted = after(1).is_some_and(|x| x.is('.'))
            && after(2)
                .and_then(Token::ident)
                .is_some_and(|m| matches!(m, "into" | "to_string" | "to_owned"));
        // ok_or("...") / map_err(|_| "...") / .context("...") / f.write_str("...")
        let called = |name: &str| {
            before(1).is_some_and(|x| x.is('('))
                && before(2).and_then(Token::ident) == Some(name)
                && (after(1).is_some_and(|x| x.is(')'))
                    || (after(1).is_some_and(|x| x.is(',')) && after(2).is_some_and(|x| x.is(')'))))
        };
        let map_err = before(1).is_some_and(|x| x.is('|'))
            && before(2).and_then(Token::ident) == Some("_")
            && before(3).is_some_and(|x| x.is('|'))
            && before(4).is_some_and(|x| x.is('('))
            && before(5).and_then(Token::ident) == Some("map_err");
        let wanted = (compiler && inside(&message_ranges, i) && converted)
            || (compiler && (called("ok_or") || map_err))
            || (install && (called("context") || inside(&message_ranges, i)))
            || (inside(&display_ranges, i) && called("write_str"));
        if wanted {
            out.push((line, plain));
        }
    }
    Ok(out)
}

/// The messages of a C or C++ source: the clang diagnostics it defines
/// (`getCustomDiagID(level, "..." "...")`, `%N` arguments).
fn cpp_messages(t: &[Token]) -> Vec<(usize, Vec<Segment>)> {
    let mut out = Vec::new();
    for i in 0..t.len().saturating_sub(1) {
        if t[i].ident() != Some("getCustomDiagID") || !t[i + 1].is('(') {
            continue;
        }
        let args = arguments(t, i + 1);
        let Some(range) = args.get(1) else { continue };
        let pieces: Option<Vec<&str>> = t[range.clone()].iter().map(Token::plain_str).collect();
        let Some(pieces) = pieces else { continue };
        let text = pieces.concat();
        let mut segments = Vec::new();
        let mut current = String::new();
        let mut chars = text.chars().peekable();
        while let Some(ch) = chars.next() {
            if ch == '%' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                    chars.next();
                }
                if !current.is_empty() {
                    segments.push(Segment::Text(std::mem::take(&mut current)));
                }
                segments.push(Segment::Argument);
            } else if ch == '%' && chars.peek() == Some(&'%') {
                chars.next();
                current.push('%');
            } else {
                current.push(ch);
            }
        }
        if !current.is_empty() {
            segments.push(Segment::Text(current));
        }
        out.push((t[i].line, segments));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Keys and the page

/// The words that open the project's own lines, kept in front of a key beside its own words:
/// `omptarget-indirect:`, `omptarget-indirect strict:`, `omptarget-indirect (<name>) error:`
/// (or `info:`, `notice:`).
fn tool_prefix(words: &[&str]) -> usize {
    match words {
        ["omptarget-indirect:", ..] => 1,
        ["omptarget-indirect", "strict:", ..] => 2,
        ["omptarget-indirect", name, kind, ..]
            if name.starts_with('(')
                && name.ends_with(')')
                && matches!(*kind, "error:" | "info:" | "notice:") =>
        {
            3
        }
        _ => 0,
    }
}

/// The key of a message: its text ([`normalise`]d, arguments `<>`), from the start up to the
/// first argument that follows three words of its own (words with a letter and no argument in
/// them; the opening [`tool_prefix`] not counted), or to the end of a clause (a word ending in
/// `:` or `;`) after three, at most 16 words past the prefix; arguments at its ends dropped.
/// None for a message with no word of its own.
pub fn key_of_text(text: &str) -> Option<String> {
    let text = normalise(text);
    let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
    let prefix = tool_prefix(&words);
    let own = |w: &str| !w.contains("<>") && w.chars().any(char::is_alphabetic);
    let mut kept: Vec<&str> = words[..prefix].to_vec();
    let mut fixed = 0;
    for &word in &words[prefix..] {
        if kept.len() - prefix >= 16 || (word.contains("<>") && fixed >= 3) {
            break;
        }
        kept.push(word);
        if own(word) {
            fixed += 1;
            if fixed >= 3 && (word.ends_with(':') || word.ends_with(';')) {
                break;
            }
        }
    }
    let letters = |w: &str| w.replace("<>", "").chars().any(char::is_alphabetic);
    while kept.len() > prefix && !letters(kept[kept.len() - 1]) {
        kept.pop();
    }
    let start = if prefix == 0 { kept.iter().position(|w| letters(w)).unwrap_or(kept.len()) } else { 0 };
    let kept = &kept[start..];
    if kept.is_empty() || (prefix == 0 && !kept.iter().any(|w| own(w))) {
        return None;
    }
    Some(kept.join(" "))
}

/// The key of a message made of `segments` ([`key_of_text`]).
fn key(segments: &[Segment]) -> Option<String> {
    // Literal `<name>`s of the text read as arguments too, as on the page ([`normalise`]).
    let text: String = segments
        .iter()
        .map(|s| match s {
            Segment::Text(t) => t.as_str(),
            Segment::Argument => "<>",
        })
        .collect();
    key_of_text(&text)
}

/// `text` as keys are compared: backticks dropped, whitespace collapsed to one space, every
/// `<...>` (no space, no bracket inside) written `<>`, and arguments side by side (`<> <>`) one.
pub fn normalise(text: &str) -> String {
    let spaced: String = text.replace('`', "").split_whitespace().collect::<Vec<_>>().join(" ");
    let c: Vec<char> = spaced.chars().collect();
    let mut out = String::with_capacity(spaced.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] == '<' {
            if let Some(len) = c[i + 1..].iter().position(|&x| x == '>' || x == '<' || x == ' ') {
                if c[i + 1 + len] == '>' {
                    out.push_str("<>");
                    i += len + 2;
                    continue;
                }
            }
        }
        out.push(c[i]);
        i += 1;
    }
    while out.contains("<> <>") || out.contains("<><>") {
        out = out.replace("<> <>", "<>").replace("<><>", "<>");
    }
    out
}

/// Whether the [`normalise`]d `page` holds `key`: its pieces between arguments in order, each
/// argument standing for at most [`MAX_ARGUMENT`] characters of the page.
fn holds(page: &str, key: &str) -> bool {
    let pieces: Vec<&str> = key.split("<>").collect();
    let first = pieces[0];
    let rest = &pieces[1..];
    if first.is_empty() {
        return (0..=page.len()).filter(|&i| page.is_char_boundary(i)).any(|i| follows(page, i, rest));
    }
    page.match_indices(first).any(|(at, _)| follows(page, at + first.len(), rest))
}

/// Whether `pieces` follow in `page` from byte `from`, each after an argument (at most
/// [`MAX_ARGUMENT`] characters).
fn follows(page: &str, from: usize, pieces: &[&str]) -> bool {
    let Some((piece, rest)) = pieces.split_first() else { return true };
    if piece.is_empty() {
        return rest.is_empty() || follows(page, from, rest);
    }
    let window_end = page[from..].char_indices().nth(MAX_ARGUMENT).map_or(page.len(), |(k, _)| from + k);
    let mut at = from;
    while at <= window_end {
        let Some(found) = page[at..].find(piece) else { return false };
        let start = at + found;
        if start > window_end {
            return false;
        }
        if follows(page, start + piece.len(), rest) {
            return true;
        }
        at = start + page[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(path: &str, text: &str) -> Source {
        Source { path: path.to_string(), text: text.to_string() }
    }

    /// A plugin crate with the common helper, a backend, a strict-like prefix constant, an
    /// install file and a C++ diagnostic: one of each kind of message.
    fn sample() -> Vec<Source> {
        vec![
            source(
                "host-table/src/diagnostics.rs",
                r#"
pub fn failed(plugin: &str, call: &str, cause: &str) {
    eprintln!("omptarget-indirect ({plugin}) error: {}: {cause}", site(call));
}
pub fn info(plugin: &str, message: impl Display) {
    eprintln!("omptarget-indirect ({plugin}) info: {message}");
}
impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginError::InvalidImage(why) => write!(f, "invalid image: {why}"),
            PluginError::Backend(why) => write!(f, "{why}"),
        }
    }
}
fn guarded(plugin: &str) { diagnostics::failed(plugin, "__tgt_rtl_init_device", &err); }
#[cfg(test)]
mod tests {
    fn only_a_test() { eprintln!("omptarget-indirect (x) error: a test's own line {x}"); }
}
"#,
            ),
            source(
                "plugins/gpu/src/lib.rs",
                r#"
impl Backend for Gpu {
    const NAME: &'static str = "gpu";
}
fn load() {
    diagnostics::info(B::NAME, format_args!("device {device}: {} vtable(s) of the image not \
                     found in the host program", n));
}
"#,
            ),
            source(
                "strict/src/fault.rs",
                r#"
pub const PREFIX: &str = "omptarget-indirect strict: ";
fn describe() -> String {
    format!("{PREFIX}{} {target} by device code at {}: on a GPU this faults", words, at)
}
"#,
            ),
            source(
                "compiler/pass-plugin/src/host_only.rs",
                r#"
fn stub() {
    let message = format!("omptarget-indirect: {name} is not compiled for the device (no device \
                           compile of the program defines it: ...)");
    self.remarks.emit(Kind::Passed, f, c"WeakTrapDefined", || {
        format!("{name} is declared here and defined by another file: a weak definition")
    });
    self.remarks.emit(Kind::Missed, f, c"Left", || "left alone: no runtime can cast here".into());
}
"#,
            ),
            source(
                "compiler/frontend-plugin/omptarget_indirect_frontend.cpp",
                r#"
  // "not a message": a comment
  VTableRemark = Diags.getCustomDiagID(DiagnosticsEngine::Remark,
      "vtable of %0 emitted for the device: objects the host builds reach device code "
      "[-Rpass=omptarget-indirect]");
"#,
            ),
            source(
                "xtask/src/install.rs",
                r#"
fn check_rust() -> Result<()> {
    ensure!(release.contains("nightly"), "rustc {release} cannot build the device library (it needs -Zbuild-std)");
    let prefix = prefix.context("`install` needs --prefix DIR")?;
    println!("installed {} files under {}", files.len(), root.display());
    let llvm = find().with_context(|| format!("{}: no bin/llvm-config there", dir.display()))?;
    let internal = format!("not a message {x}");
}
"#,
            ),
        ]
    }

    fn keys(sources: &[Source]) -> Vec<String> {
        extract(sources).unwrap().into_iter().map(|m| m.key).collect()
    }

    #[test]
    fn the_extractor_finds_each_kind_of_message() {
        let found = keys(&sample());
        for expected in [
            // Through the common helper, once per plugin its callers name.
            "omptarget-indirect (gpu) error:",
            "omptarget-indirect (gpu) info:",
            "invalid image:",
            "device <>: <> vtable(s) of the image not found in the host program",
            "omptarget-indirect strict: <> by device code at",
            "omptarget-indirect: <> is not compiled for the device (no device compile of the program defines it:",
            "is declared here and defined by another file:",
            "left alone: no runtime can cast here",
            "vtable of <> emitted for the device:",
            "rustc <> cannot build the device library (it needs -Zbuild-std)",
            "install needs --prefix DIR",
            "installed <> files under",
            "no bin/llvm-config there",
        ] {
            assert!(found.iter().any(|k| k == expected), "{expected:?} not in {found:#?}");
        }
        for absent in ["a test's own line", "nightly", "not a message", "a comment"] {
            assert!(!found.iter().any(|k| k.contains(absent)), "{absent:?} in {found:#?}");
        }
        assert_eq!(found.len(), 13, "{found:#?}");
    }

    #[test]
    fn a_helper_line_without_a_caller_naming_its_plugin_fails() {
        let lone = [source(
            "host-table/src/diagnostics.rs",
            r#"pub fn panicked(plugin: &str) { eprintln!("omptarget-indirect ({plugin}) error: {}: panic", 1); }"#,
        )];
        let err = extract(&lone).unwrap_err().to_string();
        assert!(err.contains("diagnostics::panicked"), "{err}");
    }

    #[test]
    fn keys_stop_at_an_argument_after_three_words_or_at_a_clause() {
        let k = |s: &str| key_of_text(s).unwrap();
        assert_eq!(
            k("omptarget-indirect (register) error: no __tgt_register_lib after this library: link libomptarget"),
            "omptarget-indirect (register) error: no __tgt_register_lib after this library:"
        );
        assert_eq!(k("omptarget-indirect (cuda) error: <>: <>"), "omptarget-indirect (cuda) error:");
        assert_eq!(k("symbol <> not found in the image"), "symbol <> not found in the image");
        assert_eq!(k("<> lacks <> (<> too old)"), "lacks <> (<> too old)");
        assert_eq!(key_of_text("<>: <>"), None);
        assert_eq!(key_of_text(":<>+"), None);
    }

    #[test]
    fn the_page_matches_keys_through_placeholders_backticks_and_line_breaks() {
        let page = normalise(
            "- `omptarget-indirect strict: read of host variable `counter` at 0x5625 in /tmp/p by device\n  code at \
             `main`+0x0`: ...\n- `<library> lacks <symbol> (<runtime> too old)`",
        );
        assert!(holds(&page, "omptarget-indirect strict: <> by device code at"));
        assert!(holds(&page, "lacks <> (<> too old)"));
        assert!(!holds(&page, "omptarget-indirect strict: <> by host code at"));
        assert!(!holds(&page, "lacks <> (<> too new)"));
    }

    /// The negative control: a message without an entry fails the check, naming it and where it
    /// is built; with its entry added the check passes.
    #[test]
    fn a_message_without_an_entry_fails_the_check() {
        let sources = sample();
        let mut page = String::from("# Troubleshooting\n");
        for key in keys(&sources) {
            page.push_str(&format!("- `{key}`: what it means, what to do.\n"));
        }
        let ok = check_sources(&sources, &page).unwrap();
        assert!(ok.starts_with("13 messages (13 distinct keys)"), "{ok}");

        let mut with_new = sources.clone();
        with_new.push(source(
            "stock-runtime/src/registration.rs",
            "fn f() { eprintln!(\"omptarget-indirect (register) error: a brand-new failure: {why}\"); }",
        ));
        let err = check_sources(&with_new, &page).unwrap_err().to_string();
        assert!(err.contains("1 message(s) without an entry"), "{err}");
        assert!(err.contains("omptarget-indirect (register) error: a brand-new failure:"), "{err}");
        assert!(err.contains("stock-runtime/src/registration.rs:1"), "{err}");

        page.push_str("- `omptarget-indirect (register) error: a brand-new failure: <why>`: ...\n");
        assert!(check_sources(&with_new, &page).is_ok());
    }

    #[test]
    fn an_area_without_messages_fails_the_check() {
        let sources: Vec<Source> = sample().into_iter().filter(|s| !s.path.starts_with("strict/")).collect();
        let err = check_sources(&sources, "").unwrap_err().to_string();
        assert!(err.contains("no message of the strict device"), "{err}");
    }
}
