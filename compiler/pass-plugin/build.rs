//! Compiles the C++ registration shim against the headers of the LLVM the plugin is for and links
//! that LLVM's shared library (the one clang of the same version has already loaded).
//!
//! `llvm-config` is `$OMPTARGET_INDIRECT_LLVM_CONFIG` if set, else Debian's
//! `/usr/lib/llvm-<major>/bin/llvm-config` (package `llvm-<major>-dev`).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let major = llvm_major();
    let llvm_config = env::var_os("OMPTARGET_INDIRECT_LLVM_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/usr/lib/llvm-{major}/bin/llvm-config")));
    println!("cargo:rerun-if-env-changed=OMPTARGET_INDIRECT_LLVM_CONFIG");
    println!("cargo:rerun-if-changed=src/shim.cpp");
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
    // LLVM 20+ writes offload entries in their version-1 layout, in `llvm_offload_entries`
    // (src/offload_entries.rs); LLVM 19 in `__tgt_offload_entry`'s, in `omp_offloading_entries`.
    println!("cargo:rustc-check-cfg=cfg(offload_entries_v1)");
    if major.parse::<u32>().expect("a numeric major version") >= 20 {
        println!("cargo:rustc-cfg=offload_entries_v1");
    }
    // LLVM 22's plugin API (version 2) added a field to PassPluginLibraryInfo (src/lib.rs).
    println!("cargo:rustc-check-cfg=cfg(pass_plugin_api_2)");
    if major.parse::<u32>().expect("a numeric major version") >= 22 {
        println!("cargo:rustc-cfg=pass_plugin_api_2");
    }
    // libomptarget 23's host plugin calls an x86_64 kernel with one argument array
    // (src/flang_kernels.rs).
    println!("cargo:rustc-check-cfg=cfg(host_kernels_take_argument_array)");
    if major.parse::<u32>().expect("a numeric major version") >= 23 {
        println!("cargo:rustc-cfg=host_kernels_take_argument_array");
    }
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
