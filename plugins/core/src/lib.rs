//! The backend-independent half of the libomptarget 16 plugins, after LLVM's
//! `plugins-nextgen/common`: the generic plugin/device state and the `__tgt_rtl_*` exports
//! ([`export_plugin!`]), over what the registration library shares (`host-table`: the C ABI
//! types, OffloadBinary and offload-entry parsing, the function-pointer map and its vtables); for the GPU backends also what LLVM's DeviceRTL expects from a plugin
//! ([`environment`]). A backend crate implements [`Backend`] over its vendor crate (which stands
//! alone, with its own errors) and invokes the macro.
#![deny(missing_docs)]

pub mod backend;
pub mod device_runtime;
pub mod environment;
pub mod exports;
pub mod heap;
pub mod hidden_helpers;
mod host_calls;
pub mod plugin;
pub mod registry;

pub use backend::{Backend, DeviceInfo, DeviceSymbol, Launch, LaunchParams};
pub use host_table::{symbol_name, PluginError, Result};

// For the paths of `export_plugin!`, which expands in the backend crates.
#[doc(hidden)]
pub use host_table;
pub use plugin::Plugin;
