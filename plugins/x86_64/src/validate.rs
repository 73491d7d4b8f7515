//! Validation of a device image before the dynamic loader sees it. `dlopen` trusts the file: a
//! truncated image, or one whose program headers, dynamic section, symbol or hash tables or
//! relocations point outside what is loaded, crashes the process inside the loader (SIGBUS,
//! SIGSEGV, SIGFPE, or an assertion that exits). Everything the loader reads or writes while
//! loading is checked here against the image's own bytes and segments first, with `object`'s ELF
//! reader, and a bad image is refused with one line saying what is wrong.

use object::elf;
use object::read::elf::{Dyn as _, FileHeader as _, GnuHashTable, HashTable, ProgramHeader as _};
use object::{LittleEndian as LE, Pod};

use plugin_core::{PluginError, Result};

type Header = elf::FileHeader64<LE>;

/// `DT_RELR`, which object 0.36 does not name.
const DT_RELR: u32 = 36;

/// Relocation types the loader applies without running code of the image: none, 64-bit
/// absolute, GOT and PLT slots, relative, and the thread-local ones. (IRELATIVE would call a
/// resolver in the image while loading; device images have none.)
const RELOCATION_TYPES: [u32; 8] = [
    elf::R_X86_64_NONE,
    elf::R_X86_64_64,
    elf::R_X86_64_GLOB_DAT,
    elf::R_X86_64_JUMP_SLOT,
    elf::R_X86_64_RELATIVE,
    elf::R_X86_64_DTPMOD64,
    elf::R_X86_64_DTPOFF64,
    elf::R_X86_64_TPOFF64,
];

/// The most memory an image may ask the loader to map (its segments' span): far more than any
/// device image, small enough that a corrupted size is caught here rather than by mmap.
const MAX_SPAN: u64 = 1 << 32;

fn bad<T>(why: impl Into<String>) -> Result<T> {
    Err(PluginError::InvalidImage(why.into()))
}

/// One `PT_LOAD` segment: where it is in memory and which of its bytes come from the file.
#[derive(Debug, Clone, Copy)]
struct Segment {
    vaddr: u64,
    memsz: u64,
    offset: u64,
    filesz: u64,
    executable: bool,
    writable: bool,
}

/// The image's loadable address space.
struct Space<'a> {
    data: &'a [u8],
    segments: Vec<Segment>,
    /// `p_memsz` of the `PT_TLS` header: the thread-local block symbols of `STT_TLS` index.
    tls_size: Option<u64>,
    /// Each section that occupies memory (`SHF_ALLOC`), by index (None for one that does not);
    /// None when the file has no readable section headers.
    sections: Option<Vec<Option<Section>>>,
    /// Where the functions of the static symbol table (`.symtab`) start; None when the image is
    /// stripped of it.
    functions: Option<std::collections::BTreeSet<u64>>,
}

impl<'a> Space<'a> {
    /// The file bytes behind `[vaddr, vaddr + len)`, which must lie in one segment's file part.
    fn file_bytes(&self, vaddr: u64, len: u64, what: &str) -> Result<&'a [u8]> {
        let end = vaddr
            .checked_add(len)
            .ok_or_else(|| PluginError::InvalidImage(format!("{what}: size overflows")))?;
        for s in &self.segments {
            if vaddr >= s.vaddr && end <= s.vaddr + s.filesz {
                let start = (s.offset + (vaddr - s.vaddr)) as usize;
                return Ok(&self.data[start..start + len as usize]);
            }
        }
        bad(format!("{what} ({len} bytes at {vaddr:#x}) is not inside a loaded part of the image"))
    }

    /// Whether `vaddr` is in the file-backed part of an executable segment (zero-filled memory
    /// is no code) and, where the file has section headers, in a section of code: a segment's
    /// flags alone may claim other bytes (the ELF header, the hash table) are code.
    fn in_code(&self, vaddr: u64) -> bool {
        let in_code_section = self.sections.as_ref().is_none_or(|sections| {
            sections.iter().flatten().any(|s| s.executable && vaddr >= s.addr && vaddr - s.addr < s.size)
        });
        in_code_section && self.in_code_segment(vaddr)
    }

    /// Whether the loader may call `vaddr` as a function (`DT_INIT`, `DT_FINI`, an entry of an
    /// initialiser or finaliser array): in the image's code and, as far as its section headers
    /// and symbols tell, where a function starts. Linkers point `DT_INIT` / `DT_FINI` at the start
    /// of the `.init` / `.fini` section (or at the function `-init` / `-fini` names) and every
    /// array entry at a function; an address inside a function runs from the middle of its
    /// instructions, and the start of another section of code may be none (`.plt`'s first stub
    /// jumps to the lazy resolver, null when bound at load). `exported` are the starts of the
    /// dynamic symbol table's functions. An image stripped of `.symtab` names its local functions
    /// nowhere: an array entry there is checked against the code only.
    fn is_function_start(&self, vaddr: u64, exported: &[u64], call: Call) -> bool {
        if !self.in_code(vaddr) {
            return false;
        }
        let named = exported.contains(&vaddr) || self.functions.as_ref().is_some_and(|f| f.contains(&vaddr));
        let section = match call {
            Call::Init => Some(SectionRole::Init),
            Call::Fini => Some(SectionRole::Fini),
            Call::ArrayEntry => None,
        };
        let its_section = section.is_some_and(|role| {
            self.sections.as_ref().is_some_and(|sections| {
                sections.iter().flatten().any(|s| s.role == Some(role) && s.addr == vaddr)
            })
        });
        // What the image tells: its static symbols name every function; without them, its
        // section headers still say where `.init` and `.fini` start.
        let told = self.functions.is_some() || (section.is_some() && self.sections.is_some());
        !told || its_section || named
    }

    /// Whether `vaddr` is in the file-backed part of an executable segment.
    fn in_code_segment(&self, vaddr: u64) -> bool {
        self.segments.iter().any(|s| s.executable && vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz)
    }

    /// Whether `[vaddr, vaddr + len)` lies inside one writable segment's memory (RELRO included:
    /// the loader relocates before protecting it).
    fn in_writable(&self, vaddr: u64, len: u64) -> bool {
        vaddr.checked_add(len).is_some_and(|end| {
            self.segments.iter().any(|s| s.writable && vaddr >= s.vaddr && end <= s.vaddr + s.memsz)
        })
    }

    /// Whether `[vaddr, vaddr + len)` lies inside one segment's memory.
    fn in_memory(&self, vaddr: u64, len: u64) -> bool {
        vaddr
            .checked_add(len)
            .is_some_and(|end| self.segments.iter().any(|s| vaddr >= s.vaddr && end <= s.vaddr + s.memsz))
    }
}

/// How the loader calls an address of the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// `DT_INIT`.
    Init,
    /// `DT_FINI`.
    Fini,
    /// An entry of `DT_INIT_ARRAY`, `DT_FINI_ARRAY` or `DT_PREINIT_ARRAY`.
    ArrayEntry,
}

/// The sections `DT_INIT` and `DT_FINI` point at, known by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionRole {
    /// `.init`.
    Init,
    /// `.fini`.
    Fini,
}

/// A section that occupies memory: where, and whether it holds code.
#[derive(Debug, Clone, Copy)]
struct Section {
    addr: u64,
    size: u64,
    executable: bool,
    /// `sh_type`: `SHT_INIT_ARRAY` and its kin say where the loader's arrays are.
    kind: u32,
    /// `.init` or `.fini`, by name.
    role: Option<SectionRole>,
}

/// Reads `count` values of `T` from the start of `bytes`.
fn table<'a, T: Pod>(bytes: &'a [u8], count: usize, what: &str) -> Result<&'a [T]> {
    object::pod::slice_from_bytes::<T>(bytes, count)
        .map(|(t, _)| t)
        .map_err(|()| PluginError::InvalidImage(format!("{what} is truncated")))
}

/// What loading will make of a checked image: the address ranges (relative to its load base)
/// of its executable segments, where its functions are.
#[derive(Debug, Clone, Default)]
pub struct CheckedImage {
    /// `(start, end)` of each executable `PT_LOAD` segment's memory.
    pub code: Vec<(u64, u64)>,
    /// The symbols the image defines and exports, by name: what `dlsym` on its handle finds in
    /// the image itself, read from its dynamic symbol table so that finding a kernel or a global
    /// needs no lock of the dynamic loader (a thread loading a library with offload code holds
    /// it while libomptarget 16's registration of that library waits for the device being
    /// loaded here).
    pub symbols: std::collections::HashMap<Vec<u8>, DefinedSymbol>,
    /// `(start, end)` of the memory that stays writable: writable segments less `PT_GNU_RELRO`.
    pub writable: Vec<(u64, u64)>,
}

/// A symbol an image defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefinedSymbol {
    /// `st_value`: its address relative to the image's load base.
    pub value: u64,
    /// `ELF64_ST_TYPE(st_info)`.
    pub kind: u8,
    /// `st_size`.
    pub size: u64,
}

/// Accepts an x86_64 ELF shared object that the dynamic loader can load without reading or
/// writing outside it, or says what is wrong.
pub fn check_shared_object(data: &[u8]) -> Result<CheckedImage> {
    if data.len() < 4 || &data[..4] != b"\x7fELF" {
        return bad("not an ELF file");
    }
    if data.len() < 6 || data[4] != elf::ELFCLASS64 || data[5] != elf::ELFDATA2LSB {
        return bad("not a 64-bit little-endian ELF file");
    }
    let header = Header::parse(data).map_err(|e| PluginError::InvalidImage(format!("ELF header: {e}")))?;
    let e = LE;
    let machine = header.e_machine(e);
    if machine != elf::EM_X86_64 {
        return bad(format!("ELF machine {machine}, not x86_64 ({})", elf::EM_X86_64));
    }
    let kind = header.e_type(e);
    if kind != elf::ET_DYN {
        return bad(format!("ELF type {kind}, not a shared object ({})", elf::ET_DYN));
    }
    if usize::from(header.e_phentsize(e)) != std::mem::size_of::<elf::ProgramHeader64<LE>>() {
        return bad(format!("program header entries of {} bytes", header.e_phentsize(e)));
    }
    let phdrs = header
        .program_headers(e, data)
        .map_err(|e| PluginError::InvalidImage(format!("program headers: {e}")))?;
    let mut space = segments(data, phdrs)?;
    // The loader never reads section headers, but linkers write them consistently: a dynamic
    // symbol must lie in the section it names, and code the loader calls in a section of code
    // (see `check_dynamic`, `Space::in_code`).
    let names = header.sections(e, data).ok();
    space.sections = header.section_headers(e, data).ok().filter(|h| !h.is_empty()).map(|headers| {
        headers
            .iter()
            .map(|h| {
                let flags = h.sh_flags.get(e);
                let role = match names.as_ref().and_then(|n| n.section_name(e, h).ok()) {
                    Some(b".init") => Some(SectionRole::Init),
                    Some(b".fini") => Some(SectionRole::Fini),
                    _ => None,
                };
                (flags & u64::from(elf::SHF_ALLOC) != 0).then(|| Section {
                    addr: h.sh_addr.get(e),
                    size: h.sh_size.get(e),
                    executable: flags & u64::from(elf::SHF_EXECINSTR) != 0,
                    kind: h.sh_type.get(e),
                    role,
                })
            })
            .collect()
    });
    space.functions = header.sections(e, data).ok().and_then(|sections| {
        let table = sections.symbols(e, data, elf::SHT_SYMTAB).ok().filter(|t| !t.is_empty())?;
        Some(
            table
                .symbols()
                .iter()
                .filter(|s| s.st_info & 0xf == elf::STT_FUNC && s.st_shndx.get(e) != elf::SHN_UNDEF)
                .map(|s| s.st_value.get(e))
                .collect(),
        )
    });
    let code = phdrs
        .iter()
        .filter(|p| p.p_type(e) == elf::PT_LOAD && p.p_flags(e) & elf::PF_X != 0)
        .map(|p| (p.p_vaddr(e), p.p_vaddr(e) + p.p_memsz(e)))
        .collect();
    let relro: Vec<(u64, u64)> = phdrs
        .iter()
        .filter(|p| p.p_type(e) == elf::PT_GNU_RELRO)
        .map(|p| (p.p_vaddr(e), p.p_vaddr(e) + p.p_memsz(e)))
        .collect();
    let mut writable = Vec::new();
    for p in phdrs.iter().filter(|p| p.p_type(e) == elf::PT_LOAD && p.p_flags(e) & elf::PF_W != 0) {
        let (mut start, end) = (p.p_vaddr(e), p.p_vaddr(e) + p.p_memsz(e));
        // RELRO starts a writable segment (as linkers lay it out); what follows stays writable.
        for &(relro_start, relro_end) in &relro {
            if relro_start <= start && relro_end > start {
                start = relro_end.min(end);
            }
        }
        if start < end {
            writable.push((start, end));
        }
    }
    let dynamic: Vec<_> = phdrs.iter().filter(|p| p.p_type(e) == elf::PT_DYNAMIC).collect();
    let [dynamic] = dynamic[..] else {
        return bad(format!("{} dynamic segments, expected 1", dynamic.len()));
    };
    let bytes = space.file_bytes(dynamic.p_vaddr(e), dynamic.p_filesz(e), "the dynamic section")?;
    let count = bytes.len() / std::mem::size_of::<elf::Dyn64<LE>>();
    let entries: &[elf::Dyn64<LE>] = table(bytes, count, "the dynamic section")?;
    let end = entries
        .iter()
        .position(|d| d.d_tag(e) == u64::from(elf::DT_NULL))
        .ok_or_else(|| PluginError::InvalidImage("the dynamic section has no DT_NULL".into()))?;
    let symbols = check_dynamic(&space, &entries[..end])?;
    Ok(CheckedImage { code, symbols, writable })
}

/// The defined symbols of `symbols` that `dlsym` finds: global or weak, default or protected
/// visibility; the first of a name where versions repeat it.
fn exports<'a>(
    symbols: &[elf::Sym64<LE>],
    text: &impl Fn(u64) -> Option<&'a [u8]>,
) -> std::collections::HashMap<Vec<u8>, DefinedSymbol> {
    let e = LE;
    let mut found = std::collections::HashMap::new();
    for s in symbols.iter().filter(|s| {
        s.st_shndx.get(e) != elf::SHN_UNDEF
            && s.st_info >> 4 != elf::STB_LOCAL
            && matches!(s.st_other & 3, elf::STV_DEFAULT | elf::STV_PROTECTED)
    }) {
        if let Some(name) = text(u64::from(s.st_name.get(e))).filter(|n| !n.is_empty()) {
            found.entry(name.to_vec()).or_insert(DefinedSymbol {
                value: s.st_value.get(e),
                kind: s.st_info & 0xf,
                size: s.st_size.get(e),
            });
        }
    }
    found
}

/// The `PT_LOAD` segments, each inside the file, ordered, not overlapping, aligned as the loader
/// requires, and spanning at most [`MAX_SPAN`].
fn segments<'a>(data: &'a [u8], phdrs: &[elf::ProgramHeader64<LE>]) -> Result<Space<'a>> {
    let e = LE;
    let mut segments = Vec::new();
    for (i, p) in phdrs.iter().enumerate() {
        if p.p_type(e) != elf::PT_LOAD {
            continue;
        }
        let (vaddr, memsz, offset, filesz, align) =
            (p.p_vaddr(e), p.p_memsz(e), p.p_offset(e), p.p_filesz(e), p.p_align(e));
        if offset.checked_add(filesz).is_none_or(|end| end > data.len() as u64) {
            return bad(format!(
                "segment {i}: {filesz} bytes at file offset {offset:#x} lie past the end of the {}-byte file",
                data.len()
            ));
        }
        if filesz > memsz || vaddr.checked_add(memsz).is_none() {
            return bad(format!("segment {i}: {filesz} file bytes, {memsz} in memory at {vaddr:#x}"));
        }
        if align > 1 && (!align.is_power_of_two() || vaddr % align != offset % align) {
            return bad(format!(
                "segment {i}: alignment {align:#x} does not fit address {vaddr:#x} and offset {offset:#x}"
            ));
        }
        if let Some(last) = segments.last().copied() {
            let last: Segment = last;
            if vaddr < last.vaddr + last.memsz {
                return bad(format!("segment {i} at {vaddr:#x} overlaps or precedes the one before"));
            }
            // Linkers lay segments out in the file in the same order: a segment that maps file
            // bytes another one maps (its code made of the ELF header, say) is corrupt.
            if filesz > 0 && offset < last.offset + last.filesz {
                return bad(format!("segment {i} maps file bytes at {offset:#x} that the one before maps"));
            }
        }
        let flags = p.p_flags(e);
        // The loader reads the dynamic section, symbol, string, hash and relocation tables
        // through the mapping; the plugin reads globals. Linkers make every segment readable.
        if flags & elf::PF_R == 0 {
            return bad(format!("segment {i} at {vaddr:#x} is not readable (flags {flags:#x})"));
        }
        segments.push(Segment {
            vaddr,
            memsz,
            offset,
            filesz,
            executable: flags & elf::PF_X != 0,
            writable: flags & elf::PF_W != 0,
        });
    }
    let (Some(first), Some(last)) = (segments.first(), segments.last()) else {
        return bad("no loadable segment");
    };
    if last.vaddr + last.memsz - first.vaddr > MAX_SPAN {
        return bad(format!("the segments span {:#x} bytes", last.vaddr + last.memsz - first.vaddr));
    }
    let tls_size = phdrs.iter().find(|p| p.p_type(e) == elf::PT_TLS).map(|p| p.p_memsz(e));
    let space = Space { data, segments, tls_size, sections: None, functions: None };
    // The other headers the loader acts on (mprotect of RELRO, TLS initialisation, notes,
    // unwinding tables) must describe memory of the segments and bytes of the file.
    for (i, p) in phdrs.iter().enumerate() {
        let kind = p.p_type(e);
        if matches!(kind, elf::PT_LOAD | elf::PT_NULL | elf::PT_GNU_STACK) {
            continue;
        }
        let (vaddr, memsz, offset, filesz) = (p.p_vaddr(e), p.p_memsz(e), p.p_offset(e), p.p_filesz(e));
        let in_file = offset.checked_add(filesz).is_some_and(|end| end <= data.len() as u64);
        if !in_file || filesz > memsz || !space.in_memory(vaddr, memsz) {
            return bad(format!(
                "program header {i} (type {kind:#x}): {memsz} bytes at {vaddr:#x} are not inside one loaded segment"
            ));
        }
    }
    Ok(space)
}

/// Everything the dynamic section points the loader at: its tags ([`check_tags`]), the string
/// table, the symbols ([`check_symbols`]), the relocations ([`check_relocations`]), the arrays and
/// functions the loader calls ([`check_loader_calls`]) and the symbol versions.
fn check_dynamic(
    space: &Space<'_>,
    entries: &[elf::Dyn64<LE>],
) -> Result<std::collections::HashMap<Vec<u8>, DefinedSymbol>> {
    let e = LE;
    check_tags(entries)?;
    let value = |tag: u32| entries.iter().find(|d| d.d_tag(e) == u64::from(tag)).map(|d| d.d_val(e));
    let (Some(strtab), Some(strsz)) = (value(elf::DT_STRTAB), value(elf::DT_STRSZ)) else {
        return bad("no string table (DT_STRTAB, DT_STRSZ)");
    };
    let strings = space.file_bytes(strtab, strsz, "the string table")?;
    let text = |offset: u64| -> Option<&[u8]> {
        let tail = strings.get(offset as usize..).filter(|_| offset < strsz)?;
        Some(&tail[..tail.iter().position(|&b| b == 0)?])
    };
    let string = |offset: u64, what: &str| -> Result<()> {
        match text(offset) {
            Some(_) => Ok(()),
            None => bad(format!("{what}: string offset {offset:#x} is outside the string table")),
        }
    };
    for d in entries {
        let tag = d.d_tag(e);
        if [elf::DT_NEEDED, elf::DT_SONAME, elf::DT_RPATH, elf::DT_RUNPATH]
            .iter()
            .any(|&t| tag == u64::from(t))
        {
            string(d.d_val(e), "a library name or path")?;
        }
    }
    let symtab = value(elf::DT_SYMTAB).ok_or_else(|| PluginError::InvalidImage("no DT_SYMTAB".into()))?;
    let nsyms = symbol_count(space, &value)?;
    let sym_bytes =
        space.file_bytes(symtab, nsyms * std::mem::size_of::<elf::Sym64<LE>>() as u64, "the symbol table")?;
    let symbols: &[elf::Sym64<LE>] = table(sym_bytes, nsyms as usize, "the symbol table")?;
    check_symbols(space, symbols, &string)?;
    let relocations = check_relocations(space, &value, symbols)?;
    check_loader_calls(space, &value, symbols, &relocations)?;
    let needed: Vec<&[u8]> = entries
        .iter()
        .filter(|d| d.d_tag(e) == u64::from(elf::DT_NEEDED))
        .filter_map(|d| text(d.d_val(e)))
        .collect();
    let highest =
        check_versions(space, &value, &string, &|offset| text(offset).is_some_and(|f| needed.contains(&f)))?;
    if let Some(versym) = value(elf::DT_VERSYM) {
        // The loader's version table has `highest + 1` slots (none when no record gives one).
        let indices: &[object::U16<LE>] = table(
            space.file_bytes(versym, nsyms * 2, "the symbol version table")?,
            nsyms as usize,
            "the symbol version table",
        )?;
        if let Some(i) = indices.iter().position(|v| u64::from(v.get(e) & 0x7fff) > highest || highest == 0) {
            return bad(format!("symbol {i}'s version index is not one the version records give"));
        }
    }
    Ok(exports(symbols, &text))
}

/// The dynamic section's tags by themselves: each once, with the companions the loader reads
/// beside it, and none that glibc would act on dangerously (undeletable, other relocation kinds,
/// relocations of read-only segments).
fn check_tags(entries: &[elf::Dyn64<LE>]) -> Result<()> {
    let e = LE;
    // glibc keeps the last entry of a tag and checks nothing else: a second one would make this
    // check read another table, size or address than the loader uses.
    for (i, d) in entries.iter().enumerate() {
        let tag = d.d_tag(e);
        if tag != u64::from(elf::DT_NEEDED) && entries[..i].iter().any(|earlier| earlier.d_tag(e) == tag) {
            return bad(format!("dynamic tag {tag:#x} appears twice"));
        }
    }
    let value = |tag: u32| entries.iter().find(|d| d.d_tag(e) == u64::from(tag)).map(|d| d.d_val(e));
    // The loader reads a table's size (and entry size) wherever the table is given, without
    // checking that they are: each must come with it.
    for (table, companions) in [
        (elf::DT_RELA, &[elf::DT_RELASZ, elf::DT_RELAENT][..]),
        (elf::DT_PLTREL, &[elf::DT_JMPREL, elf::DT_PLTRELSZ][..]),
        (elf::DT_JMPREL, &[elf::DT_PLTRELSZ][..]),
        (elf::DT_INIT_ARRAY, &[elf::DT_INIT_ARRAYSZ][..]),
        (elf::DT_FINI_ARRAY, &[elf::DT_FINI_ARRAYSZ][..]),
        (elf::DT_PREINIT_ARRAY, &[elf::DT_PREINIT_ARRAYSZ][..]),
        (elf::DT_VERNEED, &[elf::DT_VERNEEDNUM, elf::DT_VERSYM][..]),
        (elf::DT_VERDEF, &[elf::DT_VERDEFNUM, elf::DT_VERSYM][..]),
    ] {
        if value(table).is_some() {
            if let Some(missing) = companions.iter().find(|&&c| value(c).is_none()) {
                return bad(format!("dynamic tag {table:#x} without tag {missing:#x}"));
            }
        }
    }
    if value(elf::DT_FLAGS_1).is_some_and(|f| f & u64::from(elf::DF_1_NODELETE) != 0) {
        return bad("DT_FLAGS_1 has DF_1_NODELETE: the image could never be unloaded");
    }
    // x86_64 has RELA relocations only: glibc asserts (and exits) on anything else.
    if value(elf::DT_PLTREL).is_some_and(|kind| kind != u64::from(elf::DT_RELA)) {
        return bad("DT_PLTREL does not say DT_RELA");
    }
    // DT_RELR (36): packed relative relocations, which this check does not read.
    if value(elf::DT_TEXTREL).is_some()
        || value(elf::DT_FLAGS).is_some_and(|f| f & u64::from(elf::DF_TEXTREL) != 0)
    {
        return bad("relocations in read-only segments (DT_TEXTREL)");
    }
    if value(elf::DT_REL).is_some() || value(DT_RELR).is_some() {
        return bad("DT_REL / DT_RELR relocations (x86_64 images use DT_RELA)");
    }
    if value(elf::DT_SYMENT).is_some_and(|n| n != std::mem::size_of::<elf::Sym64<LE>>() as u64) {
        return bad("symbol entries of an unexpected size");
    }
    Ok(())
}

/// Each dynamic symbol: its name in the string table; a defined one inside the section and the
/// segment it names (or the TLS block), of no kind the loader would run or keep forever.
fn check_symbols(
    space: &Space<'_>,
    symbols: &[elf::Sym64<LE>],
    string: &dyn Fn(u64, &str) -> Result<()>,
) -> Result<()> {
    let e = LE;
    for (i, s) in symbols.iter().enumerate() {
        string(u64::from(s.st_name.get(e)), &format!("symbol {i}"))?;
        let section = s.st_shndx.get(e);
        let (at, size) = (s.st_value.get(e), s.st_size.get(e));
        let kind = s.st_info & 0xf;
        if section == elf::SHN_UNDEF {
            // The loader resolves a local symbol (by binding, or hidden or internal visibility)
            // to the image's own base without looking it up: code calling an undefined local one
            // (`__gmon_start__`) would jump into the ELF header.
            if i > 0 && (s.st_info >> 4 == elf::STB_LOCAL || s.st_other & 3 != elf::STV_DEFAULT) {
                return bad(format!("symbol {i} is undefined and local (binding or visibility)"));
            }
            continue;
        }
        // A defined symbol at address 0 is the ELF header, and one outside the section it names
        // was not made by a linker: a relocation would hand code (say, the call of
        // `__cxa_finalize` when the image is unloaded) the address of something that is not it.
        if section != elf::SHN_ABS && kind != elf::STT_TLS {
            if at == 0 {
                return bad(format!("symbol {i} is defined at address 0 (the ELF header)"));
            }
            if section >= elf::SHN_LORESERVE {
                return bad(format!("symbol {i} names reserved section index {section:#x}"));
            }
            if let Some(sections) = &space.sections {
                let inside = sections.get(usize::from(section)).copied().flatten().is_some_and(|s| {
                    at >= s.addr
                        && at.checked_add(size).is_some_and(|end| end <= s.addr.saturating_add(s.size))
                });
                if !inside {
                    return bad(format!(
                        "symbol {i}: {size} bytes at {at:#x} are not inside its section {section}"
                    ));
                }
            }
        }
        if s.st_info >> 4 == elf::STB_GNU_UNIQUE {
            // The loader marks the object defining one undeletable: the image would stay loaded
            // (its memory and its name) after every unload, until the process exits.
            return bad(format!("symbol {i} has binding STB_GNU_UNIQUE: the image could never be unloaded"));
        }
        if kind == elf::STT_GNU_IFUNC {
            // Looking it up (dlsym, a relocation) would call whatever it points at.
            return bad(format!("symbol {i} is an indirect function (STT_GNU_IFUNC)"));
        }
        if kind == elf::STT_TLS {
            // An offset into the image's thread-local block, which must exist: the loader would
            // otherwise index a TLS module the image does not have.
            if space.tls_size.is_none_or(|tls| at.checked_add(size).is_none_or(|end| end > tls)) {
                return bad(format!(
                    "symbol {i}: thread-local {size} bytes at {at:#x} outside the TLS block"
                ));
            }
        } else if section != elf::SHN_ABS && !space.in_memory(at, size) {
            return bad(format!("symbol {i}: {size} bytes at {at:#x} are not inside a loaded segment"));
        }
    }
    Ok(())
}

/// The relocation tables: each entry of a type x86_64 images use, writing inside the writable
/// segments, naming a symbol of a kind that fits; `DT_RELACOUNT` true. Returns every entry as
/// (offset, info, addend).
fn check_relocations(
    space: &Space<'_>,
    value: &dyn Fn(u32) -> Option<u64>,
    symbols: &[elf::Sym64<LE>],
) -> Result<Vec<(u64, u64, i64)>> {
    let e = LE;
    let nsyms = symbols.len() as u64;
    let mut all_relocations = Vec::new();
    for (table_tag, size_tag, what) in [
        (elf::DT_RELA, elf::DT_RELASZ, "the relocations"),
        (elf::DT_JMPREL, elf::DT_PLTRELSZ, "the PLT relocations"),
    ] {
        let (Some(at), size) = (value(table_tag), value(size_tag).unwrap_or(0)) else { continue };
        if value(elf::DT_RELAENT).is_some_and(|n| n != 24) || size % 24 != 0 {
            return bad(format!("{what}: entries of an unexpected size"));
        }
        let bytes = space.file_bytes(at, size, what)?;
        let relocations: &[elf::Rela64<LE>] = table(bytes, (size / 24) as usize, what)?;
        all_relocations
            .extend(relocations.iter().map(|r| (r.r_offset.get(e), r.r_info.get(e), r.r_addend.get(e))));
        for (i, r) in relocations.iter().enumerate() {
            let (offset, symbol) = (r.r_offset.get(e), r.r_info.get(e) >> 32);
            let kind = r.r_info.get(e) as u32;
            if !RELOCATION_TYPES.contains(&kind) {
                return bad(format!("{what}: entry {i} has relocation type {kind}"));
            }
            if !space.in_writable(offset, 8) {
                return bad(format!(
                    "{what}: entry {i} writes at {offset:#x}, outside the writable segments"
                ));
            }
            if symbol >= nsyms {
                return bad(format!("{what}: entry {i} names symbol {symbol} of {nsyms}"));
            }
            // Types that take a symbol's address need one (against symbol 0 the loader uses the
            // image's base), of the right kind: thread-local ones for the TLS types.
            let target = &symbols[symbol as usize];
            // An absolute symbol is not moved with the image: code reaching it through this
            // relocation would jump or read outside the image.
            if symbol != 0 && target.st_shndx.get(e) == elf::SHN_ABS {
                return bad(format!("{what}: entry {i} names absolute symbol {symbol}"));
            }
            let tls = target.st_info & 0xf == elf::STT_TLS;
            let fits = match kind {
                elf::R_X86_64_64 | elf::R_X86_64_GLOB_DAT | elf::R_X86_64_JUMP_SLOT => symbol != 0 && !tls,
                elf::R_X86_64_RELATIVE => symbol == 0,
                elf::R_X86_64_DTPMOD64 | elf::R_X86_64_DTPOFF64 | elf::R_X86_64_TPOFF64 => symbol == 0 || tls,
                _ => true,
            };
            if !fits {
                return bad(format!("{what}: entry {i}, type {kind}, does not fit symbol {symbol}"));
            }
        }
    }
    // DT_RELACOUNT: the loader applies that many leading relocations as relative ones without
    // looking at their type (it asserts, and exits the process, when one is not).
    if let Some(count) = value(elf::DT_RELACOUNT) {
        let rela = value(elf::DT_RELASZ).unwrap_or(0) / 24;
        let leading =
            all_relocations.iter().take(rela as usize).take_while(|r| r.1 as u32 == elf::R_X86_64_RELATIVE);
        if count > rela || (leading.count() as u64) < count {
            return bad(format!("DT_RELACOUNT {count}: not that many leading relative relocations"));
        }
    }
    Ok(all_relocations)
}

/// What the loader calls: every slot of the initialiser, finaliser and pre-initialiser arrays made
/// by a relative relocation the start of a function of the image, each array its own section;
/// `DT_INIT` and `DT_FINI` the start of `.init` / `.fini` or of a function.
fn check_loader_calls(
    space: &Space<'_>,
    value: &dyn Fn(u32) -> Option<u64>,
    symbols: &[elf::Sym64<LE>],
    all_relocations: &[(u64, u64, i64)],
) -> Result<()> {
    let e = LE;
    let exported: Vec<u64> = symbols
        .iter()
        .filter(|s| s.st_info & 0xf == elf::STT_FUNC && s.st_shndx.get(e) != elf::SHN_UNDEF)
        .map(|s| s.st_value.get(e))
        .collect();
    let mut arrays: Vec<(u64, u64)> = Vec::new();
    for (table_tag, size_tag, section_type, what) in [
        (elf::DT_INIT_ARRAY, elf::DT_INIT_ARRAYSZ, elf::SHT_INIT_ARRAY, "the initialiser array"),
        (elf::DT_FINI_ARRAY, elf::DT_FINI_ARRAYSZ, elf::SHT_FINI_ARRAY, "the finaliser array"),
        (elf::DT_PREINIT_ARRAY, elf::DT_PREINIT_ARRAYSZ, elf::SHT_PREINIT_ARRAY, "the pre-initialiser array"),
    ] {
        if let Some(at) = value(table_tag) {
            let size = value(size_tag).unwrap_or(0);
            if size % 8 != 0 || !space.in_memory(at, size) {
                return bad(format!("{what} ({size} bytes at {at:#x}) is not inside a loaded segment"));
            }
            // Each array is its own section, as linkers write it: grown over the next array, an
            // initialiser array would run the finalisers at load.
            if let Some(sections) = &space.sections {
                if !sections
                    .iter()
                    .flatten()
                    .any(|s| s.kind == section_type && s.addr == at && s.size == size)
                {
                    return bad(format!(
                        "{what} ({size} bytes at {at:#x}) is not the image's section of that array"
                    ));
                }
            }
            if arrays.iter().any(|&(start, end)| at < end && start < at + size) {
                return bad(format!("{what} ({size} bytes at {at:#x}) overlaps another array of the loader"));
            }
            arrays.push((at, at + size));
            // The loader calls every slot: each must be made, by a relative relocation, the
            // address of code of the image.
            for slot in (at..at + size).step_by(8) {
                let target = all_relocations
                    .iter()
                    .filter(|&&(offset, _, _)| offset == slot)
                    .map(|&(_, info, addend)| {
                        (info as u32 == elf::R_X86_64_RELATIVE).then_some(addend as u64)
                    })
                    .collect::<Vec<_>>();
                match target[..] {
                    [Some(addend)] if space.is_function_start(addend, &exported, Call::ArrayEntry) => {}
                    [Some(addend)] if space.in_code(addend) => {
                        return bad(format!(
                            "{what}: the entry at {slot:#x} is {addend:#x}, inside the image's code but not where a function starts"
                        ))
                    }
                    _ => {
                        return bad(format!(
                            "{what}: the entry at {slot:#x} is not made the address of the image's code"
                        ))
                    }
                }
            }
        }
    }
    for (tag, what, call, section) in
        [(elf::DT_INIT, "DT_INIT", Call::Init, ".init"), (elf::DT_FINI, "DT_FINI", Call::Fini, ".fini")]
    {
        match value(tag) {
            Some(at) if !space.in_code(at) => return bad(format!("{what} at {at:#x} is not in the image's code")),
            Some(at) if !space.is_function_start(at, &exported, call) => {
                return bad(format!(
                    "{what} at {at:#x} is inside the image's code but neither the start of {section} nor a function"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The number of dynamic symbols, from the hash tables the loader will search (both checked
/// when both are present): every bucket and chain must stay inside its table and the symbols.
fn symbol_count(space: &Space<'_>, value: &dyn Fn(u32) -> Option<u64>) -> Result<u64> {
    let e = LE;
    let mut count = None;
    if let Some(at) = value(elf::DT_GNU_HASH) {
        let head = space.file_bytes(at, 16, "the GNU hash table")?;
        let word = |i: usize| u32::from_le_bytes(head[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        let (nbuckets, symbase, bloom) = (u64::from(word(0)), u64::from(word(1)), u64::from(word(2)));
        if nbuckets == 0 || bloom == 0 || !bloom.is_power_of_two() {
            return bad(format!("GNU hash table: {nbuckets} buckets, {bloom} bloom words"));
        }
        // The table's values run to the end of its segment's file part at most.
        let fixed = 16 + 8 * bloom + 4 * nbuckets;
        let available = space
            .segments
            .iter()
            .find(|s| at >= s.vaddr && at < s.vaddr + s.filesz)
            .map_or(0, |s| s.vaddr + s.filesz - at);
        if fixed > available {
            return bad("GNU hash table: truncated");
        }
        let bytes = space.file_bytes(at, available, "the GNU hash table")?;
        let hash = GnuHashTable::<Header>::parse(e, bytes)
            .map_err(|e| PluginError::InvalidImage(format!("GNU hash table: {e}")))?;
        let buckets: &[object::U32<LE>] =
            table(&bytes[(16 + 8 * bloom) as usize..], nbuckets as usize, "GNU hash buckets")?;
        let n = match hash.symbol_table_length(e) {
            Some(n) => u64::from(n),
            None if buckets.iter().all(|b| b.get(e) == 0) => symbase,
            None => return bad("GNU hash table: a chain runs past the table"),
        };
        if buckets.iter().map(|b| u64::from(b.get(e))).any(|b| b != 0 && (b < symbase || b >= n)) {
            return bad("GNU hash table: a bucket names no symbol of the table");
        }
        count = Some(n);
    }
    if let Some(at) = value(elf::DT_HASH) {
        let head = space.file_bytes(at, 8, "the hash table")?;
        let nbucket = u64::from(u32::from_le_bytes(head[..4].try_into().expect("4 bytes")));
        let nchain = u64::from(u32::from_le_bytes(head[4..].try_into().expect("4 bytes")));
        let bytes = space.file_bytes(at, 8 + 4 * (nbucket + nchain), "the hash table")?;
        let hash = HashTable::<Header>::parse(e, bytes)
            .map_err(|e| PluginError::InvalidImage(format!("hash table: {e}")))?;
        let words: &[object::U32<LE>] = table(&bytes[8..], (nbucket + nchain) as usize, "the hash table")?;
        if nbucket == 0 || words.iter().any(|w| u64::from(w.get(e)) >= nchain) {
            return bad("hash table: a bucket or chain names no symbol of the table");
        }
        let n = u64::from(hash.symbol_table_length());
        if count.is_some_and(|c| c > n) {
            return bad("the GNU hash table names more symbols than the hash table");
        }
        count = Some(count.unwrap_or(n));
    }
    count.ok_or_else(|| PluginError::InvalidImage("no hash table (DT_GNU_HASH or DT_HASH)".into()))
}

/// The most version records (or entries of one record) an image may chain.
const MAX_VERSION_RECORDS: usize = 1024;

/// `DT_VERNEED` and `DT_VERDEF`: the loader walks each chain of records, and of each record's
/// auxiliary entries, by offsets until one says 0 (whatever the counts say), finds each required
/// file among the loaded objects, and then indexes its version table by every `DT_VERSYM` entry
/// without a bound. Returns the highest version index the records define or require.
fn check_versions(
    space: &Space<'_>,
    value: &dyn Fn(u32) -> Option<u64>,
    string: &dyn Fn(u64, &str) -> Result<()>,
    is_needed: &dyn Fn(u64) -> bool,
) -> Result<u64> {
    let half = |b: &[u8], i: usize| u64::from(u16::from_le_bytes(b[i..i + 2].try_into().expect("2 bytes")));
    let word = |b: &[u8], i: usize| u64::from(u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes")));
    let offset = |at: u64, by: u64, what: &str| {
        at.checked_add(by).ok_or_else(|| PluginError::InvalidImage(format!("{what}: offset overflows")))
    };
    // Follows a chain of `size`-byte records from `at`, whose `next` offset is at `next_at`:
    // each record's address and bytes.
    let chain = |mut at: u64, size: u64, next_at: usize, what: &str| -> Result<Vec<(u64, &[u8])>> {
        let mut records = Vec::new();
        loop {
            if records.len() == MAX_VERSION_RECORDS {
                return bad(format!("more than {MAX_VERSION_RECORDS} {what}s"));
            }
            let record = space.file_bytes(at, size, what)?;
            records.push((at, record));
            match word(record, next_at) {
                0 => return Ok(records),
                step => at = offset(at, step, what)?,
            }
        }
    };
    let mut highest = 0;
    if let Some(at) = value(elf::DT_VERNEED) {
        for (need_at, need) in chain(at, 16, 12, "version requirement")? {
            if half(need, 0) != 1 {
                return bad("a version requirement of an unknown version");
            }
            string(word(need, 4), "a version requirement's file")?;
            // The loader follows what it finds for the file without a check: a file the image
            // does not depend on may be found nowhere.
            if !is_needed(word(need, 4)) {
                return bad("a version requirement names a file that is not a DT_NEEDED dependency");
            }
            let entries_at = offset(need_at, word(need, 8), "version requirement entry")?;
            for (_, entry) in chain(entries_at, 16, 12, "version requirement entry")? {
                string(word(entry, 8), "a version name")?;
                highest = highest.max(half(entry, 6) & 0x7fff);
            }
        }
    }
    if let Some(at) = value(elf::DT_VERDEF) {
        for (def_at, def) in chain(at, 20, 16, "version definition")? {
            highest = highest.max(half(def, 4) & 0x7fff);
            // The loader reads the first auxiliary entry's name.
            let name_at = offset(def_at, word(def, 12), "a version definition's name")?;
            let aux = space.file_bytes(name_at, 8, "a version definition's name")?;
            string(word(aux, 0), "a version definition's name")?;
        }
    }
    Ok(highest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(class: u8, e_type: u16, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = 1;
        h[6] = 1;
        h[16..18].copy_from_slice(&e_type.to_le_bytes());
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h
    }

    fn refusal(bytes: &[u8]) -> String {
        check_shared_object(bytes).unwrap_err().to_string()
    }

    #[test]
    fn refuses_what_is_not_an_x86_64_shared_object() {
        assert!(refusal(b"").contains("not an ELF file"));
        assert!(refusal(b"\x7fELF").contains("64-bit"));
        assert!(refusal(&header(1, elf::ET_DYN, elf::EM_X86_64)).contains("64-bit"));
        assert!(refusal(&header(2, elf::ET_DYN, 224)).contains("224"));
        assert!(refusal(&header(2, elf::ET_EXEC, elf::EM_X86_64)).contains("not a shared object"));
        // A header with no program headers at all.
        assert!(refusal(&header(2, elf::ET_DYN, elf::EM_X86_64)).contains("program header"));
    }
}
