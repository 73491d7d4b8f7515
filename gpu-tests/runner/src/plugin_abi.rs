//! Test 2 of the bundle: the installed `libomptarget.rtl.cuda.so` through its C ABI, in
//! libomptarget's call order, on GPU 0. Two distinct clang 19 sm_90 images (`probe.c` built twice,
//! each with two indirect functions of its own) are loaded; the combined map installed at load, a
//! third load that would map the first image's host functions a second time (refused, as the
//! plugin documents conflicting duplicates), a re-set, bad input (refused, previous map kept) and
//! unload are checked by launching each image's own kernel through `__tgt_rtl_launch_kernel` and
//! by reading the globals back; device memory is compared with `cuMemGetInfo` before and after.

use std::ffi::c_void;
use std::path::Path;

use host_table::fptr_map::{FptrTable, HashIndex};
use host_table::rtl_interface::{
    FptrMapEntry, TgtImageInfo, TgtTargetTable, FPTR_MAP_P, FPTR_MAP_SIZE, OFFLOAD_FAIL, OFFLOAD_SUCCESS,
};
use plugin_test_support::random::sorted_pairs;
use plugin_test_support::{kernel_args, target_entries, Api, OffloadImage};

use crate::cuda::{Gpu, Result};

/// Keys per launch of the probe kernel (`N` in probe.c).
const PROBE_KEYS: usize = 16;
/// Re-sets of a 1M-entry (16 MiB) table in the leak check.
const RESETS: usize = 40;
/// The granularity of device allocations as `cuMemGetInfo` sees them: every allocation costs a
/// whole number of these, and the driver may keep one more for its own bookkeeping.
const GRANULE: usize = 2 << 20;

// Host versions of the images' indirect functions: what the host program's pointers point to.
extern "C" fn host_square(x: i32) -> i32 {
    x * x
}
extern "C" fn host_twice(x: i32) -> i32 {
    2 * x
}
extern "C" fn host_cube(x: i32) -> i32 {
    x * x * x
}
extern "C" fn host_thrice(x: i32) -> i32 {
    3 * x
}

/// The device memory the plugin keeps for an installed table of `entries`: the table and its
/// hash index, each rounded up to whole granules.
fn kept_for(entries: &[FptrMapEntry]) -> Result<usize> {
    let table = FptrTable::from_sorted(entries).map_err(|e| e.to_string())?;
    let index_bytes = HashIndex::capacity(&table).unwrap_or(0) * 16;
    Ok([entries.len() * 16, index_bytes].iter().map(|b| b.div_ceil(GRANULE) * GRANULE).sum())
}

/// The image's symbols, from `images/probe.entries` (written when the bundle was built: clang
/// puts a per-file id in every name).
struct Manifest {
    indirect: Vec<String>,
    kernel: String,
}

fn manifest(bundle: &Path, image: &str) -> Result<Manifest> {
    let path = bundle.join(format!("images/{image}.entries"));
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

/// Entries as clang 19 emits them on the host for `hosts` (the two functions in the order
/// their device names sort: `probe_square`, `probe_twice` / `probe_cube`, `probe_thrice`), plus
/// the two globals so that the test can read them back.
fn image(bytes: &[u8], m: &Manifest, hosts: [extern "C" fn(i32) -> i32; 2]) -> Box<OffloadImage> {
    static KERNEL_ID: u8 = 0;
    static MAP_P_HOST: u64 = 0;
    static MAP_SIZE_HOST: u64 = 0;
    let addr = |r: &'static u64| r as *const u64 as *mut c_void;
    OffloadImage::new(
        bytes.to_vec(),
        &[
            (hosts[0] as *mut c_void, &m.indirect[0], 8, 8),
            (hosts[1] as *mut c_void, &m.indirect[1], 8, 8),
            (&KERNEL_ID as *const u8 as *mut c_void, &m.kernel, 0, 0),
            (addr(&MAP_P_HOST), FPTR_MAP_P, 8, 0),
            (addr(&MAP_SIZE_HOST), FPTR_MAP_SIZE, 8, 0),
        ],
    )
}

/// A loaded image: its device entries in the host entries' order.
struct Loaded {
    /// The device copies of its two indirect functions.
    first: u64,
    second: u64,
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
        first: entries[0].addr as u64,
        second: entries[1].addr as u64,
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
    gpu: &'a Gpu,
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

    /// The table the globals of `image` point to, read with the driver: it is the plugin's own
    /// memory, which its `data_retrieve` rightly refuses (not an allocation of libomptarget's).
    fn installed(&self, image: &Loaded) -> Result<Vec<FptrMapEntry>> {
        let (p, n) = self.globals(image)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.gpu.read(p, n as usize)
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

/// The host functions of the two images' indirect entries, as keys: (square, twice, cube,
/// thrice).
fn host_keys() -> [u64; 4] {
    [
        host_square as usize as u64,
        host_twice as usize as u64,
        host_cube as usize as u64,
        host_thrice as usize as u64,
    ]
}

/// Free device memory after each step, for the message if memory is lost.
struct Trace(Vec<(&'static str, usize)>);

impl Trace {
    fn mark(&mut self, gpu: &Gpu, label: &'static str) -> Result<()> {
        self.0.push((label, gpu.memory()?.0));
        Ok(())
    }

    fn steps(&self) -> String {
        self.0.iter().map(|(l, f)| format!("{l} {:.1}", mib(*f))).collect::<Vec<_>>().join(", ")
    }
}

/// Runs the whole sequence; returns the report's lines.
pub fn run(gpu: &Gpu, bundle: &Path) -> Result<Vec<String>> {
    let plugin = bundle.join("lib/libomptarget.rtl.cuda.so");
    let api = Api::load(&plugin)?;
    let read = |name: &str| {
        let path = bundle.join(format!("images/{name}.sm_90.cubin"));
        std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let (m1, m2) = (manifest(bundle, "probe")?, manifest(bundle, "probe_second")?);
    let (bytes1, bytes2) = (read("probe")?, read("probe_second")?);
    let first = image(&bytes1, &m1, [host_square, host_twice]);
    let second = image(&bytes2, &m2, [host_cube, host_thrice]);
    // The first image's code again, under a key of its own: its host functions a second time.
    let again = image(&bytes1, &m1, [host_square, host_twice]);
    let mut report = Vec::new();
    // The driver sets up a context's host and managed memory on first use and keeps what it took
    // (126 MiB on an H100): using them here first leaves the comparison below to the plugin.
    gpu.warm_up_host_memory()?;
    let (free_before, _) = gpu.memory()?;
    let mut trace = Trace(vec![("before", free_before)]);
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
        trace.mark(gpu, "init_device")?;
        let a = loaded((api.load_binary)(0, first.ptr()))?;
        let b = loaded((api.load_binary)(0, second.ptr()))?;
        trace.mark(gpu, "loads")?;
        let buf = (api.data_alloc)(0, 256, std::ptr::null_mut(), 0);
        ensure(!buf.is_null(), || "data_alloc failed".into())?;
        let s = Session { api: &api, gpu, buf };
        report.push(s.map_at_load(&a, &b)?);
        trace.mark(gpu, "launches")?;
        report.push(s.refused_load(&a, &b, &again)?);
        trace.mark(gpu, "refused load")?;
        let (table, line) = s.re_set(&a, &b)?;
        report.push(line);
        trace.mark(gpu, "re-set")?;
        report.push(s.bad_input(&a, &table, devices)?);
        trace.mark(gpu, "bad input")?;
        report.push(s.host_and_shared_memory()?);
        trace.mark(gpu, "host+shared")?;
        report.push(s.no_leak_over_re_sets(&b)?);
        trace.mark(gpu, "resets")?;
        // Empty map, unload, deinit: all device memory comes back.
        check((api.set_function_ptr_map)(0, 0, std::ptr::null()), "set_function_ptr_map 0")?;
        ensure(s.globals(&a)? == (0, 0), || "an empty map left the globals set".into())?;
        trace.mark(gpu, "empty map")?;
        check((api.data_delete)(0, buf, 0), "data_delete")?;
        trace.mark(gpu, "data_delete")?;
        check((api.unload_binary)(0, first.ptr()), "unload_binary")?;
        check((api.unload_binary)(0, second.ptr()), "unload_binary")?;
        trace.mark(gpu, "unloads")?;
        ensure((api.unload_binary)(0, first.ptr()) == OFFLOAD_FAIL, || "unloading twice succeeded".into())?;
        ensure((api.unload_binary)(0, again.ptr()) == OFFLOAD_FAIL, || "the refused image unloaded".into())?;
        check((api.deinit_device)(0), "deinit_device")?;
        trace.mark(gpu, "deinit_device")?;
        check((api.deinit_plugin)(), "deinit_plugin")?;
    }
    let (free_after, _) = gpu.memory()?;
    let lost = free_before.saturating_sub(free_after);
    ensure(lost <= GRANULE, || {
        format!(
            "device memory: {:.1} MiB free before, {:.1} MiB after deinit (free MiB: {})",
            mib(free_before),
            mib(free_after),
            trace.steps()
        )
    })?;
    report.push(format!(
        "deinit: cuMemGetInfo free {:.1} MiB before load, {:.1} MiB after unload/deinit",
        mib(free_before),
        mib(free_after)
    ));
    Ok(report)
}

impl Session<'_> {
    /// The keys every translation check launches with, and what images `a` and `b` must answer
    /// for them at load.
    fn keys_at_load(a: &Loaded, b: &Loaded) -> ([u64; 6], [u64; 6]) {
        let [sq, tw, cu, th] = host_keys();
        let unknown = 0x1234_5670;
        ([sq, tw, cu, th, unknown, 0], [a.first, a.second, b.first, b.second, unknown, 0])
    }

    /// The map installed at load holds both images' functions, each mapped to its own image's
    /// copy, and both images' globals point at it.
    ///
    /// # Safety
    /// `a` and `b` are images loaded on device 0.
    unsafe fn map_at_load(&self, a: &Loaded, b: &Loaded) -> Result<String> {
        let (keys, want) = Self::keys_at_load(a, b);
        for (image, name) in [(a, "first"), (b, "second")] {
            let got = self.translate(image, &keys)?;
            ensure(got == want, || format!("{name} image at load: translated {got:x?}, expected {want:x?}"))?;
        }
        let hosts = host_keys();
        ensure(
            [a.first, a.second, b.first, b.second].iter().all(|&d| d != 0 && !hosts.contains(&d)),
            || "a target table holds no device address".into(),
        )?;
        ensure(self.globals(a)? == self.globals(b)?, || "the two images point to different tables".into())?;
        Ok(format!(
            "load: 2 images, one map of 4 functions, each to its own image's copy ({:#x}, {:#x} / {:#x}, {:#x})",
            a.first, a.second, b.first, b.second
        ))
    }

    /// The first image's code once more: its host functions would map to two device copies,
    /// which the plugin refuses (docs/plugins.md), leaving the map as it was.
    ///
    /// # Safety
    /// As [`Session::map_at_load`]; `again` is a live image.
    unsafe fn refused_load(&self, a: &Loaded, b: &Loaded, again: &OffloadImage) -> Result<String> {
        let at_load = self.globals(a)?;
        let (keys, want) = Self::keys_at_load(a, b);
        // SAFETY: a live image (the caller's).
        let rc = unsafe { (self.api.load_binary)(0, again.ptr()) };
        ensure(rc.is_null(), || "loading the first image's host functions twice was accepted".into())?;
        ensure(self.globals(a)? == at_load, || "the refused load changed the globals".into())?;
        ensure(self.translate(b, &keys)? == want, || "the refused load changed the translations".into())?;
        Ok("a third load mapping the first image's functions again: refused, map unchanged".into())
    }

    /// Re-set with a large random table holding the four functions, permuted: every loaded image
    /// gets it, and the installed bytes are exactly the sorted input. Returns the table.
    ///
    /// # Safety
    /// As [`Session::map_at_load`].
    unsafe fn re_set(&self, a: &Loaded, b: &Loaded) -> Result<(Vec<FptrMapEntry>, String)> {
        let [sq, tw, cu, th] = host_keys();
        let mut table = sorted_pairs(1000, 77);
        table.retain(|e| ![sq, tw, cu, th].contains(&e.host_ptr));
        table.extend([
            FptrMapEntry { host_ptr: sq, tgt_ptr: a.second },
            FptrMapEntry { host_ptr: tw, tgt_ptr: a.first },
            FptrMapEntry { host_ptr: cu, tgt_ptr: b.second },
            FptrMapEntry { host_ptr: th, tgt_ptr: b.first },
        ]);
        table.sort();
        // SAFETY: a live table of `len` entries.
        let rc = unsafe { (self.api.set_function_ptr_map)(0, table.len() as u64, table.as_ptr()) };
        check(rc, "set_function_ptr_map")?;
        for (image, name) in [(a, "first"), (b, "second")] {
            ensure(self.installed(image)? == table, || {
                format!("{name} image: installed table differs from the input")
            })?;
            let got = self.translate(image, &[sq, tw, cu, th, table[0].host_ptr, table[0].host_ptr + 16])?;
            let want = [a.second, a.first, b.second, b.first, table[0].tgt_ptr, table[0].host_ptr + 16];
            ensure(got == want, || format!("{name} image after re-set: {got:x?}, expected {want:x?}"))?;
        }
        ensure(self.globals(a)? == self.globals(b)?, || "the two images point to different tables".into())?;
        let line = format!("re-set: {} entries installed in both images, translations follow", table.len());
        Ok((table, line))
    }

    /// Bad input: refused, and the installed map (`table`) untouched.
    ///
    /// # Safety
    /// As [`Session::map_at_load`].
    unsafe fn bad_input(&self, a: &Loaded, table: &[FptrMapEntry], devices: i32) -> Result<String> {
        let [sq, ..] = host_keys();
        let globals = self.globals(a)?;
        let mut unsorted = table.to_vec();
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
            // SAFETY: hostile input the plugin must refuse without reading past what it was given.
            let rc = unsafe { (self.api.set_function_ptr_map)(device, size, ptr) };
            ensure(rc == OFFLOAD_FAIL, || format!("{what}: set_function_ptr_map returned {rc}"))?;
            ensure(self.globals(a)? == globals, || format!("{what} changed the globals"))?;
            ensure(self.translate(a, &[sq])? == [a.second], || format!("{what} changed the translation"))?;
        }
        Ok(format!("bad input: {} kinds refused with OFFLOAD_FAIL, map unchanged", bad.len()))
    }

    /// Host and shared allocations are memory the host addresses directly (cuMemAllocHost,
    /// cuMemAllocManaged), freed as what they are.
    ///
    /// # Safety
    /// Device 0 is initialised.
    unsafe fn host_and_shared_memory(&self) -> Result<String> {
        let api = self.api;
        for (kind, name) in [(1, "host"), (2, "shared")] {
            // SAFETY: an allocation of 64 bytes the host may address (kinds 1 and 2), written,
            // read back through the plugin and freed as its kind.
            unsafe {
                let p = (api.data_alloc)(0, 64, std::ptr::null_mut(), kind);
                ensure(!p.is_null(), || format!("data_alloc of kind {name} failed"))?;
                std::ptr::write_bytes(p.cast::<u8>(), 0x5a, 64);
                let mut back = [0u8; 64];
                check((api.data_retrieve)(0, back.as_mut_ptr().cast(), p, 64), "data_retrieve")?;
                ensure(back == [0x5a; 64], || {
                    format!("{name} memory written by the host reads back {back:x?}")
                })?;
                check((api.data_delete)(0, p, kind), "data_delete")?;
            }
        }
        Ok("host and shared allocations: written by the host, read back through the plugin".into())
    }

    /// Leak check: many re-sets of a 1M-entry table, each freeing the previous table and index.
    /// What stays is exactly one table and its index, each a whole number of granules. The
    /// 1000-entry map before was small enough for the driver to place in a granule it already
    /// had, so freeing it need not give any memory back: it is not subtracted.
    ///
    /// # Safety
    /// As [`Session::map_at_load`].
    unsafe fn no_leak_over_re_sets(&self, b: &Loaded) -> Result<String> {
        let big = sorted_pairs(1 << 20, 99);
        let kept = kept_for(&big)?;
        let budget = kept + GRANULE;
        let (free_loaded, _) = self.gpu.memory()?;
        for _ in 0..RESETS {
            // SAFETY: a live table of `len` entries.
            let rc = unsafe { (self.api.set_function_ptr_map)(0, big.len() as u64, big.as_ptr()) };
            check(rc, "set_function_ptr_map 1M")?;
        }
        let (free_resets, _) = self.gpu.memory()?;
        let lost = free_loaded.saturating_sub(free_resets);
        ensure(lost <= budget, || {
            format!(
                "{RESETS} re-sets of 1M entries lost {:.1} MiB of device memory; the plugin keeps {:.1} MiB \
                 (table and index), plus at most one granule",
                mib(lost),
                mib(kept),
            )
        })?;
        ensure(self.installed(b)? == big, || "the 1M table was not installed exactly".into())?;
        Ok(format!(
            "{RESETS} re-sets of 1M entries: device memory down {:.1} MiB, budget {:.1} MiB (table 16 MiB + index {:.0} MiB)",
            mib(lost),
            mib(budget),
            mib(kept - (16 << 20))
        ))
    }
}
