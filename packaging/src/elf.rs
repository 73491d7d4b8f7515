//! What an ELF file says of the libraries it needs.

use anyhow::Result;
use std::path::Path;

/// The shared libraries `elf` names as needed (its DT_NEEDED entries); an error when it is not a
/// 64-bit ELF file.
pub fn needed(elf: &Path) -> Result<Vec<String>> {
    use object::read::elf::{Dyn, ElfFile64, FileHeader};
    let data = crate::cmd::read(elf)?;
    let file = ElfFile64::<object::Endianness>::parse(&*data)?;
    let endian = file.endian();
    let sections = file.elf_header().sections(endian, &*data)?;
    let mut needed = Vec::new();
    if let Some((dynamic, index)) = sections.dynamic(endian, &*data)? {
        let strings = sections.strings(endian, &*data, index)?;
        for entry in dynamic {
            if entry.tag32(endian) == Some(object::elf::DT_NEEDED) {
                needed.push(String::from_utf8_lossy(entry.string(endian, strings)?).into_owned());
            }
        }
    }
    Ok(needed)
}
