//! The registration: `__tgt_register_lib` and `__tgt_unregister_lib`, defined ahead of
//! libomptarget's (the crate documentation). Each descriptor the program registers is registered
//! as a copy whose entries are followed by one indirect entry per vtable word its images define
//! and, where every image defines the device library's globals, one entry per global
//! ([`extend`]); what was registered is kept ([`REGISTERED`]: [`crate::registered`]) for the
//! device tables and the x86_64 table to read.

use std::ffi::{c_void, CString};

pub use host_table::rtl_interface::TgtBinDesc;
use host_table::rtl_interface::V1_ENTRY_SIZE;
use host_table::rtl_interface::{
    TgtDeviceImage, TgtOffloadEntry, TgtOffloadEntryV1 as EntryV1, FPTR_INDEX, FPTR_MAP_P, FPTR_MAP_SIZE,
    OFFLOAD_KIND_OPENMP, OMP_DECLARE_TARGET_INDIRECT, OMP_DECLARE_TARGET_INDIRECT_VTABLE,
};
use host_table::{diagnostics, image, vtables};
use omptarget_indirect_abi::HOST_CALLS;

use crate::registered::{indirect_keys, Registered, Replacement, Shadows, REGISTERED};
use crate::{device_table, host_calls, next, x86_64_table, NAME};

/// `void __tgt_register_lib(__tgt_bin_desc *desc)`: registers `desc` with libomptarget, its
/// images' entries extended by their vtable words (see the crate documentation). Without a
/// libomptarget behind this library, says so on stderr and registers nothing.
///
/// # Safety
/// `desc` must be what clang's registration code passes: a valid descriptor whose images and
/// entries stay alive until `__tgt_unregister_lib(desc)`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_register_lib(desc: *mut TgtBinDesc) {
    let Some(register) = next(c"__tgt_register_lib") else {
        eprintln!(
            "omptarget-indirect ({NAME}) error: no __tgt_register_lib after this library: link libomptarget"
        );
        return;
    };
    let with_words = vtables::enabled();
    if !with_words {
        eprintln!(
            "omptarget-indirect ({NAME}) notice: {}=0: the images' vtables are not registered (host-built objects \
             keep host vtables)",
            vtables::VTABLES_ENV
        );
    }
    // libomptarget 21 (and older), under `requires unified_shared_memory`, writes each entry's
    // host bytes over its device global when it loads an image: over the globals a table was
    // installed in (x86_64), and over the indirect entries' globals before it maps them (so
    // that `omp_get_mapped_ptr` then answers garbage for them). No device table there.
    // SAFETY: the caller's contract: a valid descriptor (or null).
    if unsafe { desc.as_ref().and_then(|d| v1_entries(d)) }.is_some_and(requires_unified_memory) {
        UNIFIED_MEMORY.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let with_table =
        !(UNIFIED_MEMORY.load(std::sync::atomic::Ordering::Relaxed) && x86_64_table::runtime_fills_none());
    // A panic while reading the images (a malformed one) must not unwind into the program's
    // startup code: the program is then registered unchanged.
    let extended = std::panic::catch_unwind(|| {
        // SAFETY: the caller's contract.
        unsafe { extend(desc, with_words, with_table) }
    })
    .unwrap_or_else(|_| Err("a panic while reading its images".to_string()));
    let replacement = extended.unwrap_or_else(|why| {
        diagnostics::info(NAME, format_args!("registering the program's images unchanged: {why}"));
        None
    });
    let with_table = replacement.as_ref().is_some_and(|r| r.shadows.is_some());
    let registered_desc =
        replacement.as_ref().map_or(desc, |r| &*r.desc as *const TgtBinDesc as *mut TgtBinDesc);
    // SAFETY: the descriptor about to be registered: the program's (the caller's contract: valid
    // or null) or the replacement.
    let entries = unsafe { registered_desc.as_ref().and_then(|d| v1_entries(d)) }
        .map_or((std::ptr::null(), 0), |e| (e.as_ptr(), e.len()));
    REGISTERED.lock().unwrap_or_else(|e| e.into_inner()).push(Registered {
        original: desc as usize,
        replacement,
        entries,
        live: true,
    });
    // SAFETY: the program's descriptor, or a replacement whose every pointer is kept alive in
    // REGISTERED (never freed); the lock is released, as libomptarget may load images (and call
    // back into this library) before it returns.
    unsafe { register(registered_desc) };
    if with_table {
        device_table::registered();
    }
}

/// `void __tgt_unregister_lib(__tgt_bin_desc *desc)`: unregisters what [`__tgt_register_lib`]
/// registered for `desc`. The copy stays allocated: libomptarget reads a descriptor's images and
/// entries after unregistering it (when it unloads the images at exit), as the program's own
/// descriptor, constant data, allows.
///
/// # Safety
/// `desc` must be a descriptor passed to `__tgt_register_lib` before.
#[no_mangle]
pub unsafe extern "C" fn __tgt_unregister_lib(desc: *mut TgtBinDesc) {
    let Some(unregister) = next(c"__tgt_unregister_lib") else { return };
    let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    let found = registered.iter_mut().rev().find(|r| r.original == desc as usize && r.live);
    let ours = found.map(|r| {
        r.live = false;
        r.replacement.as_ref().map_or(desc, |p| &*p.desc as *const TgtBinDesc as *mut TgtBinDesc)
    });
    let tables_in_use = registered.iter().any(|r| r.live && r.shadows().is_some());
    drop(registered);
    if !tables_in_use {
        // Before libomptarget unloads the images (and may release the devices). A panic there
        // leaks the tables rather than unwinding into the program's exit code.
        let _ = std::panic::catch_unwind(device_table::free_all);
        host_calls::unloading();
    }
    // SAFETY: the descriptor registered for `desc` (never freed), or `desc` as received.
    unsafe { unregister(ours.unwrap_or(desc)) }
}

/// Whether a registered descriptor required unified shared memory (see [`__tgt_register_lib`]).
static UNIFIED_MEMORY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `OMP_REGISTER_REQUIRES`: the entry clang emits for the program's `requires` directives, its
/// `data` the requirement flags.
const OMP_REGISTER_REQUIRES: u32 = 0x10;

/// Whether `entries` require unified shared memory (`OMP_REQ_UNIFIED_SHARED_MEMORY`, 0x008) or
/// LLVM's automatic zero copy (`OMPX_REQ_AUTO_ZERO_COPY`, 0x020), under which libomptarget
/// copies host globals over device ones.
fn requires_unified_memory(entries: &[EntryV1]) -> bool {
    entries.iter().any(|e| e.flags == OMP_REGISTER_REQUIRES && e.data & (0x008 | 0x020) != 0)
}

/// The host entries of `desc` in LLVM 20+'s layout (`None`: none, or the legacy layout of
/// libomptarget 16 and this project's plugins, which pair everything themselves).
///
/// # Safety
/// `desc` must be a valid descriptor (its entries alive).
unsafe fn v1_entries(desc: &TgtBinDesc) -> Option<&[EntryV1]> {
    let (begin, end) = (desc.host_entries_begin as usize, desc.host_entries_end as usize);
    let bytes = end.checked_sub(begin)?;
    if bytes == 0 || bytes % V1_ENTRY_SIZE != 0 || begin % std::mem::align_of::<EntryV1>() != 0 {
        return None;
    }
    // SAFETY: the host's entries, `bytes` long (the caller's contract).
    let entries = unsafe {
        std::slice::from_raw_parts(desc.host_entries_begin as *const EntryV1, bytes / V1_ENTRY_SIZE)
    };
    (entries[0].reserved == 0 && entries[0].version == 1).then_some(entries)
}

/// A copy of `desc` whose entries are followed by the vtable words every image defines (with
/// `with_words`) and by the entries of the device library's globals when every image defines
/// them (with `with_table`: [`device_table`]), or None when there is nothing to add (or the entries are in the
/// legacy layout, or an image has entries of its own rather than the host's).
///
/// libomptarget walks an image's entries and the host's in step, so both are one array here:
/// the additions go to the host's entries and every image's, and only what every image defines
/// (an image missing one would fail to load).
///
/// # Safety
/// As [`__tgt_register_lib`].
unsafe fn extend(
    desc: *mut TgtBinDesc,
    with_words: bool,
    with_table: bool,
) -> Result<Option<Replacement>, String> {
    // SAFETY: the caller's contract: a valid descriptor.
    let original = unsafe { desc.as_ref() }.ok_or("a null descriptor")?;
    let count = usize::try_from(original.num_device_images).map_err(|_| "a negative image count")?;
    if count == 0 || original.device_images.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract: a valid descriptor.
    let Some(host_entries) = (unsafe { v1_entries(original) }) else {
        return Ok(None);
    };
    // SAFETY: `num_device_images` images at `device_images` (the caller's contract).
    let images = unsafe { std::slice::from_raw_parts(original.device_images, count) };
    let mut common: Option<std::collections::BTreeSet<(String, u64, u64)>> = None;
    let mut has_globals = with_table;
    let mut has_host_calls = with_table;
    for img in images {
        if img.entries_begin != original.host_entries_begin || img.entries_end != original.host_entries_end {
            return Ok(None);
        }
        if img.image_start.is_null() {
            return Err("an image with a null start".into());
        }
        let size = (img.image_end as usize)
            .checked_sub(img.image_start as usize)
            .ok_or("an inverted image range")?;
        // SAFETY: the image's bytes (the caller's contract).
        let raw = unsafe { std::slice::from_raw_parts(img.image_start as *const u8, size) };
        let defined = image::unwrap(raw).map(|i| vtables::defined_symbols(i.bytes)).unwrap_or_default();
        has_globals &= [FPTR_MAP_P, FPTR_MAP_SIZE, FPTR_INDEX].iter().all(|g| defined.contains(*g));
        has_host_calls &= defined.contains(HOST_CALLS);
        let words = if with_words { vtables::device_words(&defined) } else { Vec::new() };
        let wanted = words.iter().map(|w| w.vtable.as_str()).collect();
        let host = vtables::host_definitions(&wanted);
        let mut pairs = std::collections::BTreeSet::new();
        for word in &words {
            let offset = word.index * 8;
            for &(address, _) in
                host.get(&word.vtable).into_iter().flatten().filter(|&&(_, size)| offset + 8 <= size)
            {
                pairs.insert((word.symbol.clone(), address + offset, word.index));
            }
        }
        common = Some(match common {
            None => pairs,
            Some(before) => before.intersection(&pairs).cloned().collect(),
        });
    }
    let common = common.unwrap_or_default();
    if common.is_empty() && !has_globals {
        return Ok(None);
    }
    let mut names = Vec::new();
    // clang's own vtable entries go last: libomptarget maps each entry in order and skips one
    // that overlaps a range already mapped, so the words' entries (mapped to the device words)
    // come first and the vtable entry that covers them (which it maps onto the host's own
    // addresses) is skipped. Its stock table still pairs every word of it.
    let (clang_vtables, mut entries): (Vec<EntryV1>, Vec<EntryV1>) =
        host_entries.iter().partition(|e| e.flags & OMP_DECLARE_TARGET_INDIRECT_VTABLE != 0);
    for (symbol, address, _) in &common {
        let name = CString::new(symbol.as_str()).map_err(|_| "a symbol name with a NUL")?;
        entries.push(EntryV1 {
            reserved: 0,
            version: 1,
            kind: OFFLOAD_KIND_OPENMP,
            flags: OMP_DECLARE_TARGET_INDIRECT,
            address: *address as *mut c_void,
            symbol_name: name.as_ptr(),
            size: 8,
            data: 0,
            aux_addr: std::ptr::null_mut(),
        });
        names.push(name);
    }
    if !common.is_empty() {
        diagnostics::info(NAME, format_args!("{} vtable words added to the program's entries", common.len()));
    }
    let shadows = has_globals.then(|| {
        let mut shadows = Box::<Shadows>::default();
        shadows.with_host_calls = has_host_calls;
        shadows
    });
    let shadow_entries = shadows.iter().flat_map(|s| s.entries().into_iter().chain(s.host_calls_entry()));
    for (symbol, address, size) in shadow_entries {
        // A `declare target` variable: libomptarget maps the stand-in to the image's global.
        entries.push(EntryV1 {
            reserved: 0,
            version: 1,
            kind: OFFLOAD_KIND_OPENMP,
            flags: 0,
            address: address as *mut c_void,
            symbol_name: symbol.as_ptr(),
            size,
            data: 0,
            aux_addr: std::ptr::null_mut(),
        });
    }
    entries.extend(clang_vtables);
    let mut entries = entries.into_boxed_slice();
    let range = entries.as_mut_ptr_range();
    let (first, last) = (range.start.cast::<TgtOffloadEntry>(), range.end.cast::<TgtOffloadEntry>());
    let mut new_images: Box<[TgtDeviceImage]> = images
        .iter()
        .map(|img| TgtDeviceImage {
            image_start: img.image_start,
            image_end: img.image_end,
            entries_begin: first,
            entries_end: last,
        })
        .collect();
    let desc_copy = Box::new(TgtBinDesc {
        num_device_images: original.num_device_images,
        device_images: new_images.as_mut_ptr(),
        host_entries_begin: first,
        host_entries_end: last,
    });
    Ok(Some(Replacement { desc: desc_copy, _images: new_images, _entries: entries, _names: names, shadows }))
}

/// For the fuzz target `register_descriptor` (`fuzz/`): registers nothing, but reads a
/// descriptor of `images` (each one image's bytes) that all share `entries`, as
/// [`__tgt_register_lib`] does before it registers (the requirement, the extension by vtable
/// words and the device library's globals, the keys of the result). Returns how many keys the
/// replacement's entries give, if one was made. Any input is an answer or an error, never a panic or a read
/// outside what it was given (the entries' names must be null or NUL-terminated).
#[doc(hidden)]
pub fn read_descriptor_for_fuzzing(images: &[&[u8]], entries: &mut [EntryV1]) -> Option<usize> {
    let range = entries.as_mut_ptr_range();
    let (first, last) = (range.start.cast::<TgtOffloadEntry>(), range.end.cast::<TgtOffloadEntry>());
    let mut device_images: Vec<TgtDeviceImage> = images
        .iter()
        .map(|bytes| {
            let range = bytes.as_ptr_range();
            TgtDeviceImage {
                image_start: range.start as *mut c_void,
                image_end: range.end as *mut c_void,
                entries_begin: first,
                entries_end: last,
            }
        })
        .collect();
    let mut desc = TgtBinDesc {
        num_device_images: i32::try_from(device_images.len()).ok()?,
        device_images: device_images.as_mut_ptr(),
        host_entries_begin: first,
        host_entries_end: last,
    };
    // SAFETY: a descriptor of live arrays: the images' bytes and the entries, whose names are
    // null or NUL-terminated (this function's contract); nothing is registered.
    unsafe {
        let _ = v1_entries(&desc).is_some_and(requires_unified_memory);
        let replacement = extend(&mut desc, true, true).ok()??;
        let count = v1_entries(&replacement.desc).map_or(0, |e| indirect_keys(e).count());
        Some(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registered::vtable_copies;

    fn v1_entry(address: usize, name: &std::ffi::CStr) -> EntryV1 {
        EntryV1 {
            reserved: 0,
            version: 1,
            kind: OFFLOAD_KIND_OPENMP,
            flags: 0,
            address: address as *mut c_void,
            symbol_name: name.as_ptr(),
            size: 0,
            data: 0,
            aux_addr: std::ptr::null_mut(),
        }
    }

    /// [`extend`] over a descriptor of `entries` and one image from `image_start` to `image_end`
    /// (whose entries start one later with `own_image_entries`).
    fn extend_one(
        entries: &mut [EntryV1],
        image_start: *mut c_void,
        image_end: *mut c_void,
        own_image_entries: bool,
    ) -> Result<Option<Replacement>, String> {
        let range = entries.as_mut_ptr_range();
        let (first, last) = (range.start.cast::<TgtOffloadEntry>(), range.end.cast::<TgtOffloadEntry>());
        let mut images = [TgtDeviceImage {
            image_start,
            image_end,
            entries_begin: if own_image_entries { first.wrapping_add(1) } else { first },
            entries_end: last,
        }];
        let mut desc = TgtBinDesc {
            num_device_images: 1,
            device_images: images.as_mut_ptr(),
            host_entries_begin: first,
            host_entries_end: last,
        };
        // SAFETY: a descriptor of live arrays; an image is read only where it has bytes (a null
        // start is refused first).
        unsafe { extend(&mut desc, true, true) }
    }

    /// Registers `entries` with one image of `image` bytes, through [`extend`].
    fn extended(entries: &mut [EntryV1], image: &mut [u8], own_image_entries: bool) -> Result<bool, String> {
        let range = image.as_mut_ptr_range();
        extend_one(entries, range.start.cast(), range.end.cast(), own_image_entries).map(|r| r.is_some())
    }

    #[test]
    fn vtable_words_are_grouped_per_host_copy_in_word_order() {
        let word = |address: usize, name: &'static std::ffi::CStr| {
            let mut e = v1_entry(address, name);
            e.flags = OMP_DECLARE_TARGET_INDIRECT;
            e.size = 8;
            e
        };
        let entries = [
            word(0x2008, c"__omptarget_indirect_vtable_1__ZTV6Square"),
            word(0x1000, c"__omptarget_indirect_vtable_0__ZTV6Square"),
            word(0x2000, c"__omptarget_indirect_vtable_0__ZTV6Square"),
            word(0x1008, c"__omptarget_indirect_vtable_1__ZTV6Square"),
            word(0x3000, c"__omptarget_indirect_vtable_0__ZTV4Rect"),
            // A function, and a malformed name: no word of a vtable.
            word(0x4000, c"add_seven"),
            word(0x5000, c"__omptarget_indirect_vtable_x__ZTV4Rect"),
        ];
        // SAFETY: NUL-terminated names.
        let mut copies = unsafe { vtable_copies(&entries) };
        copies.sort();
        assert_eq!(copies, [vec![0x1000, 0x1008], vec![0x2000, 0x2008], vec![0x3000]]);
    }

    #[test]
    fn unified_memory_is_read_from_the_requires_entry() {
        let mut requires = v1_entry(0, c"__omp_offloading_requires");
        requires.flags = OMP_REGISTER_REQUIRES;
        requires.data = 0x008;
        let kernel = v1_entry(0x1000, c"kernel");
        assert!(requires_unified_memory(&[kernel, requires]));
        requires.data = 0x020;
        assert!(requires_unified_memory(&[requires]));
        // unified_address, dynamic_allocators, reverse_offload alone: nothing is copied over.
        requires.data = 0x002 | 0x004 | 0x010;
        assert!(!requires_unified_memory(&[kernel, requires]));
        // The flags of another entry kind do not count.
        let mut indirect = v1_entry(0x2000, c"f");
        indirect.flags = OMP_DECLARE_TARGET_INDIRECT;
        indirect.data = 0x008;
        assert!(!requires_unified_memory(&[indirect]));
    }

    #[test]
    fn keys_are_the_indirect_entries_of_pointer_size() {
        let mut function = v1_entry(0x2000, c"__omp_offloading_indirect__Z1fv");
        function.flags = OMP_DECLARE_TARGET_INDIRECT;
        function.size = 8;
        let mut word = v1_entry(0x3008, c"__omptarget_indirect_vtable_1__ZTV1A");
        word.flags = OMP_DECLARE_TARGET_INDIRECT;
        word.size = 8;
        let mut variable = v1_entry(0x4000, c"counter");
        variable.size = 8;
        let kernel = v1_entry(0x1000, c"kernel");
        // clang's own entry for a vtable of 24 bytes: each of its words is a key.
        let mut vtable = v1_entry(0x5000, c"__omp_offloading_vtable__ZTV1B");
        vtable.flags = OMP_DECLARE_TARGET_INDIRECT_VTABLE;
        vtable.size = 24;
        let entries = [kernel, function, variable, word, vtable];
        // SAFETY: entries with NUL-terminated names.
        let keys: Vec<(u64, bool)> = unsafe { indirect_keys(&entries) }.collect();
        assert_eq!(keys, [(0x2000, false), (0x3008, true), (0x5000, true), (0x5008, true), (0x5010, true)]);
        // A malformed size: its first word only (it maps to itself, and the table is refused).
        vtable.size = u64::MAX;
        // SAFETY: as above.
        assert_eq!(unsafe { indirect_keys(&[vtable]) }.collect::<Vec<_>>(), [(0x5000, true)]);
    }

    #[test]
    fn an_image_without_bytes_is_refused() {
        let mut entries = [v1_entry(0x1000, c"kernel")];
        let refused = extend_one(&mut entries, std::ptr::null_mut(), 64 as *mut c_void, false);
        assert_eq!(refused.err().as_deref(), Some("an image with a null start"));
    }

    #[test]
    fn what_has_no_vtable_words_is_registered_unchanged() {
        // SAFETY: null is refused before anything is read.
        assert!(unsafe { extend(std::ptr::null_mut(), true, true) }.is_err());
        let mut entries = [v1_entry(0x1000, c"kernel"), v1_entry(0x2000, c"f")];
        // An image that is no ELF file, one that is an ELF header only, an image with entries of
        // its own: nothing to add, nothing changed.
        assert_eq!(extended(&mut entries, &mut [0u8; 64], false), Ok(false));
        let mut header = [0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        assert_eq!(extended(&mut entries, &mut header, false), Ok(false));
        assert_eq!(extended(&mut entries, &mut [0u8; 64], true), Ok(false));
        // The legacy layout (clang 19): left to this project's plugins.
        entries[0].reserved = 0x1000;
        assert_eq!(extended(&mut entries, &mut [0u8; 64], false), Ok(false));
    }
}
