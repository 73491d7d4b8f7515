//! The installed `libomptarget.rtl.cuda.so` on a machine without the NVIDIA driver (CI): it
//! loads, reports 0 devices, and every entry point fails cleanly instead of crashing.

use std::ffi::{c_void, CString};
use std::path::Path;

type NoArgs = unsafe extern "C" fn() -> i32;
type IsValid = unsafe extern "C" fn(*const c_void) -> i32;
type Load = unsafe extern "C" fn(i32, *const c_void) -> *mut c_void;
type SetMap = unsafe extern "C" fn(i32, u64, *const c_void) -> i32;
type Alloc = unsafe extern "C" fn(i32, i64, *mut c_void, i32) -> *mut c_void;

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
    let cpath = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: loading our plugin; kept loaded for the process.
    let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "cannot dlopen {}", path.display());
    let sym = |name: &str| {
        let c = CString::new(name).unwrap();
        // SAFETY: valid handle and name.
        let f = unsafe { libc::dlsym(handle, c.as_ptr()) };
        assert!(!f.is_null(), "{name} is not exported");
        f
    };
    // SAFETY: each symbol has this C signature (REFERENCE section 5); null arguments are refused.
    unsafe {
        let init: NoArgs = std::mem::transmute::<*mut c_void, NoArgs>(sym("__tgt_rtl_init_plugin"));
        let count: NoArgs = std::mem::transmute::<*mut c_void, NoArgs>(sym("__tgt_rtl_number_of_devices"));
        let valid: IsValid = std::mem::transmute::<*mut c_void, IsValid>(sym("__tgt_rtl_is_valid_binary"));
        let load: Load = std::mem::transmute::<*mut c_void, Load>(sym("__tgt_rtl_load_binary"));
        let set_map: SetMap =
            std::mem::transmute::<*mut c_void, SetMap>(sym("__tgt_rtl_set_function_ptr_map"));
        let alloc: Alloc = std::mem::transmute::<*mut c_void, Alloc>(sym("__tgt_rtl_data_alloc"));
        assert_eq!(init(), -1, "init_plugin fails, so libomptarget drops the plugin");
        assert_eq!(count(), 0);
        let image = [0u8; 32];
        assert_eq!(valid(image.as_ptr().cast()), 0);
        assert!(load(0, image.as_ptr().cast()).is_null());
        assert_eq!(set_map(0, 0, std::ptr::null()), -1);
        assert!(alloc(0, 64, std::ptr::null_mut(), 0).is_null());
    }
}
