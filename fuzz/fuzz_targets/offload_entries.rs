//! The offload-entry table reader (clang 16-19's 32-byte entries and LLVM 20's 9-field ones),
//! with names read from the same bytes: any table, entries or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let name_at = |address: u64| -> host_table::Result<String> {
        let start = usize::try_from(address).ok().filter(|&a| a < data.len());
        let tail =
            start.map(|a| &data[a..]).ok_or_else(|| host_table::PluginError::InvalidImage("name".into()))?;
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
    };
    let _ = host_table::entries::parse(data, name_at);
});
