//! The backend-independent half of the libomptarget plugins, after LLVM's
//! `plugins-nextgen/common`: the C ABI types, OffloadBinary and offload-entry parsing, the
//! function-pointer map, the generic plugin/device state, and the `__tgt_rtl_*` exports
//! ([`export_plugin!`]); for the GPU backends also what LLVM's DeviceRTL expects from a plugin
//! ([`environment`]). A backend crate implements [`Backend`] over its vendor crate (which stands
//! alone, with its own errors) and invokes the macro.
#![deny(missing_docs)]

pub mod backend;
pub mod device_runtime;
pub mod diagnostics;
pub mod entries;
pub mod environment;
pub mod error;
pub mod exports;
pub mod fptr_map;
pub mod heap;
pub mod hidden_helpers;
pub mod image;
pub mod plugin;
pub mod registry;
pub mod rtl_interface;
pub mod switches;
pub mod vtable_slots;
pub mod vtables;

// Layouts shared with the device are copied as the host's bytes: the devices (NVPTX, AMDGPU,
// x86_64) are little-endian, so the host must be too.
const _: () = assert!(cfg!(target_endian = "little"));

pub use backend::{Backend, DeviceInfo, DeviceSymbol, Launch, LaunchParams};
pub use error::{symbol_name, PluginError, Result};
pub use plugin::Plugin;
