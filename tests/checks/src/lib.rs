//! The checks of `scripts/test.sh`, beside the C and Fortran programs they build (`tests/e2e`,
//! `tests/install`): xtask's suite runs them as steps. Each module does one job:
//!
//! - [`doc_commands`]: the README's and docs' runnable shell blocks, run as written;
//! - [`doc_truth`]: the docs' links resolve, the releases and configuration files they name are
//!   the records';
//! - [`demo`]: `cargo xtask demo`'s programs of `examples/`, and the check that they show what
//!   the demo says;
//! - [`images`]: device-image, PTX, bitcode and AMDGPU code-object checks;
//! - [`e2e`]: the end-to-end programs, built per toolchain and target and run on x86_64;
//! - [`install_check`]: an install prefix consumed by CMake, pkg-config, clang and flang;
//! - [`cluster_install`]: an install for an LLVM at another prefix, unprivileged and offline;
//! - [`spack_install`]: the Spack package, installed and used with a real Spack, offline;
//! - [`foreign_llvm`]: the pass plugin refusing a compiler that does not run on its libLLVM;
//! - [`fuzz`]: the fuzz targets, for a time each;
//! - [`metrics`] and [`hit_path`]: registers, SASS and the hit path of the translation against
//!   LLVM's lookup ([`llvm_lookup`]).
//!
//! What a user runs lives with what builds it: `cargo xtask bench` in `bench/`, `cargo xtask
//! gpu-test` in `gpu-tests/builder/`; both build the programs of this crate's table.
#![deny(missing_docs)]

pub mod cluster_install;
pub mod corpus;
pub mod demo;
pub mod doc_commands;
pub mod doc_truth;
pub mod e2e;
pub mod foreign_llvm;
pub mod fuzz;
pub mod hit_path;
pub mod images;
pub mod install_check;
pub mod llvm_lookup;
pub mod metrics;
pub mod repository;
pub mod spack_install;
pub mod troubleshooting;

use packaging::{cmd, device_build, dist, llvm, offload, png, requirements, toolchain, tools};
