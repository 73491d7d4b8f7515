//! Diagnostics on stderr, only when `LIBOMPTARGET_INFO` asks for them.

use std::sync::OnceLock;

/// Whether `LIBOMPTARGET_INFO` is set to anything but empty or `0` (read once).
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED
        .get_or_init(|| std::env::var("LIBOMPTARGET_INFO").is_ok_and(|v| !v.is_empty() && v.trim() != "0"))
}

/// One line naming the plugin, the call, the device (if any) and the cause.
pub fn report(plugin: &str, call: &str, device: Option<i32>, cause: &dyn std::fmt::Display) {
    if enabled() {
        match device {
            Some(id) => eprintln!("omptarget-indirect ({plugin}): {call}(device {id}) failed: {cause}"),
            None => eprintln!("omptarget-indirect ({plugin}): {call} failed: {cause}"),
        }
    }
}
