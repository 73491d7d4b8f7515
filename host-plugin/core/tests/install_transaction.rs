//! The map installation as a transaction (build, write, publish, retire) when the device fails
//! part of the way: a copy or an allocation that a real device refuses only on a fault (lost
//! context, out of memory), so no real backend can be made to fail on cue. The backend here is
//! device memory kept in host vectors that fails the allocation or the write chosen by the
//! test; everything else of the same code path runs for real in the x86_64 plugin's tests and
//! in the GPU bundle.
//!
//! What must hold after every failure: the call returns `OFFLOAD_FAIL`; every loaded image still
//! points at a table that is allocated (never at freed memory); where pointing back succeeded,
//! the previous map is in force unchanged and nothing leaked; and whatever a failure had to
//! keep allocated is freed by the next successful installation or by deinit.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{c_char, c_void, CString};
use std::sync::Mutex;

use plugin_core::abi::{
    FptrMapEntry, TgtDeviceImage, TgtOffloadEntry, FPTR_INDEX, FPTR_MAP_P, FPTR_MAP_SIZE, OFFLOAD_FAIL,
    OFFLOAD_SUCCESS, OMP_DECLARE_TARGET_INDIRECT,
};
use plugin_core::exports::{self, PluginCell};
use plugin_core::image::DeviceImage;
use plugin_core::{Backend, DeviceSymbol, Launch, PluginError, Result};

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
    /// The map globals of every image loaded so far, in load order.
    map_globals: Vec<[u64; 3]>,
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

struct FaultyDevice {
    memory: Mutex<Memory>,
}

impl FaultyDevice {
    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Backend for FaultyDevice {
    type Image = Image;
    type Kernel = u64;
    const NAME: &'static str = "faulty-test-device";

    fn init() -> Result<Self> {
        let memory = Memory {
            regions: BTreeMap::new(),
            next: 0x1_0000,
            map_globals: Vec::new(),
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

    fn load_image(&self, _device: i32, image: &[u8]) -> Result<Image> {
        let mut memory = self.memory();
        let mut globals = HashMap::new();
        let map_globals = MAP_GLOBALS.map(|(name, size)| {
            let addr = memory.new_region(vec![0; size]);
            globals.insert(name.to_string(), DeviceSymbol { addr, size: Some(size as u64), writable: true });
            addr
        });
        memory.map_globals.push(map_globals);
        for name in image.split(|&b| b == b'\n').filter(|n| !n.is_empty()) {
            let function = 0xF000_0000 + memory.next;
            let addr = memory.new_region(function.to_le_bytes().to_vec());
            let name =
                String::from_utf8(name.to_vec()).map_err(|e| PluginError::InvalidImage(e.to_string()))?;
            globals.insert(name, DeviceSymbol { addr, size: Some(8), writable: true });
        }
        Ok(Image { globals })
    }

    fn unload_image(&self, _device: i32, image: Image) -> Result<()> {
        let mut memory = self.memory();
        for global in image.globals.values() {
            memory.regions.remove(&global.addr);
        }
        Ok(())
    }

    fn kernel(&self, _image: &Image, _name: &str) -> Result<Option<u64>> {
        Ok(None)
    }

    fn global(&self, image: &Image, name: &str) -> Result<Option<DeviceSymbol>> {
        Ok(image.globals.get(name).copied())
    }

    fn alloc(&self, _device: i32, size: usize, _kind: plugin_core::abi::AllocKind) -> Result<u64> {
        let mut memory = self.memory();
        let n = memory.allocs;
        memory.allocs += 1;
        if memory.fault == Fault::Alloc(n) {
            return Err(PluginError::Backend(format!("allocation {n} refused (injected)")));
        }
        Ok(memory.new_region(vec![0xAA; size.max(1)]))
    }

    fn free(&self, _device: i32, ptr: u64, _kind: plugin_core::abi::AllocKind) -> Result<()> {
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

    fn load(&mut self, cell: &PluginCell<FaultyDevice>) {
        let range = self.bytes.as_mut_ptr_range();
        let entries = self.entries.as_mut_ptr_range();
        let desc = TgtDeviceImage {
            image_start: range.start.cast(),
            image_end: range.end.cast(),
            entries_begin: entries.start,
            entries_end: entries.end,
        };
        // SAFETY: the descriptor's ranges are this image's live vectors; the plugin keeps only
        // `image_start` as the image's key.
        let table = unsafe { exports::load_binary(cell, 0, &desc) };
        assert!(!table.is_null(), "load_binary failed");
    }
}

/// What the device holds of the map: per loaded image `[map_p, map_size, index.table,
/// index.slots]`, and every allocation's start.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    images: Vec<[u64; 4]>,
    regions: BTreeSet<u64>,
}

impl Snapshot {
    fn of(device: &FaultyDevice) -> Snapshot {
        let memory = device.memory();
        let images = memory
            .map_globals
            .iter()
            .map(|&[p, size, index]| {
                [memory.word(p), memory.word(size), memory.word(index), memory.word(index + 8)]
            })
            .collect();
        Snapshot { images, regions: memory.regions.keys().copied().collect() }
    }

    /// Every image points at allocated memory only: a null table or a live one, and an index
    /// whose slots are live wherever the index names the image's table (the device uses it then).
    fn assert_nothing_dangles(&self, context: &str) {
        for (i, &[p, size, index_table, slots]) in self.images.iter().enumerate() {
            assert!(
                p == 0 || size == 0 || self.regions.contains(&p),
                "{context}: image {i}'s table {p:#x} is freed"
            );
            if index_table != 0 && index_table == p {
                assert!(
                    self.regions.contains(&slots),
                    "{context}: image {i}'s index slots {slots:#x} are freed"
                );
            }
        }
    }
}

fn arm(device: &FaultyDevice, fault: Fault) {
    let mut memory = device.memory();
    memory.fault = fault;
    memory.writes = 0;
    memory.allocs = 0;
}

/// Whether the armed fault fired during the calls since [`arm`].
fn fired(device: &FaultyDevice) -> bool {
    let memory = device.memory();
    match memory.fault {
        Fault::None => false,
        Fault::Write(n) | Fault::WritesFrom(n) => n < memory.writes,
        Fault::Alloc(n) => n < memory.allocs,
    }
}

fn set_map(cell: &PluginCell<FaultyDevice>, table: &[FptrMapEntry]) -> i32 {
    // SAFETY: `table` is a live slice of `table.len()` entries.
    unsafe { exports::set_function_ptr_map(cell, 0, table.len() as u64, table.as_ptr()) }
}

/// Two images of one indirect function each, loaded: one map of their two functions installed.
/// The images must outlive the test: the plugin knows them by their bytes' address.
fn two_images(cell: &'static PluginCell<FaultyDevice>) -> (&'static FaultyDevice, [TestImage; 2]) {
    let device = cell.get().expect("the test device initialises").backend();
    let mut images = [TestImage::new(&["f"], 0x40_0000), TestImage::new(&["g"], 0x50_0000)];
    for image in &mut images {
        image.load(cell);
    }
    let loaded = Snapshot::of(device);
    assert_eq!(loaded.images.len(), 2);
    assert!(
        loaded.images.iter().all(|&[p, size, ..]| p != 0 && size == 2),
        "loading installed both functions"
    );
    assert_eq!(loaded.images[0], loaded.images[1], "one map per device");
    (device, images)
}

/// A table whose installation takes every step: three entries, so a hash index too.
fn three_entries(salt: u64) -> Vec<FptrMapEntry> {
    (0..3).map(|i| FptrMapEntry { host_ptr: 0x70_0000 + 16 * i, tgt_ptr: salt + 16 * i }).collect()
}

/// The allocations of `device` apart from its images' globals (4 per image here).
fn tables_allocated(device: &FaultyDevice) -> usize {
    let memory = device.memory();
    memory.regions.len() - 4 * memory.map_globals.len()
}

#[test]
fn a_failed_write_or_allocation_leaves_the_previous_map_in_force_and_nothing_allocated() {
    static CELL: PluginCell<FaultyDevice> = PluginCell::new();
    let (device, _images) = two_images(&CELL);
    let mut reached = Vec::new();
    for kind in [Fault::Write as fn(usize) -> Fault, Fault::Alloc] {
        for n in 0.. {
            let before = Snapshot::of(device);
            arm(device, kind(n));
            let status = set_map(&CELL, &three_entries(0xE000_0000 + 0x100 * n as u64));
            if !fired(device) {
                // The installation needs fewer operations than `n`: it succeeded, and the
                // previous table and index were freed.
                assert_eq!(status, OFFLOAD_SUCCESS, "{:?}", kind(n));
                assert!(Snapshot::of(device).images.iter().all(|&[_, size, ..]| size == 3));
                assert_eq!(tables_allocated(device), 2, "the new table and its index, nothing else");
                break;
            }
            reached.push(kind(n));
            assert_eq!(status, OFFLOAD_FAIL, "{:?}", kind(n));
            assert_eq!(
                Snapshot::of(device),
                before,
                "{:?}: the previous map in force, nothing leaked",
                kind(n)
            );
        }
    }
    arm(device, Fault::None);
    // Build: 2 writes (table, index slots); write: 4 per image (size 0, table, size, index).
    let writes = reached.iter().filter(|f| matches!(f, Fault::Write(_))).count();
    let allocs = reached.len() - writes;
    assert_eq!((writes, allocs), (2 + 2 * 4, 2), "the faults reached: {reached:?}");
    assert_eq!(exports::deinit_plugin(&CELL), OFFLOAD_SUCCESS);
    assert!(device.memory().regions.is_empty(), "deinit freed every table and image");
}

#[test]
fn when_pointing_back_fails_too_no_image_points_at_freed_memory() {
    static CELL: PluginCell<FaultyDevice> = PluginCell::new();
    let (device, _images) = two_images(&CELL);
    // Every write from the n-th on fails: the installation and its rollback stop part-way.
    for n in 2..10 {
        arm(device, Fault::WritesFrom(n));
        assert_eq!(set_map(&CELL, &three_entries(0xE000_0000)), OFFLOAD_FAIL);
        Snapshot::of(device).assert_nothing_dangles(&format!("writes failing from {n}"));
    }
    // Whatever the failures kept allocated goes with the next installation that succeeds.
    arm(device, Fault::None);
    assert_eq!(set_map(&CELL, &three_entries(0xE100_0000)), OFFLOAD_SUCCESS);
    let installed = Snapshot::of(device);
    assert_eq!(installed.images[0], installed.images[1]);
    assert_eq!(installed.images[0][1], 3);
    assert_eq!(tables_allocated(device), 2, "only the installed table and its index remain");
    assert_eq!(exports::deinit_plugin(&CELL), OFFLOAD_SUCCESS);
    assert!(device.memory().regions.is_empty());
}

#[test]
fn deinit_frees_every_table_even_where_clearing_the_map_fails() {
    static CELL: PluginCell<FaultyDevice> = PluginCell::new();
    let (device, _images) = two_images(&CELL);
    arm(device, Fault::WritesFrom(3));
    assert_eq!(set_map(&CELL, &three_entries(0xE000_0000)), OFFLOAD_FAIL);
    arm(device, Fault::WritesFrom(0));
    // Clearing the images' globals fails, yet the images are unloaded: nothing can point at the
    // tables any more, and they are freed.
    assert_eq!(exports::deinit_plugin(&CELL), OFFLOAD_FAIL);
    assert!(device.memory().regions.is_empty(), "left allocated: {:?}", device.memory().regions.keys());
}
