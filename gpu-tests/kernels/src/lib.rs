//! Kernels of the GPU bundle, for `nvptx64-nvidia-cuda` only (on the host this crate holds only
//! [`slot`], which the benchmark's result check shares with the kernels).
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

/// Which pool slot thread `t` (global index) reads at step `k` of a benchmark kernel: the same
/// for every lane of a warp when `uniform` (the usual case of a loop calling one function), a
/// different one per lane otherwise. The pool is small enough to stay in cache, so the benchmark
/// times the translation, not the streaming of keys. The host recomputes every thread's results
/// with it.
#[inline(always)]
pub fn slot(t: usize, k: usize, uniform: bool, mask: u32) -> usize {
    let who = if uniform { (t / 32) as u32 } else { t as u32 };
    ((who.wrapping_mul(0x9e37_79b1) ^ (k as u32).wrapping_mul(0x85eb_ca77)) & mask) as usize
}
