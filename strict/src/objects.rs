//! Which loaded objects are "the host program" (made unreachable while device code runs), their
//! segments, and the names of their functions and variables.
//!
//! The host program is the main executable and every shared library it or the user loaded from
//! outside the system's library directories; not the system and runtime libraries (libc, libm,
//! libstdc++, libgcc_s, libomp, libomptarget, libffi, ld.so, this project's libraries), which
//! device code on a GPU has its own copies of or which the offload runtime itself runs on, and
//! not the device images.

use std::ffi::{c_int, c_void, CStr};

/// One `PT_LOAD` segment of a protected object, as mapped.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    /// First byte (page-aligned down).
    pub start: usize,
    /// One past the last byte (page-aligned up).
    pub end: usize,
    /// `PROT_*` it was mapped with, restored after each window.
    pub prot: c_int,
}

/// A named function or variable of a protected object.
#[derive(Debug, Clone)]
pub struct Symbol {
    /// Address in this process.
    pub start: usize,
    /// Size in bytes (at least 1).
    pub size: usize,
    /// Its name.
    pub name: String,
    /// Whether it is a function.
    pub function: bool,
}

/// One protected object.
#[derive(Debug, Clone)]
pub struct Object {
    /// Its path (`/proc/self/exe` is resolved to the executable's).
    pub path: String,
    /// Its segments.
    pub segments: Vec<Segment>,
    /// Its symbols, sorted by address.
    pub symbols: Vec<Symbol>,
}

/// The first words of every line strict mode prints.
pub const PREFIX: &str = "omptarget-indirect strict: ";

/// Whether the object at `path` is part of the host program: the main executable, and the
/// libraries the project's rule takes for the program's (the device library's check of calls
/// into host code uses the same rule), less the objects known to be device images.
pub fn is_host_program(path: &str, is_main: bool, device_images: &[usize], base: usize) -> bool {
    is_main || (!device_images.contains(&base) && is_host_program_library(path))
}

use omptarget_indirect_abi::host_calls::is_host_program_library;
pub use omptarget_indirect_abi::is_device_image_path;

/// The loaded objects of the host program, with their segments and symbols. `device_images`:
/// load bases of objects known to be device images.
pub fn host_program(device_images: &[usize]) -> Vec<Object> {
    struct Found {
        objects: Vec<(String, bool, usize, Vec<Segment>)>,
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our `Found`.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: a non-null dlpi_name is a NUL-terminated string of the loader's.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
        };
        let page = page_size();
        let mut segments = Vec::new();
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
            let phdr = unsafe { &*info.dlpi_phdr.add(i) };
            if phdr.p_type != libc::PT_LOAD || phdr.p_memsz == 0 {
                continue;
            }
            let start = info.dlpi_addr as usize + phdr.p_vaddr as usize;
            let end = start + phdr.p_memsz as usize;
            let mut prot = 0;
            for (flag, p) in
                [(libc::PF_R, libc::PROT_READ), (libc::PF_W, libc::PROT_WRITE), (libc::PF_X, libc::PROT_EXEC)]
            {
                if phdr.p_flags & flag != 0 {
                    prot |= p;
                }
            }
            segments.push(Segment { start: start & !(page - 1), end: (end + page - 1) & !(page - 1), prot });
        }
        let is_main = found.objects.is_empty();
        found.objects.push((name, is_main, info.dlpi_addr as usize, segments));
        0
    }
    let mut found = Found { objects: Vec::new() };
    // SAFETY: `each` matches the callback type and only reads what the loader hands it.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut found as *mut Found as *mut c_void) };
    // This library, whatever its file is called: its fault handler runs while the window is
    // open, so its own code must never be closed off (its name matches `libomptarget` only as
    // long as nobody renames it). The executable is the host program even where it holds this
    // code itself (this crate's tests).
    let here = host_program as usize;
    let mut objects = Vec::new();
    for (name, is_main, base, mut segments) in found.objects {
        if !is_host_program(&name, is_main, device_images, base)
            || (!is_main && segments.iter().any(|s| here >= s.start && here < s.end))
        {
            continue;
        }
        let path = if is_main {
            std::fs::read_link("/proc/self/exe").map(|p| p.display().to_string()).unwrap_or(name)
        } else {
            name
        };
        // RELRO: the loader made part of a writable segment read-only after relocating; restore
        // what each page really had (from /proc/self/maps) rather than what the header says.
        refine_protections(&mut segments);
        let symbols = symbols_of(&path, base, &segments);
        objects.push(Object { path, segments, symbols });
    }
    objects
}

/// The code of the dynamic loader (`ld-linux*`): its accesses to the host program's symbol
/// tables (a lazy binding of a library's function, first called by device code) are let through.
pub fn loader_code() -> Vec<(usize, usize)> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our vector.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Vec<(usize, usize)>)) };
        // SAFETY: a non-null dlpi_name is a NUL-terminated string of the loader's.
        let name = (!info.dlpi_name.is_null()).then(|| unsafe { CStr::from_ptr(info.dlpi_name) });
        if !name.is_some_and(|n| n.to_string_lossy().contains("ld-linux")) {
            return 0;
        }
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
            let phdr = unsafe { &*info.dlpi_phdr.add(i) };
            if phdr.p_type == libc::PT_LOAD && phdr.p_flags & libc::PF_X != 0 {
                let start = info.dlpi_addr as usize + phdr.p_vaddr as usize;
                found.push((start, start + phdr.p_memsz as usize));
            }
        }
        0
    }
    let mut found: Vec<(usize, usize)> = Vec::new();
    // SAFETY: `each` only reads what the loader hands it.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut found as *mut Vec<(usize, usize)> as *mut c_void) };
    found
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

/// Splits segments at the protections `/proc/self/maps` shows (RELRO pages are read-only).
fn refine_protections(segments: &mut Vec<Segment>) {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
    *segments = refined(segments, &maps);
}

/// `segments` split where the mappings of `maps` (`/proc/self/maps`' text) begin and end, each
/// part with its segment's protection, less `PROT_WRITE` where the mapping is readable but not
/// writable: making RELRO read-only is the one change the loader makes to a segment's protection.
/// A mapping with no access at all is this library's own protection still in place (a page closed
/// again for the loader just as a window closed, not yet found by a host access): a snapshot that
/// took it for the page's own made every window "restore" it, and the page stayed closed for good
/// (the loader and libomptarget then faulted on the executable's RELRO without end).
fn refined(segments: &[Segment], maps: &str) -> Vec<Segment> {
    let mut refined = Vec::new();
    for s in segments {
        let mut covered = Vec::new();
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
            let Some((a, b)) = range.split_once('-') else { continue };
            let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else {
                continue;
            };
            let (start, end) = (a.max(s.start), b.min(s.end));
            if start >= end {
                continue;
            }
            let shown = |i: usize| perms.as_bytes().get(i).is_some_and(|&c| c != b'-');
            let closed = !(shown(0) || shown(1) || shown(2));
            let prot = if shown(1) || closed { s.prot } else { s.prot & !libc::PROT_WRITE };
            covered.push(Segment { start, end, prot });
        }
        if covered.is_empty() {
            refined.push(*s);
        } else {
            refined.extend(covered);
        }
    }
    refined
}

/// The functions and variables of the object at `path` loaded at `base`: its `.symtab` (the
/// dynamic symbols name only what is exported), else its dynamic symbols.
fn symbols_of(path: &str, base: usize, segments: &[Segment]) -> Vec<Symbol> {
    use object::{Object as _, ObjectSymbol, SymbolKind};
    let Ok(data) = std::fs::read(path) else { return Vec::new() };
    let Ok(file) = object::File::parse(&*data) else { return Vec::new() };
    // Position-independent executables and libraries are relative to `base`; fixed-address
    // executables are not.
    let bias = if file.kind() == object::ObjectKind::Executable { 0 } else { base };
    let mut symbols: Vec<Symbol> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.is_definition() && matches!(s.kind(), SymbolKind::Text | SymbolKind::Data))
        .filter_map(|s| {
            let name = s.name().ok()?.to_string();
            let start = bias + s.address() as usize;
            let in_object = segments.iter().any(|g| start >= g.start && start < g.end);
            in_object.then(|| Symbol {
                start,
                size: (s.size() as usize).max(1),
                name,
                function: s.kind() == SymbolKind::Text,
            })
        })
        .collect();
    symbols.sort_by_key(|s| (s.start, std::cmp::Reverse(s.size)));
    symbols.dedup_by_key(|s| s.start);
    symbols
}

/// The symbol of `objects` that covers `addr`, with the object's path.
pub fn symbol_at(objects: &[Object], addr: usize) -> Option<(&Symbol, &str)> {
    objects.iter().find_map(|o| {
        let i = o.symbols.partition_point(|s| s.start <= addr).checked_sub(1)?;
        let s = &o.symbols[i];
        (addr < s.start + s.size).then_some((s, o.path.as_str()))
    })
}

/// The protected object whose segments hold `addr`.
pub fn object_at(objects: &[Object], addr: usize) -> Option<&Object> {
    objects.iter().find(|o| o.segments.iter().any(|s| addr >= s.start && addr < s.end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relro_is_read_only_and_a_page_closed_at_snapshot_time_keeps_its_segments_protection() {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let segment = Segment { start: 0x1000, end: 0x4000, prot: rw };
        // RELRO, a page this library left closed (its segment's protection back), the rest
        // writable.
        let maps = "1000-2000 r--p 00000000 fe:00 1 /x\n2000-3000 ---p 00001000 fe:00 1 /x\n3000-4000 rw-p 00002000 fe:00 1 /x\n";
        let parts: Vec<(usize, usize, libc::c_int)> =
            refined(&[segment], maps).iter().map(|s| (s.start, s.end, s.prot)).collect();
        assert_eq!(parts, [(0x1000, 0x2000, libc::PROT_READ), (0x2000, 0x3000, rw), (0x3000, 0x4000, rw)]);
        // Code stays executable whatever the page shows now.
        let code = Segment { start: 0x5000, end: 0x6000, prot: libc::PROT_READ | libc::PROT_EXEC };
        let closed = refined(&[code], "5000-6000 ---p 00000000 fe:00 1 /x\n");
        assert_eq!(closed[0].prot, libc::PROT_READ | libc::PROT_EXEC);
    }

    #[test]
    fn the_host_program_is_the_executable_and_the_users_libraries() {
        assert!(is_host_program("", true, &[], 0));
        assert!(is_host_program("/home/me/app/libsolver.so", false, &[], 1));
        assert!(!is_host_program("/lib/x86_64-linux-gnu/libc.so.6", false, &[], 1));
        assert!(!is_host_program("/usr/lib/llvm-22/lib/libomptarget.so.22.1", false, &[], 1));
        assert!(!is_host_program("/work/target/tools/llvm16/lib/libomptarget.so.16", false, &[], 1));
        assert!(!is_host_program("/work/target/dist/lib/libomptarget.rtl.x86_64.so", false, &[], 1));
        assert!(!is_host_program("/work/target/tools/llvm16/lib/libomp.so.5", false, &[], 1));
        assert!(!is_host_program("/proc/self/fd/7", false, &[], 1));
        assert!(!is_host_program("/tmp/tmpfile_jhjTrN", false, &[], 1));
        assert!(!is_host_program("/tmp/tmpfile-6d9338.tmp", false, &[], 1));
        assert!(!is_host_program("/home/me/app/libsolver.so", false, &[1], 1), "a known device image");
        assert!(!is_host_program("linux-vdso.so.1", false, &[], 1));
    }

    #[test]
    fn this_test_binary_is_found_with_its_symbols() {
        let objects = host_program(&[]);
        let main = &objects[0];
        assert!(!main.segments.is_empty());
        let here = this_test_binary_is_found_with_its_symbols as usize;
        let (symbol, path) = symbol_at(&objects, here).expect("this function is named");
        assert!(symbol.function && symbol.name.contains("this_test_binary_is_found"), "{symbol:?}");
        assert_eq!(path, main.path);
        assert!(object_at(&objects, here).is_some());
        assert!(object_at(&objects, libc::malloc as usize).is_none(), "libc is not protected");
    }
}
