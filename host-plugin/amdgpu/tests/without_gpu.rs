//! The AMDGPU plugin where no AMD GPU is (CI, and every machine of this project): with ROCm's
//! real `libhsa-runtime64.so.1` installed (Debian's, by `scripts/setup.sh`) every function of the
//! table resolves and `hsa_init` fails for want of `/dev/kfd`; without the library loading fails;
//! either way the installed `libomptarget.rtl.amdgpu.so` reports 0 devices and every entry point
//! fails cleanly instead of crashing.

use std::path::Path;

use amdgpu_hsa::runtime::{Runtime, LIBRARY};
use amdgpu_hsa::sys::Functions;
use plugin_test_support::{assert_no_devices, Api, OffloadImage};

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
    if has_amd_gpu_driver() {
        eprintln!("/dev/kfd is present: hsa_init may succeed here; the no-driver half is skipped");
        return;
    }
    let err = Runtime::load(LIBRARY).err().expect("hsa_init fails without /dev/kfd");
    assert!(err.to_string().starts_with("hsa_init failed: HSA_STATUS_ERROR"), "{err}");
}

#[test]
fn no_gpu_means_no_devices_and_clean_failures() {
    if has_amd_gpu_driver() {
        eprintln!("/dev/kfd is present: this test covers machines without an AMD GPU");
        return;
    }
    let path = plugin_test_support::dist("lib/libomptarget.rtl.amdgpu.so");
    let code_object = std::fs::read(plugin_test_support::dist("device/amdgcn/gfx90a/device_rtl.o"))
        .expect("a readable device_rtl.o");
    let api = Api::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let image = OffloadImage::new(code_object, &[]);
    // SAFETY: a plugin built by `cargo xtask build` for libomptarget 16's ABI.
    unsafe { assert_no_devices(&api, &image) };
}
