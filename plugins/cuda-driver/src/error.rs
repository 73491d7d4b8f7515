//! What can go wrong in the driver layer, in the driver's own words: the backend turns it into
//! the plugin's error (any `std::error::Error` becomes a backend failure there), the GPU tests
//! into theirs.

use std::fmt;

/// A failed driver operation: the driver cannot be used, or a call returned an error status.
pub type DriverError = vendor_library::VendorError;

/// Result of a driver operation.
pub type Result<T> = std::result::Result<T, DriverError>;

/// Why bytes are not a CUDA image this layer knows ([`crate::image::classify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotACudaImage(pub String);

impl fmt::Display for NotACudaImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid image: {}", self.0)
    }
}

impl std::error::Error for NotACudaImage {}
