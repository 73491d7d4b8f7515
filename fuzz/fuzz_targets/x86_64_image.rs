//! The x86_64 plugin's image validator: any bytes, a verdict, never a panic or a hang. What it
//! accepts is then what `dlopen` gets, so it must only accept what the loader can take.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = omptarget_rtl_x86_64::validate::check_shared_object(data);
});
