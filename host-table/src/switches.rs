//! The environment switches the plugins read when they start.

/// Environment variable that, set to `0` or `off` when the plugin starts, stops `load_binary`
/// from installing the map of the images' indirect functions: translation then returns every
/// pointer unchanged, as without this project. A diagnostic switch (and the end-to-end tests'
/// negative control); explicit `__tgt_rtl_set_function_ptr_map` calls still install tables.
pub const MAP_ON_LOAD_ENV: &str = "OMPTARGET_INDIRECT_MAP";

/// Environment variable that, set to `0` or `off` when the plugin starts, installs tables without
/// the hash index, so the device runtime binary-searches them as it does tables from other
/// producers. For comparisons and as the end-to-end tests' second configuration.
pub const HASH_INDEX_ENV: &str = "OMPTARGET_INDIRECT_INDEX";

/// Environment variable that, set to `0` or `off` when the plugin starts, keeps it from starting
/// the hidden helper team of a libomp before 19 (the plugins' `hidden_helpers`): for programs that
/// set `LIBOMP_NUM_HIDDEN_HELPER_THREADS=0` themselves, and the stress step's negative control.
pub const HELPER_TEAM_ENV: &str = "OMPTARGET_INDIRECT_HELPER_TEAM";

/// Environment variable that, set to `0` or `off`, keeps the map from giving vtables whose slots
/// name another image's functions copies of their own ([`crate::vtable_slots`]): their host words
/// pair with their image's vtable, as before. A diagnostic switch, and the end-to-end tests'
/// negative control of a program's classes over a shared library's.
pub const SLOT_COPIES_ENV: &str = "OMPTARGET_INDIRECT_SLOT_COPIES";

/// What the x86_64 device does at a call into host code no image pairs ([`crate::host_calls`]).
pub use omptarget_indirect_abi::host_calls::HOST_CALLS_ENV;

/// Whether the switch `name` is on: anything but `0` or `off`, and on when unset.
pub fn switch_from_env(name: &str) -> bool {
    !std::env::var(name).is_ok_and(|v| matches!(v.trim(), "0" | "off"))
}
