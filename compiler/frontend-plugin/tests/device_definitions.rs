//! The frontend plugin with every supported clang release (the release records of
//! `packaging::llvm`): a source in, the remarks and the device IR out, and the same source
//! without the plugin as the negative control. The plugin is the dist tree's when that is newer
//! than its source (after `cargo xtask build`), else built here with the same command.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use omptarget_indirect_frontend::{compile_command, source, ClangRelease};
use packaging::llvm::Llvm;
use packaging::requirements;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("in the workspace").to_path_buf()
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    path.metadata().and_then(|m| m.modified()).ok()
}

/// `llvm`'s clang++ and development files, from its `llvm-config`.
fn clang_release(llvm: Llvm) -> ClangRelease {
    let llvm_config = requirements::program(&llvm.requirement("llvm-config"));
    let query = |arg: &str| -> PathBuf {
        let out = Command::new(&llvm_config).arg(arg).output().expect("llvm-config runs (scripts/setup.sh)");
        assert!(out.status.success(), "{} {arg} failed", llvm_config.display());
        PathBuf::from(String::from_utf8(out.stdout).expect("UTF-8").trim())
    };
    ClangRelease { clangxx: query("--bindir").join("clang++"), include: query("--includedir") }
}

/// The plugin for `llvm`: the dist tree's if it is up to date, else built under `target/tests`.
fn plugin(llvm: Llvm, release: &ClangRelease) -> PathBuf {
    // Tests run in threads: one build of each plugin at a time.
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let source_time = modified(&source()).expect("the plugin's source");
    let dist = workspace().join("target/dist/lib").join(llvm.frontend_plugin_file());
    if modified(&dist).is_some_and(|t| t > source_time) {
        return dist;
    }
    let dir = workspace().join("target/tests/frontend-plugin").join(format!("llvm{}", llvm.major));
    let built = dir.join(llvm.frontend_plugin_file());
    if modified(&built).is_some_and(|t| t > source_time) {
        return built;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let fresh = built.with_extension("so.new");
    let out = compile_command(release, &fresh).output().expect("clang++ runs");
    assert!(
        out.status.success(),
        "building the plugin for LLVM {}:\n{}",
        llvm.major,
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&fresh, &built).unwrap();
    built
}

/// What one device compile (x86_64 host offload, `--offload-device-only`) of a test source says:
/// its exit status, its diagnostics, and the device IR it wrote.
struct DeviceCompile {
    ok: bool,
    diagnostics: String,
    ir: String,
}

fn device_compile(llvm: Llvm, name: &str, with_plugin: bool) -> DeviceCompile {
    device_compile_with(llvm, name, with_plugin, &[])
}

/// [`device_compile`] with the plugin's arguments `plugin_args` (`vtables=declare-target`).
fn device_compile_with(llvm: Llvm, name: &str, with_plugin: bool, plugin_args: &[&str]) -> DeviceCompile {
    let release = clang_release(llvm);
    let dir = workspace().join("target/tests/frontend-plugin").join(format!("llvm{}", llvm.major));
    std::fs::create_dir_all(&dir).unwrap();
    let variant = if with_plugin { format!("plugin{}", plugin_args.join("-")) } else { "stock".to_string() };
    let ir = dir.join(format!("{name}.{variant}.ll"));
    let _ = std::fs::remove_file(&ir);
    let mut compile = Command::new(&release.clangxx);
    compile
        .args([
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu",
            "--offload-device-only",
            "-S",
            "-emit-llvm",
        ])
        .args(["-Rpass=omptarget-indirect", "-Wno-openmp-mapping", "-fno-crash-diagnostics"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sources").join(name))
        .arg("-o")
        .arg(&ir);
    if with_plugin {
        compile.arg(format!("-fplugin={}", plugin(llvm, &release).display()));
        for arg in plugin_args {
            compile.arg(format!("-fplugin-arg-omptarget_indirect-{arg}"));
        }
    }
    let out = compile.output().expect("clang++ runs");
    DeviceCompile {
        ok: out.status.success(),
        diagnostics: String::from_utf8_lossy(&out.stderr).into_owned(),
        ir: std::fs::read_to_string(&ir).unwrap_or_default(),
    }
}

/// Whether `ir` defines the global `name` (a definition, not an `external` declaration).
fn defines(ir: &str, name: &str) -> bool {
    ir.lines().any(|l| l.starts_with(&format!("@{name} = ")) && !l.contains(" external "))
}

#[test]
fn vtables_of_classes_only_the_host_builds_are_defined_on_the_device() {
    for llvm in Llvm::all() {
        let with = device_compile(llvm, "host_built_classes.cpp", true);
        assert!(with.ok, "clang {}: {}", llvm.major, with.diagnostics);
        for class in ["Shape", "Square"] {
            assert!(
                with.diagnostics.contains(&format!("remark: vtable of `{class}` emitted for the device")),
                "clang {}: no remark for {class}:\n{}",
                llvm.major,
                with.diagnostics
            );
        }
        assert!(defines(&with.ir, "_ZTV5Shape") && defines(&with.ir, "_ZTV6Square"), "clang {}", llvm.major);
        assert!(
            with.diagnostics.contains("vtable of `(anonymous namespace)::Hidden` not emitted for the device: the class has internal linkage"),
            "clang {}:\n{}",
            llvm.major,
            with.diagnostics
        );
        // The negative control: stock clang defines none of them, and says nothing.
        let stock = device_compile(llvm, "host_built_classes.cpp", false);
        assert!(stock.ok, "clang {}: {}", llvm.major, stock.diagnostics);
        assert!(
            !defines(&stock.ir, "_ZTV6Square") && !stock.diagnostics.contains("remark"),
            "clang {}",
            llvm.major
        );
    }
}

#[test]
fn inline_indirect_functions_are_kept_for_the_device() {
    for llvm in Llvm::all() {
        let with = device_compile(llvm, "inline_indirect.cpp", true);
        assert!(with.ok, "clang {}: {}", llvm.major, with.diagnostics);
        assert!(
            with.diagnostics.contains("remark: kept indirect function `Ops::twice` for the device"),
            "clang {}:\n{}",
            llvm.major,
            with.diagnostics
        );
        assert!(
            with.ir.lines().any(|l| l.starts_with("define") && l.contains("@_ZN3Ops5twiceEi(")),
            "clang {}",
            llvm.major
        );
        // The negative control: what the release record says stock clang does with it.
        let stock = device_compile(llvm, "inline_indirect.cpp", false);
        let (expected, what) = llvm.inline_indirect_without_frontend;
        assert!(
            !stock.ok && stock.diagnostics.contains(expected),
            "clang {}: expected that {what}:\n{}",
            llvm.major,
            stock.diagnostics
        );
    }
}

/// Whether `ir` defines the function `name` (a body, or an alias of one).
fn defines_function(ir: &str, name: &str) -> bool {
    let alias = format!("@{name} = ");
    ir.lines().any(|l| {
        (l.starts_with("define") && l.contains(&format!("@{name}(")))
            || (l.starts_with(&alias) && l.contains(" alias "))
    })
}

#[test]
fn every_dynamic_class_goes_to_the_device_by_default_and_only_declared_ones_under_declare_target() {
    for llvm in Llvm::all() {
        let all = device_compile(llvm, "library_classes.cpp", true);
        assert!(all.ok, "clang {}: {}", llvm.major, all.diagnostics);
        assert!(defines(&all.ir, "_ZTV6Circle") && defines(&all.ir, "_ZTV6Marked"), "clang {}", llvm.major);
        let declared = device_compile_with(llvm, "library_classes.cpp", true, &["vtables=declare-target"]);
        assert!(declared.ok, "clang {}: {}", llvm.major, declared.diagnostics);
        assert!(defines(&declared.ir, "_ZTV6Marked"), "clang {}: the region's class", llvm.major);
        assert!(
            !defines(&declared.ir, "_ZTV6Circle") && !declared.diagnostics.contains("vtable of `Circle`"),
            "clang {}: vtables=declare-target emitted the library's class:\n{}",
            llvm.major,
            declared.diagnostics
        );
    }
}

#[test]
fn a_library_class_goes_to_the_device_where_this_files_code_constructs_it() {
    for llvm in Llvm::all() {
        let with = device_compile(llvm, "system_header_classes.cpp", true);
        assert!(with.ok, "clang {}: {}", llvm.major, with.diagnostics);
        assert!(defines(&with.ir, "_ZTV12LibraryBuilt"), "clang {}:\n{}", llvm.major, with.diagnostics);
        assert!(!defines(&with.ir, "_ZTV13LibraryUnused"), "clang {}", llvm.major);
        assert!(
            with.diagnostics.contains(
                "vtable of `LibraryUnused` not emitted for the device: a library's class (system header) that this \
                 file's own code neither constructs nor derives from"
            ),
            "clang {}:\n{}",
            llvm.major,
            with.diagnostics
        );
    }
}

#[test]
fn an_out_of_line_virtual_destructor_has_every_variant_its_vtable_names() {
    for llvm in Llvm::all() {
        let with = device_compile(llvm, "out_of_line_destructor.cpp", true);
        assert!(with.ok, "clang {}: {}", llvm.major, with.diagnostics);
        assert!(defines(&with.ir, "_ZTV4Base"), "clang {}", llvm.major);
        for variant in ["_ZN4BaseD0Ev", "_ZN4BaseD1Ev", "_ZN4BaseD2Ev"] {
            assert!(defines_function(&with.ir, variant), "clang {}: no {variant}:\n{}", llvm.major, with.ir);
        }
    }
}

#[test]
fn virtual_functions_reaching_host_only_code_are_kept_off_the_device_with_a_remark() {
    for llvm in Llvm::all() {
        let with = device_compile(llvm, "host_only_virtuals.cpp", true);
        assert!(with.ok, "clang {}: {}", llvm.major, with.diagnostics);
        for (method, reaches) in [("counted", "host_counter"), ("hosted", "host_only_function")] {
            let remark = format!(
                "`Widget::{method}` is not compiled for the device (not declare target, reaches host-only `{reaches}`)"
            );
            assert!(
                with.diagnostics.contains(&remark),
                "clang {}: no `{remark}`:\n{}",
                llvm.major,
                with.diagnostics
            );
        }
        for symbol in ["_ZNK6Widget7countedEv", "_ZNK6Widget6hostedEv"] {
            assert!(
                !defines_function(&with.ir, symbol),
                "clang {}: {symbol} was compiled for the device",
                llvm.major
            );
            assert!(
                with.ir
                    .lines()
                    .any(|l| l.starts_with("declare extern_weak") && l.contains(&format!("@{symbol}("))),
                "clang {}: {symbol} is not a weak declaration:\n{}",
                llvm.major,
                with.ir
            );
        }
        assert!(defines_function(&with.ir, "_ZNK6Widget5plainEv"), "clang {}", llvm.major);
        assert!(!with.diagnostics.contains("`Widget::plain` is not compiled"), "clang {}", llvm.major);
    }
}
