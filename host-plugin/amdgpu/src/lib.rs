//! The AMDGPU plugin, in progress: what it will check before handing a code object to HSA.
//! The HSA backend (`libhsa-runtime64.so.1` loaded at run time, the `Backend` of plugin-core)
//! is not written yet, so there is no `libomptarget.rtl.amdgpu.so` so far.
#![deny(missing_docs)]

pub mod code_object;
