//! The installed `libomptarget.rtl.cuda.so` on a machine without the NVIDIA driver (CI): it
//! loads, reports 0 devices, and every entry point fails cleanly instead of crashing.

use plugin_test_support::{assert_no_devices, Api, OffloadImage};

#[test]
fn no_driver_means_no_devices_and_clean_failures() {
    // SAFETY: probing for the driver; closed again at once.
    let driver = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if !driver.is_null() {
        // SAFETY: handle from dlopen.
        unsafe { libc::dlclose(driver) };
        eprintln!(
            "libcuda.so.1 is present: this test covers machines without it (the GPU bundle covers the rest)"
        );
        return;
    }
    let path = plugin_test_support::dist("lib/libomptarget.rtl.cuda.so");
    let api = Api::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let image = OffloadImage::new(vec![0u8; 32], &[]);
    // SAFETY: a plugin built by `cargo xtask build` for libomptarget 16's ABI.
    unsafe { assert_no_devices(&api, &image) };
}
