//! One record per offload target (`packaging/src/target_record.rs`): the build's and the suite's
//! code names no triple and decides nothing by an architecture's prefix anywhere else. A triple
//! in code (`"amdgcn-amd-amdhsa"`) or a decision by prefix (`arch.starts_with("gfx")`) is a fact
//! a new target (Intel's SPIR-V, which libomptarget drives through its Level Zero plugin) would
//! have to find in every file; code reads the record (`OffloadTarget::vendor`, `Target::of_arch`,
//! `record.rust_target`, ...) instead.
//!
//! Comments are prose; unit tests (from `#[cfg(test)]` on) and integration tests use real
//! triples as samples. Code that is one target's by nature (a vendor's plugin checking its
//! images, the device library's `cfg(target_arch)`) reads its own target's name in its own terms
//! (`starts_with("amdgcn")` of an image's triple), never a whole triple the build would share.

mod tracked_sources;

use packaging::target_record::TARGETS;
use tracked_sources::code_of;

/// What `code` (a line with its comment removed) says of a target that the record holds: a
/// triple or Rust target as a string literal, or a decision by an architecture's prefix.
fn names_target(code: &str) -> Option<String> {
    for target in TARGETS {
        for triple in [target.triple, target.rust_target] {
            if code.contains(&format!("\"{triple}\"")) {
                return Some(triple.to_string());
            }
        }
        if target.arch_prefix.is_empty() {
            continue;
        }
        for decision in ["starts_with", "strip_prefix"] {
            let call = format!("{decision}(\"{}\")", target.arch_prefix);
            if code.contains(&call) {
                return Some(call);
            }
        }
    }
    None
}

#[test]
fn no_code_outside_the_target_records_names_a_triple_or_decides_by_a_prefix() {
    let mut found = Vec::new();
    for (file, n, line) in tracked_sources::product_lines("packaging/src/target_record.rs") {
        if let Some(named) = names_target(code_of(&line)) {
            found.push(format!("{file}:{n}: `{named}`: {}", line.trim()));
        }
    }
    assert!(
        found.is_empty(),
        "offload targets named outside their records (packaging/src/target_record.rs): read the record instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_forms_a_target_takes_in_code_are_found() {
    for (code, named) in [
        (r#"target: "nvptx64-nvidia-cuda","#, "nvptx64-nvidia-cuda"),
        (r#"if target.triple != "x86_64-pc-linux-gnu" {"#, "x86_64-pc-linux-gnu"),
        (r#"target: "x86_64-unknown-linux-gnu","#, "x86_64-unknown-linux-gnu"),
        (r#"if arch.starts_with("gfx") {"#, "starts_with(\"gfx\")"),
        (r#"let digits = sm.strip_prefix("sm_")"#, "strip_prefix(\"sm_\")"),
    ] {
        assert_eq!(names_target(code).as_deref(), Some(named), "{code}");
    }
    for code in ["let x = \"sm_90\";", "\"gfx90a\"", "record.triple", "\"nvptx64\""] {
        assert_eq!(names_target(code), None, "{code}");
    }
}
