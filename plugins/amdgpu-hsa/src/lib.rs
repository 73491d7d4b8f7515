//! The HSA runtime as the AMDGPU plugin uses it, kept apart from the plugin (whose `__tgt_rtl_*`
//! exports would clash with another plugin's wherever both are linked): the raw HSA types, values
//! and function table resolved at run time ([`sys`]), the calls that return a `Result`
//! ([`runtime`]) with the layer's own errors ([`error`]), AMDGPU code objects and target IDs
//! ([`code_object`]), and the kernel argument segment and AQL packet of a launch ([`dispatch`]).
//! It stands alone, shaped as `cuda-driver` is (`sys` -> `result` -> the backend's safe types):
//! nothing of the plugins.
#![deny(missing_docs)]

pub mod code_object;
pub mod dispatch;
pub mod error;
pub mod runtime;
pub mod sys;

pub use error::HsaError;
