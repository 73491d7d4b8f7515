//! Hostile input through the installed x86_64 plugin's C ABI: pointers the plugin never handed
//! out, copies past the end of an allocation, launches of things that are not kernels, unknown
//! `KernelArgs`, entries naming the wrong kind of symbol, and map replacement while kernels run.
//! Each call must fail cleanly with `OFFLOAD_FAIL` (or null) and leave the plugin working.

mod support;

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use host_table::rtl_interface::{FptrMapEntry, TgtTargetTable, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use plugin_test_support::kernel_args;
use support::{api, compile_indirect, fresh, indirect_image, indirect_image_with, target_entries, Held};

fn alloc(bytes: i64) -> *mut c_void {
    // SAFETY: a plain allocation on device 0.
    let p = unsafe { (api().data_alloc)(0, bytes, std::ptr::null_mut(), 0) };
    assert!(!p.is_null());
    p
}

/// Launches `kernel` of device 0 with `args` (no offsets) and `version`.
fn launch(kernel: *mut c_void, args: &[*mut c_void], version: u32) -> i32 {
    let offsets = vec![0isize; args.len()];
    let ka = kernel_args(args.len() as u32, version, 1);
    // SAFETY: args and offsets hold num_args elements.
    unsafe { (api().launch_kernel)(0, kernel, args.as_ptr(), offsets.as_ptr(), &ka, std::ptr::null_mut()) }
}

#[test]
fn data_delete_frees_only_live_allocations_of_its_own() {
    let _g = fresh();
    let api = api();
    let p = alloc(16);
    // SAFETY: the calls take any pointer and must refuse those they do not own.
    unsafe {
        assert_eq!((api.data_delete)(0, p.cast::<u8>().add(8).cast(), 0), OFFLOAD_FAIL, "interior pointer");
        let mut on_stack = 0u64;
        assert_eq!(
            (api.data_delete)(0, (&mut on_stack as *mut u64).cast(), 0),
            OFFLOAD_FAIL,
            "never allocated"
        );
        assert_eq!((api.data_delete)(0, std::ptr::null_mut(), 0), OFFLOAD_FAIL, "null");
        assert_eq!((api.data_delete)(1, p, 0), OFFLOAD_FAIL, "another device's allocation");
        assert_eq!((api.data_delete)(0, p, 0), OFFLOAD_SUCCESS);
        assert_eq!((api.data_delete)(0, p, 0), OFFLOAD_FAIL, "freed twice");
        // The plugin's own table: its address is in the image's map global, which the target
        // table reports when the global is listed as an entry.
        static MAP_P: u64 = 0;
        let image = indirect_image_with(
            compile_indirect().clone(),
            &[(&MAP_P as *const u64 as *mut c_void, "__omp_offloading_fptr_map_p", 8, 0)],
        );
        let table = (api.load_binary)(0, image.ptr());
        let map_p = target_entries(table)[4].addr;
        let mut installed: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            (api.data_retrieve)(0, (&mut installed as *mut *mut c_void).cast(), map_p, 8),
            OFFLOAD_SUCCESS
        );
        assert!(!installed.is_null());
        assert_eq!((api.data_delete)(0, installed, 0), OFFLOAD_FAIL, "the plugin's own table");
        assert_eq!((api.data_delete)(0, map_p, 0), OFFLOAD_FAIL, "an image global");
        // Everything still works, and deinit frees the table once.
        let q = alloc(8);
        assert_eq!((api.data_submit)(0, q, (&7u64 as *const u64).cast(), 8), OFFLOAD_SUCCESS);
        assert_eq!((api.data_delete)(0, q, 0), OFFLOAD_SUCCESS);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
        assert_eq!((api.deinit_device)(0), OFFLOAD_SUCCESS);
    }
}

#[test]
fn copies_stay_inside_an_allocation_or_an_image_global() {
    let _g = fresh();
    let api = api();
    let p = alloc(16);
    let big = vec![0u8; 1 << 20];
    let mut back = [0u8; 16];
    // SAFETY: the host buffers are as large as claimed except where the plugin must refuse
    // before reading them (the 2^40 cases).
    unsafe {
        assert_eq!((api.data_submit)(0, p, big.as_ptr().cast(), 16), OFFLOAD_SUCCESS);
        assert_eq!(
            (api.data_submit)(0, p, big.as_ptr().cast(), 1 << 20),
            OFFLOAD_FAIL,
            "1 MiB into 16 bytes"
        );
        assert_eq!((api.data_submit)(0, p, big.as_ptr().cast(), 1 << 40), OFFLOAD_FAIL);
        assert_eq!((api.data_retrieve)(0, back.as_mut_ptr().cast(), p, 1 << 40), OFFLOAD_FAIL);
        assert_eq!(
            (api.data_retrieve)(0, back.as_mut_ptr().cast(), p.cast::<u8>().add(8).cast(), 16),
            OFFLOAD_FAIL
        );
        assert_eq!(
            (api.data_retrieve)(0, back.as_mut_ptr().cast(), p.cast::<u8>().add(8).cast(), 8),
            OFFLOAD_SUCCESS
        );
        let stack = back.as_mut_ptr().cast::<c_void>();
        assert_eq!((api.data_submit)(0, stack, big.as_ptr().cast(), 8), OFFLOAD_FAIL, "not device memory");
        assert_eq!((api.data_submit)(1, p, big.as_ptr().cast(), 8), OFFLOAD_FAIL, "another device's memory");
        assert_eq!((api.data_delete)(0, p, 0), OFFLOAD_SUCCESS);
        assert_eq!((api.data_submit)(0, p, big.as_ptr().cast(), 8), OFFLOAD_FAIL, "freed memory");
    }
}

#[test]
fn launches_run_only_loaded_kernels_with_known_arguments() {
    let _g = fresh();
    let api = api();
    let image = indirect_image();
    // SAFETY: a valid image; the bad launches must be refused before anything runs.
    unsafe {
        let table = (api.load_binary)(0, image.ptr());
        let entries = target_entries(table);
        let many = entries[3].addr;
        let out = alloc(4);
        let ones: Vec<*mut c_void> = (0..11).map(|_| alloc(4)).collect();
        for &a in &ones {
            assert_eq!((api.data_submit)(0, a, (&1i32 as *const i32).cast(), 4), OFFLOAD_SUCCESS);
        }
        let mut args = vec![out];
        args.extend(&ones);
        assert_eq!(launch(many, &args, 3), OFFLOAD_SUCCESS);
        assert_eq!(launch(many, &args, 99), OFFLOAD_FAIL, "unknown KernelArgs version");
        assert_eq!(launch(many, &args, 0), OFFLOAD_FAIL);
        assert_eq!(launch(entries[0].addr, &args, 3), OFFLOAD_FAIL, "an indirect function is not a kernel");
        assert_eq!(launch(libc::abort as *mut c_void, &args, 3), OFFLOAD_FAIL, "a libc function");
        assert_eq!(launch(out, &args, 3), OFFLOAD_FAIL, "data");
        assert_eq!(launch(many.cast::<u8>().add(4).cast(), &args, 3), OFFLOAD_FAIL, "inside a kernel");
        assert_eq!(launch(many, &args, 3), OFFLOAD_SUCCESS, "still works");
        // Two million arguments: refused before the arrays are read.
        let ka = kernel_args(2_000_000, 3, 1);
        let rc =
            (api.launch_kernel)(0, many, args.as_ptr(), [0isize; 12].as_ptr(), &ka, std::ptr::null_mut());
        assert_eq!(rc, OFFLOAD_FAIL);
        // On device 1 nothing is loaded; after the unload, not on device 0 either.
        let ka = kernel_args(12, 3, 1);
        let rc =
            (api.launch_kernel)(1, many, args.as_ptr(), [0isize; 12].as_ptr(), &ka, std::ptr::null_mut());
        assert_eq!(rc, OFFLOAD_FAIL);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
        assert_eq!(launch(many, &args, 3), OFFLOAD_FAIL, "unloaded");
        for a in args {
            assert_eq!((api.data_delete)(0, a, 0), OFFLOAD_SUCCESS);
        }
    }
}

#[test]
fn entries_must_name_symbols_of_the_right_kind_in_the_image() {
    let _g = fresh();
    let api = api();
    static ID: u8 = 0;
    let id = &ID as *const u8 as *mut c_void;
    let cases: [(&str, usize, i32, &str); 4] = [
        ("__omp_offloading_test_square", 0, 0, "a kernel entry naming a data object"),
        ("printf", 0, 0, "a kernel entry naming a libc function"),
        ("__omp_offloading_test_call", 8, 0, "a global entry naming a function"),
        ("__omp_offloading_test_bad_indirect", 8, 8, "an indirect global holding a data address"),
    ];
    for (name, size, flags, what) in cases {
        let image = indirect_image_with(compile_indirect().clone(), &[(id, name, size, flags)]);
        // SAFETY: the image is well formed apart from the entry under test.
        let table = unsafe { (api.load_binary)(0, image.ptr()) };
        assert!(table.is_null(), "{what} was accepted");
    }
    // The device is unchanged: the well-formed image loads and runs.
    let image = indirect_image();
    // SAFETY: a valid image.
    unsafe {
        let table: *mut TgtTargetTable = (api.load_binary)(0, image.ptr());
        assert!(!table.is_null());
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
    }
}

/// clang 18+'s `#pragma omp requires` entry (address 0, empty name, size 0, flags 0x10, the
/// `OMP_REQ_*` flags in `reserved`): it gets a target-table slot and needs no symbol; what the
/// x86_64 device gives loads (unified_shared_memory, unified_address, dynamic_allocators), and an
/// image requiring reverse_offload is refused, leaving the device as it was.
#[test]
fn requirement_entries_are_met_or_refused() {
    let _g = fresh();
    let api = api();
    let requirement = |flags: i32| {
        let mut image =
            indirect_image_with(compile_indirect().clone(), &[(std::ptr::null_mut(), "", 0, 0x10)]);
        image.set_entry_data(4, flags);
        image
    };
    for flags in [0x1, 0x8, 0x4 | 0x8 | 0x10] {
        let image = requirement(flags);
        // SAFETY: a valid image whose fifth entry is a requirement.
        unsafe {
            let entries = target_entries((api.load_binary)(0, image.ptr()));
            assert_eq!(entries.len(), 5, "one target-table slot per host entry (flags {flags:#x})");
            assert_eq!((entries[4].addr, entries[4].size, entries[4].flags), (std::ptr::null_mut(), 0, 0x10));
            assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
        }
    }
    let reverse = requirement(0x2 | 0x8);
    // SAFETY: a valid image requiring what the device does not give.
    unsafe { assert!((api.load_binary)(0, reverse.ptr()).is_null(), "reverse_offload was accepted") };
    let image = indirect_image();
    // SAFETY: a valid image: the refusal changed nothing.
    unsafe {
        assert!(!(api.load_binary)(0, image.ptr()).is_null());
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
    }
}

/// The indirect image with `__omp_offloading_test_translate_all` as a fifth entry (target table
/// index 4): a kernel that translates many keys in one launch.
fn translate_all_image() -> Box<plugin_test_support::OffloadImage> {
    static ID: u8 = 0;
    let id = &ID as *const u8 as *mut c_void;
    indirect_image_with(compile_indirect().clone(), &[(id, "__omp_offloading_test_translate_all", 0, 0)])
}

/// Runs `__omp_offloading_test_translate_all` over `keys` on device 0 and returns the results.
fn translate_all(kernel: *mut c_void, keys: &[u64]) -> Vec<u64> {
    let api = api();
    let bytes = (keys.len() * 8) as i64;
    let (keys_d, out_d, n_d) = (alloc(bytes), alloc(bytes), alloc(8));
    let mut out = vec![0u64; keys.len()];
    // SAFETY: buffers of the sizes given; the kernel takes three pointers.
    unsafe {
        assert_eq!((api.data_submit)(0, keys_d, keys.as_ptr().cast(), bytes), OFFLOAD_SUCCESS);
        assert_eq!(
            (api.data_submit)(0, n_d, (&(keys.len() as u64) as *const u64).cast(), 8),
            OFFLOAD_SUCCESS
        );
        assert_eq!(launch(kernel, &[keys_d, out_d, n_d], 3), OFFLOAD_SUCCESS);
        assert_eq!((api.data_retrieve)(0, out.as_mut_ptr().cast(), out_d, bytes), OFFLOAD_SUCCESS);
        for p in [keys_d, out_d, n_d] {
            assert_eq!((api.data_delete)(0, p, 0), OFFLOAD_SUCCESS);
        }
    }
    out
}

#[test]
fn a_launch_sees_one_whole_map_while_maps_are_replaced() {
    let _g = fresh();
    let api = api();
    let image = translate_all_image();
    // SAFETY: a valid image, loaded for the whole test.
    let table = unsafe { (api.load_binary)(0, image.ptr()) };
    // As an integer: the launching threads share it.
    let kernel = target_entries(table)[4].addr as usize;
    const ENTRIES: u64 = 16 * 1024;
    let keys: Vec<u64> = (0..ENTRIES).map(|i| 0x10_0000 + 16 * i).collect();
    let map = |salt: u64| -> Vec<FptrMapEntry> {
        keys.iter().map(|&k| FptrMapEntry { host_ptr: k, tgt_ptr: k ^ salt }).collect()
    };
    let (a, b) = (map(0xa000_0000), map(0xb000_0000));
    // SAFETY: sorted tables of ENTRIES entries.
    unsafe { assert_eq!((api.set_function_ptr_map)(0, ENTRIES, a.as_ptr()), OFFLOAD_SUCCESS) };
    let stop = AtomicBool::new(false);
    let mut launches = 0;
    std::thread::scope(|s| {
        let replacer = s.spawn(|| {
            let mut replaced = 0;
            while !stop.load(Ordering::Relaxed) {
                let next = if replaced % 2 == 0 { &b } else { &a };
                // SAFETY: as above.
                unsafe { assert_eq!((api.set_function_ptr_map)(0, ENTRIES, next.as_ptr()), OFFLOAD_SUCCESS) };
                replaced += 1;
            }
            replaced
        });
        let workers: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let mut seen = [0; 2];
                    for _ in 0..40 {
                        let out = translate_all(kernel as *mut c_void, &keys);
                        let salt = out[0] ^ keys[0];
                        assert!(salt == 0xa000_0000 || salt == 0xb000_0000, "first result {:#x}", out[0]);
                        let mixed = keys.iter().zip(&out).filter(|(&k, &o)| o != k ^ salt).count();
                        assert_eq!(mixed, 0, "a launch saw {mixed} results of another map");
                        seen[usize::from(salt == 0xb000_0000)] += 1;
                    }
                    seen
                })
            })
            .collect();
        for w in workers {
            let seen = w.join().expect("a launching thread failed");
            launches += seen[0] + seen[1];
        }
        stop.store(true, Ordering::Relaxed);
        let replaced = replacer.join().expect("the replacing thread failed");
        assert!(replaced > 0);
    });
    assert_eq!(launches, 120);
    // SAFETY: clears the map, then unloads.
    unsafe {
        assert_eq!((api.set_function_ptr_map)(0, 0, std::ptr::null()), OFFLOAD_SUCCESS);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
    }
}

/// Byte ranges of an image's structures that the loader reads, for corrupting them one field at a
/// time: `(file offset, width)` of every field worth changing.
fn loader_fields(image: &[u8]) -> Vec<(usize, usize)> {
    use object::read::elf::{FileHeader, ProgramHeader};
    let e = object::LittleEndian;
    let header = object::elf::FileHeader64::<object::LittleEndian>::parse(image).unwrap();
    let mut fields = Vec::new();
    let phoff = header.e_phoff(e) as usize;
    for i in 0..header.e_phnum(e) as usize {
        let at = phoff + 56 * i;
        // p_offset, p_vaddr, p_filesz, p_memsz, p_align.
        fields.extend([8, 16, 32, 40, 48].map(|f| (at + f, 8)));
    }
    let phdrs = header.program_headers(e, image).unwrap();
    let dynamic = phdrs.iter().find(|p| p.p_type(e) == object::elf::PT_DYNAMIC).unwrap();
    let file_of = |vaddr: u64| -> Option<usize> {
        phdrs
            .iter()
            .filter(|p| p.p_type(e) == object::elf::PT_LOAD)
            .find(|p| vaddr >= p.p_vaddr(e) && vaddr < p.p_vaddr(e) + p.p_filesz(e))
            .map(|p| (p.p_offset(e) + vaddr - p.p_vaddr(e)) as usize)
    };
    let dyn_at = dynamic.p_offset(e) as usize;
    let mut tags = Vec::new();
    for i in 0..dynamic.p_filesz(e) as usize / 16 {
        let tag = u64::from_le_bytes(image[dyn_at + 16 * i..dyn_at + 16 * i + 8].try_into().unwrap());
        let val = u64::from_le_bytes(image[dyn_at + 16 * i + 8..dyn_at + 16 * i + 16].try_into().unwrap());
        if tag == 0 {
            break;
        }
        fields.push((dyn_at + 16 * i + 8, 8));
        tags.push((tag, val));
    }
    let value = |tag: u32| tags.iter().find(|(t, _)| *t == u64::from(tag)).map(|(_, v)| *v);
    if let Some(symtab) = value(object::elf::DT_SYMTAB).and_then(file_of) {
        for i in 0..12 {
            // st_name, st_shndx, st_value, st_size.
            fields.extend([(0, 4), (6, 2), (8, 8), (16, 8)].map(|(f, w)| (symtab + 24 * i + f, w)));
        }
    }
    for (table, size) in
        [(object::elf::DT_RELA, object::elf::DT_RELASZ), (object::elf::DT_JMPREL, object::elf::DT_PLTRELSZ)]
    {
        if let (Some(at), Some(size)) = (value(table).and_then(file_of), value(size)) {
            for i in 0..(size as usize / 24).min(24) {
                fields.extend([(at + 24 * i, 8), (at + 24 * i + 8, 8)]);
            }
        }
    }
    if let Some(at) = value(object::elf::DT_GNU_HASH).and_then(file_of) {
        fields.extend((0..4).map(|i| (at + 4 * i, 4)));
        fields.extend((0..8).map(|i| (at + 16 + 8 + 4 * i, 4)));
    }
    fields
}

/// Every truncation (every 7th length) and single-field corruption of a real image goes through
/// `load_binary`: refused, or loaded and unloaded, never a crash. A crash kills this test binary;
/// `HOSTILE_TRACE=1 cargo test -p omptarget-rtl-x86_64 --test hostile malformed -- --nocapture` prints
/// each variant before it is tried, so the last line names the culprit.
#[test]
fn malformed_images_are_refused_not_crashed_on() {
    let _g = fresh();
    let api = api();
    let good = compile_indirect().clone();
    omptarget_rtl_x86_64::validate::check_shared_object(&good).expect("the real image passes");
    let mut variants: Vec<Vec<u8>> = (0..good.len()).step_by(7).map(|n| good[..n].to_vec()).collect();
    for (at, width) in loader_fields(&good) {
        let old = match width {
            2 => u64::from(u16::from_le_bytes(good[at..at + 2].try_into().unwrap())),
            4 => u64::from(u32::from_le_bytes(good[at..at + 4].try_into().unwrap())),
            _ => u64::from_le_bytes(good[at..at + 8].try_into().unwrap()),
        };
        for new in [
            0,
            1,
            0x7fff_ffff,
            u64::MAX,
            old ^ 0x1000,
            old.wrapping_add(8),
            old.wrapping_mul(3),
            good.len() as u64,
        ] {
            let mut v = good.clone();
            v[at..at + width].copy_from_slice(&new.to_le_bytes()[..width]);
            if std::env::var_os("HOSTILE_TRACE").is_some() {
                eprintln!("variant {}: {width} bytes at {at:#x}: {old:#x} -> {new:#x}", variants.len());
            }
            variants.push(v);
        }
    }
    let held = Held::now();
    let (mut refused, mut loaded) = (0, 0);
    for (n, bytes) in variants.into_iter().enumerate() {
        if std::env::var_os("HOSTILE_TRACE").is_some() {
            eprintln!(
                "variant {n}: {} bytes, check {:?}",
                bytes.len(),
                omptarget_rtl_x86_64::validate::check_shared_object(&bytes).err()
            );
        }
        let image = indirect_image_with(bytes, &[]);
        // SAFETY: a well-formed descriptor of possibly malformed bytes: the plugin must refuse
        // those cleanly or load them safely.
        unsafe {
            let table = (api.load_binary)(0, image.ptr());
            if table.is_null() {
                refused += 1;
            } else {
                loaded += 1;
                assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
            }
        }
    }
    assert!(refused > 1000, "{refused} refused, {loaded} loaded");
    assert_released_since(held, "the malformed images");
}

/// Fails unless the process holds the descriptors and image mappings it held at `before`, and
/// (allowing for the allocator's bookkeeping) the malloc'd bytes: refused images, and images
/// loaded and unloaded without running a kernel, leave nothing behind.
fn assert_released_since(before: Held, what: &str) {
    let after = Held::now();
    eprintln!("{what}: held before {before:?}, after {after:?}");
    assert_eq!(after.descriptors, before.descriptors, "{what} left descriptors open");
    assert_eq!(after.image_mappings, before.image_mappings, "{what} left image mappings");
    let grown = after.malloc_bytes.saturating_sub(before.malloc_bytes);
    assert!(grown < 64 * 1024, "{what} left {grown} malloc'd bytes");
}

/// The structure-aware families (`plugin_test_support::elf_mutations`): every segment's flags,
/// every dynamic tag changed, every dynamic symbol's type, binding, visibility and section. Each
/// variant is refused or loads and unloads; a crash kills this test binary (`HOSTILE_TRACE=1`
/// names each variant before it is tried). A refused variant leaves the image loaded before it,
/// and its map, intact.
#[test]
fn structurally_corrupted_images_are_refused_or_load_safely() {
    use plugin_test_support::elf_mutations::{mutations, Family};
    let _g = fresh();
    let api = api();
    let good = compile_indirect().clone();
    // The image loaded before, on device 0; the variants go to device 1 (the same host functions
    // may not map to two copies on one device).
    let keeper = translate_all_image();
    // SAFETY: a well-formed image; it stays loaded through every variant.
    let kernel = unsafe { target_entries((api.load_binary)(0, keeper.ptr()))[4].addr };
    let keys = [support::host_square as usize as u64, support::host_twice as usize as u64];
    let map_before = translate_all(kernel, &keys);
    assert_ne!(map_before, keys, "the keeper's map translates");
    let variants = mutations(&good);
    let held = Held::now();
    let mut counts = std::collections::BTreeMap::<&str, (usize, usize)>::new();
    for (n, m) in variants.iter().enumerate() {
        if std::env::var_os("HOSTILE_TRACE").is_some() {
            eprintln!("variant {n}: {m:?}");
        }
        let image = indirect_image_with(m.apply(&good), &[]);
        let family = match m.field.family {
            Family::SegmentFlags => "segment flags",
            Family::DynamicTag => "dynamic tags",
            Family::SymbolInfo => "symbol types and bindings",
            Family::SymbolVisibility => "symbol visibilities",
            Family::SymbolSection => "symbol sections",
            Family::InitFini => "initialisers and finalisers",
        };
        let count = counts.entry(family).or_default();
        // SAFETY: a well-formed descriptor of corrupted bytes, refused or loaded safely.
        unsafe {
            if (api.load_binary)(1, image.ptr()).is_null() {
                count.0 += 1;
            } else {
                count.1 += 1;
                assert_eq!((api.unload_binary)(1, image.ptr()), OFFLOAD_SUCCESS, "variant {n}: {m:?}");
            }
        }
    }
    assert_released_since(held, "the structurally corrupted images");
    assert_eq!(translate_all(kernel, &keys), map_before, "the map of the image loaded before changed");
    // SAFETY: the keeper is still loaded; unloading it must work.
    unsafe { assert_eq!((api.unload_binary)(0, keeper.ptr()), OFFLOAD_SUCCESS) };
    assert!(variants.len() > 500, "{} variants", variants.len());
    eprintln!("refused / loaded per family: {counts:?}");
    for (family, (refused, _)) in &counts {
        assert!(*refused > 0, "no {family} variant was refused: {counts:?}");
    }
}

/// An imported symbol (undefined, value 0) turned into a definition by its type, binding and
/// section index alone: a relocation would then hand the image's code the address of its own ELF
/// header (the fuzzer's find: `__cxa_finalize`, called when the image is unloaded). Every such
/// variant is refused, whatever type, binding and section it claims.
#[test]
fn imported_symbols_made_definitions_are_refused() {
    use plugin_test_support::elf_mutations::{fields, Family};
    let _g = fresh();
    let api = api();
    let good = compile_indirect().clone();
    let imports: Vec<usize> = fields(&good)
        .iter()
        .filter(|f| f.family == Family::SymbolSection && good[f.at..f.at + 2] == [0, 0])
        .map(|f| f.at - 6)
        .collect();
    assert!(!imports.is_empty(), "the test image imports nothing");
    let mut tried = 0;
    for &symbol in &imports {
        for info in [0x00u8, 0x01, 0x02, 0x10, 0x11, 0x12, 0x20, 0x22] {
            for section in [1u16, 2, 0x8ff, 0xff00] {
                let mut image = good.clone();
                image[symbol + 4] = info;
                image[symbol + 6..symbol + 8].copy_from_slice(&section.to_le_bytes());
                let image = indirect_image_with(image, &[]);
                // SAFETY: a well-formed descriptor of corrupted bytes, which must be refused.
                let loaded = unsafe { (api.load_binary)(1, image.ptr()) };
                assert!(
                    loaded.is_null(),
                    "symbol at {symbol:#x} defined as info {info:#x}, section {section:#x}"
                );
                tried += 1;
            }
        }
    }
    assert!(tried >= 32);
}

/// Bytes that are no code made executable by their segment's flags, and the initialiser pointed
/// at them (the fuzzer's second find: the loader called the hash table). The sections say where
/// code is: refused.
#[test]
fn code_claimed_by_segment_flags_alone_is_refused() {
    use plugin_test_support::elf_mutations::{fields, Family};
    let _g = fresh();
    let api = api();
    let good = compile_indirect().clone();
    let all = fields(&good);
    let first_segment = all.iter().find(|f| f.family == Family::SegmentFlags).expect("a segment");
    let init = all
        .iter()
        .find(|f| f.family == Family::DynamicTag && good[f.at..f.at + 8] == 0x0cu64.to_le_bytes())
        .expect("a DT_INIT entry");
    let mut image = good.clone();
    image[first_segment.at..first_segment.at + 4].copy_from_slice(&5u32.to_le_bytes()); // PF_R | PF_X
                                                                                        // Into the first segment (the ELF and program headers, the hash table), 8-aligned.
    image[init.at + 8..init.at + 16].copy_from_slice(&0x100u64.to_le_bytes());
    let image = indirect_image_with(image, &[]);
    // SAFETY: a well-formed descriptor of corrupted bytes, which must be refused.
    assert!(unsafe { (api.load_binary)(1, image.ptr()) }.is_null());
}

/// `DT_INIT`, `DT_FINI` and every initialiser and finaliser array entry moved into the middle of
/// the code they name (the prober's find: `DT_INIT` + 0x100 passed the check that it is code, and
/// the loader called into the middle of a function): refused with one line naming what is wrong,
/// the device unchanged. Moved to another function's start, the image would be well formed.
#[test]
fn initialisers_and_finalisers_inside_functions_are_refused() {
    use plugin_test_support::elf_mutations::{fields, Family, Mutation};
    let _g = fresh();
    let api = api();
    let good = compile_indirect().clone();
    let held = Held::now();
    let init_fini: Vec<_> = fields(&good).into_iter().filter(|f| f.family == Family::InitFini).collect();
    // DT_INIT, DT_FINI, the two arrays' addresses and sizes, and the addend of each array slot.
    assert!(init_fini.len() >= 8, "{} initialiser and finaliser fields", init_fini.len());
    let function_starts = function_starts(&good);
    let mut tried = 0;
    for (field, old) in called_at_load(&good) {
        for by in [1u64, 4, 0x10, 0x100] {
            let moved = old + by;
            if function_starts.contains(&moved) {
                continue;
            }
            let bytes = Mutation { field, value: moved }.apply(&good);
            // Refused as inside a function, or (moved past a small `.fini`) as outside the code.
            let why = omptarget_rtl_x86_64::validate::check_shared_object(&bytes)
                .expect_err("moved into a function")
                .to_string();
            assert!(why.contains("function") || why.contains("not in the image's code"), "{why}");
            let image = indirect_image_with(bytes, &[]);
            // SAFETY: a well-formed descriptor of an image that must be refused before loading.
            assert!(unsafe { (api.load_binary)(1, image.ptr()) }.is_null(), "{old:#x} + {by:#x} loaded");
            tried += 1;
        }
    }
    assert!(tried >= 12, "{tried} variants");
    assert_released_since(held, "the refused initialisers");
    // The device still loads the image as it is.
    let image = indirect_image();
    // SAFETY: a valid image.
    unsafe {
        assert!(!(api.load_binary)(1, image.ptr()).is_null());
        assert_eq!((api.unload_binary)(1, image.ptr()), OFFLOAD_SUCCESS);
    }
}

/// The fuzzer's find (x86_64_load, with the initialiser family): `DT_INIT_ARRAYSZ` grown by one
/// entry covers the finaliser array that follows it, whose entry is a real function
/// (`__do_global_dtors_aux`): the loader ran the finalisers at load and crashed in the image.
/// Each array must be the image's section of that array: refused, nothing left behind.
#[test]
fn an_initialiser_array_grown_over_the_finalisers_is_refused() {
    let _g = fresh();
    let api = api();
    let good = compile_indirect().clone();
    let held = Held::now();
    let e = object::LittleEndian;
    use object::read::elf::{Dyn, FileHeader, ProgramHeader};
    let header = object::elf::FileHeader64::<object::LittleEndian>::parse(&good[..]).unwrap();
    let dynamic = header
        .program_headers(e, &good[..])
        .unwrap()
        .iter()
        .find(|p| p.p_type(e) == object::elf::PT_DYNAMIC)
        .unwrap()
        .p_offset(e) as usize;
    let entries: &[object::elf::Dyn64<object::LittleEndian>] =
        object::pod::slice_from_bytes(&good[dynamic..], 32).unwrap().0;
    let value = |tag: u32| entries.iter().find(|d| d.d_tag(e) == u64::from(tag)).unwrap().d_val(e);
    let size_at = entries.iter().position(|d| d.d_tag(e) == u64::from(object::elf::DT_INIT_ARRAYSZ)).unwrap();
    let (init, size, fini) = (
        value(object::elf::DT_INIT_ARRAY),
        value(object::elf::DT_INIT_ARRAYSZ),
        value(object::elf::DT_FINI_ARRAY),
    );
    assert_eq!(init + size, fini, "the test image's finaliser array follows its initialiser array");
    let mut grown = good.clone();
    let at = dynamic + 16 * size_at + 8;
    grown[at..at + 8].copy_from_slice(&(size + 8).to_le_bytes());
    let why = omptarget_rtl_x86_64::validate::check_shared_object(&grown).unwrap_err().to_string();
    assert!(why.contains("initialiser array"), "{why}");
    let image = indirect_image_with(grown, &[]);
    // SAFETY: a well-formed descriptor of an image that must be refused before loading.
    assert!(unsafe { (api.load_binary)(1, image.ptr()) }.is_null());
    assert_released_since(held, "the grown initialiser array");
}

/// The fuzzer's second find with the initialiser family: the initialiser array's entry made the
/// start of `.plt`, a section of code but no function (its first stub jumps through the GOT slot
/// of the lazy resolver, null in an image bound at load): the loader called address 0. So are
/// `DT_INIT` and `DT_FINI` made the start of another section than `.init` / `.fini`: refused.
#[test]
fn initialisers_at_the_start_of_the_plt_are_refused() {
    use object::{Object, ObjectSection};
    use plugin_test_support::elf_mutations::Mutation;
    let _g = fresh();
    let api = api();
    let good = compile_indirect().clone();
    let plt =
        object::File::parse(&good[..]).unwrap().section_by_name(".plt").expect("a .plt section").address();
    let held = Held::now();
    let mut tried = 0;
    for (field, _) in called_at_load(&good) {
        let bytes = Mutation { field, value: plt }.apply(&good);
        let why = omptarget_rtl_x86_64::validate::check_shared_object(&bytes)
            .expect_err("the start of .plt")
            .to_string();
        assert!(why.contains("function"), "{why}");
        let image = indirect_image_with(bytes, &[]);
        // SAFETY: a well-formed descriptor of an image that must be refused before loading.
        assert!(unsafe { (api.load_binary)(1, image.ptr()) }.is_null());
        tried += 1;
    }
    assert!(tried >= 4, "DT_INIT, DT_FINI and the two array entries: {tried}");
    assert_released_since(held, "the initialisers at .plt");
}

/// The initialiser and finaliser fields of `image` that hold an address the loader calls
/// (`DT_INIT`, `DT_FINI`, each array slot's relocation addend), with that address; not the
/// arrays' addresses and sizes, which the mutation families cover.
fn called_at_load(image: &[u8]) -> Vec<(plugin_test_support::elf_mutations::Field, u64)> {
    use plugin_test_support::elf_mutations::{fields, Family};
    let code =
        omptarget_rtl_x86_64::validate::check_shared_object(image).expect("the real image passes").code;
    fields(image)
        .into_iter()
        .filter(|f| f.family == Family::InitFini)
        .map(|f| (f, u64::from_le_bytes(image[f.at..f.at + 8].try_into().unwrap())))
        .filter(|&(_, at)| code.iter().any(|&(from, to)| (from..to).contains(&at)))
        .collect()
}

/// Where the functions of `image` start, by its static and dynamic symbols.
fn function_starts(image: &[u8]) -> Vec<u64> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let file = object::File::parse(image).unwrap();
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text)
        .map(|s| s.address())
        .collect()
}

/// An image something else in the process holds (here a `dlopen` with `RTLD_NODELETE` of the
/// name the plugin loaded it under) stays loaded after its unload: the next image, whose memfd
/// may get the same descriptor number, must be a new object, not the kept one found by name.
#[test]
fn an_image_the_loader_keeps_does_not_stand_in_for_the_next() {
    let _g = fresh();
    let api = api();
    let first = indirect_image();
    // SAFETY: valid images; dladdr and dlopen get addresses and names the loader gave.
    unsafe {
        let square = target_entries((api.load_binary)(0, first.ptr()))[0].addr;
        let mut info: libc::Dl_info = std::mem::zeroed();
        assert_ne!(libc::dladdr(square, &mut info), 0);
        let kept_base = info.dli_fbase;
        let held = libc::dlopen(info.dli_fname, libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
        assert!(!held.is_null(), "the image is loaded under {:?}", std::ffi::CStr::from_ptr(info.dli_fname));
        assert_eq!((api.unload_binary)(0, first.ptr()), OFFLOAD_SUCCESS);
        for _ in 0..4 {
            let next = indirect_image();
            let square = target_entries((api.load_binary)(0, next.ptr()))[0].addr;
            assert_ne!(libc::dladdr(square, &mut info), 0);
            assert_ne!(info.dli_fbase, kept_base, "the kept image stood in for a new one");
            assert_eq!((api.unload_binary)(0, next.ptr()), OFFLOAD_SUCCESS);
        }
        libc::dlclose(held);
    }
}

#[test]
fn every_entry_point_refuses_bad_arguments() {
    let _g = fresh();
    let api = api();
    let image = indirect_image();
    let mut word = 0u64;
    let word_ptr = (&mut word as *mut u64).cast::<c_void>();
    // SAFETY: each call gets arguments it must refuse before touching them.
    unsafe {
        for device in [-1, 2, i32::MAX, i32::MIN] {
            assert!((api.load_binary)(device, image.ptr()).is_null(), "load_binary({device})");
            assert_eq!((api.unload_binary)(device, image.ptr()), OFFLOAD_FAIL);
            assert_eq!((api.init_device)(device), OFFLOAD_FAIL);
            assert_eq!((api.deinit_device)(device), OFFLOAD_FAIL);
            assert!((api.data_alloc)(device, 8, std::ptr::null_mut(), 0).is_null());
            assert_eq!((api.data_delete)(device, word_ptr, 0), OFFLOAD_FAIL);
            assert_eq!((api.data_submit)(device, word_ptr, word_ptr, 8), OFFLOAD_FAIL);
            assert_eq!((api.data_retrieve)(device, word_ptr, word_ptr, 8), OFFLOAD_FAIL);
            assert_eq!((api.set_function_ptr_map)(device, 0, std::ptr::null()), OFFLOAD_FAIL);
            assert_eq!(launch_on(device, word_ptr), OFFLOAD_FAIL);
        }
        assert!((api.load_binary)(0, std::ptr::null()).is_null());
        assert_eq!((api.unload_binary)(0, std::ptr::null()), OFFLOAD_FAIL);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_FAIL, "not loaded");
        // Sizes: negative and absurd allocations, negative and huge copies, null pointers.
        for size in [-1, i64::MIN, i64::MAX, 1 << 62] {
            assert!((api.data_alloc)(0, size, std::ptr::null_mut(), 0).is_null(), "data_alloc({size})");
        }
        let p = alloc(8);
        for size in [-1, i64::MIN, i64::MAX] {
            assert_eq!((api.data_submit)(0, p, word_ptr, size), OFFLOAD_FAIL, "data_submit({size})");
            assert_eq!((api.data_retrieve)(0, word_ptr, p, size), OFFLOAD_FAIL, "data_retrieve({size})");
        }
        assert_eq!((api.data_submit)(0, p, word_ptr, 0), OFFLOAD_SUCCESS, "size 0 copies nothing");
        assert_eq!((api.data_submit)(0, std::ptr::null_mut(), word_ptr, 8), OFFLOAD_FAIL);
        assert_eq!((api.data_submit)(0, p, std::ptr::null(), 8), OFFLOAD_FAIL);
        assert_eq!((api.data_retrieve)(0, std::ptr::null_mut(), p, 8), OFFLOAD_FAIL);
        assert_eq!((api.set_function_ptr_map)(0, 3, std::ptr::null()), OFFLOAD_FAIL);
        assert_eq!((api.set_function_ptr_map)(0, u64::MAX, word_ptr.cast()), OFFLOAD_FAIL);
        assert_eq!(launch_on(0, std::ptr::null_mut()), OFFLOAD_FAIL, "null kernel");
        let rc = (api.launch_kernel)(
            0,
            word_ptr,
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        assert_eq!(rc, OFFLOAD_FAIL, "null KernelArgs");
        assert_eq!((api.data_delete)(0, p, 0), OFFLOAD_SUCCESS);
        // Init twice, deinit twice, then everything works again.
        assert_eq!((api.init_plugin)(), OFFLOAD_SUCCESS);
        assert_eq!((api.init_plugin)(), OFFLOAD_SUCCESS);
        assert_eq!((api.deinit_plugin)(), OFFLOAD_SUCCESS);
        assert_eq!((api.deinit_plugin)(), OFFLOAD_SUCCESS);
        assert_eq!((api.init_device)(0), OFFLOAD_SUCCESS);
        let table = (api.load_binary)(0, image.ptr());
        assert!(!table.is_null());
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
    }
}

/// A launch of `kernel` with no arguments on `device`.
fn launch_on(device: i32, kernel: *mut c_void) -> i32 {
    let ka = kernel_args(0, 3, 1);
    // SAFETY: no arguments are read.
    unsafe {
        (api().launch_kernel)(device, kernel, std::ptr::null(), std::ptr::null(), &ka, std::ptr::null_mut())
    }
}

#[test]
fn unloading_waits_for_the_kernels_that_run() {
    let _g = fresh();
    let api = api();
    // Its only kernel is translate_all: the first load's kernel handle, launched after the image
    // was reloaded, may be the handle of a kernel of the new load (the allocator reuses the
    // address), which must then be one that these arguments fit.
    static ID: u8 = 0;
    let image = plugin_test_support::OffloadImage::new(
        compile_indirect().clone(),
        &[(&ID as *const u8 as *mut c_void, "__omp_offloading_test_translate_all", 0, 0)],
    );
    // SAFETY: a valid image; reloaded by one thread while another launches its kernel.
    let table = unsafe { (api.load_binary)(0, image.ptr()) };
    let kernel = target_entries(table)[0].addr as usize;
    let keys: Vec<u64> = (0..64 * 1024).map(|i| 0x10_0000 + 16 * i).collect();
    let (mut ran, mut refused) = (0, 0);
    std::thread::scope(|s| {
        // As an integer: the descriptor (raw pointers) is not Sync; it outlives the scope.
        let descriptor = image.ptr() as usize;
        let reloader = s.spawn(move || {
            let descriptor = descriptor as *const host_table::rtl_interface::TgtDeviceImage;
            for _ in 0..20 {
                // SAFETY: as above.
                unsafe {
                    assert_eq!((api.unload_binary)(0, descriptor), OFFLOAD_SUCCESS);
                    assert!(!(api.load_binary)(0, descriptor).is_null());
                }
            }
        });
        let bytes = (keys.len() * 8) as i64;
        let (keys_d, out_d, n_d) = (alloc(bytes), alloc(bytes), alloc(8));
        // SAFETY: buffers of the sizes given.
        unsafe {
            assert_eq!((api.data_submit)(0, keys_d, keys.as_ptr().cast(), bytes), OFFLOAD_SUCCESS);
            assert_eq!(
                (api.data_submit)(0, n_d, (&(keys.len() as u64) as *const u64).cast(), 8),
                OFFLOAD_SUCCESS
            );
        }
        // At least one launch, however soon the reloads are done.
        loop {
            let reloading = !reloader.is_finished();
            // The handle of the first load: refused while its image is unloaded, or (the
            // allocator may give a reloaded kernel the same address) a launch of the new load's
            // kernel.
            match launch(kernel as *mut c_void, &[keys_d, out_d, n_d], 3) {
                OFFLOAD_SUCCESS => ran += 1,
                _ => refused += 1,
            }
            if !reloading {
                break;
            }
        }
        reloader.join().expect("the reloading thread failed");
        for p in [keys_d, out_d, n_d] {
            // SAFETY: allocations made above.
            unsafe { assert_eq!((api.data_delete)(0, p, 0), OFFLOAD_SUCCESS) };
        }
    });
    assert!(ran + refused > 0);
    // SAFETY: the image is loaded (the reloader ends with a load).
    unsafe { assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS) };
}
