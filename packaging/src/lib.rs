//! What builds and installs the product, shared by the build driver (`xtask`) and the checks
//! (`tests/checks`): the supported LLVM releases, one record each ([`llvm::RELEASES`]), the
//! tools of `scripts/requirements.txt` and their preflight, which LLVM an install is (and why one
//! is refused), each release's toolchain and the
//! offload targets, the dist tree's layout, its configuration files and its install prefix,
//! device builds of workspace crates, running commands with their output in errors, and PNG files
//! (the demo's picture, the GPU bench's plot). Nothing here tests: `tests/` does.
#![deny(missing_docs)]

pub mod cmd;
pub mod device_build;
pub mod dist;
pub mod elf;
pub mod install;
pub mod llvm;
pub mod llvm_identity;
pub mod offload;
pub mod png;
pub mod release_record;
pub mod requirements;
pub mod target_record;
pub mod toolchain;
pub mod tools;
