//! Kernels of the GPU bundle, for `nvptx64-nvidia-cuda` only (on the host this crate is empty).
//!
//! They call the translation through its C symbol, never through Rust, so that `cargo xtask
//! gpu-test` links them with the device runtime's bitcode exactly as clang links a user's
//! program: once inlined (device LTO) and once as a call.
//!
//! - [`translate_keys`]: one translation per key, for the lookup test (every result is checked on
//!   the host against `device_rtl::translate_in`).
//! - `bench_*`: the benchmark's throughput and latency kernels for one implementation each:
//!   ours, LLVM's (feature `llvm-lookup`), and the one-load baseline.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel, stdarch_nvptx))]
#![deny(missing_docs)]

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
pub use nvptx::*;
