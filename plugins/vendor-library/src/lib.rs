//! Vendor runtimes (`libcuda.so.1`, `libhsa-runtime64.so.1`) loaded at run time, after LLVM's
//! `dynamic_cuda` / `dynamic_hsa`: a vendor crate declares exactly the functions it calls with
//! [`vendor_functions!`], and every one is resolved when the library is opened, so a missing
//! library or symbol is an error at start-up, never a crash later. It knows nothing of the
//! plugins: the vendor crates (`cuda-driver`, `amdgpu-hsa`) stand on it alone, the cudarc way.
#![deny(missing_docs)]

use std::ffi::{c_void, CStr};

/// Why a vendor library could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// `dlopen` failed; its message.
    NotFound(String),
    /// The library lacks this function (it is too old, or not the expected library).
    MissingFunction(&'static str),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::NotFound(why) => write!(f, "cannot load it: {why}"),
            OpenError::MissingFunction(symbol) => write!(f, "it lacks {symbol}"),
        }
    }
}

impl std::error::Error for OpenError {}

/// A vendor runtime's failure, as its layer reports it (the CUDA driver's, the HSA runtime's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VendorError {
    /// The library cannot be used: it is missing, or lacks a function.
    Unusable {
        /// The library asked for (`libcuda.so.1`).
        library: String,
        /// What it is, for the message (`NVIDIA driver`).
        runtime: &'static str,
        /// Why.
        cause: OpenError,
    },
    /// A call returned an error status.
    Call {
        /// The vendor function (`cuModuleLoadData`).
        call: &'static str,
        /// The runtime's own name or description of the status.
        status: String,
    },
}

impl std::fmt::Display for VendorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VendorError::Unusable { library, runtime, cause: OpenError::NotFound(why) } => {
                write!(f, "cannot load {library} (no {runtime} on this machine): {why}")
            }
            VendorError::Unusable { library, runtime, cause: OpenError::MissingFunction(symbol) } => {
                write!(f, "{library} lacks {symbol} ({runtime} too old)")
            }
            VendorError::Call { call, status } => write!(f, "{call} failed: {status}"),
        }
    }
}

impl std::error::Error for VendorError {}

/// A `dlopen`ed library, closed on drop. Functions resolved from it must not outlive it.
#[derive(Debug)]
pub struct VendorLibrary {
    handle: *mut c_void,
}

// SAFETY: a dlopen handle may be used and closed from any thread.
unsafe impl Send for VendorLibrary {}
// SAFETY: dlsym on a shared handle is thread-safe.
unsafe impl Sync for VendorLibrary {}

impl VendorLibrary {
    /// `dlopen(name, RTLD_NOW | RTLD_LOCAL)`.
    pub fn open(name: &CStr) -> std::result::Result<VendorLibrary, OpenError> {
        // SAFETY: valid C string; loading a vendor library runs its constructors, as the vendor's
        // own plugins do.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            // SAFETY: dlerror returns null or a thread-local C string valid until the next dl call.
            let msg = unsafe { libc::dlerror() };
            let why = if msg.is_null() {
                "dlopen failed".to_string()
            } else {
                // SAFETY: non-null C string from dlerror.
                unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
            };
            return Err(OpenError::NotFound(why));
        }
        Ok(VendorLibrary { handle })
    }

    /// The address of `symbol` (NUL-terminated), or null if the library lacks it.
    pub fn symbol(&self, symbol: &str) -> *mut c_void {
        debug_assert!(symbol.ends_with('\0'));
        // SAFETY: valid handle and NUL-terminated name.
        unsafe { libc::dlsym(self.handle, symbol.as_ptr().cast()) }
    }
}

impl Drop for VendorLibrary {
    fn drop(&mut self) {
        // SAFETY: the handle came from dlopen; nothing resolved from it outlives this value (the
        // function tables hold the library in the same struct).
        unsafe { libc::dlclose(self.handle) };
    }
}

/// Declares a struct holding a [`VendorLibrary`] and one public C function pointer per listed symbol,
/// with `fn open(&CStr) -> Result<Self, OpenError>` resolving them all. Each entry reads
/// `field = "symbol": fn(args) -> ret;`, its signature copied from the vendor header.
#[macro_export]
macro_rules! vendor_functions {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($field:ident = $symbol:literal: fn($($arg:ty),*) -> $ret:ty;)*
    }) => {
        $(#[$meta])*
        $vis struct $name {
            _library: $crate::VendorLibrary,
            $(
                #[doc = concat!("`", $symbol, "`.")]
                pub $field: unsafe extern "C" fn($($arg),*) -> $ret,
            )*
        }

        impl $name {
            /// Opens `library` and resolves every function.
            $vis fn open(
                library: &::std::ffi::CStr,
            ) -> ::std::result::Result<$name, $crate::OpenError> {
                let lib = $crate::VendorLibrary::open(library)?;
                Ok($name {
                    $($field: {
                        let f = lib.symbol(concat!($symbol, "\0"));
                        if f.is_null() {
                            return Err($crate::OpenError::MissingFunction($symbol));
                        }
                        // SAFETY: the library exports this symbol with this C signature (the
                        // vendor header's declaration, copied in the table).
                        unsafe {
                            ::std::mem::transmute::<*mut ::std::ffi::c_void, unsafe extern "C" fn($($arg),*) -> $ret>(f)
                        }
                    },)*
                    _library: lib,
                })
            }
        }
    };
}
