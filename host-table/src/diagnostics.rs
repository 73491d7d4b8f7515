//! Everything a plugin prints, formatted here and nowhere else (backends never print), as LLVM's
//! plugins do:
//!
//! - a failed call: one line on stderr, always, naming the plugin, the call, the device and the
//!   cause: `omptarget-indirect (x86_64) error: __tgt_rtl_data_delete(device 0): ...`;
//! - a plugin with no usable device (no driver, no GPU): nothing by default (it reports 0
//!   devices), its reason as an informational line;
//! - informational lines (`... info: ...`) only when `LIBOMPTARGET_INFO` is set to anything but
//!   empty or `0`, like LLVM's `OMP_INFOTYPE_PLUGIN_KERNEL` bit: among them one summary per
//!   installed map;
//! - a notice, once per process, when a switch changes what the plugin does
//!   (`OMPTARGET_INDIRECT_MAP=0`).

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::error::PluginError;

/// Whether `LIBOMPTARGET_INFO` asks for informational lines (read once).
pub fn info_enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED
        .get_or_init(|| std::env::var("LIBOMPTARGET_INFO").is_ok_and(|v| !v.is_empty() && v.trim() != "0"))
}

/// `call(device N)` or `call`.
fn site(call: &str, device: Option<i32>) -> String {
    match device {
        Some(id) => format!("{call}(device {id})"),
        None => call.to_string(),
    }
}

/// Reports the failure of `call`: an error line, or only an informational one where the plugin
/// simply has no usable device ([`PluginError::Unavailable`]) or the call is a question answered
/// "no" (`quiet`, e.g. `__tgt_rtl_is_valid_binary` of another target's image).
pub fn failed(plugin: &str, call: &str, device: Option<i32>, cause: &PluginError, quiet: bool) {
    if quiet || matches!(cause, PluginError::Unavailable(_)) {
        info(plugin, format_args!("{} failed: {cause}", site(call, device)));
    } else {
        eprintln!("omptarget-indirect ({plugin}) error: {}: {cause}", site(call, device));
    }
}

/// A panic caught at the C boundary: always an error line.
pub fn panicked(plugin: &str, call: &str, device: Option<i32>) {
    eprintln!("omptarget-indirect ({plugin}) error: {}: internal error (panic caught)", site(call, device));
}

/// One informational line, if `LIBOMPTARGET_INFO` asks for them.
pub fn info(plugin: &str, message: impl Display) {
    if info_enabled() {
        eprintln!("omptarget-indirect ({plugin}) info: {message}");
    }
}

/// One notice line per process for `flag` (the first call prints it, later ones nothing).
pub fn notice_once(flag: &AtomicBool, plugin: &str, message: impl Display) {
    if !flag.swap(true, Ordering::Relaxed) {
        eprintln!("omptarget-indirect ({plugin}) notice: {message}");
    }
}

/// What an installed map costs, for the informational summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapSummary {
    /// Entries of the table that are functions.
    pub functions: u64,
    /// Vtables whose words the table holds.
    pub vtables: u64,
    /// Entries of the table that are vtable words.
    pub vtable_words: u64,
    /// Bytes of the sorted table.
    pub table_bytes: u64,
    /// Bytes of the hash index's slots (0 without an index).
    pub index_bytes: u64,
    /// Longest distance of a key from its bucket in the index, if one was built and measured.
    pub longest_probe: Option<u32>,
}

impl Display for MapSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} indirect functions, {} vtables ({} words), table {} B, index {} B, longest probe {}",
            self.functions,
            self.vtables,
            self.vtable_words,
            self.table_bytes,
            self.index_bytes,
            self.longest_probe.map_or_else(|| "-".to_string(), |p| p.to_string())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_summary_reads_as_documented() {
        let s = MapSummary {
            functions: 3,
            vtables: 1,
            vtable_words: 4,
            table_bytes: 112,
            index_bytes: 128,
            longest_probe: Some(1),
        };
        assert_eq!(
            s.to_string(),
            "3 indirect functions, 1 vtables (4 words), table 112 B, index 128 B, longest probe 1"
        );
        let plain = MapSummary { index_bytes: 0, longest_probe: None, ..s };
        assert!(plain.to_string().ends_with("index 0 B, longest probe -"));
    }
}
