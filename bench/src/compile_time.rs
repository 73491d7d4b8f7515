//! `cargo xtask bench compile`: what the configuration file adds to the compile of real C++ code
//! with many dynamic classes, against stock clang on the same sources, same machine. Each
//! workload's files are compiled one by one, stock then with `--config=clang-NN.cfg` (the
//! reference release, clang 22), [`ROUNDS`] rounds ([`SHORT_ROUNDS`] where stock compiles the
//! workload in under [`SHORT`] seconds); a round's time is the sum of its files'. In
//! each round a third compile runs with the configuration file and
//! `-fplugin-arg-omptarget_indirect-vtables=declare-target`: what the plugins cost by themselves,
//! apart from compiling for the device the classes no `declare target` names (the default
//! policy's work, `docs/frontend.md`). Three compiles of each workload: the device compile for
//! sm_90 (through `ptxas`) and for gfx90a (`--offload-device-only -c`, then the code generation
//! the device link does for it), and the x86_64 host compile (`--offload-host-only -c`). Printed: the median times, the median of the rounds'
//! ratios to stock with their spread, and the goal's verdict for the default (device compiles
//! within [`DEVICE_GOAL`], the host compile within [`HOST_GOAL`]), or "too noisy to judge".
//! Figures in `target/bench/compile_time.csv`.
//!
//! The workloads: the stock-parity corpus (`tests/corpus/`: Boost, Eigen, fmt and spdlog, glm,
//! nlohmann-json, the C++ library), the path tracer (`examples/scene.cpp`), the class library
//! and its program (`tests/e2e/class_library*.cpp`), and a generated code of 2,000 dynamic
//! classes in 50 files (`target/bench/compile-time/generated/`, [`generate`]): operators and
//! boundary conditions over a common header, with chains of up to five levels, `std::vector`
//! and `std::string` members, no OpenMP in them, and one target region in the driver calling
//! them through base pointers, as an HPC code spreads its class hierarchy over files. Its floor
//! ("called only", [`Virtuals::CalledOnly`]): the same code on 10 families with `apply` alone
//! virtual, compiled for the device, judged against no goal.
//!
//! `XTASK_WORKLOADS="2000 classes|called only"` runs only the workloads whose names contain one
//! of its `|`-separated words (the CSV then holds only theirs).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Result;

use crate::cmd;
use crate::dist::Dist;
use crate::offload::{OffloadTarget, Vendor};
use crate::toolchain::{Llvm, Toolchain};
use crate::tools::Tools;
use crate::translation::{median, spread};

/// Rounds (stock, the plugins alone, the default) per workload and compile.
const ROUNDS: usize = 3;

/// Rounds of a workload stock compiles in under [`SHORT`] seconds: a tenth of a second more or
/// less is a large ratio there.
const SHORT_ROUNDS: usize = 9;

/// What a short workload is (stock's seconds a round).
const SHORT: f64 = 2.0;

/// The goal for device compiles: at most this ratio to stock's.
pub const DEVICE_GOAL: f64 = 1.25;

/// The goal for the host compile: at most this ratio to stock's.
pub const HOST_GOAL: f64 = 1.05;

/// Generated code: files, and dynamic classes per file.
const GENERATED_FILES: usize = 50;
const CLASSES_PER_FILE: usize = 40;

/// One compile of a workload's files.
#[derive(Clone, Copy)]
enum Compile {
    /// `--offload-device-only -c` for this architecture.
    Device(&'static str),
    /// `--offload-host-only -c` (offloading to sm_90).
    Host,
}

impl Compile {
    fn name(self) -> &'static str {
        match self {
            Compile::Device(arch) => arch,
            Compile::Host => "x86_64 host",
        }
    }

    fn goal(self) -> f64 {
        match self {
            Compile::Device(_) => DEVICE_GOAL,
            Compile::Host => HOST_GOAL,
        }
    }
}

const COMPILES: [Compile; 3] = [Compile::Device("sm_90"), Compile::Device("gfx90a"), Compile::Host];

/// How a file is compiled.
#[derive(Clone, Copy)]
enum Config {
    /// Stock clang: the offload flags alone.
    Stock,
    /// The configuration file with `vtables=declare-target`: the plugins' own cost.
    DeclareTarget,
    /// The configuration file as users pass it (`vtables=all`).
    Default,
}

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Stock => "stock",
            Config::DeclareTarget => "declare-target",
            Config::Default => "default",
        }
    }
}

/// A workload: its name, its files and the include directories they need.
struct Workload {
    name: &'static str,
    files: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    /// Compiled for the device only and judged against no goal: the least device code the
    /// program could have ([`Virtuals::CalledOnly`]).
    floor: bool,
}

/// What the generated classes declare virtual.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Virtuals {
    /// `apply`, `flops`, `name`, a boundary condition and the destructor: the code as an HPC
    /// code writes it.
    All,
    /// `apply` alone, the one function the driver's target region calls: the device code left if
    /// every function no device code calls were dropped (virtual function elimination over the
    /// whole program), which no compile of the program for the device can go below.
    CalledOnly,
}

/// Families in the generated code whose classes declare only what the driver calls: enough
/// files for a ratio as steady as the whole code's.
const CALLED_ONLY_FILES: usize = 10;

/// Generates the code of 2,000 classes (module documentation) into `target/bench/compile-time`,
/// builds nothing, and prints and records each workload's compile times, stock against the
/// project.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist) -> Result<()> {
    let out = workspace.join("target/bench/compile-time");
    let generated = out.join("generated");
    let generated_files = generate(&generated, GENERATED_FILES, Virtuals::All)?;
    let called_only = out.join("called-only");
    let called_only_files = generate(&called_only, CALLED_ONLY_FILES, Virtuals::CalledOnly)?;
    let corpus = workspace.join("tests/corpus");
    let e2e = workspace.join("tests/e2e");
    let workloads = [
        Workload {
            name: "corpus",
            files: checks::corpus::PROGRAMS.iter().map(|p| corpus.join(format!("{p}.cpp"))).collect(),
            includes: Vec::new(),
            floor: false,
        },
        Workload {
            name: "path tracer",
            files: vec![workspace.join("examples/scene.cpp")],
            includes: Vec::new(),
            floor: false,
        },
        Workload {
            name: "class library",
            files: vec![e2e.join("class_library.cpp"), e2e.join("class_library_main.cpp")],
            includes: vec![e2e.clone()],
            floor: false,
        },
        Workload {
            name: "2000 classes",
            files: generated_files,
            includes: vec![generated.clone()],
            floor: false,
        },
        Workload { name: "called only", files: called_only_files, includes: vec![called_only], floor: true },
    ];
    let workloads: Vec<Workload> =
        workloads.into_iter().filter(|workload| cmd::picked_by("XTASK_WORKLOADS", workload.name)).collect();
    let toolchain = Toolchain::new(Llvm::reference(), tools, dist);
    let mut csv = String::from(
        "workload,files,compile,rounds,stock_seconds,plugins_alone_seconds,default_seconds,plugins_alone_ratio,ratio,ratio_min,ratio_max,goal,verdict\n",
    );
    println!(
        "\ncompile time, clang {} stock -> with --config=clang-{}.cfg, vtables=declare-target (the plugins alone) and \
         the default (median of {ROUNDS} rounds, {SHORT_ROUNDS} where stock takes under {SHORT} s; a round is the \
         sum of the workload's files):",
        toolchain.llvm.major, toolchain.llvm.major
    );
    for workload in &workloads {
        for compile in COMPILES {
            if workload.floor && matches!(compile, Compile::Host) {
                continue;
            }
            let objects = out
                .join("objects")
                .join(workload.name.replace(' ', "_"))
                .join(compile.name().replace(' ', "_"));
            std::fs::create_dir_all(&objects)?;
            // A file stock clang refuses for this target (a library's `long double` on nvptx64)
            // is left out of both sides: the corpus step reports it.
            let files: Vec<&PathBuf> = workload
                .files
                .iter()
                .filter(|file| {
                    let object = objects.join("probe.o");
                    let args =
                        compile_args(&toolchain, compile, Config::Stock, &workload.includes, file, &object);
                    let builds =
                        cmd::output(Command::new(toolchain.compiler("unit.cpp")).args(&args)).is_ok();
                    if !builds {
                        println!(
                            "  {:<13} {}: stock clang does not compile {} (left out)",
                            workload.name,
                            compile.name(),
                            file.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
                        );
                    }
                    builds
                })
                .collect();
            let time = |config: Config| -> Result<f64> {
                let mut seconds = 0.0;
                for file in &files {
                    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("unit");
                    let object = objects.join(format!("{stem}.{}.o", config.name()));
                    let args = compile_args(&toolchain, compile, config, &workload.includes, file, &object);
                    let start = Instant::now();
                    cmd::output(Command::new(toolchain.compiler("unit.cpp")).args(&args))?;
                    if let Some(code) = code_generation_args(compile, &object) {
                        cmd::output(Command::new(toolchain.compiler("unit.cpp")).args(&code))?;
                    }
                    seconds += start.elapsed().as_secs_f64();
                }
                Ok(seconds)
            };
            let mut rounds = Vec::new();
            while rounds.len() < ROUNDS
                || (rounds.len() < SHORT_ROUNDS && rounds.iter().all(|round: &[f64; 3]| round[0] < SHORT))
            {
                rounds.push([time(Config::Stock)?, time(Config::DeclareTarget)?, time(Config::Default)?]);
            }
            let [stock, plugins, project] =
                [0, 1, 2].map(|at| median(rounds.iter().map(|round| round[at]).collect()));
            let ratio_to_stock = |at: usize| {
                let ratios: Vec<f64> = rounds.iter().map(|round| round[at] / round[0]).collect();
                let (low, high) = spread(&ratios);
                (median(ratios), low, high)
            };
            let (plugins_ratio, _, _) = ratio_to_stock(1);
            let (ratio, low, high) = ratio_to_stock(2);
            let goal = compile.goal();
            let verdict = if workload.floor {
                "floor"
            } else if high - low > 0.25 * ratio {
                "too noisy to judge"
            } else if ratio <= goal {
                "met"
            } else {
                "missed"
            };
            println!(
                "  {:<13} {:>2} files  {:<11} stock {stock:7.2} s, plugins alone {plugins:7.2} s ({plugins_ratio:.2}x), \
                 default {project:7.2} s: {ratio:.2}x ({} rounds {low:.2}x..{high:.2}x), {}",
                workload.name,
                files.len(),
                compile.name(),
                rounds.len(),
                if workload.floor {
                    "the floor of the 2000 classes' figure (no goal)".to_string()
                } else {
                    format!("goal <= {goal:.2}x: {verdict}")
                }
            );
            writeln!(
                csv,
                "{},{},{},{},{stock:.3},{plugins:.3},{project:.3},{plugins_ratio:.3},{ratio:.3},{low:.3},{high:.3},{goal},{verdict}",
                workload.name,
                files.len(),
                compile.name(),
                rounds.len()
            )?;
        }
    }
    std::fs::write(workspace.join("target/bench/compile_time.csv"), csv)?;
    println!("figures: target/bench/compile_time.csv");
    Ok(())
}

/// The command line of one compile of `file` into `object`: the release's offload flags for
/// `compile`, `-O2`, and `config`'s.
fn compile_args(
    toolchain: &Toolchain,
    compile: Compile,
    config: Config,
    includes: &[PathBuf],
    file: &Path,
    object: &Path,
) -> Vec<OsString> {
    let target = match compile {
        Compile::Device(arch) => OffloadTarget::of_arch(arch),
        Compile::Host => OffloadTarget::nvptx("sm_90"),
    };
    let mut args = toolchain.offload_args(&target);
    match config {
        Config::Stock => {}
        Config::DeclareTarget => {
            args.extend(toolchain.pass_plugin_args());
            args.push("-fplugin-arg-omptarget_indirect-vtables=declare-target".into());
        }
        Config::Default => args.extend(toolchain.pass_plugin_args()),
    }
    args.push(match compile {
        Compile::Device(_) => "--offload-device-only".into(),
        Compile::Host => "--offload-host-only".into(),
    });
    args.extend(["-O2".into(), "-c".into(), "-Wno-unknown-cuda-version".into()]);
    args.extend(includes.iter().map(|dir| {
        let mut flag = OsString::from("-I");
        flag.push(dir);
        flag
    }));
    args.push(file.into());
    args.push("-o".into());
    args.push(object.into());
    args
}

/// For an AMD GPU, the command that generates the code object of the device compile's
/// `bitcode`: clang's OpenMP device compile for AMD GPUs stops at optimized bitcode, and the
/// device link generates the code (offload LTO), so the compile's cost includes this step as the
/// sm_90 compile includes `ptxas`.
fn code_generation_args(compile: Compile, bitcode: &Path) -> Option<Vec<OsString>> {
    let Compile::Device(arch) = compile else { return None };
    let target = OffloadTarget::of_arch(arch);
    if target.vendor() != Vendor::Amd {
        return None;
    }
    let mut args: Vec<OsString> = vec![
        format!("--target={}", target.triple()).into(),
        format!("-mcpu={arch}").into(),
        "-nogpulib".into(),
        "-O2".into(),
        "-c".into(),
        "-x".into(),
        "ir".into(),
    ];
    args.push(bitcode.into());
    args.push("-o".into());
    args.push(bitcode.with_extension("code.o").into());
    Some(args)
}

/// Writes the generated code into `dir` (module documentation), `families` files of
/// [`CLASSES_PER_FILE`] classes declaring `virtuals`: `solver.h`, the key functions of its bases
/// (`solver.cpp`), the families `family_NN.cpp` and the driver `driver.cpp`. Returns the files to
/// compile.
pub fn generate(dir: &Path, families: usize, virtuals: Virtuals) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    let mut write = |name: &str, text: String| -> Result<()> {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text)?;
        }
        if name.ends_with(".cpp") {
            files.push(path);
        }
        Ok(())
    };
    write("solver.h", solver_header(virtuals))?;
    write("solver.cpp", SOLVER_CPP.to_string())?;
    for family in 0..families {
        write(&format!("family_{family:02}.cpp"), family_source(family, virtuals))?;
    }
    let mut driver = String::from("#include \"solver.h\"\n\n");
    for family in 0..families {
        writeln!(driver, "Operator *make_family_{family:02}(int kind, Arena &arena);")?;
    }
    driver.push_str(
        "\nstd::vector<Operator *> build_operators(Arena &arena) {\n  std::vector<Operator *> ops;\n",
    );
    writeln!(
        driver,
        "  for (int kind = 0; kind < {CLASSES_PER_FILE}; ++kind) {{\n{}  }}\n  return ops;\n}}\n",
        (0..families)
            .map(|f| format!("    ops.push_back(make_family_{f:02}(kind, arena));\n"))
            .collect::<String>()
    )?;
    driver.push_str(DRIVER_MAIN);
    write("driver.cpp", driver)?;
    Ok(files)
}

/// One family: [`CLASSES_PER_FILE`] operators in namespace `family_NN`, every fifth a new chain
/// on `Operator` or `BoundaryOperator`, the others deriving from the one before, overriding
/// `virtuals`; and its factory.
fn family_source(family: usize, virtuals: Virtuals) -> String {
    let mut s = format!("// Generated: operator family {family} of the compile-time benchmark.\n#include \"solver.h\"\n\nnamespace family_{family:02} {{\n\n");
    for kind in 0..CLASSES_PER_FILE {
        let name = format!("Op{kind}");
        let chain_start = kind % 5 == 0;
        let base = if !chain_start {
            format!("Op{}", kind - 1)
        } else if kind % 10 == 0 {
            "Operator".to_string()
        } else {
            "BoundaryOperator".to_string()
        };
        let width = 3 + kind % 4;
        let weights: Vec<String> =
            (0..width).map(|w| format!("{}.{}", (family + w) % 7 + 1, (kind + w) % 10)).collect();
        let _ = write!(
            s,
            "class {name} : public {base} {{\npublic:\n  {name}() : weights_{{{weights}}}, label_(\"family {family} kind {kind}\") {{}}\n",
            weights = weights.join(", "),
        );
        let _ = write!(
            s,
            "  double apply(const Field &f, int i) const override {{\n    double sum = 0;\n    for (std::size_t w = 0; w < weights_.size(); ++w)\n      sum += weights_[w] * f.values[(i + static_cast<int>(w)) % f.n];\n    return {combine};\n  }}\n",
            combine = if chain_start { "sum".to_string() } else { format!("0.5 * sum + 0.5 * {base}::apply(f, i)") },
        );
        if virtuals == Virtuals::CalledOnly {
            let _ = writeln!(s, "\nprivate:\n  std::vector<double> weights_;\n  std::string label_;\n}};\n");
            continue;
        }
        let _ = write!(
            s,
            "  double flops() const override {{ return {}2.0 * weights_.size(); }}\n  std::string name() const override {{ return label_; }}\n",
            if chain_start { String::new() } else { format!("{base}::flops() + ") },
        );
        if chain_start && kind % 10 != 0 {
            let _ = writeln!(
                s,
                "  double boundary(double x, double t) const override {{ return std::sin(x * {}.0) * std::exp(-t); }}",
                kind + 1
            );
        }
        let _ = writeln!(s, "\nprivate:\n  std::vector<double> weights_;\n  std::string label_;\n}};\n");
    }
    let _ = writeln!(s, "}} // namespace family_{family:02}\n");
    let _ = writeln!(s, "Operator *make_family_{family:02}(int kind, Arena &arena) {{\n  switch (kind) {{");
    for kind in 0..CLASSES_PER_FILE {
        let _ = writeln!(s, "  case {kind}:\n    return arena.make<family_{family:02}::Op{kind}>();");
    }
    s.push_str("  default:\n    return nullptr;\n  }\n}\n");
    s
}

/// The common header of the generated code, its bases declaring `virtuals`.
fn solver_header(virtuals: Virtuals) -> String {
    let (destructor, flops, name, boundary) = match virtuals {
        Virtuals::All => (
            "virtual ~Operator();",
            "\n  virtual double flops() const { return 1.0; }",
            "\n  virtual std::string name() const = 0;",
            "\n  virtual double boundary(double x, double t) const = 0;",
        ),
        Virtuals::CalledOnly => ("~Operator();", "", "", ""),
    };
    let boundary_destructor = match virtuals {
        Virtuals::All => "~BoundaryOperator() override;",
        Virtuals::CalledOnly => "~BoundaryOperator();",
    };
    SOLVER_H
        .replace("@DESTRUCTOR@", destructor)
        .replace("@FLOPS@", flops)
        .replace("@NAME@", name)
        .replace("@BOUNDARY_DESTRUCTOR@", boundary_destructor)
        .replace("@BOUNDARY@", boundary)
}

/// [`solver_header`]'s text, its bases' virtual functions left to fill in.
const SOLVER_H: &str = r#"// Generated: the common header of the compile-time benchmark's operators.
#pragma once
#include <cmath>
#include <cstddef>
#include <new>
#include <string>
#include <vector>

struct Field {
  const double *values;
  int n;
};

class Operator {
public:
  @DESTRUCTOR@
  virtual double apply(const Field &f, int i) const = 0;@FLOPS@@NAME@
};

class BoundaryOperator : public Operator {
public:
  @BOUNDARY_DESTRUCTOR@@BOUNDARY@
};

// Objects the host builds in one block that a map clause copies to the device.
class Arena {
public:
  explicit Arena(std::size_t bytes) : storage_(bytes) {}
  template <class T> T *make() {
    used_ = (used_ + alignof(T) - 1) / alignof(T) * alignof(T);
    T *object = new (storage_.data() + used_) T();
    used_ += sizeof(T);
    return object;
  }
  char *data() { return storage_.data(); }
  std::size_t used() const { return used_; }

private:
  std::vector<char> storage_;
  std::size_t used_ = 0;
};
"#;

const SOLVER_CPP: &str = r#"// Generated: the key functions of the compile-time benchmark's bases.
#include "solver.h"

Operator::~Operator() {}
BoundaryOperator::~BoundaryOperator() {}
"#;

const DRIVER_MAIN: &str = r#"double sweep(Arena &arena, const std::vector<Operator *> &ops, const std::vector<double> &values) {
  std::vector<long> offsets;
  for (Operator *op : ops)
    offsets.push_back(reinterpret_cast<char *>(op) - arena.data());
  const char *base = arena.data();
  std::size_t bytes = arena.used();
  const long *at = offsets.data();
  int count = static_cast<int>(offsets.size());
  const double *v = values.data();
  int n = static_cast<int>(values.size());
  double sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(to : base[0 : bytes], at[0 : count], v[0 : n])
  for (int i = 0; i < count; ++i)
    sum += reinterpret_cast<const Operator *>(base + at[i])->apply(Field{v, n}, i);
  return sum;
}

int main() {
  Arena arena(1 << 24);
  std::vector<Operator *> ops = build_operators(arena);
  std::vector<double> values(1024, 1.0);
  return sweep(arena, ops, values) > 0 ? 0 : 1;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_code_has_2000_dynamic_classes_in_50_files_and_a_driver() {
        let dir = std::env::temp_dir().join(format!("compile-time-{}", std::process::id()));
        let files = generate(&dir, GENERATED_FILES, Virtuals::All).unwrap();
        assert_eq!(files.len(), GENERATED_FILES + 2);
        let classes: usize =
            files.iter().map(|f| std::fs::read_to_string(f).unwrap().matches("\nclass Op").count()).sum();
        assert_eq!(classes, 2000);
        let driver = std::fs::read_to_string(dir.join("driver.cpp")).unwrap();
        assert!(driver.contains("#pragma omp target") && driver.contains("make_family_49(kind, arena)"));
        // A second run rewrites nothing.
        let before = std::fs::metadata(dir.join("family_07.cpp")).unwrap().modified().unwrap();
        generate(&dir, GENERATED_FILES, Virtuals::All).unwrap();
        assert_eq!(std::fs::metadata(dir.join("family_07.cpp")).unwrap().modified().unwrap(), before);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_called_only_code_declares_apply_alone_virtual() {
        let dir = std::env::temp_dir().join(format!("compile-time-called-{}", std::process::id()));
        let files = generate(&dir, CALLED_ONLY_FILES, Virtuals::CalledOnly).unwrap();
        assert_eq!(files.len(), CALLED_ONLY_FILES + 2);
        let header = std::fs::read_to_string(dir.join("solver.h")).unwrap();
        assert_eq!(header.matches("virtual").count(), 1, "{header}");
        assert!(header.contains("virtual double apply(const Field &f, int i) const = 0;"));
        let family = std::fs::read_to_string(dir.join("family_03.cpp")).unwrap();
        assert_eq!(family.matches("override").count(), CLASSES_PER_FILE);
        assert_eq!(family.matches("double apply(").count(), CLASSES_PER_FILE);
        let driver = std::fs::read_to_string(dir.join("driver.cpp")).unwrap();
        assert!(driver.contains("make_family_09(kind, arena)") && !driver.contains("make_family_10"));
        std::fs::remove_dir_all(&dir).unwrap();

        // The whole code's header is the one the figures before this variant were measured with.
        let all = solver_header(Virtuals::All);
        for declaration in [
            "  virtual ~Operator();\n  virtual double apply(const Field &f, int i) const = 0;\n  virtual double flops() const { return 1.0; }\n  virtual std::string name() const = 0;\n};",
            "  ~BoundaryOperator() override;\n  virtual double boundary(double x, double t) const = 0;\n};",
        ] {
            assert!(all.contains(declaration), "{all}");
        }
    }
}
