//! The LLVM C API of the version this plugin is built for (`llvm19`): the one name the rest of
//! the crate uses, so that a second LLVM version is a second line here.

#[cfg(feature = "llvm19")]
pub use llvm_sys_191::*;
