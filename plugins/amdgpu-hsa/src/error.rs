//! What can go wrong in the HSA layer, in the runtime's own words: the backend turns it into the
//! plugin's error (any `std::error::Error` becomes a backend failure there).

use std::fmt;

use vendor_library::VendorError;

/// A failed HSA operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HsaError {
    /// The runtime cannot be used, or a call returned an error status.
    Runtime(VendorError),
    /// A loaded executable does not validate (the runtime's result code).
    InvalidExecutable(u32),
    /// A launch the dispatch packet or the kernel's argument segment cannot express.
    InvalidLaunch(String),
}

/// Result of an HSA operation.
pub type Result<T> = std::result::Result<T, HsaError>;

impl From<VendorError> for HsaError {
    fn from(error: VendorError) -> Self {
        HsaError::Runtime(error)
    }
}

impl fmt::Display for HsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HsaError::Runtime(error) => error.fmt(f),
            HsaError::InvalidExecutable(code) => {
                write!(f, "invalid image: the loaded HSA executable does not validate ({code})")
            }
            HsaError::InvalidLaunch(why) => write!(f, "invalid argument: {why}"),
        }
    }
}

impl std::error::Error for HsaError {}
