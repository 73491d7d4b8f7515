//! What the project's build driver (`xtask`) and its tests share about this checkout: the tools
//! of `scripts/requirements.txt` and their preflight, the toolchains (clang 19 with libomptarget
//! 16, clang 22 with libomptarget 22) and offload targets, the dist tree's layout and its install
//! prefix, device builds of workspace crates, running commands with their output in errors, and
//! PNG files (the demo's picture, the GPU bench's plot).
#![deny(missing_docs)]

pub mod cmd;
pub mod device_build;
pub mod dist;
pub mod install;
pub mod llvm;
pub mod offload;
pub mod png;
pub mod requirements;
pub mod toolchain;
pub mod tools;
