//! What the record tests read: every tracked Rust file's lines up to its unit tests, less
//! integration tests (whose samples are real names), and the code of a line without its comment.

use std::path::Path;
use std::process::Command;

/// Each tracked `.rs` file of the workspace but integration tests and `except`, with its lines
/// before `#[cfg(test)]` (1-based numbers).
pub fn product_lines(except: &str) -> Vec<(String, usize, String)> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    let listed = Command::new("git")
        .current_dir(workspace)
        .args(["ls-files", "-z", "--", "*.rs"])
        .output()
        .expect("git ls-files");
    assert!(listed.status.success(), "git ls-files failed");
    let mut lines = Vec::new();
    for file in String::from_utf8_lossy(&listed.stdout).split('\0').filter(|f| !f.is_empty()) {
        let integration_test = file.split('/').any(|part| part == "tests") && !file.starts_with("tests/");
        if integration_test || file == except {
            continue;
        }
        let text = std::fs::read_to_string(workspace.join(file)).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            lines.push((file.to_string(), n + 1, line.to_string()));
        }
    }
    lines
}

/// The code of a line: nothing for a comment line, else what comes before a `//` that is not
/// inside a string (as far as a line can tell).
pub fn code_of(line: &str) -> &str {
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
