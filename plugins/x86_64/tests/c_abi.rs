//! The x86_64 plugin through its real C ABI: the installed
//! `target/dist/lib/libomptarget.rtl.x86_64.so` (from `cargo xtask build`) is `dlopen`ed, device images compiled from `tests/images/*.c` (linked with the device runtime's
//! x86_64 archive from `cargo xtask build`) are loaded in libomptarget's call order, and kernels
//! that call `__kmpc_target_translate_fptr` show which copy of a function ran.

mod support;

use std::ffi::c_void;

use host_table::rtl_interface::{FptrMapEntry, TgtImageInfo, TgtTargetTable, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use plugin_test_support::kernel_args;
use support::{
    api, compile_image, compile_indirect, fresh, host_not_indirect, host_square, host_twice, indirect_image,
    indirect_image_from, indirect_image_with, target_entries, CallKernel, OffloadImage,
};

fn sq() -> *mut c_void {
    host_square as *mut c_void
}
fn tw() -> *mut c_void {
    host_twice as *mut c_void
}

#[test]
fn libomptarget_call_order_translates_to_the_device_copy() {
    let _g = fresh();
    let api = api();
    let image = indirect_image();
    let info = TgtImageInfo { arch: c"".as_ptr() };
    // SAFETY: valid images and tables throughout.
    unsafe {
        assert_eq!((api.number_of_devices)(), 2);
        assert_eq!((api.is_valid_binary_info)(image.ptr(), &info), 1);
        assert_eq!((api.init_requires)(1), 1);
        let table = (api.load_binary)(0, image.ptr());
        let entries = target_entries(table);
        assert_eq!(entries.len(), 4);
        let k = CallKernel::new(0, table);
        // Pointer stored in mapped memory: the kernel translates it to the device's own copy,
        // which the target table reports too (following the indirection, as LLVM 18+ does).
        let (translated, result) = k.run(sq());
        assert_eq!(result, 1049, "the device copy (x*x + 1000) must run");
        assert_eq!(translated, entries[0].addr);
        assert_ne!(translated, sq());
        let (translated, result) = k.run(tw());
        assert_eq!((translated, result), (entries[1].addr, 1014));
        // A host function that is not indirect, and null-free data pointers, pass unchanged.
        let (translated, result) = k.run(host_not_indirect as *mut c_void);
        assert_eq!((translated, result), (host_not_indirect as *mut c_void, 14));
        drop(k);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
    }
}

#[test]
fn kernels_take_any_number_of_pointer_arguments_with_offsets() {
    let _g = fresh();
    let api = api();
    let image = indirect_image();
    // SAFETY: valid image; buffers sized for the kernel.
    unsafe {
        let table = (api.load_binary)(0, image.ptr());
        let many = target_entries(table)[3].addr;
        let mut values: Vec<i32> = (1..=11).collect();
        let mut out = 0i32;
        let mut args: Vec<*mut c_void> = vec![(&mut out as *mut i32).cast()];
        args.extend(values.iter_mut().map(|v| (v as *mut i32).cast::<c_void>()));
        let offsets = vec![0isize; args.len()];
        let ka = kernel_args(args.len() as u32, 3, 1);
        let rc = (api.launch_kernel)(0, many, args.as_ptr(), offsets.as_ptr(), &ka, std::ptr::null_mut());
        assert_eq!(rc, OFFLOAD_SUCCESS);
        assert_eq!(out, 1 + 66, "dyn_ptr null plus 1..=11");
        // Offsets are applied: point every argument one int before its target.
        let shifted: Vec<*mut c_void> = args.iter().map(|p| p.cast::<i32>().wrapping_sub(1).cast()).collect();
        let offsets = vec![4isize; args.len()];
        out = 0;
        let rc = (api.launch_kernel)(0, many, shifted.as_ptr(), offsets.as_ptr(), &ka, std::ptr::null_mut());
        assert_eq!((rc, out), (OFFLOAD_SUCCESS, 67));
        // Bad launches fail cleanly.
        let rc = (api.launch_kernel)(
            0,
            std::ptr::null_mut(),
            args.as_ptr(),
            offsets.as_ptr(),
            &ka,
            std::ptr::null_mut(),
        );
        assert_eq!(rc, OFFLOAD_FAIL);
        let rc = (api.launch_kernel)(0, many, std::ptr::null(), std::ptr::null(), &ka, std::ptr::null_mut());
        assert_eq!(rc, OFFLOAD_FAIL);
        let rc = (api.launch_kernel)(
            0,
            many,
            args.as_ptr(),
            offsets.as_ptr(),
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        assert_eq!(rc, OFFLOAD_FAIL);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
    }
}

#[test]
fn set_function_ptr_map_rejects_bad_input_and_keeps_the_previous_map() {
    let _g = fresh();
    let api = api();
    let image = indirect_image();
    // SAFETY: valid image; tables are live slices or deliberately bad pointers the plugin must
    // not dereference (null).
    unsafe {
        let table = (api.load_binary)(0, image.ptr());
        let dev = target_entries(table);
        let (dev_square, dev_twice) = (dev[0].addr as u64, dev[1].addr as u64);
        let k = CallKernel::new(0, table);
        let e = |h: *mut c_void, t: u64| FptrMapEntry { host_ptr: h as u64, tgt_ptr: t };
        // Re-set: square now goes to the device's twice.
        let mut swapped = vec![e(sq(), dev_twice), e(tw(), dev_square)];
        swapped.sort();
        assert_eq!((api.set_function_ptr_map)(0, 2, swapped.as_ptr()), OFFLOAD_SUCCESS);
        assert_eq!(k.run(sq()).1, 1014);

        let mut unsorted = swapped.clone();
        unsorted.reverse();
        let conflicting = [e(sq(), dev_square), e(sq(), dev_twice)];
        let bad: [(&str, i32, u64, *const FptrMapEntry); 6] = [
            ("device -1", -1, 2, swapped.as_ptr()),
            ("device 2", 2, 2, swapped.as_ptr()),
            ("null table with size", 0, 2, std::ptr::null()),
            ("unsorted", 0, 2, unsorted.as_ptr()),
            ("conflicting twins", 0, 2, conflicting.as_ptr()),
            ("absurd size", 0, u64::MAX, swapped.as_ptr()),
        ];
        for (what, device, size, ptr) in bad {
            assert_eq!((api.set_function_ptr_map)(device, size, ptr), OFFLOAD_FAIL, "{what}");
            assert_eq!(k.run(sq()).1, 1014, "{what} changed the installed map");
        }
        // Identical twins collapse.
        let twins = [e(sq(), dev_square), e(sq(), dev_square), e(tw(), dev_twice)];
        let mut twins = twins.to_vec();
        twins.sort();
        assert_eq!((api.set_function_ptr_map)(0, 3, twins.as_ptr()), OFFLOAD_SUCCESS);
        assert_eq!(k.run(sq()), (dev_square as *mut c_void, 1049));
        // Size 0 clears: pointers pass through untranslated (the host copy runs).
        assert_eq!((api.set_function_ptr_map)(0, 0, std::ptr::null()), OFFLOAD_SUCCESS);
        assert_eq!(k.run(sq()), (sq(), 49));
        drop(k);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_FAIL, "unloading twice");
    }
}

#[test]
fn devices_keep_their_own_images_and_maps() {
    let _g = fresh();
    let api = api();
    let on0 = indirect_image();
    let on1 = indirect_image();
    let plain = OffloadImage::new(
        compile_image("plain", false),
        &[(&0u8 as *const u8 as *mut c_void, "__omp_offloading_plain_kernel", 0, 0)],
    );
    // SAFETY: valid images.
    unsafe {
        let t0 = (api.load_binary)(0, on0.ptr());
        let t1 = (api.load_binary)(1, on1.ptr());
        // An image without the map globals loads next to them, and is skipped when patching.
        assert!(!(api.load_binary)(0, plain.ptr()).is_null());
        let (k0, k1) = (CallKernel::new(0, t0), CallKernel::new(1, t1));
        let (a, b) = (k0.run(sq()), k1.run(sq()));
        assert_eq!((a.1, b.1), (1049, 1049));
        assert_eq!(a.0, target_entries(t0)[0].addr);
        assert_eq!(b.0, target_entries(t1)[0].addr);
        assert_ne!(a.0, b.0, "each device runs its own copy");
        // Clearing device 1's map leaves device 0's alone.
        assert_eq!((api.set_function_ptr_map)(1, 0, std::ptr::null()), OFFLOAD_SUCCESS);
        assert_eq!(k1.run(sq()).1, 49);
        assert_eq!(k0.run(sq()).1, 1049);
        drop((k0, k1));
    }
}

#[test]
fn bad_images_are_refused_and_change_nothing() {
    let _g = fresh();
    let api = api();
    let good = indirect_image();
    // SAFETY: valid and deliberately malformed image descriptors with live storage.
    unsafe {
        let table = (api.load_binary)(0, good.ptr());
        let k = CallKernel::new(0, table);
        let info = TgtImageInfo { arch: c"".as_ptr() };
        let garbage = OffloadImage::new(b"not an ELF file at all, just bytes".to_vec(), &[]);
        assert_eq!((api.is_valid_binary_info)(garbage.ptr(), &info), 0);
        assert!((api.load_binary)(0, garbage.ptr()).is_null());
        assert!((api.load_binary)(0, std::ptr::null()).is_null());
        assert!((api.load_binary)(5, good.ptr()).is_null());
        // A wrong-size map global: refused at load, since installing the map would patch it.
        let wrong = OffloadImage::new(
            compile_image("wrong_size", false),
            &[(&0u8 as *const u8 as *mut c_void, "__omp_offloading_wrong_kernel", 0, 0)],
        );
        assert_eq!((api.is_valid_binary_info)(wrong.ptr(), &info), 1);
        assert!((api.load_binary)(0, wrong.ptr()).is_null());
        // An entry naming a symbol the image lacks.
        let missing =
            OffloadImage::new(compile_indirect().clone(), &[(sq(), "__omp_offloading_no_such_symbol", 8, 8)]);
        assert!((api.load_binary)(0, missing.ptr()).is_null());
        // A truncated entry table (not a whole number of entries).
        let mut truncated = indirect_image();
        truncated.desc.entries_end = (truncated.desc.entries_end as *mut u8).wrapping_sub(4).cast();
        assert!((api.load_binary)(0, truncated.ptr()).is_null());
        // The same image again on one device (libomptarget 16 asks twice when two threads' first
        // launches meet a registration): its table, not a second copy.
        assert_eq!((api.load_binary)(0, good.ptr()), table);
        assert_eq!(k.run(sq()).1, 1049, "the good image's map survived every refusal");
        // The image wrapped in an OffloadBinary, as libomptarget passes clang's images.
        let wrapped = indirect_image_from(host_table::image::wrap(
            compile_indirect(),
            &[("triple", "x86_64-pc-linux-gnu"), ("arch", "")],
        ));
        assert_eq!((api.is_valid_binary_info)(wrapped.ptr(), &info), 1);
        let wrapped_for_gpu = indirect_image_from(host_table::image::wrap(
            compile_indirect(),
            &[("triple", "nvptx64-nvidia-cuda")],
        ));
        assert_eq!((api.is_valid_binary_info)(wrapped_for_gpu.ptr(), &info), 0);
        let t1 = (api.load_binary)(1, wrapped.ptr());
        let k1 = CallKernel::new(1, t1);
        assert_eq!(k1.run(sq()).1, 1049);
        drop((k, k1));
    }
}

#[test]
fn concurrent_calls_are_safe() {
    let _g = fresh();
    let api = api();
    let images = [indirect_image(), indirect_image()];
    let tables: Vec<usize> = images
        .iter()
        .enumerate()
        .map(|(d, i)| {
            // SAFETY: valid images, one per device.
            unsafe { (api.load_binary)(d as i32, i.ptr()) as usize }
        })
        .collect();
    std::thread::scope(|s| {
        for (device, &table) in tables.iter().enumerate() {
            s.spawn(move || {
                let table = table as *mut TgtTargetTable;
                let dev = target_entries(table);
                let k = CallKernel::new(device as i32, table);
                let e =
                    |h: *mut c_void, t: *mut c_void| FptrMapEntry { host_ptr: h as u64, tgt_ptr: t as u64 };
                for round in 0..200 {
                    let mut t = if round % 2 == 0 {
                        vec![e(sq(), dev[0].addr), e(tw(), dev[1].addr)]
                    } else {
                        vec![e(sq(), dev[1].addr), e(tw(), dev[0].addr)]
                    };
                    t.sort();
                    // SAFETY: a live sorted table.
                    let rc = unsafe { (api.set_function_ptr_map)(device as i32, 2, t.as_ptr()) };
                    assert_eq!(rc, OFFLOAD_SUCCESS);
                    assert_eq!(k.run(sq()).1, if round % 2 == 0 { 1049 } else { 1014 });
                }
            });
        }
    });
}

#[test]
fn deinit_plugin_releases_everything() {
    let _g = fresh();
    let api = api();
    let image = indirect_image();
    // SAFETY: valid image.
    unsafe {
        assert!(!(api.load_binary)(0, image.ptr()).is_null());
        assert!(!(api.load_binary)(1, image.ptr()).is_null());
        assert_eq!((api.deinit_plugin)(), OFFLOAD_SUCCESS);
        // Everything was unloaded: the same image loads again.
        assert!(!(api.load_binary)(0, image.ptr()).is_null());
        assert_eq!((api.deinit_plugin)(), OFFLOAD_SUCCESS);
    }
}

/// Set by [`failures_print_one_error_line_each_and_info_adds_the_map_summary`] for the child
/// process it starts.
const INFO_CHILD: &str = "C_ABI_INFO_CHILD";

/// In the child process only (a no-op otherwise): failing calls whose diagnostics the parent
/// reads. `LIBOMPTARGET_INFO` is read once per process, hence the separate process.
#[test]
fn info_child_makes_failing_calls() {
    if std::env::var_os(INFO_CHILD).is_none() {
        return;
    }
    let _g = fresh();
    let api = api();
    let image = indirect_image();
    let e = |h: u64, t: u64| FptrMapEntry { host_ptr: h, tgt_ptr: t };
    let unsorted = [e(0x2000, 1), e(0x1000, 2)];
    // SAFETY: a valid image; live tables; a null table the plugin must refuse without reading.
    unsafe {
        assert!(!(api.load_binary)(0, image.ptr()).is_null());
        assert_eq!((api.set_function_ptr_map)(0, 2, unsorted.as_ptr()), OFFLOAD_FAIL);
        assert_eq!((api.set_function_ptr_map)(7, 0, std::ptr::null()), OFFLOAD_FAIL);
        assert_eq!((api.set_function_ptr_map)(1, 3, std::ptr::null()), OFFLOAD_FAIL);
        assert!((api.load_binary)(0, std::ptr::null()).is_null());
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
    }
}

#[test]
fn failures_print_one_error_line_each_and_info_adds_the_map_summary() {
    let run_child = |info: Option<&str>| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "info_child_makes_failing_calls", "--nocapture", "--test-threads=1"])
            .env(INFO_CHILD, "1")
            .env_remove("LIBOMPTARGET_INFO");
        if let Some(value) = info {
            cmd.env("LIBOMPTARGET_INFO", value);
        }
        let out = cmd.output().expect("cannot start the child test");
        assert!(out.status.success(), "child failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stderr)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("omptarget-indirect"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let errors = [
        "omptarget-indirect (x86_64) error: __tgt_rtl_set_function_ptr_map(device 0): invalid \
         function-pointer table: not sorted by host_ptr: entry 1 (0x1000) comes after entry 0 (0x2000)",
        "omptarget-indirect (x86_64) error: __tgt_rtl_set_function_ptr_map(device 7): invalid device id 7",
        "omptarget-indirect (x86_64) error: __tgt_rtl_set_function_ptr_map(device 1): invalid argument: \
         null table with size 3",
        "omptarget-indirect (x86_64) error: __tgt_rtl_load_binary(device 0): invalid argument: null device \
         image",
    ];
    // By default, and with LIBOMPTARGET_INFO=0: the error lines and nothing else.
    assert_eq!(run_child(None), errors);
    assert_eq!(run_child(Some("0")), errors);
    // With LIBOMPTARGET_INFO (any non-zero value): the same, plus the summary of each installed map
    // (the load installs the image's 2 indirect functions, the unload clears them).
    let summary = "omptarget-indirect (x86_64) info: device 0: 2 indirect functions, 0 vtables (0 words), table 32 B, index ";
    for value in ["1", "-1"] {
        let lines = run_child(Some(value));
        let version = format!(
            "omptarget-indirect (x86_64) info: omptarget-indirect {}, 2 devices",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(lines[0], version, "the plugin reports its version first");
        let lines = &lines[1..];
        assert!(lines[0].starts_with(summary), "{lines:?}");
        assert!(lines[0].contains(" longest probe "), "{lines:?}");
        assert_eq!(lines[1..], errors, "LIBOMPTARGET_INFO={value}");
    }
}

/// Reads `N` bytes of device memory at `addr`.
fn read_device<const N: usize>(device: i32, addr: u64) -> [u8; N] {
    let mut bytes = [0u8; N];
    // SAFETY: `addr` is a device global or allocation of at least N bytes.
    let rc =
        unsafe { (api().data_retrieve)(device, bytes.as_mut_ptr().cast(), addr as *mut c_void, N as i64) };
    assert_eq!(rc, OFFLOAD_SUCCESS);
    bytes
}

fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[8 * at..8 * at + 8].try_into().unwrap())
}

#[test]
fn installed_tables_carry_a_hash_index_that_names_them() {
    let _g = fresh();
    let api = api();
    // The indirect image, plus its map globals as plain global entries so that the target
    // table reports their device addresses.
    static MAP_P: u64 = 0;
    static INDEX: [u64; 6] = [0; 6];
    let image = indirect_image_with(
        compile_indirect().clone(),
        &[
            (&MAP_P as *const u64 as *mut c_void, "__omp_offloading_fptr_map_p", 8, 0),
            (&INDEX as *const [u64; 6] as *mut c_void, "__omp_offloading_fptr_index", 48, 0),
        ],
    );
    // SAFETY: valid image; the table stays loaded while its entries are read.
    unsafe {
        let table = (api.load_binary)(0, image.ptr());
        let entries = target_entries(table);
        let (map_p, index) = (entries[4].addr as u64, entries[5].addr as u64);
        let mut installed = [(sq() as u64, entries[0].addr as u64), (tw() as u64, entries[1].addr as u64)];
        installed.sort();
        let check = |pairs: &[(u64, u64)]| {
            let table = word(&read_device::<8>(0, map_p), 0);
            let header = read_device::<48>(0, index);
            assert_ne!(table, 0);
            assert_eq!(word(&header, 0), table, "the index names the installed table");
            let slots = word(&header, 1);
            assert!(slots != 0 && slots % 16 == 0, "slots at {slots:#x}");
            assert_eq!((word(&header, 3), word(&header, 4)), (pairs[0].0, pairs[pairs.len() - 1].0));
            let shift = u32::from_le_bytes(header[40..44].try_into().unwrap());
            assert!((1..=31).contains(&shift));
            let capacity = 1usize << (32 - shift);
            assert!(capacity >= 2 * pairs.len(), "at most half full");
            // Every pair sits in some slot (the device finds them: the kernels above). The slots
            // are the plugin's own memory, which data_retrieve refuses to read; on host offload
            // device memory is this process's, so they are read in place.
            let mut found = Vec::new();
            for at in 0..capacity {
                let slot = std::ptr::read((slots as *const [u64; 2]).add(at));
                if slot[0] != 0 {
                    found.push((slot[0], slot[1]));
                }
            }
            let mut one = [0u8; 16];
            assert_eq!(
                (api.data_retrieve)(0, one.as_mut_ptr().cast(), slots as *mut c_void, 16),
                OFFLOAD_FAIL,
                "the plugin's own memory is not libomptarget's to copy"
            );
            found.sort();
            assert_eq!(found, pairs);
        };
        // The image's two functions: a table this small is scanned on the x86_64 device, with
        // no index (`HOST_DEVICE_MIN_INDEXED_KEYS`).
        assert_ne!(word(&read_device::<8>(0, map_p), 0), 0, "the table is installed");
        assert_eq!(read_device::<48>(0, index), [0u8; 48], "two keys: no index");
        let k = CallKernel::new(0, table);
        assert_eq!(k.run(sq()).1, 1049);
        // Four keys (two more, past the image's): a table with an index that names it.
        let e = |(h, t): (u64, u64)| FptrMapEntry { host_ptr: h, tgt_ptr: t };
        let last = installed[1].0;
        let mut four =
            vec![installed[0], installed[1], (last + 16, installed[0].1), (last + 32, installed[1].1)];
        four.sort();
        let entries: Vec<FptrMapEntry> = four.iter().copied().map(e).collect();
        assert_eq!((api.set_function_ptr_map)(0, 4, entries.as_ptr()), OFFLOAD_SUCCESS);
        check(&four);
        assert_eq!(k.run(sq()).1, 1049);
        // Re-set: a new table and a new index that names it.
        let mut swapped = four.clone();
        swapped[0].1 = four[1].1;
        swapped[1].1 = four[0].1;
        let entries: Vec<FptrMapEntry> = swapped.iter().copied().map(e).collect();
        assert_eq!((api.set_function_ptr_map)(0, 4, entries.as_ptr()), OFFLOAD_SUCCESS);
        check(&swapped);
        assert_eq!(k.run(sq()).1, 1014);
        // Cleared: the header is all zero again.
        assert_eq!((api.set_function_ptr_map)(0, 0, std::ptr::null()), OFFLOAD_SUCCESS);
        assert_eq!(read_device::<48>(0, index), [0u8; 48]);
        assert_eq!(k.run(sq()), (sq(), 49));
        drop(k);
        assert_eq!((api.unload_binary)(0, image.ptr()), OFFLOAD_SUCCESS);
    }
}
