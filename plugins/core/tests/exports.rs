//! Every installed plugin exports the entry points libomptarget 16 requires, as dynamic functions,
//! and nothing but `__tgt_rtl_*` functions: a device image or program loaded beside a plugin must
//! never bind to a copy of the device library's globals or functions (or anything else) inside it.

use object::{Object, ObjectSymbol};
use plugin_test_support::dist;

/// Entry points libomptarget 16 requires (dropping any gives 0 devices), plus ours.
const REQUIRED_EXPORTS: &[&str] = &[
    "__tgt_rtl_is_valid_binary",
    "__tgt_rtl_number_of_devices",
    "__tgt_rtl_init_device",
    "__tgt_rtl_load_binary",
    "__tgt_rtl_data_alloc",
    "__tgt_rtl_data_submit",
    "__tgt_rtl_data_retrieve",
    "__tgt_rtl_data_delete",
    "__tgt_rtl_launch_kernel",
    "__tgt_rtl_init_plugin",
    "__tgt_rtl_deinit_plugin",
    "__tgt_rtl_is_valid_binary_info",
    "__tgt_rtl_init_requires",
    "__tgt_rtl_deinit_device",
    "__tgt_rtl_synchronize",
    "__tgt_rtl_set_function_ptr_map",
    "__tgt_rtl_omptarget_indirect_held_bytes",
];

/// The plugins `cargo xtask build` installs, under the names libomptarget 16 loads.
const PLUGINS: [&str; 3] =
    ["libomptarget.rtl.x86_64.so", "libomptarget.rtl.cuda.so", "libomptarget.rtl.amdgpu.so"];

#[test]
fn every_plugin_exports_the_libomptarget_16_entry_points_and_nothing_else() {
    for name in PLUGINS {
        let path = dist(&format!("lib/{name}"));
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = object::File::parse(&*data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let defined: Vec<(String, object::SymbolKind)> = file
            .dynamic_symbols()
            .filter(|s| s.is_definition())
            .filter_map(|s| s.name().ok().map(|n| (n.to_string(), s.kind())))
            .collect();
        let foreign: Vec<&str> = defined
            .iter()
            .filter(|(n, kind)| !(n.starts_with("__tgt_rtl_") && *kind == object::SymbolKind::Text))
            .map(|(n, _)| n.as_str())
            .collect();
        assert!(foreign.is_empty(), "{name} exports more than __tgt_rtl_* functions: {}", foreign.join(", "));
        let missing: Vec<&str> =
            REQUIRED_EXPORTS.iter().copied().filter(|r| !defined.iter().any(|(n, _)| n == r)).collect();
        assert!(missing.is_empty(), "{name} does not export {}", missing.join(", "));
    }
}
