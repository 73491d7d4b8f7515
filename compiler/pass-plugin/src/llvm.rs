//! The LLVM C API of the version this plugin is built for (feature `llvm19` or `llvm22`): the one
//! name the rest of the crate uses, so that each LLVM version is one line here.

#[cfg(feature = "llvm19")]
pub use llvm_sys_191::*;
#[cfg(feature = "llvm22")]
pub use llvm_sys_221::*;
