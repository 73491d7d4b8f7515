//! The map installation as a transaction (build, write, publish, retire) when the device fails
//! part of the way: a copy or an allocation that a real device refuses only on a fault (lost
//! context, out of memory), so no real backend can be made to fail on cue. The backend here is
//! device memory kept in host vectors that fails the allocation or the write chosen by the
//! test; everything else of the same code path runs for real in the x86_64 plugin's tests and
//! in the GPU bundle.
//!
//! Each test runs twice: on a device without a DeviceRTL (as host offload) and on one with it (as
//! the GPUs: each image also has LLVM's device environment, whose table fields mirror the map,
//! and a memory pool the plugin allocates at load).
//!
//! What must hold after every failure: the call returns `OFFLOAD_FAIL`; every loaded image still
//! points at a table that is allocated (never at freed memory); where pointing back succeeded,
//! the previous map is in force unchanged and nothing leaked; and whatever a failure had to
//! keep allocated is freed by the next successful installation or by deinit.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{c_char, c_void, CString};
use std::sync::Mutex;

use host_table::image::DeviceImage;
use host_table::rtl_interface::{
    FptrMapEntry, TgtDeviceImage, TgtOffloadEntry, FPTR_INDEX, FPTR_MAP_P, FPTR_MAP_SIZE, OFFLOAD_FAIL,
    OFFLOAD_SUCCESS, OMP_DECLARE_TARGET_INDIRECT,
};
use plugin_core::environment::{
    DeviceLimits, DEVICE_ENVIRONMENT, DEVICE_MEMORY_POOL, DEVICE_MEMORY_POOL_TRACKER,
    INDIRECT_CALL_TABLE_OFFSET,
};
use plugin_core::exports::{self, PluginCell};
use plugin_core::{Backend, DeviceInfo, DeviceSymbol, Launch, PluginError, Result};

/// Which device operation fails next, counted from when the test arms it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// The `n`-th write from now fails, the others succeed.
    Write(usize),
    /// The `n`-th write from now and every later one fail.
    WritesFrom(usize),
    /// The `n`-th allocation from now fails.
    Alloc(usize),
}

/// Device memory: allocations by start address, and the armed fault.
struct Memory {
    regions: BTreeMap<u64, Vec<u8>>,
    next: u64,
    /// The globals of every loaded image, in load order.
    images: Vec<ImageGlobals>,
    fault: Fault,
    writes: usize,
    allocs: usize,
}

impl Memory {
    fn new_region(&mut self, bytes: Vec<u8>) -> u64 {
        let addr = self.next;
        // 16-aligned with a gap, so that a copy past an allocation's end never lands in the next.
        self.next += (bytes.len() as u64).div_ceil(16) * 16 + 64;
        self.regions.insert(addr, bytes);
        addr
    }

    /// The allocation holding `[addr, addr + len)` and the offset of `addr` in it.
    fn locate(&mut self, addr: u64, len: usize) -> Result<(&mut Vec<u8>, usize)> {
        let (start, bytes) = self
            .regions
            .range_mut(..=addr)
            .next_back()
            .ok_or_else(|| PluginError::Backend(format!("{addr:#x} is not device memory")))?;
        let offset = (addr - start) as usize;
        if offset + len > bytes.len() {
            return Err(PluginError::Backend(format!("{len} bytes at {addr:#x} leave their allocation")));
        }
        Ok((bytes, offset))
    }

    fn word(&self, addr: u64) -> u64 {
        let (start, bytes) = self.regions.range(..=addr).next_back().expect("a global");
        let at = (addr - start) as usize;
        u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
    }
}

/// An image: its globals by name. The image's bytes are its indirect functions' names, one per
/// line; each gets an 8-byte global holding a device function address, as clang emits them.
struct Image {
    globals: HashMap<String, DeviceSymbol>,
}

/// The map's three globals in an image, as this project's device library defines them.
const MAP_GLOBALS: [(&str, usize); 3] = [(FPTR_MAP_P, 8), (FPTR_MAP_SIZE, 8), (FPTR_INDEX, 48)];
/// What LLVM's DeviceRTL adds to an image: the device environment, the memory pool and its
/// tracker.
const DEVICE_RTL_GLOBALS: [(&str, usize); 3] =
    [(DEVICE_ENVIRONMENT, 48), (DEVICE_MEMORY_POOL, 16), (DEVICE_MEMORY_POOL_TRACKER, 32)];
/// The memory pool the device gives each image.
const POOL_BYTES: u64 = 4096;

/// Where a loaded image's globals are: the map's, then the DeviceRTL's (0 without one).
#[derive(Debug, Clone, Copy)]
struct ImageGlobals {
    map: [u64; 3],
    device_rtl: [u64; 3],
    /// All its allocations (globals), freed when it is unloaded.
    count: usize,
}

/// Device memory in host vectors that fails on request; `DEVICE_RTL`: its images run LLVM's
/// DeviceRTL.
struct FaultyDevice<const DEVICE_RTL: bool> {
    memory: Mutex<Memory>,
}

impl<const DEVICE_RTL: bool> FaultyDevice<DEVICE_RTL> {
    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<const DEVICE_RTL: bool> Backend for FaultyDevice<DEVICE_RTL> {
    type Image = Image;
    type Kernel = u64;
    const NAME: &'static str = "faulty-test-device";

    fn init() -> Result<Self> {
        let memory = Memory {
            regions: BTreeMap::new(),
            next: 0x1_0000,
            images: Vec::new(),
            fault: Fault::None,
            writes: 0,
            allocs: 0,
        };
        Ok(FaultyDevice { memory: Mutex::new(memory) })
    }

    fn device_count(&self) -> i32 {
        1
    }

    fn check_image(&self, _image: &DeviceImage<'_>, _arch: Option<&str>) -> Result<()> {
        Ok(())
    }

    fn init_device(&self, _device: i32) -> Result<()> {
        Ok(())
    }

    fn device_info(&self, _device: i32) -> Option<DeviceInfo> {
        DEVICE_RTL.then_some(DeviceInfo {
            limits: DeviceLimits {
                max_threads_per_block: 1024,
                max_blocks: 1 << 16,
                warp_size: 32,
                multiprocessors: 4,
                default_threads: 128,
            },
            clock_hz: 1_000_000_000,
            hardware_parallelism: 4 * 64,
            memory_pool_bytes: POOL_BYTES,
        })
    }

    fn load_image(&self, _device: i32, image: &[u8]) -> Result<Image> {
        let mut memory = self.memory();
        let mut globals = HashMap::new();
        let mut add = |memory: &mut Memory, name: &str, bytes: Vec<u8>| {
            let size = bytes.len() as u64;
            let addr = memory.new_region(bytes);
            globals.insert(name.to_string(), DeviceSymbol { addr, size: Some(size), writable: true });
            addr
        };
        let map = MAP_GLOBALS.map(|(name, size)| add(&mut memory, name, vec![0; size]));
        let device_rtl = match DEVICE_RTL {
            true => DEVICE_RTL_GLOBALS.map(|(name, size)| add(&mut memory, name, vec![0; size])),
            false => [0; 3],
        };
        for name in image.split(|&b| b == b'\n').filter(|n| !n.is_empty()) {
            let name = std::str::from_utf8(name).map_err(|e| PluginError::InvalidImage(e.to_string()))?;
            let function = 0xF000_0000 + memory.next;
            add(&mut memory, name, function.to_le_bytes().to_vec());
        }
        memory.images.push(ImageGlobals { map, device_rtl, count: globals.len() });
        Ok(Image { globals })
    }

    fn unload_image(&self, _device: i32, image: Image) -> Result<()> {
        let mut memory = self.memory();
        for global in image.globals.values() {
            memory.regions.remove(&global.addr);
        }
        let p = image.globals[FPTR_MAP_P].addr;
        memory.images.retain(|globals| globals.map[0] != p);
        Ok(())
    }

    fn kernel(&self, _image: &Image, _name: &str) -> Result<Option<u64>> {
        Ok(None)
    }

    fn global(&self, image: &Image, name: &str) -> Result<Option<DeviceSymbol>> {
        Ok(image.globals.get(name).copied())
    }

    fn alloc(&self, _device: i32, size: usize, _kind: host_table::rtl_interface::AllocKind) -> Result<u64> {
        let mut memory = self.memory();
        let n = memory.allocs;
        memory.allocs += 1;
        if memory.fault == Fault::Alloc(n) {
            return Err(PluginError::Backend(format!("allocation {n} refused (injected)")));
        }
        Ok(memory.new_region(vec![0xAA; size.max(1)]))
    }

    fn free(&self, _device: i32, ptr: u64, _kind: host_table::rtl_interface::AllocKind) -> Result<()> {
        let mut memory = self.memory();
        memory.regions.remove(&ptr).map(drop).ok_or_else(|| PluginError::Backend(format!("free of {ptr:#x}")))
    }

    fn write(&self, _device: i32, dst: u64, src: &[u8]) -> Result<()> {
        let mut memory = self.memory();
        let n = memory.writes;
        memory.writes += 1;
        let failing = match memory.fault {
            Fault::Write(at) => n == at,
            Fault::WritesFrom(from) => n >= from,
            Fault::None | Fault::Alloc(_) => false,
        };
        if failing {
            return Err(PluginError::Backend(format!("write {n} refused (injected)")));
        }
        let (bytes, offset) = memory.locate(dst, src.len())?;
        bytes[offset..offset + src.len()].copy_from_slice(src);
        Ok(())
    }

    fn read(&self, _device: i32, dst: &mut [u8], src: u64) -> Result<()> {
        let mut memory = self.memory();
        let (bytes, offset) = memory.locate(src, dst.len())?;
        dst.copy_from_slice(&bytes[offset..offset + dst.len()]);
        Ok(())
    }

    fn launch(&self, _device: i32, _kernel: &u64, _launch: &Launch<'_>) -> Result<()> {
        Err(PluginError::Backend("no kernels here".into()))
    }
}

/// A device image as libomptarget passes it: `names` are its indirect functions, whose host
/// addresses are `host_base + 16 * i`.
struct TestImage {
    bytes: Vec<u8>,
    _names: Vec<CString>,
    entries: Vec<TgtOffloadEntry>,
}

impl TestImage {
    fn new(names: &[&str], host_base: u64) -> TestImage {
        let bytes = names.join("\n").into_bytes();
        let cnames: Vec<CString> = names.iter().map(|n| CString::new(*n).expect("no NUL")).collect();
        let entries = cnames
            .iter()
            .enumerate()
            .map(|(i, name)| TgtOffloadEntry {
                addr: (host_base + 16 * i as u64) as *mut c_void,
                name: name.as_ptr() as *mut c_char,
                size: 8,
                flags: OMP_DECLARE_TARGET_INDIRECT as i32,
                reserved: 0,
            })
            .collect();
        TestImage { bytes, _names: cnames, entries }
    }

    /// The descriptor libomptarget would pass for this image.
    fn descriptor(&mut self) -> TgtDeviceImage {
        let range = self.bytes.as_mut_ptr_range();
        let entries = self.entries.as_mut_ptr_range();
        TgtDeviceImage {
            image_start: range.start.cast(),
            image_end: range.end.cast(),
            entries_begin: entries.start,
            entries_end: entries.end,
        }
    }

    /// `load_binary` of this image on device 0: its target table, or null.
    fn try_load<const R: bool>(
        &mut self,
        cell: &PluginCell<FaultyDevice<R>>,
    ) -> *mut host_table::rtl_interface::TgtTargetTable {
        let desc = self.descriptor();
        // SAFETY: the descriptor's ranges are this image's live vectors; the plugin keeps only
        // `image_start` as the image's key.
        unsafe { exports::load_binary(cell, 0, &desc) }
    }

    fn load<const R: bool>(&mut self, cell: &PluginCell<FaultyDevice<R>>) {
        assert!(!self.try_load(cell).is_null(), "load_binary failed");
    }
}

/// What the device holds of the map: per loaded image `[map_p, map_size, index.table,
/// index.slots, environment's table, environment's table size, memory pool]` (the last three 0
/// without a DeviceRTL), and every allocation's start.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    images: Vec<[u64; 7]>,
    regions: BTreeSet<u64>,
}

impl Snapshot {
    fn of<const R: bool>(device: &FaultyDevice<R>) -> Snapshot {
        let memory = device.memory();
        let word = |addr: u64| if addr == 0 { 0 } else { memory.word(addr) };
        let images = memory
            .images
            .iter()
            .map(|ImageGlobals { map: [p, size, index], device_rtl: [environment, pool, _], .. }| {
                let table = |at: u64| if *environment == 0 { 0 } else { word(environment + at) };
                [
                    word(*p),
                    word(*size),
                    word(*index),
                    word(index + 8),
                    table(INDIRECT_CALL_TABLE_OFFSET),
                    table(INDIRECT_CALL_TABLE_OFFSET + 8),
                    word(*pool),
                ]
            })
            .collect();
        Snapshot { images, regions: memory.regions.keys().copied().collect() }
    }

    /// The map as image `i` holds it: `[map_p, map_size]`, and the environment's copy.
    fn map(&self, i: usize) -> [u64; 2] {
        [self.images[i][0], self.images[i][1]]
    }

    /// Every image points at allocated memory only: a null or live table (in its globals and
    /// in its device environment), an index whose slots are live wherever it names the image's
    /// table (the device uses it then), a live memory pool.
    fn assert_nothing_dangles(&self, context: &str) {
        let live = |addr: u64| addr == 0 || self.regions.contains(&addr);
        for (i, &[p, size, index_table, slots, env_table, env_size, pool]) in self.images.iter().enumerate() {
            assert!(size == 0 || live(p), "{context}: image {i}'s table {p:#x} is freed");
            assert!(
                env_size == 0 || live(env_table),
                "{context}: image {i}'s environment table {env_table:#x} is freed"
            );
            if index_table != 0 && index_table == p {
                assert!(live(slots), "{context}: image {i}'s index slots {slots:#x} are freed");
            }
            assert!(live(pool), "{context}: image {i}'s memory pool {pool:#x} is freed");
        }
    }
}

fn arm<const R: bool>(device: &FaultyDevice<R>, fault: Fault) {
    let mut memory = device.memory();
    memory.fault = fault;
    memory.writes = 0;
    memory.allocs = 0;
}

/// Whether the armed fault fired during the calls since [`arm`].
fn fired<const R: bool>(device: &FaultyDevice<R>) -> bool {
    let memory = device.memory();
    match memory.fault {
        Fault::None => false,
        Fault::Write(n) | Fault::WritesFrom(n) => n < memory.writes,
        Fault::Alloc(n) => n < memory.allocs,
    }
}

fn set_map<const R: bool>(cell: &PluginCell<FaultyDevice<R>>, table: &[FptrMapEntry]) -> i32 {
    // SAFETY: `table` is a live slice of `table.len()` entries.
    unsafe { exports::set_function_ptr_map(cell, 0, table.len() as u64, table.as_ptr()) }
}

/// Two images of one indirect function each, loaded: one map of their two functions installed.
/// The images must outlive the test: the plugin knows them by their bytes' address.
fn two_images<const R: bool>(
    cell: &'static PluginCell<FaultyDevice<R>>,
) -> (&'static FaultyDevice<R>, [TestImage; 2]) {
    let device = cell.get().expect("the test device initialises").backend();
    let mut images = [TestImage::new(&["f"], 0x40_0000), TestImage::new(&["g"], 0x50_0000)];
    for image in &mut images {
        image.load(cell);
    }
    let loaded = Snapshot::of(device);
    assert_eq!(loaded.images.len(), 2);
    assert!(
        loaded.images.iter().all(|image| image[0] != 0 && image[1] == 2),
        "loading installed both functions"
    );
    loaded.assert_one_map(2, "after loading");
    (device, images)
}

impl Snapshot {
    /// Every image holds the same map of `len` entries, in its globals and, with a DeviceRTL,
    /// in its device environment too.
    fn assert_one_map(&self, len: u64, context: &str) {
        let first = self.images[0];
        for (i, image) in self.images.iter().enumerate() {
            assert_eq!(image[..4], first[..4], "{context}: image {i}'s map globals");
            assert_eq!(image[1], len, "{context}: image {i}'s map size");
            let environment = [image[4], image[5]];
            assert!(
                environment == [0, 0] || environment == self.map(i),
                "{context}: image {i}'s environment"
            );
        }
    }
}

/// A table whose installation takes every step: four entries, so a hash index too (on the
/// x86_64 device as well, which searches smaller tables).
fn four_entries(salt: u64) -> Vec<FptrMapEntry> {
    (0..4).map(|i| FptrMapEntry { host_ptr: 0x70_0000 + 16 * i, tgt_ptr: salt + 16 * i }).collect()
}

/// The allocations of `device` that are not its images' globals: tables, indexes, pools.
fn allocations_besides_globals<const R: bool>(device: &FaultyDevice<R>) -> usize {
    let memory = device.memory();
    memory.regions.len() - memory.images.iter().map(|image| image.count).sum::<usize>()
}

/// Writes pointing one image at a map: the size to 0, the pointer, the size, the index header,
/// and with a DeviceRTL the environment's two fields (one write).
fn writes_per_image(device_rtl: bool) -> usize {
    4 + device_rtl as usize
}

fn failed_writes_and_allocations_leave_the_previous_map<const R: bool>(
    cell: &'static PluginCell<FaultyDevice<R>>,
) {
    let (device, _images) = two_images(cell);
    let mut reached = (0, 0);
    for kind in [Fault::Write as fn(usize) -> Fault, Fault::Alloc] {
        for n in 0.. {
            let before = Snapshot::of(device);
            arm(device, kind(n));
            let status = set_map(cell, &four_entries(0xE000_0000 + 0x100 * n as u64));
            if !fired(device) {
                // The installation needs fewer operations than `n`: it succeeded, and the
                // previous table and index were freed.
                assert_eq!(status, OFFLOAD_SUCCESS, "{:?}", kind(n));
                Snapshot::of(device).assert_one_map(4, "installed");
                let pools = if R { 2 } else { 0 };
                assert_eq!(allocations_besides_globals(device), 2 + pools, "the new table and its index");
                break;
            }
            match kind(n) {
                Fault::Write(_) => reached.0 += 1,
                _ => reached.1 += 1,
            }
            assert_eq!(status, OFFLOAD_FAIL, "{:?}", kind(n));
            assert_eq!(
                Snapshot::of(device),
                before,
                "{:?}: the previous map in force, nothing leaked",
                kind(n)
            );
        }
    }
    // Build: the table and its index slots (2 writes, 2 allocations); then each image.
    assert_eq!(reached, (2 + 2 * writes_per_image(R), 2), "faults reached (writes, allocations)");
    arm(device, Fault::None);
    assert_eq!(exports::deinit_plugin(cell), OFFLOAD_SUCCESS);
    assert!(device.memory().regions.is_empty(), "deinit freed every table, pool and image");
}

fn failed_rollbacks_leave_no_image_pointing_at_freed_memory<const R: bool>(
    cell: &'static PluginCell<FaultyDevice<R>>,
) {
    let (device, _images) = two_images(cell);
    // Every write from the n-th on fails: the installation and its rollback stop part-way.
    for n in 2..2 + 2 * writes_per_image(R) {
        arm(device, Fault::WritesFrom(n));
        assert_eq!(set_map(cell, &four_entries(0xE000_0000)), OFFLOAD_FAIL);
        Snapshot::of(device).assert_nothing_dangles(&format!("writes failing from {n}"));
    }
    // Whatever the failures kept allocated goes with the next installation that succeeds.
    arm(device, Fault::None);
    assert_eq!(set_map(cell, &four_entries(0xE100_0000)), OFFLOAD_SUCCESS);
    Snapshot::of(device).assert_one_map(4, "installed after the failures");
    let pools = if R { 2 } else { 0 };
    assert_eq!(allocations_besides_globals(device), 2 + pools, "only the installed table and index remain");
    assert_eq!(exports::deinit_plugin(cell), OFFLOAD_SUCCESS);
    assert!(device.memory().regions.is_empty());
}

fn deinit_frees_every_table_where_clearing_fails<const R: bool>(cell: &'static PluginCell<FaultyDevice<R>>) {
    let (device, _images) = two_images(cell);
    arm(device, Fault::WritesFrom(3));
    assert_eq!(set_map(cell, &four_entries(0xE000_0000)), OFFLOAD_FAIL);
    arm(device, Fault::WritesFrom(0));
    // Clearing the images' globals fails, yet the images are unloaded: nothing can point at the
    // tables any more, and they are freed.
    assert_eq!(exports::deinit_plugin(cell), OFFLOAD_FAIL);
    assert!(device.memory().regions.is_empty(), "left allocated: {:?}", device.memory().regions.keys());
}

fn failed_loads_unload_their_image_and_keep_the_map<const R: bool>(
    cell: &'static PluginCell<FaultyDevice<R>>,
) {
    let (device, _images) = two_images(cell);
    let mut third = TestImage::new(&["h", "i"], 0x60_0000);
    let mut reached = (0, 0);
    for kind in [Fault::Write as fn(usize) -> Fault, Fault::Alloc] {
        for n in 0.. {
            let before = Snapshot::of(device);
            arm(device, kind(n));
            let table = third.try_load(cell);
            if !fired(device) {
                assert!(!table.is_null(), "{:?}", kind(n));
                Snapshot::of(device).assert_one_map(4, "three images loaded");
                arm(device, Fault::None);
                // SAFETY: the descriptor of the image just loaded.
                assert_eq!(unsafe { exports::unload_binary(cell, 0, &third.descriptor()) }, OFFLOAD_SUCCESS);
                break;
            }
            match kind(n) {
                Fault::Write(_) => reached.0 += 1,
                _ => reached.1 += 1,
            }
            assert!(table.is_null(), "{:?}", kind(n));
            assert_eq!(
                Snapshot::of(device),
                before,
                "{:?}: image unloaded, the map in force, nothing leaked",
                kind(n)
            );
        }
    }
    // With a DeviceRTL the load first writes the environment, allocates the pool and writes it
    // and its tracker; then the installation over three images.
    let prepare = if R { (3, 1) } else { (0, 0) };
    assert_eq!(reached, (prepare.0 + 2 + 3 * writes_per_image(R), prepare.1 + 2), "faults reached");
    arm(device, Fault::None);
    assert_eq!(exports::deinit_plugin(cell), OFFLOAD_SUCCESS);
    assert!(device.memory().regions.is_empty());
}

/// One test per device kind: `$name` runs `$check` on a fresh device without, then with, a
/// DeviceRTL.
macro_rules! on_both_devices {
    ($($name:ident => $check:ident;)*) => {$(
        mod $name {
            #[test]
            fn host_offload_like() {
                static CELL: super::PluginCell<super::FaultyDevice<false>> = super::PluginCell::new();
                super::$check(&CELL);
            }

            #[test]
            fn gpu_like() {
                static CELL: super::PluginCell<super::FaultyDevice<true>> = super::PluginCell::new();
                super::$check(&CELL);
            }
        }
    )*};
}

on_both_devices! {
    a_failed_write_or_allocation_leaves_the_previous_map_in_force => failed_writes_and_allocations_leave_the_previous_map;
    when_pointing_back_fails_too_no_image_points_at_freed_memory => failed_rollbacks_leave_no_image_pointing_at_freed_memory;
    deinit_frees_every_table_even_where_clearing_the_map_fails => deinit_frees_every_table_where_clearing_fails;
    a_load_whose_installation_fails_unloads_its_image_and_keeps_the_map => failed_loads_unload_their_image_and_keep_the_map;
}
