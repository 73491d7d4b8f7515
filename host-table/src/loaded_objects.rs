//! The objects loaded in this process, as the check of calls into host code sees them
//! ([`crate::host_calls`]): each object's segments, whether it is part of the host program (the
//! rule the strict device uses too: `omptarget_indirect_abi::host_calls::is_host_program_library`),
//! and the symbol at an address, read from the object's file.
//!
//! Objects are listed with `dl_iterate_phdr`, never `dladdr`: `dladdr` takes the loader's lock,
//! which a `dlopen` holds while it runs constructors, and the check runs inside kernels.

use std::ffi::{c_int, c_void, CStr};

use omptarget_indirect_abi::host_calls::is_host_program_library;
use omptarget_indirect_abi::host_calls::HOST_RANGES_MAX;
use omptarget_indirect_abi::is_device_image_path;

/// One loaded object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedObject {
    /// Its path (the executable's from `/proc/self/exe`).
    pub path: String,
    /// Its load bias.
    pub base: u64,
    /// Whether it is the main executable.
    pub main: bool,
    /// Its `PT_LOAD` segments, `[start, end)`.
    pub segments: Vec<(u64, u64)>,
}

impl LoadedObject {
    /// Whether it is part of the host program (device code must not reach it).
    pub fn is_host_program(&self) -> bool {
        self.main || is_host_program_library(&self.path)
    }

    /// Whether it is an x86_64 device image.
    pub fn is_device_image(&self) -> bool {
        is_device_image_path(&self.path)
    }

    /// `[start, end)` from its first segment's start to its last one's end.
    pub fn span(&self) -> Option<(u64, u64)> {
        let start = self.segments.iter().map(|s| s.0).min()?;
        let end = self.segments.iter().map(|s| s.1).max()?;
        Some((start, end))
    }

    /// Whether one of its segments holds `address`.
    pub fn holds(&self, address: u64) -> bool {
        self.segments.iter().any(|&(start, end)| start <= address && address < end)
    }
}

/// The loader's counts of objects added and removed so far: a change means the list changed.
pub fn generation() -> (u64, u64) {
    unsafe extern "C" fn first(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info, and `data` is the pair below.
        unsafe {
            *(data as *mut (u64, u64)) = ((*info).dlpi_adds, (*info).dlpi_subs);
        }
        1
    }
    let mut counts = (0u64, 0u64);
    // SAFETY: the callback writes only the pair it is given.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut counts as *mut (u64, u64)).cast()) };
    counts
}

/// Every loaded object, in the loader's order (the executable first).
pub fn loaded_objects() -> Vec<LoadedObject> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for a loaded object, whose program headers
        // are readable, and `data` is the vector below.
        unsafe {
            let (info, found) = (&*info, &mut *(data as *mut Vec<LoadedObject>));
            let name = if info.dlpi_name.is_null() {
                ""
            } else {
                CStr::from_ptr(info.dlpi_name).to_str().unwrap_or("")
            };
            let main = found.is_empty();
            let path = if main && name.is_empty() {
                std::fs::read_link("/proc/self/exe").map(|p| p.display().to_string()).unwrap_or_default()
            } else {
                name.to_string()
            };
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
            let base = info.dlpi_addr;
            let segments = headers
                .iter()
                .filter(|h| h.p_type == libc::PT_LOAD && h.p_memsz > 0)
                .map(|h| (base + h.p_vaddr, base + h.p_vaddr + h.p_memsz))
                .collect();
            found.push(LoadedObject { path, base, main, segments });
        }
        0
    }
    let mut found = Vec::new();
    // SAFETY: the callback reads only what dl_iterate_phdr hands it and writes the vector.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut found as *mut Vec<LoadedObject>).cast()) };
    found
}

/// The `[start, end)` ranges the x86_64 device may call without asking the host: the spans of
/// the objects that are not the host program (device images first, where the keys of objects
/// built in device code lie; then the runtimes they link), as a [`RangeList`](omptarget_indirect_abi::RangeList):
/// the count, then the pairs.
pub fn device_ranges(objects: &[LoadedObject]) -> Vec<u64> {
    let mut images: Vec<(u64, u64)> = Vec::new();
    let mut others: Vec<(u64, u64)> = Vec::new();
    for object in objects.iter().filter(|o| !o.is_host_program()) {
        let Some(span) = object.span() else { continue };
        if object.is_device_image() {
            images.push(span)
        } else {
            others.push(span)
        }
    }
    others.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in others {
        match merged.last_mut() {
            // Overlapping or touching spans read as one range (fewer pairs to scan): no gap lies
            // between them for the host program.
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let pairs: Vec<(u64, u64)> = images.into_iter().chain(merged).collect();
    let mut list = Vec::with_capacity(1 + 2 * pairs.len());
    list.push(pairs.len() as u64);
    for (start, end) in pairs {
        list.extend([start, end]);
    }
    list
}

/// The host program's objects as a GPU's check holds them ([`HostCalls::host`](omptarget_indirect_abi::HostCalls)):
/// each one's span, the executable first, then its libraries in the loader's order; unused pairs
/// `[0, 0)`. A program with more objects than pairs has the later ones unchecked: a span is never
/// widened over a gap, where a GPU's own memory may lie.
pub fn host_program_spans(objects: &[LoadedObject]) -> [[u64; 2]; HOST_RANGES_MAX] {
    let mut spans = [[0u64; 2]; HOST_RANGES_MAX];
    let host = objects.iter().filter(|o| o.is_host_program()).filter_map(LoadedObject::span);
    for (pair, (start, end)) in spans.iter_mut().zip(host) {
        *pair = [start, end];
    }
    spans
}

/// The symbol of the object at `address`: its name, its start and whether it is a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolAt {
    /// The symbol's name as the object spells it (mangled).
    pub name: String,
    /// `address` less the symbol's start.
    pub offset: u64,
    /// Whether it is a function (else a variable: a vtable, a Fortran type descriptor).
    pub function: bool,
}

/// What the file of `object` says of `address`, from one read of it: the symbol that covers
/// the address ([`symbol_in`]) and whether the object has offloading ([`has_offloading`]). None
/// when the file cannot be read or parsed.
pub fn file_facts(object: &LoadedObject, address: u64) -> Option<(Option<SymbolAt>, bool)> {
    let data = std::fs::read(&object.path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    Some((symbol_in(&file, object, address), has_offloading(&file)))
}

/// The symbol of `file` (loaded as `object`) that covers `address`, from its `.symtab` (the
/// dynamic symbols name only what is exported), else its dynamic symbols.
fn symbol_in(file: &object::File<'_>, object: &LoadedObject, address: u64) -> Option<SymbolAt> {
    use object::{Object as _, ObjectSymbol, SymbolKind};
    // Position-independent objects are relative to their bias; fixed-address executables not.
    let bias = if file.kind() == object::ObjectKind::Executable { 0 } else { object.base };
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.is_definition() && matches!(s.kind(), SymbolKind::Text | SymbolKind::Data))
        .filter_map(|s| {
            let start = bias + s.address();
            let end = start + s.size().max(1);
            (start <= address && address < end).then(|| SymbolAt {
                name: s.name().unwrap_or("").to_string(),
                offset: address - start,
                function: s.kind() == SymbolKind::Text,
            })
        })
        .find(|s| !s.name.is_empty())
}

/// Whether `file` was linked from files compiled with offloading: it holds offload entries
/// (`omp_offloading_entries` before LLVM 20, `llvm_offload_entries` since) or an embedded device
/// image (`.llvm.offloading`).
fn has_offloading(file: &object::File<'_>) -> bool {
    use object::{Object as _, ObjectSection};
    const SECTIONS: [&str; 3] = ["omp_offloading_entries", "llvm_offload_entries", ".llvm.offloading"];
    file.sections().any(|s| s.name().is_ok_and(|name| SECTIONS.contains(&name)))
}

/// `name` demangled: a C++ one (`_Z`) by the C++ runtime's `__cxa_demangle` when the process has
/// one, a Fortran one (`_Q`) as [`fortran_name`] reads it; otherwise `name` as it is.
pub fn demangled(name: &str) -> String {
    if let Some(readable) = fortran_name(name) {
        return readable;
    }
    type Demangle = unsafe extern "C" fn(
        *const libc::c_char,
        *mut libc::c_char,
        *mut usize,
        *mut c_int,
    ) -> *mut libc::c_char;
    if !name.starts_with("_Z") {
        return name.to_string();
    }
    let Ok(mangled) = std::ffi::CString::new(name) else { return name.to_string() };
    // SAFETY: dlsym with a NUL-terminated name.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__cxa_demangle".as_ptr()) };
    if found.is_null() {
        return name.to_string();
    }
    // SAFETY: the C++ runtime's `__cxa_demangle`, whose C signature is `Demangle` (Itanium ABI
    // 3.4); with null buffer and length it returns a malloc'd string or null.
    unsafe {
        let demangle = std::mem::transmute::<*mut c_void, Demangle>(found);
        let mut status: c_int = -1;
        let text = demangle(mangled.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), &mut status);
        if text.is_null() || status != 0 {
            return name.to_string();
        }
        let readable = CStr::from_ptr(text).to_string_lossy().into_owned();
        libc::free(text.cast());
        readable
    }
}

/// A flang procedure name read for people: `_QMshapesParea` is `area (module shapes)`,
/// `_QFsolvePstep` `step (internal to solve)`, `_QPscale` `scale`, `_QQmain` `the main program`.
/// flang writes each scope as an upper-case letter and the scope's name, in lower case.
pub fn fortran_name(name: &str) -> Option<String> {
    let rest = name.strip_prefix("_Q")?;
    if rest == "Qmain" {
        return Some("the main program".to_string());
    }
    let mut scopes: Vec<(u8, &str)> = Vec::new();
    let mut at = 0;
    let bytes = rest.as_bytes();
    while at < bytes.len() {
        let tag = bytes[at];
        if !tag.is_ascii_uppercase() {
            return None;
        }
        let end = bytes[at + 1..].iter().position(u8::is_ascii_uppercase).map_or(bytes.len(), |p| at + 1 + p);
        scopes.push((tag, &rest[at + 1..end]));
        at = end;
    }
    let procedure = scopes.iter().rev().find(|(tag, _)| *tag == b'P')?.1;
    let scope = |tag: u8| scopes.iter().find(|(t, n)| *t == tag && !n.is_empty()).map(|(_, n)| *n);
    Some(match (scope(b'M'), scope(b'F')) {
        (Some(module), _) => format!("{procedure} (module {module})"),
        (None, Some(host)) => format!("{procedure} (internal to {host})"),
        (None, None) => procedure.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_is_the_host_program_and_its_function_is_named() {
        let objects = loaded_objects();
        let main = &objects[0];
        assert!(main.main && main.is_host_program(), "{main:?}");
        let here = this_test_binary_is_the_host_program_and_its_function_is_named as usize as u64;
        assert!(main.holds(here));
        let (symbol, _) = file_facts(main, here).expect("the test binary's file");
        let symbol = symbol.expect("a symbol");
        assert!(symbol.function && symbol.offset == 0, "{symbol:?}");
        assert!(demangled(&symbol.name).contains("this_test_binary_is_the_host_program"), "{symbol:?}");
        // libc is a runtime: a device may reach it, and it is in the device's ranges.
        let libc_object = objects.iter().find(|o| o.holds(libc::malloc as usize as u64)).expect("libc");
        assert!(!libc_object.is_host_program());
        let list = device_ranges(&objects);
        let pairs: Vec<&[u64]> = list[1..].chunks(2).collect();
        assert_eq!(list[0] as usize, pairs.len());
        let malloc = libc::malloc as usize as u64;
        assert!(pairs.iter().any(|p| p[0] <= malloc && malloc < p[1]));
        assert!(!pairs.iter().any(|p| p[0] <= here && here < p[1]));
    }

    #[test]
    fn a_gpu_holds_at_most_eight_host_objects_and_never_widens_one() {
        let object = |path: &str, main: bool, start: u64| LoadedObject {
            path: path.to_string(),
            base: start,
            main,
            segments: vec![(start, start + 0x100), (start + 0x200, start + 0x300)],
        };
        let mut objects = vec![
            object("/home/u/app", true, 0x1000),
            object("/usr/lib/x86_64-linux-gnu/libc.so.6", false, 0x9000),
        ];
        objects.extend((0..9).map(|i| object(&format!("/home/u/lib{i}.so"), false, 0x10_0000 * (i + 1))));
        let spans = host_program_spans(&objects);
        assert_eq!(spans[0], [0x1000, 0x1300]);
        assert_eq!(spans[1], [0x10_0000, 0x10_0300]);
        assert_eq!(spans[7], [0x70_0000, 0x70_0300]);
        assert!(
            !spans.iter().any(|&[start, _]| start == 0x9000),
            "a system library is not the host program's"
        );
        assert_eq!(host_program_spans(&objects[1..2]), [[0, 0]; HOST_RANGES_MAX]);
    }

    #[test]
    fn cxx_names_are_demangled_when_the_runtime_can_and_others_stay() {
        assert_eq!(demangled("twice"), "twice");
        assert_eq!(demangled("_QMshapesPcircle_area"), "circle_area (module shapes)");
        assert_eq!(demangled("_QFsolvePstep"), "step (internal to solve)");
        assert_eq!(demangled("_QPscale"), "scale");
        assert_eq!(demangled("_QQmain"), "the main program");
        // Not a procedure: as it is.
        assert_eq!(demangled("_QMshapesEXdtXcircle"), "_QMshapesEXdtXcircle");
    }
}
