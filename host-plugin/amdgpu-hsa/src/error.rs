//! What can go wrong in the HSA layer, in the runtime's own words: the backend turns it into the
//! plugin's error (any `std::error::Error` becomes a backend failure there).

use std::fmt;

use vendor_library::OpenError;

/// A failed HSA operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HsaError {
    /// The runtime library cannot be used: it is missing, or lacks a function.
    Load {
        /// The library asked for (`libhsa-runtime64.so.1`).
        library: String,
        /// Why.
        cause: OpenError,
    },
    /// A call returned an error status.
    Call {
        /// The runtime function (`hsa_executable_freeze`).
        call: &'static str,
        /// The runtime's description of the status.
        status: String,
    },
    /// A loaded executable does not validate.
    InvalidExecutable(u32),
    /// A launch the dispatch packet or the kernel's argument segment cannot express.
    InvalidLaunch(String),
}

/// Result of an HSA operation.
pub type Result<T> = std::result::Result<T, HsaError>;

impl fmt::Display for HsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HsaError::Load { library, cause: OpenError::NotFound(why) } => {
                write!(f, "cannot load {library} (no ROCm HSA runtime): {why}")
            }
            HsaError::Load { library, cause: OpenError::MissingFunction(symbol) } => {
                write!(f, "{library} lacks {symbol} (runtime too old)")
            }
            HsaError::Call { call, status } => write!(f, "{call} failed: {status}"),
            HsaError::InvalidExecutable(code) => {
                write!(f, "invalid image: the loaded HSA executable does not validate ({code})")
            }
            HsaError::InvalidLaunch(why) => write!(f, "invalid argument: {why}"),
        }
    }
}

impl std::error::Error for HsaError {}
