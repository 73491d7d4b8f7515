//! What can go wrong in the driver layer, in the driver's own words: the backend turns it into
//! the plugin's error (any `std::error::Error` becomes a backend failure there), the GPU tests
//! into theirs.

use std::fmt;

use vendor_library::OpenError;

/// A failed driver operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverError {
    /// The driver library cannot be used: it is missing, or lacks a function.
    Load {
        /// The library asked for (`libcuda.so.1`).
        library: String,
        /// Why.
        cause: OpenError,
    },
    /// A call returned an error status.
    Call {
        /// The driver function (`cuModuleLoadData`).
        call: &'static str,
        /// The driver's name for the status (`CUDA_ERROR_INVALID_PTX`).
        status: String,
    },
}

/// Result of a driver operation.
pub type Result<T> = std::result::Result<T, DriverError>;

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Load { library, cause: OpenError::NotFound(_) } => {
                write!(f, "cannot load {library} (no NVIDIA driver on this machine)")
            }
            DriverError::Load { library, cause: OpenError::MissingFunction(symbol) } => {
                write!(f, "{library} lacks {symbol} (driver too old)")
            }
            DriverError::Call { call, status } => write!(f, "{call} failed: {status}"),
        }
    }
}

impl std::error::Error for DriverError {}

/// Why bytes are not a CUDA image this layer knows ([`crate::image::classify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotACudaImage(pub String);

impl fmt::Display for NotACudaImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid image: {}", self.0)
    }
}

impl std::error::Error for NotACudaImage {}
