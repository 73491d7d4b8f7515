//! The AMDGPU plugin where no AMD GPU is (CI, and every machine of this project): with ROCm's
//! real `libhsa-runtime64.so.1` installed (Debian's, by `scripts/setup.sh`) every function of the
//! table resolves and `hsa_init` fails for want of `/dev/kfd`; without the library loading fails;
//! either way the installed `libomptarget.rtl.amdgpu.so` reports 0 devices and every entry point
//! fails cleanly instead of crashing. Where an AMD GPU is, the same tests hold what holds there:
//! `hsa_init` succeeds (or fails as above for a GPU this user may not open), and the plugin
//! refuses what is no image and every device it does not have.

use std::path::Path;

use amdgpu_hsa::runtime::{Runtime, LIBRARY};
use amdgpu_hsa::sys::Functions;
use plugin_test_support::{assert_refuses_bad_input, Api, OffloadImage};

fn has_amd_gpu_driver() -> bool {
    Path::new("/dev/kfd").exists()
}

#[test]
fn every_hsa_function_resolves_from_the_real_runtime() {
    // The table's names and the library's exports agree (ROCm 5.2, the oldest this is built against).
    if let Err(e) = Functions::open(LIBRARY) {
        panic!("{e:?}: is libhsa-runtime64-1 installed? (scripts/setup.sh)");
    }
}

#[test]
fn missing_runtime_or_driver_is_an_error_not_a_crash() {
    let err = Runtime::load(c"libhsa-runtime64.so.0-not-installed").err().expect("no such library");
    assert!(err.to_string().contains("no ROCm HSA runtime"), "{err}");
    match Runtime::load(LIBRARY) {
        // With the driver, a usable GPU lets hsa_init succeed; one this user may not open fails
        // the same way as no driver.
        Ok(_) => assert!(has_amd_gpu_driver(), "hsa_init succeeded without /dev/kfd"),
        Err(err) => assert!(err.to_string().starts_with("hsa_init failed: HSA_STATUS_ERROR"), "{err}"),
    }
}

#[test]
fn bad_input_is_refused_with_or_without_a_gpu() {
    let path = plugin_test_support::dist("lib/libomptarget.rtl.amdgpu.so");
    let code_object = std::fs::read(plugin_test_support::dist("device/amdgcn/gfx90a/device_rtl.o"))
        .expect("a readable device_rtl.o");
    let api = Api::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let image = OffloadImage::new(code_object, &[]);
    // SAFETY: a plugin built by `cargo xtask build` for libomptarget 16's ABI.
    let devices = unsafe { assert_refuses_bad_input(&api, &image) };
    assert!(devices == 0 || has_amd_gpu_driver(), "{devices} device(s) without /dev/kfd");
    eprintln!("libomptarget.rtl.amdgpu.so offered {devices} device(s)");
}
