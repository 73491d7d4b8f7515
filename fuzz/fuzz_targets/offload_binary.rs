//! The OffloadBinary reader (`__tgt_device_image` bytes as clang 16-22 wrap them), then the
//! image validator on whatever image it unwraps.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(image) = host_table::image::unwrap(data) {
        let _ = image.triple.as_deref();
        let _ = omptarget_rtl_x86_64::validate::check_shared_object(image.bytes);
    }
});
