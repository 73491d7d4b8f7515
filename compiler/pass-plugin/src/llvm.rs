//! The LLVM C API of the version this plugin is built for (feature `llvmNN`): the one
//! name the rest of the crate uses, so that each LLVM version is one line here.

#[cfg(feature = "llvm19")]
pub use llvm_sys_191::*;
#[cfg(feature = "llvm21")]
pub use llvm_sys_211::*;
#[cfg(feature = "llvm22")]
pub use llvm_sys_221::*;
#[cfg(any(feature = "llvm23", feature = "llvm24"))]
pub use llvm_sys_231::*;
