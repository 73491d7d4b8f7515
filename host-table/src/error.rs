//! The plugin's error type: every failure of a `__tgt_rtl_*` call, with its cause in words.

use std::ffi::CString;
use std::fmt;

/// A failed plugin operation. Reported on stderr when `LIBOMPTARGET_INFO` is set, then turned
/// into `OFFLOAD_FAIL` (or null) at the C boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginError {
    /// The device id is negative or not below the number of devices.
    InvalidDevice(i32),
    /// An argument is malformed; the text says which and how.
    InvalidArgument(String),
    /// The image is not one this plugin can load.
    InvalidImage(String),
    /// The function-pointer table does not satisfy its rules.
    InvalidTable(String),
    /// A symbol the operation needs is missing from the image.
    MissingSymbol(String),
    /// The backend (driver, loader, allocator) failed.
    Backend(String),
    /// The plugin has no usable device: its driver or runtime is missing, or finds no device.
    /// Not an error of the program: reported only as information.
    Unavailable(String),
}

/// Result of a plugin operation.
pub type Result<T> = std::result::Result<T, PluginError>;

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginError::InvalidDevice(id) => write!(f, "invalid device id {id}"),
            PluginError::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            PluginError::InvalidImage(why) => write!(f, "invalid image: {why}"),
            PluginError::InvalidTable(why) => write!(f, "invalid function-pointer table: {why}"),
            PluginError::MissingSymbol(name) => write!(f, "symbol {name} not found in the image"),
            PluginError::Backend(why) => write!(f, "{why}"),
            PluginError::Unavailable(why) => write!(f, "no usable device: {why}"),
        }
    }
}

/// A vendor layer's error (the CUDA driver's, the HSA runtime's, each in its own crate): the
/// backend failed, in that layer's words. (`PluginError` itself is therefore no
/// `std::error::Error`: the two impls would overlap.)
impl<E: std::error::Error> From<E> for PluginError {
    fn from(error: E) -> Self {
        PluginError::Backend(error.to_string())
    }
}

/// `name` as the C string a vendor symbol lookup (`cuModuleGetGlobal`,
/// `hsa_executable_get_symbol_by_name`, ...) takes; a name with a NUL is an invalid argument.
pub fn symbol_name(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| PluginError::InvalidArgument(format!("symbol name {name:?} contains NUL")))
}
