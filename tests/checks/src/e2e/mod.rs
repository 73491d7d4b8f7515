//! The end-to-end programs of `tests/e2e/`: OpenMP programs with `declare target indirect`
//! functions, linked with `-lomptarget-indirect` and run on x86_64 host offload with each
//! release's toolchain ([`Toolchain`]): clang 19 through LLVM 16's libomptarget and our plugin, and
//! clang 22 through its stock libomptarget 22 (which must load nothing of ours). Both also build
//! them for the GPU targets (clang 22 with LLVM 22's DeviceRTL built from source), whose device
//! images are checked. Unmodified programs (no explicit translation) are compiled with the pass
//! plugin through `--config=<dist>/share/omptarget-indirect/clang-NN.cfg`, at `-O0`, `-O2` and
//! `-O2 -foffload-lto`, and once without it (the negative control).
//!
//! One job a module: [`programs`] (the table, each entry only what is particular to it),
//! [`compile`] (compiling and linking a program, extracting its device images), [`x86_64`]
//! (running on the x86_64 device, loose and strict, with the negative controls) and [`gpu`]
//! (building for the GPU targets and checking the images), [`stress`] (the concurrency program
//! run many times on each path), [`image_closes`] (how often a stock runtime closes each x86_64
//! image at exit) and [`by_itself`] (what the newest release does with the programs
//! without the project, against what it does with it).
//!
//! [`Toolchain`]: crate::toolchain::Toolchain

pub mod by_itself;
pub mod compile;
pub mod gpu;
pub mod image_closes;
pub mod programs;
pub mod stress;
pub mod x86_64;

pub use compile::{build, build_as, extract_image, shared_library_of};
pub use gpu::build_gpu;
pub use programs::{Build, FrontendControl, Program, Unit, PROGRAMS};
pub use x86_64::{expect_gpu_linkable, run, run_with, run_x86_64, strict_stops, Device, MapSetup};
