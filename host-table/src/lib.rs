//! The host side of the translation table, what both ways of running programs stand on: the
//! registration library (`stock-runtime/`, for the stock libomptarget of LLVM 21 and later) and
//! the libomptarget 16 plugins (`plugins/`, for clang 19). libomptarget's interface types
//! ([`rtl_interface`]), device images and their offload entries ([`image`], [`entries`]), the
//! table of `{host, device}` pairs and its hash index ([`fptr_map`]), the vtable words paired like
//! functions ([`vtables`], [`vtable_slots`]), the environment switches ([`switches`]) and the
//! one-line diagnostics ([`diagnostics`]), with their error type ([`error`]).
#![deny(missing_docs)]

pub mod diagnostics;
pub mod entries;
pub mod error;
pub mod fptr_map;
pub mod host_calls;
pub mod image;
pub mod loaded_objects;
pub mod rtl_interface;
pub mod switches;
pub mod vtable_slots;
pub mod vtables;

// Layouts shared with the device are copied as the host's bytes: the devices (NVPTX, AMDGPU,
// x86_64) are little-endian, so the host must be too.
const _: () = assert!(cfg!(target_endian = "little"));

pub use error::{symbol_name, PluginError, Result};
