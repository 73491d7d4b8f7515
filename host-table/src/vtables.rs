//! The vtables of the function-pointer map: every word of every vtable a device image defines,
//! paired with the same word of the host's vtable of the same name, so that the vtable pointer a
//! host-built object carries to the device translates like a function address (the pass plugin
//! translates each vtable pointer load in device code).
//!
//! The device side names its words: the pass plugin defines, per word, a global
//! `omptarget_indirect_abi::VTABLE_WORD_PREFIX<k>_<vtable>` holding the word's device address.
//! The host side is found by name among the loaded objects of the process, device images left
//! out: in the records the pass plugin's host compiles leave in each object
//! ([`omptarget_indirect_abi::HOST_VTABLES_SECTION`]: stripped executables, hidden visibility),
//! and among their symbols (the executable's and each library's `.symtab`, else their dynamic
//! symbols: objects compiled without the pass plugin). What neither can see: vtables of classes
//! with internal linkage (the pass exports none).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_int, c_void, CStr};

use omptarget_indirect_abi::{host_vtables, vtable_word, HOST_VTABLES_SECTION};

/// Environment variable that, set to `0` or `off`, leaves the images' vtables out of the map (the
/// plugins) and out of the registered entries (`libomptarget-indirect-register.so`): virtual calls
/// on host-built objects then read the host's vtables, as without this project. A diagnostic
/// switch, and the end-to-end tests' negative control of the vtable part alone.
pub const VTABLES_ENV: &str = "OMPTARGET_INDIRECT_VTABLES";

/// Whether [`VTABLES_ENV`] leaves vtables paired (anything but `0` or `off`; on when unset).
pub fn enabled() -> bool {
    crate::switches::switch_from_env(VTABLES_ENV)
}

/// One word global of a device image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceWord {
    /// The global's symbol (what the backend looks up).
    pub symbol: String,
    /// The word's index in its vtable (byte offset `8 * index`).
    pub index: u64,
    /// The vtable's symbol.
    pub vtable: String,
}

/// The symbols `image` (an ELF file) defines, from its symbol table and dynamic symbols; none
/// when it is no ELF file or has none.
pub fn defined_symbols(image: &[u8]) -> BTreeSet<String> {
    use object::{Object as _, ObjectSymbol};
    let Ok(file) = object::File::parse(image) else { return BTreeSet::new() };
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect()
}

/// The vtable-word globals among `defined` (an image's [`defined_symbols`]).
pub fn device_words(defined: &BTreeSet<String>) -> Vec<DeviceWord> {
    defined
        .iter()
        .filter_map(|symbol| {
            let (index, vtable) = vtable_word(symbol)?;
            Some(DeviceWord { symbol: symbol.to_string(), index, vtable: vtable.to_string() })
        })
        .collect()
}

/// Every definition `(address, size)` of each of `vtables` among the loaded objects of this
/// process except device images. A vtable may have several (a class with inline virtual
/// functions has a copy in each object that uses it): each is a key of the map.
pub fn host_definitions(vtables: &BTreeSet<&str>) -> BTreeMap<String, Vec<(u64, u64)>> {
    use object::{Object as _, ObjectSection as _, ObjectSymbol, SymbolKind};
    let mut found: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    if vtables.is_empty() {
        return found;
    }
    let mut add = |name: &str, definition: (u64, u64)| {
        let all = found.entry(name.to_string()).or_default();
        if !all.contains(&definition) {
            all.push(definition);
        }
    };
    for object in loaded_objects() {
        // Mapped, not read: of a large library (libLLVM, 140 MB) only the headers and the symbol
        // tables are touched.
        let Some(data) = MappedFile::open(&object.path) else { continue };
        let Ok(file) = object::File::parse(data.bytes()) else { continue };
        // The loader's base is the bias of a position-independent object and 0 for a
        // fixed-address executable.
        let base = object.base;
        if let Some(section) = file.section_by_name(HOST_VTABLES_SECTION) {
            let start = base.wrapping_add(section.address());
            // Read where the loader put it (the addresses relocated), if it lies in one of the
            // object's loaded segments: a file replaced on disk since it was loaded is not trusted.
            if let Some(records) = object.loaded_bytes(start, section.size()) {
                for vtable in host_vtables(records).filter(|v| vtables.contains(v.name)) {
                    add(vtable.name, (vtable.address, vtable.size));
                }
            }
        }
        for symbol in file.symbols().chain(file.dynamic_symbols()) {
            let Ok(name) = symbol.name() else { continue };
            if !symbol.is_definition() || symbol.kind() != SymbolKind::Data || !vtables.contains(name) {
                continue;
            }
            add(name, (base.wrapping_add(symbol.address()), symbol.size()));
        }
    }
    found
}

/// A file mapped read-only, unmapped when dropped.
struct MappedFile {
    start: *mut c_void,
    len: usize,
}

impl MappedFile {
    /// Maps the regular file at `path`; None if it cannot be opened, is empty or cannot be
    /// mapped.
    fn open(path: &str) -> Option<MappedFile> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path).ok()?;
        let len = usize::try_from(file.metadata().ok().filter(|m| m.is_file())?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a private read-only mapping of an open file's first `len` bytes; the mapping
        // stays valid after the descriptor is closed.
        let start = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0)
        };
        (start != libc::MAP_FAILED).then_some(MappedFile { start, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` readable bytes at `start`, mapped until `self` is dropped. (A loaded
        // object's file is not truncated while the program runs: its code is mapped from it.)
        unsafe { std::slice::from_raw_parts(self.start.cast::<u8>(), self.len) }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once.
        unsafe { libc::munmap(self.start, self.len) };
    }
}

/// A loaded object of the process: its file, load base and loaded segments.
struct LoadedObject {
    /// Its file (`/proc/self/exe` for the executable).
    path: String,
    /// The loader's bias.
    base: u64,
    /// `[start, end)` in memory of each readable `PT_LOAD` segment, mapped while the object is
    /// loaded.
    segments: Vec<(u64, u64)>,
}

impl LoadedObject {
    /// The `len` bytes at `start` in memory, if they lie within one of the object's loaded
    /// segments; None otherwise.
    fn loaded_bytes(&self, start: u64, len: u64) -> Option<&[u8]> {
        let end = start.checked_add(len)?;
        self.segments.iter().find(|&&(from, to)| from <= start && end <= to)?;
        // SAFETY: within a readable PT_LOAD segment the loader mapped, which stays mapped while the
        // object is loaded; the plugins call this while loading an image, when no object is being
        // unloaded.
        Some(unsafe { std::slice::from_raw_parts(start as usize as *const u8, usize::try_from(len).ok()?) })
    }
}

/// The host program's loaded objects as one snapshot (device images left out): which object an
/// address lies in, and the words their loaded segments hold.
pub struct HostObjects {
    /// `(start, end, object)` of every readable loaded segment, sorted by start; `object` is the
    /// object's position in [`loaded_objects`]'s order (the executable is 0).
    segments: Vec<(u64, u64, usize)>,
}

impl HostObjects {
    /// The objects loaded now.
    pub fn now() -> HostObjects {
        let mut segments: Vec<(u64, u64, usize)> = loaded_objects()
            .iter()
            .enumerate()
            .flat_map(|(object, o)| o.segments.iter().map(move |&(from, to)| (from, to, object)))
            .collect();
        segments.sort_unstable();
        HostObjects { segments }
    }

    /// The object (its position among the loaded objects) whose loaded segments hold `address`.
    pub fn object_of(&self, address: u64) -> Option<usize> {
        let at = self.segments.partition_point(|&(from, _, _)| from <= address).checked_sub(1)?;
        let (_, to, object) = self.segments[at];
        (address < to).then_some(object)
    }

    /// The 8-byte word at `address`, if all of it lies in one loaded segment.
    pub fn word(&self, address: u64) -> Option<u64> {
        let at = self.segments.partition_point(|&(from, _, _)| from <= address).checked_sub(1)?;
        let (_, to, _) = self.segments[at];
        if address.checked_add(8)? > to || address % 8 != 0 {
            return None;
        }
        // SAFETY: eight aligned bytes within a readable PT_LOAD segment the loader mapped, which
        // stays mapped while the object is loaded (no object is unloaded while a table is built).
        Some(unsafe { std::ptr::read_volatile(address as usize as *const u64) })
    }
}

/// Every loaded object of the process but the vDSO and device images; the executable as
/// `/proc/self/exe`.
fn loaded_objects() -> Vec<LoadedObject> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and the vector given below.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Vec<LoadedObject>)) };
        // SAFETY: a non-null dlpi_name is a NUL-terminated string of the loader's.
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: as said above: non-null, and the loader's NUL-terminated string.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
        };
        let path = if found.is_empty() { "/proc/self/exe".to_string() } else { name };
        if !path.is_empty()
            && !path.starts_with("linux-vdso")
            && !omptarget_indirect_abi::is_device_image_path(&path)
        {
            let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
                &[]
            } else {
                // SAFETY: the loader's program headers of this object, `dlpi_phnum` of them.
                unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
            };
            let base = info.dlpi_addr;
            let segments = headers
                .iter()
                .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_R != 0)
                .map(|h| (base.wrapping_add(h.p_vaddr), base.wrapping_add(h.p_vaddr).wrapping_add(h.p_memsz)))
                .collect();
            found.push(LoadedObject { path, base, segments });
        }
        0
    }
    let mut found: Vec<LoadedObject> = Vec::new();
    // SAFETY: `each` matches the callback type and only reads what the loader hands it; the first
    // object it is given is the executable.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut found as *mut Vec<LoadedObject> as *mut c_void) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_loaded_from_memory_files_are_device_images() {
        assert!(omptarget_indirect_abi::is_device_image_path("/proc/self/fd/7"));
        assert!(omptarget_indirect_abi::is_device_image_path("/memfd:omptarget-image (deleted)"));
        assert!(!omptarget_indirect_abi::is_device_image_path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"));
        assert!(!loaded_objects().iter().any(|o| omptarget_indirect_abi::is_device_image_path(&o.path)));
        assert_eq!(loaded_objects().first().map(|o| o.path.as_str()), Some("/proc/self/exe"));
    }

    #[test]
    fn host_objects_say_where_an_address_is_and_read_only_loaded_words() {
        static WORD: u64 = 0x1234_5678_9abc_def0;
        let objects = HostObjects::now();
        let address = &WORD as *const u64 as u64;
        assert_eq!(objects.object_of(address), Some(0), "a static of the test executable");
        assert_eq!(objects.word(address), Some(WORD));
        assert_eq!(objects.word(address + 1), None, "unaligned");
        assert_eq!(objects.object_of(0), None);
        assert_eq!(objects.word(8), None);
        let libc_function = libc::getpid as usize as u64;
        assert!(objects.object_of(libc_function).is_some_and(|o| o != 0), "libc is another object");
        let heap = Box::new(7u64);
        assert_eq!(objects.object_of(&*heap as *const u64 as u64), None, "the heap is no object");
    }

    #[test]
    fn only_bytes_within_loaded_segments_are_read() {
        let executable = loaded_objects().remove(0);
        let &(start, end) = executable.segments.first().expect("the executable has a loaded segment");
        assert!(executable.loaded_bytes(start, end - start).is_some());
        assert!(executable.loaded_bytes(start, end - start + 1).is_none());
        assert!(executable.loaded_bytes(u64::MAX - 4, 8).is_none());
        assert!(executable.loaded_bytes(start.wrapping_sub(1), 2).is_none());
    }
}
