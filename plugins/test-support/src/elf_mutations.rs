//! Structure-aware corruptions of a real x86_64 device image: one field of a program header, a
//! dynamic entry or a dynamic symbol changed at a time, the fields the dynamic loader acts on.
//! Code and data bytes are never touched (an image whose code is garbage may crash when that code
//! runs; what must never crash is loading it). Shared by the hostile-input tests and the
//! `x86_64_load` fuzz target, so that both try the same families.

/// One field to change: `width` bytes at file offset `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// File offset of the field.
    pub at: usize,
    /// Its width in bytes (1, 2, 4 or 8).
    pub width: usize,
    /// Which family it belongs to.
    pub family: Family,
}

/// The structures the fields belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `p_flags` of a program header.
    SegmentFlags,
    /// `d_tag` of a dynamic entry.
    DynamicTag,
    /// `st_info` (type and binding) of a dynamic symbol.
    SymbolInfo,
    /// `st_other` (visibility) of a dynamic symbol.
    SymbolVisibility,
    /// `st_shndx` of a dynamic symbol.
    SymbolSection,
    /// What the loader calls or reads to call: `d_val` of `DT_INIT`, `DT_FINI` and of the
    /// initialiser and finaliser arrays' address and size entries, and the addend of each
    /// relocation that fills an array slot.
    InitFini,
}

/// One corrupted copy: `field` set to `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mutation {
    /// The field.
    pub field: Field,
    /// Its new value (truncated to the field's width).
    pub value: u64,
}

impl Mutation {
    /// `image` with this mutation applied.
    pub fn apply(&self, image: &[u8]) -> Vec<u8> {
        let mut copy = image.to_vec();
        let Field { at, width, .. } = self.field;
        copy[at..at + width].copy_from_slice(&self.value.to_le_bytes()[..width]);
        copy
    }
}

fn read(image: &[u8], at: usize, width: usize) -> Option<u64> {
    let bytes = image.get(at..at.checked_add(width)?)?;
    let mut word = [0u8; 8];
    word[..width].copy_from_slice(bytes);
    Some(u64::from_le_bytes(word))
}

/// The loader-relevant fields of `image` (an ELF64 little-endian shared object); empty when it is
/// not one.
pub fn fields(image: &[u8]) -> Vec<Field> {
    let mut fields = Vec::new();
    if image.get(..4) != Some(b"\x7fELF") {
        return fields;
    }
    let (Some(phoff), Some(phnum), Some(shoff), Some(shnum)) =
        (read(image, 32, 8), read(image, 56, 2), read(image, 40, 8), read(image, 60, 2))
    else {
        return fields;
    };
    let mut dynamic = None;
    // (p_vaddr, p_offset, p_filesz) of each PT_LOAD segment.
    let mut loads = Vec::new();
    for i in 0..phnum as usize {
        let at = phoff as usize + 56 * i;
        fields.push(Field { at: at + 4, width: 4, family: Family::SegmentFlags });
        match read(image, at, 4) {
            Some(1) => {
                loads.extend(read(image, at + 16, 8).zip(read(image, at + 8, 8)).zip(read(image, at + 32, 8)))
            }
            Some(2) => dynamic = read(image, at + 8, 8).zip(read(image, at + 32, 8)),
            _ => {}
        }
    }
    let file_offset = |vaddr: u64| {
        loads
            .iter()
            .find(|&&((start, _), size)| vaddr >= start && vaddr - start < size)
            .map(|&((start, offset), _)| (offset + (vaddr - start)) as usize)
    };
    // d_tag -> d_val of the dynamic entries.
    let mut tags = Vec::new();
    if let Some((offset, size)) = dynamic {
        for i in 0..size as usize / 16 {
            let at = offset as usize + 16 * i;
            match read(image, at, 8) {
                Some(0) | None => break,
                Some(tag) => {
                    fields.push(Field { at, width: 8, family: Family::DynamicTag });
                    // DT_INIT, DT_FINI, DT_INIT_ARRAY, DT_FINI_ARRAY, their sizes, and the
                    // pre-initialiser array and its size.
                    if [12, 13, 25, 26, 27, 28, 32, 33].contains(&tag) {
                        fields.push(Field { at: at + 8, width: 8, family: Family::InitFini });
                    }
                    tags.extend(read(image, at + 8, 8).map(|value| (tag, value)));
                }
            }
        }
    }
    let value = |tag: u64| tags.iter().find(|(t, _)| *t == tag).map(|(_, v)| *v);
    // The array slots (DT_INIT_ARRAY/SZ, DT_FINI_ARRAY/SZ, DT_PREINIT_ARRAY/SZ), and the
    // relocations (DT_RELA, DT_RELASZ) that fill them.
    let slots: Vec<u64> = [(25, 27), (26, 28), (32, 33)]
        .iter()
        .filter_map(|&(array, size)| value(array).zip(value(size)))
        .flat_map(|(at, size)| (0..size.min(64 * 8) / 8).map(move |i| at + 8 * i))
        .collect();
    if let (Some(rela), Some(size)) = (value(7).and_then(file_offset), value(8)) {
        for i in 0..size.min(1 << 20) as usize / 24 {
            let at = rela + 24 * i;
            if read(image, at, 8).is_some_and(|offset| slots.contains(&offset)) {
                fields.push(Field { at: at + 16, width: 8, family: Family::InitFini });
            }
        }
    }
    // The dynamic symbols, found through the section headers (present in every linked image).
    for i in 0..shnum as usize {
        let at = shoff as usize + 64 * i;
        if read(image, at + 4, 4) != Some(11) {
            continue; // not SHT_DYNSYM
        }
        let (Some(offset), Some(size)) = (read(image, at + 24, 8), read(image, at + 32, 8)) else { continue };
        // Symbol 0 is the null symbol.
        for s in 1..size as usize / 24 {
            let sym = offset as usize + 24 * s;
            fields.push(Field { at: sym + 4, width: 1, family: Family::SymbolInfo });
            fields.push(Field { at: sym + 5, width: 1, family: Family::SymbolVisibility });
            fields.push(Field { at: sym + 6, width: 2, family: Family::SymbolSection });
        }
    }
    fields
}

/// Every value each field of [`fields`] is tried with: every combination of `PF_R`/`PF_W`/`PF_X`;
/// each tag with a bit flipped (bits 0, 1 and 4) and every other tag the section holds; every
/// symbol type with each binding (local, global, weak, GNU unique) and every visibility; undefined,
/// absolute, common and the neighbouring sections; initialiser and finaliser addresses and sizes
/// moved by 1 to 0x100 bytes either way, 0, a page away and all ones.
pub fn mutations(image: &[u8]) -> Vec<Mutation> {
    let all = fields(image);
    let tags: Vec<u64> =
        all.iter().filter(|f| f.family == Family::DynamicTag).filter_map(|f| read(image, f.at, 8)).collect();
    let mut out = Vec::new();
    for field in all {
        let Some(old) = read(image, field.at, field.width) else { continue };
        let values: Vec<u64> = match field.family {
            Family::SegmentFlags => (0..8).collect(),
            Family::DynamicTag => {
                [old ^ 1, old ^ 2, old ^ 0x10].into_iter().chain(tags.iter().copied()).collect()
            }
            Family::SymbolInfo => {
                (0..=10u64).flat_map(|kind| [0u64, 1, 2, 10].map(|binding| binding << 4 | kind)).collect()
            }
            Family::SymbolVisibility => (0..4).collect(),
            Family::SymbolSection => vec![0, 0xfff1, 0xfff2, old.wrapping_sub(1), old + 1],
            // Into the middle of the code it names (or of a table), just before it, and far off.
            Family::InitFini => [1u64, 4, 8, 0x10, 0x100]
                .iter()
                .flat_map(|&by| [old.wrapping_add(by), old.wrapping_sub(by)])
                .chain([0, old ^ 0x1000, u64::MAX])
                .collect(),
        };
        for value in values {
            if value != old {
                out.push(Mutation { field, value });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_an_elf_file_has_no_fields() {
        assert!(fields(b"").is_empty());
        assert!(fields(b"\x7fELF").is_empty());
        assert!(mutations(&[0u8; 64]).is_empty());
    }

    #[test]
    fn a_mutation_changes_exactly_its_field() {
        let image = vec![0u8; 32];
        let m = Mutation { field: Field { at: 4, width: 2, family: Family::SymbolSection }, value: 0x1_fff1 };
        let changed = m.apply(&image);
        assert_eq!(changed[4..6], [0xf1, 0xff]);
        assert_eq!(changed.iter().filter(|&&b| b != 0).count(), 2);
    }
}
