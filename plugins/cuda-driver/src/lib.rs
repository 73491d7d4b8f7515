//! The CUDA driver as the plugin and the GPU tests use it, kept apart from the plugin (a cdylib
//! whose `__tgt_rtl_*` exports would clash with another plugin's wherever both are linked):
//! the raw ABI resolved at run time ([`sys`]), the calls that return a `Result` ([`driver`]) with
//! the layer's own errors ([`error`]), device memory and modules that release themselves
//! ([`resources`]), and which images a device accepts ([`image`]). It stands alone (cudarc's
//! `sys` -> `result` -> safe types): nothing of the plugins.
#![deny(missing_docs)]

pub mod driver;
pub mod error;
pub mod image;
pub mod resources;
pub mod sys;

pub use error::{DriverError, NotACudaImage};
pub use resources::{DeviceBuffer, LoadedModule};
pub use sys::{attr, CuDevice, CuDevicePtr, CuHandle, Driver};
