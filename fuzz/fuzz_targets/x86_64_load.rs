//! The x86_64 plugin's whole load path on structurally corrupted real device images: the input
//! picks fields of the loader's structures (segment flags, dynamic tags, dynamic symbols' type,
//! binding, visibility and section, initialiser and finaliser addresses:
//! `plugin_test_support::elf_mutations`) and the values they get,
//! applied to a real image (`$OMPTARGET_INDIRECT_FUZZ_IMAGE`, an x86_64 image of an end-to-end
//! program). `__tgt_rtl_load_binary` must refuse the result or load it, and unloading must work:
//! a crash in the dynamic loader is a hole in the validator. Code and data bytes are never
//! changed (garbage code may crash when it runs; loading may not), and an image whose accepted
//! initialisers or finalisers now name other functions of it is not loaded (their code would
//! run at load: the same).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use omptarget_rtl_x86_64 as plugin;
use plugin_test_support::elf_mutations::{fields, Family, Field, Mutation};
use plugin_test_support::OffloadImage;

/// One change: a field (by index) and its new value.
const CHANGE: usize = 2 + 8;

fn base() -> &'static (Vec<u8>, Vec<Field>) {
    static BASE: OnceLock<(Vec<u8>, Vec<Field>)> = OnceLock::new();
    BASE.get_or_init(|| {
        let path = std::env::var_os("OMPTARGET_INDIRECT_FUZZ_IMAGE")
            .expect("set OMPTARGET_INDIRECT_FUZZ_IMAGE to a real x86_64 device image (cargo xtask fuzz does)");
        let image = std::fs::read(&path).expect("OMPTARGET_INDIRECT_FUZZ_IMAGE is readable");
        let found = fields(&image);
        assert!(!found.is_empty(), "{path:?} is not an ELF image");
        assert_eq!(plugin::__tgt_rtl_init_plugin(), 0);
        assert_eq!(plugin::__tgt_rtl_init_device(0), 0);
        (image, found)
    })
}

fuzz_target!(|data: &[u8]| {
    let (good, found) = base();
    let mut image = good.clone();
    for change in data.chunks_exact(CHANGE).take(4) {
        let field = found[usize::from(u16::from_le_bytes([change[0], change[1]])) % found.len()];
        let value = u64::from_le_bytes(change[2..].try_into().expect("8 bytes"));
        image = Mutation { field, value }.apply(&image);
    }
    // An initialiser or finaliser moved to another function of the image, which the validator
    // accepts (a function start is what linkers write), runs that function's code at load or
    // unload: like changed code bytes, out of this target's scope (the function may well fault
    // when called so, `__do_global_dtors_aux` does).
    let calls_other_code = found
        .iter()
        .filter(|f| f.family == Family::InitFini)
        .any(|f| image[f.at..f.at + f.width] != good[f.at..f.at + f.width]);
    if calls_other_code && plugin::validate::check_shared_object(&image).is_ok() {
        return;
    }
    let loaded = OffloadImage::new(image, &[]);
    // SAFETY: a well-formed descriptor of possibly corrupted bytes, which the plugin must refuse
    // or load safely; it outlives the load and the unload.
    unsafe {
        if !plugin::__tgt_rtl_load_binary(0, loaded.ptr()).is_null() {
            assert_eq!(plugin::__tgt_rtl_unload_binary(0, loaded.ptr()), 0);
        }
    }
});
