//! The installed `libomptarget.rtl.cuda.so` refuses bad input on any machine: without the NVIDIA
//! driver (CI) it loads, reports 0 devices, and every entry point fails cleanly instead of
//! crashing; with the driver and a GPU it rejects what is no image and every call naming a
//! device it does not have (the GPU bundle runs real kernels there).

use plugin_test_support::{assert_refuses_bad_input, Api, OffloadImage};

#[test]
fn bad_input_is_refused_with_or_without_a_driver() {
    let path = plugin_test_support::dist("lib/libomptarget.rtl.cuda.so");
    let api = Api::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let image = OffloadImage::new(vec![0u8; 32], &[]);
    // SAFETY: a plugin built by `cargo xtask build` for libomptarget 16's ABI.
    let devices = unsafe { assert_refuses_bad_input(&api, &image) };
    eprintln!("libomptarget.rtl.cuda.so offered {devices} device(s)");
}
