//! Test 2 of the bundle: the installed `libomptarget.rtl.cuda.so` through its C ABI, in
//! libomptarget's call order, on GPU 0. Two copies of a clang 19 sm_90 image with two indirect
//! functions are loaded; the map installed at load, a re-set, bad input (refused, previous map
//! kept) and unload are checked by launching the image's own kernel through
//! `__tgt_rtl_launch_kernel` and by reading both globals back; device memory is compared with
//! `cuMemGetInfo` before and after.

use std::ffi::c_void;
use std::path::Path;

use plugin_core::abi::{
    FptrMapEntry, TgtImageInfo, TgtTargetTable, FPTR_MAP_P, FPTR_MAP_SIZE, OFFLOAD_FAIL, OFFLOAD_SUCCESS,
};
use plugin_test_support::random::sorted_pairs;
use plugin_test_support::{kernel_args, target_entries, Api, OffloadImage};

use crate::cuda::{Gpu, Result};

/// Keys per launch of the probe kernel (`N` in probe.c).
const PROBE_KEYS: usize = 16;
/// Re-sets of a 1M-entry (16 MiB) table in the leak check.
const RESETS: usize = 40;
/// cuMemGetInfo's granularity: differences below this are not leaks.
const SLACK: usize = 4 << 20;

// Host versions of the image's indirect functions: what the host program's pointers point to.
extern "C" fn host_square(x: i32) -> i32 {
    x * x
}
extern "C" fn host_twice(x: i32) -> i32 {
    2 * x
}

/// The image's symbols, from `images/probe.entries` (written when the bundle was built: clang
/// puts a per-file id in every name).
struct Manifest {
    indirect: Vec<String>,
    kernel: String,
}

fn manifest(bundle: &Path) -> Result<Manifest> {
    let path = bundle.join("images/probe.entries");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut indirect = Vec::new();
    let mut kernel = None;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("indirect", name)) => indirect.push(name.to_string()),
            Some(("kernel", name)) => kernel = Some(name.to_string()),
            _ => return Err(format!("{}: bad line {line:?}", path.display())),
        }
    }
    let kernel = kernel.ok_or("no kernel in the manifest")?;
    if indirect.len() != 2 {
        return Err(format!("expected 2 indirect functions in the manifest, found {}", indirect.len()));
    }
    Ok(Manifest { indirect, kernel })
}

/// Entries as clang 19 emits them on the host (`probe_square`, `probe_twice` sort by name the
/// same way as in probe.c), plus the two globals so that the test can read them back.
fn image(bytes: &[u8], m: &Manifest) -> Box<OffloadImage> {
    static KERNEL_ID: u8 = 0;
    static MAP_P_HOST: u64 = 0;
    static MAP_SIZE_HOST: u64 = 0;
    let addr = |r: &'static u64| r as *const u64 as *mut c_void;
    OffloadImage::new(
        bytes.to_vec(),
        &[
            (host_square as *mut c_void, &m.indirect[0], 8, 8),
            (host_twice as *mut c_void, &m.indirect[1], 8, 8),
            (&KERNEL_ID as *const u8 as *mut c_void, &m.kernel, 0, 0),
            (addr(&MAP_P_HOST), FPTR_MAP_P, 8, 0),
            (addr(&MAP_SIZE_HOST), FPTR_MAP_SIZE, 8, 0),
        ],
    )
}

/// A loaded image: its device entries in the host entries' order.
struct Loaded {
    square: u64,
    twice: u64,
    kernel: *mut c_void,
    map_p: *mut c_void,
    map_size: *mut c_void,
}

fn loaded(table: *mut TgtTargetTable) -> Result<Loaded> {
    // SAFETY: a table load_binary just returned (or null, refused).
    let entries = unsafe { target_entries(table) }.ok_or("load_binary failed")?;
    if entries.len() != 5 {
        return Err(format!("load_binary returned {} entries, expected 5", entries.len()));
    }
    Ok(Loaded {
        square: entries[0].addr as u64,
        twice: entries[1].addr as u64,
        kernel: entries[2].addr,
        map_p: entries[3].addr,
        map_size: entries[4].addr,
    })
}

fn check(rc: i32, what: &str) -> Result<()> {
    if rc == OFFLOAD_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} returned {rc}"))
    }
}

struct Session<'a> {
    api: &'a Api,
    buf: *mut c_void,
}

impl Session<'_> {
    /// Launches the image's kernel on `keys` (device 0) and returns the translations.
    fn translate(&self, image: &Loaded, keys: &[u64]) -> Result<Vec<u64>> {
        let mut buf = [0u64; 2 * PROBE_KEYS];
        buf[..keys.len()].copy_from_slice(keys);
        let api = self.api;
        // SAFETY: `buf` is a 256-byte device allocation; the kernel takes one pointer argument.
        unsafe {
            check((api.data_submit)(0, self.buf, buf.as_ptr().cast(), 256), "data_submit")?;
            let args = [self.buf];
            let offsets = [0isize];
            let launch = kernel_args(1, 3, 0);
            check(
                (api.launch_kernel)(
                    0,
                    image.kernel,
                    args.as_ptr(),
                    offsets.as_ptr(),
                    &launch,
                    std::ptr::null_mut(),
                ),
                "launch_kernel",
            )?;
            check((api.data_retrieve)(0, buf.as_mut_ptr().cast(), self.buf, 256), "data_retrieve")?;
        }
        Ok(buf[PROBE_KEYS..PROBE_KEYS + keys.len()].to_vec())
    }

    /// The two globals of `image`: (table pointer, size).
    fn globals(&self, image: &Loaded) -> Result<(u64, u64)> {
        let (mut p, mut n) = (0u64, 0u64);
        // SAFETY: 8-byte device globals and 8-byte host destinations.
        unsafe {
            check((self.api.data_retrieve)(0, (&mut p as *mut u64).cast(), image.map_p, 8), "data_retrieve")?;
            check(
                (self.api.data_retrieve)(0, (&mut n as *mut u64).cast(), image.map_size, 8),
                "data_retrieve",
            )?;
        }
        Ok((p, n))
    }

    /// The table the globals of `image` point to.
    fn installed(&self, image: &Loaded) -> Result<Vec<FptrMapEntry>> {
        let (p, n) = self.globals(image)?;
        let mut table = vec![FptrMapEntry::default(); n as usize];
        if n > 0 {
            // SAFETY: the plugin's table of n entries; destination sized to match.
            check(
                unsafe {
                    (self.api.data_retrieve)(0, table.as_mut_ptr().cast(), p as *mut c_void, 16 * n as i64)
                },
                "data_retrieve",
            )?;
        }
        Ok(table)
    }
}

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Runs the whole sequence; returns the report's lines.
pub fn run(gpu: &Gpu, bundle: &Path) -> Result<Vec<String>> {
    let plugin = bundle.join("lib/libomptarget.rtl.cuda.so");
    let api = Api::load(&plugin)?;
    let m = manifest(bundle)?;
    let cubin_path = bundle.join("images/probe.sm_90.cubin");
    let bytes =
        std::fs::read(&cubin_path).map_err(|e| format!("cannot read {}: {e}", cubin_path.display()))?;
    let (first, second) = (image(&bytes, &m), image(&bytes, &m));
    let mut report = Vec::new();
    let (free_before, _) = gpu.memory()?;
    let (sq, tw) = (host_square as usize as u64, host_twice as usize as u64);
    // SAFETY: the plugin's C ABI with live images, tables and buffers throughout.
    unsafe {
        check((api.init_plugin)(), "init_plugin")?;
        let devices = (api.number_of_devices)();
        ensure(devices >= 1, || format!("number_of_devices = {devices}"))?;
        let info = TgtImageInfo { arch: c"sm_90".as_ptr() };
        let valid = (api.is_valid_binary_info)(first.ptr(), &info);
        ensure(valid == 1, || format!("is_valid_binary_info = {valid} for an sm_90 cubin on sm_{}", gpu.sm))?;
        ensure((api.init_requires)(1) == 1, || "init_requires".into())?;
        check((api.init_device)(0), "init_device")?;
        let a = loaded((api.load_binary)(0, first.ptr()))?;
        let b = loaded((api.load_binary)(0, second.ptr()))?;
        let buf = (api.data_alloc)(0, 256, std::ptr::null_mut(), 0);
        ensure(!buf.is_null(), || "data_alloc failed".into())?;
        let s = Session { api: &api, buf };

        // The map installed at load: each image's own device functions, in both images' globals.
        let unknown = 0x1234_5670;
        for (image, name) in [(&a, "first"), (&b, "second")] {
            let got = s.translate(image, &[sq, tw, unknown, 0])?;
            ensure(got == [image.square, image.twice, unknown, 0], || {
                format!(
                    "{name} image at load: translated {got:x?}, expected [{:x}, {:x}, {unknown:x}, 0]",
                    image.square, image.twice
                )
            })?;
            ensure(image.square != sq && image.square != 0, || {
                "target table holds no device address".into()
            })?;
        }
        report.push(format!(
            "load: 2 images, each translates its indirect functions to its own copy ({:#x}, {:#x} / {:#x}, {:#x})",
            a.square, a.twice, b.square, b.twice
        ));

        // Re-set with a large random table holding the two functions, swapped: every loaded
        // image gets it, and the installed bytes are exactly the sorted input.
        let mut table = sorted_pairs(1000, 77);
        table.retain(|e| e.host_ptr != sq && e.host_ptr != tw);
        table.extend([
            FptrMapEntry { host_ptr: sq, tgt_ptr: a.twice },
            FptrMapEntry { host_ptr: tw, tgt_ptr: a.square },
        ]);
        table.sort();
        check((api.set_function_ptr_map)(0, table.len() as u64, table.as_ptr()), "set_function_ptr_map")?;
        for (image, name) in [(&a, "first"), (&b, "second")] {
            ensure(s.installed(image)? == table, || {
                format!("{name} image: installed table differs from the input")
            })?;
            let got = s.translate(image, &[sq, tw, table[0].host_ptr, table[0].host_ptr + 16])?;
            let want = [a.twice, a.square, table[0].tgt_ptr, table[0].host_ptr + 16];
            ensure(got == want, || format!("{name} image after re-set: {got:x?}, expected {want:x?}"))?;
        }
        let globals = s.globals(&a)?;
        ensure(globals == s.globals(&b)?, || "the two images point to different tables".into())?;
        report.push(format!("re-set: {} entries installed in both images, translations follow", table.len()));

        // Bad input: refused, and the installed map is untouched.
        let mut unsorted = table.clone();
        unsorted.swap(0, 1);
        let conflicting =
            [FptrMapEntry { host_ptr: sq, tgt_ptr: 1 }, FptrMapEntry { host_ptr: sq, tgt_ptr: 2 }];
        let bad: [(&str, i32, u64, *const FptrMapEntry); 6] = [
            ("device -1", -1, 2, table.as_ptr()),
            ("device past the last", devices, 2, table.as_ptr()),
            ("null table with size 2", 0, 2, std::ptr::null()),
            ("unsorted", 0, unsorted.len() as u64, unsorted.as_ptr()),
            ("one key, two values", 0, 2, conflicting.as_ptr()),
            ("absurd size", 0, u64::MAX, table.as_ptr()),
        ];
        for (what, device, size, ptr) in bad {
            let rc = (api.set_function_ptr_map)(device, size, ptr);
            ensure(rc == OFFLOAD_FAIL, || format!("{what}: set_function_ptr_map returned {rc}"))?;
            ensure(s.globals(&a)? == globals, || format!("{what} changed the globals"))?;
            ensure(s.translate(&a, &[sq])? == [a.twice], || format!("{what} changed the translation"))?;
        }
        report.push(format!("bad input: {} kinds refused with OFFLOAD_FAIL, map unchanged", bad.len()));

        // Leak check: many re-sets of a 1M-entry table, each freeing the previous one.
        let big = sorted_pairs(1 << 20, 99);
        let (free_loaded, _) = gpu.memory()?;
        for _ in 0..RESETS {
            check((api.set_function_ptr_map)(0, big.len() as u64, big.as_ptr()), "set_function_ptr_map 1M")?;
        }
        let (free_resets, _) = gpu.memory()?;
        let lost = free_loaded.saturating_sub(free_resets);
        ensure(lost <= (16 << 20) + SLACK, || {
            format!("{RESETS} re-sets of a 16 MiB table lost {:.1} MiB of device memory", mib(lost))
        })?;
        ensure(s.installed(&b)? == big, || "the 1M table was not installed exactly".into())?;
        report.push(format!(
            "{RESETS} re-sets of 1M entries (16 MiB each): device memory down {:.1} MiB (one table)",
            mib(lost)
        ));

        // Empty map, unload, deinit: all device memory comes back.
        check((api.set_function_ptr_map)(0, 0, std::ptr::null()), "set_function_ptr_map 0")?;
        ensure(s.globals(&a)? == (0, 0), || "an empty map left the globals set".into())?;
        check((api.data_delete)(0, buf, 0), "data_delete")?;
        check((api.unload_binary)(0, first.ptr()), "unload_binary")?;
        check((api.unload_binary)(0, second.ptr()), "unload_binary")?;
        ensure((api.unload_binary)(0, first.ptr()) == OFFLOAD_FAIL, || "unloading twice succeeded".into())?;
        check((api.deinit_device)(0), "deinit_device")?;
        check((api.deinit_plugin)(), "deinit_plugin")?;
    }
    let (free_after, _) = gpu.memory()?;
    let lost = free_before.saturating_sub(free_after);
    ensure(lost <= SLACK, || {
        format!(
            "device memory: {:.1} MiB free before, {:.1} MiB after deinit",
            mib(free_before),
            mib(free_after)
        )
    })?;
    report.push(format!(
        "deinit: cuMemGetInfo free {:.1} MiB before load, {:.1} MiB after unload/deinit",
        mib(free_before),
        mib(free_after)
    ));
    Ok(report)
}
