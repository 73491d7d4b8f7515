//! `cargo xtask llvm-c-api LLVM_CONFIG`: writes `compiler/pass-plugin/llvm-c/api.c`, the LLVM-C
//! API the pass plugin's Rust code uses, as the headers of the LLVM that `LLVM_CONFIG` belongs to
//! declare it: LLVM 23's, whose llvm-sys bindings (231) the build for LLVM 24 borrows. The pass
//! plugin's build.rs compiles the file against the headers of the LLVM it builds for, so that a
//! function, type or constant that changed stops the build instead of miscompiling a call.
//! Read from clang's AST dump of those headers.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

// Shared with the pass plugin's build.rs, which alone reads the file back (`declared_in_api`).
#[path = "../../compiler/pass-plugin/llvm-c/names.rs"]
#[allow(dead_code)]
mod names;

/// The LLVM-C headers whose API the pass plugin uses (its `llvm-sys` modules: core, prelude,
/// bit_reader, comdat, debuginfo, target).
const HEADERS: &[&str] =
    &["llvm-c/Core.h", "llvm-c/BitReader.h", "llvm-c/Comdat.h", "llvm-c/DebugInfo.h", "llvm-c/Target.h"];

/// Where the file is, in the workspace.
pub const API_FILE: &str = "compiler/pass-plugin/llvm-c/api.c";

/// One name's declaration in the headers.
enum Declaration {
    /// A function, with its type (`R (A, B)`).
    Function(String),
    /// A typedef, with the type it names.
    Typedef(String),
    /// A typedef of an enum (which C cannot name again when the enum has no tag).
    EnumTypedef,
    /// An enum constant, with its value.
    Constant(i64),
}

/// Writes [`API_FILE`] from the headers of `llvm`'s LLVM (an install prefix, its `bin`, or an
/// `llvm-config`).
pub fn run(workspace: &Path, llvm: &Path) -> Result<()> {
    let install = packaging::llvm_identity::LlvmInstall::probe(llvm)?;
    let (version, include, clang) = (&install.version, &install.include, install.tool("clang"));
    let used = names::used_in(&workspace.join("compiler/pass-plugin/src"))?;
    let scratch = workspace.join("target/tmp/llvm-c-api");
    std::fs::create_dir_all(&scratch)?;
    let source = scratch.join("headers.c");
    std::fs::write(&source, HEADERS.iter().map(|h| format!("#include <{h}>\n")).collect::<String>())?;
    let dump = Command::new(&clang)
        .args(["-fsyntax-only", "-fno-color-diagnostics", "-Xclang", "-ast-dump", "-isystem"])
        .arg(include)
        .arg(&source)
        .output()
        .with_context(|| format!("cannot run {}", clang.display()))?;
    ensure!(dump.status.success(), "{} failed: {}", clang.display(), String::from_utf8_lossy(&dump.stderr));
    let declarations = parse_dump(&String::from_utf8_lossy(&dump.stdout));
    let missing: Vec<&String> = used.iter().filter(|n| !declarations.contains_key(*n)).collect();
    if !missing.is_empty() {
        bail!(
            "the pass plugin uses names that LLVM {version}'s headers ({}) do not declare: {missing:?}",
            HEADERS.join(", ")
        );
    }
    let mut text = format!(
        "// The LLVM-C API the pass plugin's Rust code uses (every LLVM name in src/*.rs), as LLVM\n\
         // {version}'s headers declare it. The plugin built for an LLVM whose llvm-sys release does not\n\
         // exist calls that LLVM through these declarations: build.rs compiles this file against the\n\
         // headers of the LLVM it builds for, and a function, type or constant that differs there\n\
         // fails an assertion and stops the build. Written by `cargo xtask llvm-c-api <llvm-config>`\n\
         // from clang's AST dump of the headers; each line ends with the name it checks.\n"
    );
    for header in HEADERS {
        writeln!(text, "#include <{header}>")?;
    }
    for name in &used {
        let line = match &declarations[name] {
            Declaration::Function(ty) | Declaration::Typedef(ty) => {
                format!("_Static_assert(__builtin_types_compatible_p(__typeof__({name}), {ty}), \"{name}\");")
            }
            Declaration::EnumTypedef => format!("_Static_assert(sizeof({name}) == sizeof(int), \"{name}\");"),
            Declaration::Constant(value) => format!("_Static_assert({name} == {value}, \"{name}\");"),
        };
        writeln!(text, "{line} /* {name} */")?;
    }
    let out = workspace.join(API_FILE);
    std::fs::write(&out, text)?;
    println!("{}: {} names, as LLVM {version} declares them", out.display(), used.len());
    Ok(())
}

/// The declarations in clang's textual AST dump (`-ast-dump`) of the headers: the top-level
/// functions and typedefs (the first of each name), and the constants of top-level enums with
/// their values (an implicit one is its predecessor's plus one).
fn parse_dump(dump: &str) -> BTreeMap<String, Declaration> {
    let mut out = BTreeMap::new();
    let mut constant: Option<String> = None;
    let mut next_value = 0i64;
    let mut seen_value = false;
    for line in dump.lines() {
        let bytes = line.as_bytes();
        let Some(at) = (0..bytes.len().saturating_sub(1))
            .find(|&i| matches!(bytes[i], b'|' | b'`') && bytes[i + 1] == b'-')
        else {
            continue;
        };
        let depth = at / 2 + 1;
        let node = &line[at + 2..];
        let kind = node.split(' ').next().unwrap_or("");
        if depth <= 2 {
            // A new node at the enum's level closes the constant before it.
            if let Some(name) = constant.take() {
                if !seen_value {
                    out.entry(name).or_insert(Declaration::Constant(next_value));
                    next_value += 1;
                }
            }
        }
        match (depth, kind) {
            (1, "EnumDecl") => next_value = 0,
            (1, "FunctionDecl") | (1, "TypedefDecl") => {
                let Some((name, ty)) = name_and_type(node) else { continue };
                let declaration = match (kind, ty.strip_prefix("enum ")) {
                    ("FunctionDecl", _) => Declaration::Function(ty),
                    (_, Some(_)) => Declaration::EnumTypedef,
                    _ => Declaration::Typedef(ty),
                };
                out.entry(name).or_insert(declaration);
            }
            (2, "EnumConstantDecl") => {
                constant = name_and_type(node).map(|(name, _)| name);
                seen_value = false;
            }
            (_, _) if constant.is_some() && !seen_value => {
                if let Some(value) = node.trim().strip_prefix("value: Int ") {
                    if let (Ok(value), Some(name)) = (value.trim().parse::<i64>(), constant.clone()) {
                        out.entry(name).or_insert(Declaration::Constant(value));
                        next_value = value + 1;
                        seen_value = true;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A dump line's declared name and type: `... NAME 'TYPE'` (the type as written, before any
/// `:'canonical'`).
fn name_and_type(node: &str) -> Option<(String, String)> {
    let quote = node.find('\'')?;
    let name = node[..quote].split_whitespace().last()?.to_string();
    let ty = node[quote + 1..].split('\'').next()?.to_string();
    Some((name, ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dump_gives_functions_typedefs_and_enum_values() {
        let dump = "\
|-TypedefDecl 0x1 <a.h:1:1, col:33> col:33 referenced LLVMValueRef 'struct LLVMOpaqueValue *'
|-EnumDecl 0x2 <line:2:9, line:9:1> line:2:9
| |-EnumConstantDecl 0x3 <line:3:3, col:24> col:3 LLVMRet 'int'
| | `-ConstantExpr 0x4 <col:24> 'int'
| |   |-value: Int 1
| |   `-IntegerLiteral 0x5 <col:24> 'int' 1
| |-EnumConstantDecl 0x6 <line:4:3> col:3 LLVMBr 'int'
| `-EnumConstantDecl 0x7 <line:5:3> col:3 LLVMSwitch 'int'
|-TypedefDecl 0x8 <line:2:1, line:9:3> col:3 referenced LLVMOpcode 'enum LLVMOpcode'
|-FunctionDecl 0x9 <col:20, line:7:74> col:24 LLVMGetValueName2 'const char *(LLVMValueRef, size_t *)' external-linkage
`-FunctionDecl 0xa <col:20, line:8:74> col:24 LLVMGetValueName2 'int (void)'
";
        let d = parse_dump(dump);
        assert!(matches!(&d["LLVMValueRef"], Declaration::Typedef(t) if t == "struct LLVMOpaqueValue *"));
        assert!(matches!(d["LLVMRet"], Declaration::Constant(1)));
        assert!(matches!(d["LLVMBr"], Declaration::Constant(2)));
        assert!(matches!(d["LLVMSwitch"], Declaration::Constant(3)));
        assert!(matches!(d["LLVMOpcode"], Declaration::EnumTypedef));
        assert!(
            matches!(&d["LLVMGetValueName2"], Declaration::Function(t) if t == "const char *(LLVMValueRef, size_t *)")
        );
    }

    #[test]
    fn names_are_whole_identifiers() {
        let found = names::in_text("LLVMBuildCall2(b, LLVMOpcode::LLVMCall); myLLVMThing LLVMx LLVM_FOO");
        assert_eq!(found.into_iter().collect::<Vec<_>>(), ["LLVMBuildCall2", "LLVMCall", "LLVMOpcode"]);
        let api = "_Static_assert(LLVMRet == 1, \"LLVMRet\"); /* LLVMRet */\n#include <llvm-c/Core.h>\n";
        assert_eq!(names::declared_in_api(api).into_iter().collect::<Vec<_>>(), ["LLVMRet"]);
    }
}
