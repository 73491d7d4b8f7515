//! `cargo xtask bench`: the benchmarks, each a ratio against a baseline measured in the same
//! run, with its spread (`docs/performance.md`), of the programs in `bench/programs/`. One module
//! a benchmark:
//!
//! - [`translation`]: calls through host function pointers on the x86_64 device, with and without
//!   the translation, and against LLVM's lookup;
//! - [`stock_table`]: the stock runtimes' table against the project's index;
//! - [`virtual_calls`]: virtual calls on host-built and device-built objects, and the loop cache;
//! - [`strict`]: what the strict device costs a kernel;
//! - [`frontend`]: what the frontend plugin adds to a device compile;
//! - [`compile_time`]: what the configuration file adds to compiles of real code, against stock.
#![deny(missing_docs)]

pub mod compile_time;
pub mod frontend;
pub mod stock_table;
pub mod strict;
pub mod translation;
pub mod virtual_calls;

use packaging::{cmd, dist, llvm, offload, toolchain, tools};
