//! The installed `libomptarget.rtl.cuda.so` on a machine without the NVIDIA driver (CI): it
//! loads, reports 0 devices, and every entry point fails cleanly instead of crashing.

use std::path::Path;

use plugin_core::abi::OFFLOAD_FAIL;
use plugin_test_support::{Api, OffloadImage};

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
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/dist/lib/libomptarget.rtl.cuda.so");
    assert!(path.is_file(), "{} is missing: run `cargo xtask build`", path.display());
    let api = Api::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let image = OffloadImage::new(vec![0u8; 32], &[]);
    // SAFETY: the plugin's C ABI with valid or null arguments, which it must refuse cleanly.
    unsafe {
        assert_eq!((api.init_plugin)(), OFFLOAD_FAIL, "init_plugin fails, so libomptarget drops the plugin");
        assert_eq!((api.number_of_devices)(), 0);
        assert_eq!((api.is_valid_binary_info)(image.ptr(), std::ptr::null()), 0);
        assert!((api.load_binary)(0, image.ptr()).is_null());
        assert_eq!((api.set_function_ptr_map)(0, 0, std::ptr::null()), OFFLOAD_FAIL);
        assert!((api.data_alloc)(0, 64, std::ptr::null_mut(), 0).is_null());
        assert_eq!((api.init_device)(0), OFFLOAD_FAIL);
        assert_eq!((api.deinit_plugin)(), OFFLOAD_FAIL);
    }
}
