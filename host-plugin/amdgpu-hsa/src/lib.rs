//! The AMDGPU plugin's ABI layer, kept apart from the plugin (whose `__tgt_rtl_*` exports would
//! clash with another plugin's wherever both are linked, as in `xtask`): the raw HSA types,
//! values and function table ([`sys`]), AMDGPU code objects and target IDs ([`code_object`]),
//! and the kernel argument segment and AQL packet of a launch ([`dispatch`]). Pure data and
//! functions over bytes; the plugin does the calls.
#![deny(missing_docs)]

pub mod code_object;
pub mod dispatch;
pub mod sys;
