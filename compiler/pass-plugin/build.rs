//! Compiles the C++ registration shim against the headers of the LLVM the plugin is for and links
//! that LLVM's shared library (the one clang of the same version has already loaded).
//!
//! `llvm-config` is `$OMPTARGET_INDIRECT_LLVM_CONFIG` if set, else Debian's
//! `/usr/lib/llvm-<major>/bin/llvm-config` (package `llvm-<major>-dev`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "llvm-c/names.rs"]
mod names;

// The release records, as the rest of the project reads them; the build reads a few fields.
#[allow(dead_code)]
#[path = "../../packaging/src/release_record.rs"]
mod release_record;

/// The newest LLVM with an llvm-sys release of its own (`llvm-sys` 231): a build for a newer one
/// uses its bindings, which `llvm-c/api.c` checks against that LLVM's headers.
const NEWEST_BINDINGS: u32 = 23;

fn main() {
    let major = llvm_major();
    let number: u32 = major.parse().expect("a numeric major version");
    let llvm_config = env::var_os("OMPTARGET_INDIRECT_LLVM_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/usr/lib/llvm-{major}/bin/llvm-config")));
    println!("cargo:rerun-if-env-changed=OMPTARGET_INDIRECT_LLVM_CONFIG");
    println!("cargo:rerun-if-changed=src/shim.cpp");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=llvm-c");
    let query = |args: &[&str]| -> String {
        let out = Command::new(&llvm_config).args(args).output().unwrap_or_else(|err| {
            panic!(
                "cannot run {} ({err}): install Debian's llvm-{major}-dev (scripts/setup.sh does)",
                llvm_config.display()
            )
        });
        assert!(out.status.success(), "{} {} failed", llvm_config.display(), args.join(" "));
        String::from_utf8(out.stdout).expect("llvm-config prints UTF-8").trim().to_string()
    };
    let version = query(&["--version"]);
    assert!(
        version.split('.').next() == Some(major.as_str()),
        "{} is LLVM {version}, but this build is for LLVM {major}",
        llvm_config.display()
    );
    // The plugin's switches, from the release's record.
    let record = release_record::RELEASES
        .iter()
        .find(|r| r.major == major)
        .unwrap_or_else(|| panic!("LLVM {major} has no record in packaging/src/release_record.rs"));
    let kernels_take_argument_array =
        matches!(record.runtime, release_record::Runtime::Stock { kernels_take_argument_array: true, .. });
    for (cfg, on) in [
        // Offload entries in their version-1 layout (src/offload_entries.rs).
        ("offload_entries_v1", record.offload_entries_v1),
        // The fields PassPluginLibraryInfo has (src/lib.rs).
        ("pass_plugin_api_2", record.pass_plugin_api >= 2),
        ("pass_plugin_api_3", record.pass_plugin_api >= 3),
        // The host plugin calls an x86_64 kernel with one argument array (src/flang_kernels.rs).
        ("host_kernels_take_argument_array", kernels_take_argument_array),
    ] {
        println!("cargo:rustc-check-cfg=cfg({cfg})");
        if on {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
    println!("cargo:rerun-if-changed=../../packaging/src/release_record.rs");
    check_c_api(number, &query(&["--includedir"]));
    let mut shim = cc::Build::new();
    shim.cpp(true)
        .file("src/shim.cpp")
        // LLVM's headers as system headers: their warnings are not ours.
        .flag("-isystem")
        .flag(query(&["--includedir"]))
        .flag("-std=c++17")
        .flag("-fno-exceptions")
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .warnings(true);
    if query(&["--has-rtti"]) != "YES" {
        shim.flag("-fno-rtti");
    }
    shim.compile("omptarget_indirect_shim");
    println!("cargo:rustc-link-search=native={}", query(&["--libdir"]));
    for lib in query(&["--link-shared", "--libs"]).split_whitespace() {
        let name = lib.strip_prefix("-l").unwrap_or_else(|| panic!("unexpected llvm-config output `{lib}`"));
        println!("cargo:rustc-link-lib=dylib={name}");
    }
}

/// The LLVM major version the enabled feature selects (`llvmNN`, one per release in
/// `Cargo.toml`): exactly one of them.
fn llvm_major() -> String {
    let enabled: Vec<String> = env::vars()
        .filter_map(|(name, _)| name.strip_prefix("CARGO_FEATURE_LLVM").map(str::to_string))
        .filter(|major| !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    match &enabled[..] {
        [major] => major.clone(),
        _ => panic!(
            "enable the feature of exactly one LLVM version (llvmNN); enabled: {enabled:?} \
             (`--no-default-features --features llvm22` for LLVM 22)"
        ),
    }
}

/// `llvm-c/api.c` declares every LLVM-C name the Rust code uses; for the LLVM whose bindings the
/// build uses (23) and every newer one, it compiles against that LLVM's headers `include` (each
/// function's type, each type, each enum constant's value as LLVM 23 has them), or the build
/// stops: a newer LLVM that changed one would be called with the wrong ABI.
fn check_c_api(major: u32, include: &str) {
    let api_path = Path::new("llvm-c/api.c");
    let api = std::fs::read_to_string(api_path).expect("llvm-c/api.c is readable");
    let used = names::used_in(Path::new("src")).expect("src/ is readable");
    let declared = names::declared_in_api(&api);
    let missing: Vec<&String> = used.difference(&declared).collect();
    assert!(
        missing.is_empty(),
        "src/ uses LLVM-C names that llvm-c/api.c does not check: {missing:?}; write it again with `cargo xtask \
         llvm-c-api <LLVM {NEWEST_BINDINGS}'s llvm-config>`"
    );
    if major < NEWEST_BINDINGS {
        return;
    }
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let out = compiler
        .to_command()
        .args(["-std=c11", "-fsyntax-only", "-isystem", include])
        .arg(api_path)
        .output()
        .expect("the C compiler runs");
    assert!(
        out.status.success(),
        "LLVM {major}'s C API differs from LLVM {NEWEST_BINDINGS}'s, whose bindings this build uses (llvm-c/api.c):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
