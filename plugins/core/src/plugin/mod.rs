//! The generic plugin: devices, loaded images, target tables, and the function-pointer map,
//! over any [`Backend`].

use std::ffi::{c_void, CString};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::backend::{Backend, DeviceSymbol, Launch, LaunchParams};
use crate::device_runtime::{
    give_memory_pool, read_kernel_config, with_kernel_arguments, write_device_environment,
};
use crate::environment::{device_environment_at_load, launch_geometry, EnvironmentGlobal, KernelConfig};
use crate::host_calls;
use crate::registry::DeviceRegistry;
use host_table::diagnostics;
use host_table::entries::{EntryKind, OffloadEntry};
use host_table::error::{PluginError, Result};
use host_table::fptr_map::FptrTable;
use host_table::rtl_interface::{
    AllocKind, FptrMapEntry, TgtOffloadEntry, TgtTargetTable, OMP_REQ_DYNAMIC_ALLOCATORS, OMP_REQ_NONE,
    OMP_REQ_REVERSE_OFFLOAD, OMP_REQ_UNIFIED_ADDRESS, OMP_REQ_UNIFIED_SHARED_MEMORY,
};
use host_table::switches::{switch_from_env, HASH_INDEX_ENV, MAP_ON_LOAD_ENV};

mod map_install;

use map_install::DeviceTable;

/// Fails, naming each, when `required` holds requirements `B`'s devices cannot meet.
fn check_requirements<B: Backend>(required: u64) -> Result<()> {
    let unmet = required & !(B::SUPPORTED_REQUIREMENTS | OMP_REQ_NONE);
    if unmet == 0 {
        return Ok(());
    }
    let names: Vec<&str> = [
        (OMP_REQ_REVERSE_OFFLOAD, "reverse_offload"),
        (OMP_REQ_UNIFIED_ADDRESS, "unified_address"),
        (OMP_REQ_UNIFIED_SHARED_MEMORY, "unified_shared_memory"),
        (OMP_REQ_DYNAMIC_ALLOCATORS, "dynamic_allocators"),
    ]
    .iter()
    .filter(|(flag, _)| unmet & flag != 0)
    .map(|(_, name)| *name)
    .collect();
    Err(PluginError::InvalidImage(format!(
        "the program requires {} (OMP_REQ flags {unmet:#x}), which {} devices do not give",
        if names.is_empty() { "unknown requirements".to_string() } else { names.join(", ") },
        B::NAME
    )))
}

/// One image loaded on a device, with the target table handed to libomptarget.
struct LoadedImage<B: Backend> {
    /// `image_start` of the `__tgt_device_image` it came from: identifies it for unloading.
    key: usize,
    image: B::Image,
    /// Owned storage behind the `__tgt_target_table` pointer libomptarget keeps.
    table: Box<TgtTargetTable>,
    entries: Box<[TgtOffloadEntry]>,
    _names: Vec<CString>,
    /// `(host function, device function)` of the image's indirect entries, then `(host word,
    /// device word)` of its vtables ([`host_table::vtables`]).
    indirect: Vec<FptrMapEntry>,
    /// How many of `indirect` are functions (the first ones).
    functions: usize,
    /// The words of `indirect`'s vtables, per host vtable, word 0 first: what
    /// [`host_table::vtable_slots`] reads.
    vtable_copies: Vec<Vec<(u64, u64)>>,
    /// How many vtables, and words of them, `indirect` pairs.
    vtables: VtableCount,
    /// `(address, size)` of the image's global variables named by entries: what copies may touch.
    globals: Vec<(u64, u64)>,
    /// The kernel handles of its target table: what launches may name.
    kernels: Vec<u64>,
    /// The image's kernels, each boxed at the address its handle is.
    #[allow(clippy::vec_box)]
    kernel_boxes: Vec<Box<LoadedKernel<B>>>,
    /// `(address, size)` of the DeviceRTL's device environment, where the image has one and
    /// the device runs a DeviceRTL.
    environment: Option<EnvironmentGlobal>,
    /// The image's own DeviceRTL memory pool (device memory), freed when it is unloaded.
    memory_pool: Option<u64>,
}

/// What [`Plugin::resolve_entries`] gathers of an image's entries, in their order.
struct Resolved<B: Backend> {
    names: Vec<CString>,
    table: Vec<TgtOffloadEntry>,
    indirect: Vec<FptrMapEntry>,
    globals: Vec<(u64, u64)>,
    kernels: Vec<u64>,
    #[allow(clippy::vec_box)]
    kernel_boxes: Vec<Box<LoadedKernel<B>>>,
}

impl<B: Backend> Resolved<B> {
    fn with_capacity(entries: usize) -> Self {
        Resolved {
            names: Vec::with_capacity(entries),
            table: Vec::with_capacity(entries),
            indirect: Vec::new(),
            globals: Vec::new(),
            kernels: Vec::new(),
            kernel_boxes: Vec::new(),
        }
    }
}

/// The vtables of an image the map pairs with the host's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct VtableCount {
    /// Vtables found on both sides.
    vtables: u64,
    /// Their words: pairs of the map.
    words: u64,
}

/// `pairs` (an image's vtable words, [`Plugin::vtable_pairs`]) as one list per host vtable copy:
/// the pairs of consecutive host words whose device words are consecutive too.
fn copies_of(pairs: &[FptrMapEntry]) -> Vec<Vec<(u64, u64)>> {
    let mut sorted: Vec<(u64, u64)> = pairs.iter().map(|p| (p.host_ptr, p.tgt_ptr)).collect();
    sorted.sort_unstable();
    sorted.dedup_by_key(|p| p.0);
    let mut copies: Vec<Vec<(u64, u64)>> = Vec::new();
    for pair in sorted {
        match copies.last_mut() {
            Some(copy)
                if copy
                    .last()
                    .is_some_and(|&(h, d)| pair.0 == h.wrapping_add(8) && pair.1 == d.wrapping_add(8)) =>
            {
                copy.push(pair)
            }
            _ => copies.push(vec![pair]),
        }
    }
    copies
}

/// A kernel of a loaded image: the backend's handle and what its launches are computed from.
struct LoadedKernel<B: Backend> {
    kernel: B::Kernel,
    /// From the kernel's environment in the image ([`KernelConfig::NOT_OPENMP`] on devices
    /// without a DeviceRTL).
    config: KernelConfig,
    /// The backend's limit for this kernel's blocks, if it has one.
    max_threads: Option<u32>,
}

// SAFETY: the raw pointers in `table` and `entries` point into this struct's own heap storage
// (`entries`, `_names`), which moves with it; nothing else aliases them mutably.
unsafe impl<B: Backend> Send for LoadedImage<B> {}

/// What a freshly loaded image's DeviceRTL was given: where its device environment is, and the
/// memory pool allocated for it (both absent without a DeviceRTL).
#[derive(Default)]
struct DeviceRuntime {
    environment: Option<EnvironmentGlobal>,
    memory_pool: Option<u64>,
}

struct DeviceState<B: Backend> {
    images: Vec<LoadedImage<B>>,
    /// The installed map, which every loaded image points at.
    table: Option<DeviceTable>,
    /// Tables of failed installations that some image may still point at, because pointing it
    /// back at the installed map failed too: kept allocated (a kernel must never read freed
    /// memory) until an installation has pointed every image at a later table, or until no
    /// image is loaded.
    stranded: Vec<DeviceTable>,
}

/// One device: what is loaded and installed on it, what libomptarget may name on it, and the
/// gate between launches and map replacement.
struct Device<B: Backend> {
    /// Taken by the calls that change what is loaded or installed.
    state: Mutex<DeviceState<B>>,
    /// Taken briefly by every call that names device memory or a kernel.
    registry: Mutex<DeviceRegistry>,
    /// Held shared by a launch for the kernel's whole run, and exclusively by a map installation
    /// from its first global written to the old table freed: a kernel sees the old map or the new
    /// one, never a mix of the two or a freed table. (Every backend runs a kernel to completion
    /// inside `launch`, so holding the gate over that call covers the kernel.)
    launches: RwLock<()>,
}

/// The plugin state over backend `B`, per device: what is loaded and installed, the registry
/// of what libomptarget may name, and the launch gate.
pub struct Plugin<B: Backend> {
    backend: B,
    devices: Vec<Device<B>>,
    /// Whether loading an image installs its indirect functions (see [`MAP_ON_LOAD_ENV`]).
    map_on_load: bool,
    /// Whether installing a table also builds its hash index (see [`HASH_INDEX_ENV`]).
    hash_index: bool,
    /// Whether loading an image pairs its vtables (see [`host_table::vtables::VTABLES_ENV`]).
    vtables: bool,
    /// The `OMP_REQ_*` flags libomptarget passed to `__tgt_rtl_init_requires`.
    requires: std::sync::atomic::AtomicU64,
}

impl<B: Backend> Plugin<B> {
    /// Initialises the backend and the per-device state.
    pub fn new() -> Result<Self> {
        // Kernel handles are box addresses: a zero-sized kernel would give every one the same.
        assert!(std::mem::size_of::<B::Kernel>() > 0, "Backend::Kernel must not be zero-sized");
        let backend = B::init()?;
        let count = backend.device_count().max(0);
        diagnostics::info(
            B::NAME,
            format_args!("omptarget-indirect {}, {count} devices", env!("CARGO_PKG_VERSION")),
        );
        let devices = (0..count)
            .map(|_| Device {
                state: Mutex::new(DeviceState { images: Vec::new(), table: None, stranded: Vec::new() }),
                registry: Mutex::new(DeviceRegistry::default()),
                launches: RwLock::new(()),
            })
            .collect();
        Ok(Plugin {
            backend,
            devices,
            map_on_load: switch_from_env(MAP_ON_LOAD_ENV),
            hash_index: switch_from_env(HASH_INDEX_ENV),
            vtables: host_table::vtables::enabled(),
            requires: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Number of devices.
    pub fn device_count(&self) -> i32 {
        self.devices.len() as i32
    }

    /// Fails unless `device` names a device.
    pub fn check_device(&self, device: i32) -> Result<()> {
        if device < 0 || device as usize >= self.devices.len() {
            return Err(PluginError::InvalidDevice(device));
        }
        Ok(())
    }

    fn lock(&self, device: i32) -> Result<MutexGuard<'_, DeviceState<B>>> {
        self.check_device(device)?;
        // A panic while holding the lock cannot leave the state half-changed in a way the next
        // call cannot handle: every change is committed last. So a poisoned lock is usable.
        Ok(self.devices[device as usize].state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The launch gate of `device` (a valid id), held exclusively: no kernel of it runs until the
    /// guard drops. The gate guards no data, so a poisoned lock is usable.
    fn no_launches(&self, device: i32) -> RwLockWriteGuard<'_, ()> {
        self.devices[device as usize].launches.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The launch gate of `device` (a valid id), held shared for one kernel's run.
    fn launching(&self, device: i32) -> RwLockReadGuard<'_, ()> {
        self.devices[device as usize].launches.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The registry of `device` (a valid id), locked. Every change to it is one map operation,
    /// so a poisoned lock is usable.
    fn registry(&self, device: i32) -> Result<MutexGuard<'_, DeviceRegistry>> {
        self.check_device(device)?;
        Ok(self.devices[device as usize].registry.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// `__tgt_rtl_data_alloc`: allocates and records the allocation.
    pub fn alloc(&self, device: i32, size: usize, kind: AllocKind) -> Result<u64> {
        self.check_device(device)?;
        let ptr = self.backend.alloc(device, size, kind)?;
        self.registry(device)?.add_allocation(ptr, size as u64, kind);
        Ok(ptr)
    }

    /// `__tgt_rtl_data_delete`: frees an allocation `__tgt_rtl_data_alloc` returned and that was
    /// not freed yet; anything else (the plugin's own memory, an image global, an interior
    /// pointer, a second free) is refused and nothing is freed. Freed as the kind it was
    /// allocated as.
    pub fn free(&self, device: i32, ptr: u64) -> Result<()> {
        let mut registry = self.registry(device)?;
        let (_, kind) = registry.remove_allocation(ptr)?;
        drop(registry);
        self.backend.free(device, ptr, kind)
    }

    /// `__tgt_rtl_data_submit`: copies the `len` bytes at `src` to device memory at `dst`, which
    /// must lie inside one allocation of libomptarget's or one global of a loaded image on
    /// `device`; checked before the host bytes are looked at.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes.
    pub unsafe fn write(&self, device: i32, dst: u64, src: *const u8, len: usize) -> Result<()> {
        self.registry(device)?.check_range(dst, len as u64)?;
        // SAFETY: the caller's contract.
        let src = unsafe { std::slice::from_raw_parts(src, len) };
        self.backend.write(device, dst, src)
    }

    /// `__tgt_rtl_data_retrieve`: copies `len` bytes of device memory at `src`, which must lie as
    /// for [`Plugin::write`], to `dst`; checked before the host bytes are looked at.
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes.
    pub unsafe fn read(&self, device: i32, dst: *mut u8, src: u64, len: usize) -> Result<()> {
        self.registry(device)?.check_range(src, len as u64)?;
        // SAFETY: the caller's contract.
        let dst = unsafe { std::slice::from_raw_parts_mut(dst, len) };
        self.backend.read(device, dst, src)
    }

    /// `__tgt_rtl_init_device`.
    pub fn init_device(&self, device: i32) -> Result<()> {
        self.check_device(device)?;
        self.backend.init_device(device)
    }

    /// `__tgt_rtl_load_binary`: loads `image`, resolves `entries` to device addresses, and
    /// installs the device's function-pointer map (every loaded image's indirect functions).
    /// Returns the target table, valid until the image is unloaded. On any error the device is
    /// left as it was.
    pub fn load_binary(
        &self,
        device: i32,
        key: usize,
        image: &[u8],
        entries: &[OffloadEntry],
    ) -> Result<*mut TgtTargetTable> {
        let mut state = self.lock(device)?;
        // libomptarget 16 may ask again for an image a device has (two threads' first launches
        // while a library registers): the loaded image's table is the answer, not a second copy
        // with globals of its own.
        if let Some(loaded) = state.images.iter_mut().find(|i| i.key == key) {
            host_table::diagnostics::info(
                B::NAME,
                format_args!("device {device}: the image at {key:#x} is loaded already: its table again"),
            );
            return Ok(&mut *loaded.table as *mut TgtTargetTable);
        }
        let loaded = self.backend.load_image(device, image)?;
        let DeviceRuntime { environment, memory_pool } = match self.prepare_device_runtime(device, &loaded) {
            Ok(prepared) => prepared,
            Err(err) => {
                let _ = self.backend.unload_image(device, loaded);
                return Err(err);
            }
        };
        match self.resolve_entries(device, loaded, key, image, entries) {
            Ok(mut resolved) => {
                resolved.environment = environment;
                resolved.memory_pool = memory_pool;
                state.images.push(resolved);
                if let Err(err) = self.install_images_map(device, &mut state) {
                    let img = state.images.pop().expect("just pushed");
                    let _ = self.unload(device, img);
                    return Err(err);
                }
                let img = state.images.last_mut().expect("just pushed");
                self.registry(device)?.add_image(&img.globals, &img.kernels);
                Ok(&mut *img.table as *mut TgtTargetTable)
            }
            Err((err, loaded)) => {
                if let Some(pool) = memory_pool {
                    let _ = self.backend.free(device, pool, AllocKind::Device);
                }
                let _ = self.backend.unload_image(device, loaded);
                Err(err)
            }
        }
    }

    /// On devices that run a DeviceRTL, writes a freshly loaded image's device environment and
    /// gives it its memory pool, where the image has them. Nothing is left allocated on error.
    fn prepare_device_runtime(&self, device: i32, image: &B::Image) -> Result<DeviceRuntime> {
        let Some(info) = self.backend.device_info(device) else {
            return Ok(DeviceRuntime::default());
        };
        let environment = device_environment_at_load(
            self.device_count() as u32,
            device as u32,
            info.clock_hz,
            info.hardware_parallelism,
        );
        let environment = write_device_environment(&self.backend, device, image, &environment)?;
        let memory_pool = give_memory_pool(&self.backend, device, image, info.memory_pool_bytes)?;
        host_calls::image_loaded(&self.backend, device, image);
        Ok(DeviceRuntime { environment, memory_pool })
    }

    /// Unloads an image the device state no longer holds, and frees its memory pool.
    fn unload(&self, device: i32, img: LoadedImage<B>) -> Result<()> {
        host_calls::image_unloading(&self.backend, device, &img.image, &img.kernels);
        drop(img.entries);
        drop(img.kernel_boxes);
        let unloaded = self.backend.unload_image(device, img.image);
        let freed = match img.memory_pool {
            Some(pool) => self.backend.free(device, pool, AllocKind::Device),
            None => Ok(()),
        };
        unloaded.and(freed)
    }

    /// Builds the target table of a freshly loaded image. On error, hands the image back so
    /// the caller can unload it.
    #[allow(clippy::result_large_err)]
    fn resolve_entries(
        &self,
        device: i32,
        image: B::Image,
        key: usize,
        bytes: &[u8],
        entries: &[OffloadEntry],
    ) -> std::result::Result<LoadedImage<B>, (PluginError, B::Image)> {
        // The program's requirements: libomptarget's, and those of this image's requirement
        // entries (clang 18+), which this device must meet.
        let required =
            entries.iter().fold(self.requires.load(std::sync::atomic::Ordering::Relaxed), |all, e| {
                match e.kind() {
                    EntryKind::Requirement(flags) => all | flags,
                    _ => all,
                }
            });
        if let Err(err) = check_requirements::<B>(required) {
            return Err((err, image));
        }
        let mut resolved = Resolved::with_capacity(entries.len());
        for entry in entries {
            if let Err(err) = self.resolve_entry(device, &image, entry, required, &mut resolved) {
                return Err((err, image));
            }
        }
        let functions = resolved.indirect.len();
        let (vtables, vtable_copies) = match self.vtable_pairs(device, &image, bytes) {
            Ok((pairs, count)) => {
                resolved.indirect.extend(&pairs);
                (count, copies_of(&pairs))
            }
            Err(err) => return Err((err, image)),
        };
        let mut entries: Box<[TgtOffloadEntry]> = resolved.table.into_boxed_slice();
        let range = entries.as_mut_ptr_range();
        let table = Box::new(TgtTargetTable { entries_begin: range.start, entries_end: range.end });
        Ok(LoadedImage {
            key,
            image,
            table,
            entries,
            _names: resolved.names,
            indirect: resolved.indirect,
            functions,
            vtable_copies,
            vtables,
            globals: resolved.globals,
            kernels: resolved.kernels,
            kernel_boxes: resolved.kernel_boxes,
            environment: None,
            memory_pool: None,
        })
    }

    /// Resolves one entry of `image` on `device` into `resolved`: its device address (a kernel's
    /// handle) in the target table, under its name.
    fn resolve_entry(
        &self,
        device: i32,
        image: &B::Image,
        entry: &OffloadEntry,
        required: u64,
        resolved: &mut Resolved<B>,
    ) -> Result<()> {
        let addr = match entry.kind() {
            // No device symbol; its flags are in `required`.
            EntryKind::Requirement(_) => 0,
            EntryKind::Kernel => self.resolve_kernel(device, image, entry, resolved)?,
            _ if entry.is_indirect() => self.resolve_indirect(device, image, entry, resolved)?,
            _ => self.resolve_global(device, image, entry, required, resolved)?,
        };
        let name = CString::new(entry.name.as_str())
            .map_err(|_| PluginError::InvalidImage(format!("entry name {:?} has a NUL", entry.name)))?;
        resolved.table.push(TgtOffloadEntry {
            addr: addr as *mut c_void,
            name: name.as_ptr() as *mut _,
            size: entry.size as usize,
            flags: entry.flags as i32,
            reserved: 0,
        });
        resolved.names.push(name);
        Ok(())
    }

    /// A kernel entry: its launch configuration read from the image, boxed at the address that
    /// is its handle.
    fn resolve_kernel(
        &self,
        device: i32,
        image: &B::Image,
        entry: &OffloadEntry,
        resolved: &mut Resolved<B>,
    ) -> Result<u64> {
        let kernel = self
            .backend
            .kernel(image, &entry.name)?
            .ok_or_else(|| PluginError::MissingSymbol(entry.name.clone()))?;
        let config = match self.backend.device_info(device) {
            Some(_) => read_kernel_config(&self.backend, device, image, &entry.name)?,
            None => KernelConfig::NOT_OPENMP,
        };
        let max_threads = self.backend.kernel_max_threads(&kernel);
        let boxed = Box::new(LoadedKernel { kernel, config, max_threads });
        let handle = &*boxed as *const LoadedKernel<B> as u64;
        host_calls::kernel_found(handle, &entry.name);
        resolved.kernel_boxes.push(boxed);
        resolved.kernels.push(handle);
        Ok(handle)
    }

    /// The image's global of `entry`, at least as large as the entry says.
    fn entry_global(&self, image: &B::Image, entry: &OffloadEntry) -> Result<DeviceSymbol> {
        let global = self
            .backend
            .global(image, &entry.name)?
            .ok_or_else(|| PluginError::MissingSymbol(entry.name.clone()))?;
        if let Some(size) = global.size.filter(|&size| size < entry.size) {
            return Err(PluginError::InvalidImage(format!(
                "entry {} names {} bytes, its symbol has {size}",
                entry.name, entry.size
            )));
        }
        Ok(global)
    }

    /// A global variable's entry: its device address; under unified shared memory its device
    /// copy given the host copy's bytes.
    fn resolve_global(
        &self,
        device: i32,
        image: &B::Image,
        entry: &OffloadEntry,
        required: u64,
        resolved: &mut Resolved<B>,
    ) -> Result<u64> {
        let global = self.entry_global(image, entry)?;
        if required & OMP_REQ_UNIFIED_SHARED_MEMORY != 0 {
            // Under unified shared memory clang makes each declare-target variable a reference
            // pointer (as for `link`) whose host copy holds the host variable's address; the
            // device's copy must hold it too. libomptarget 19+ copies every global entry's host
            // bytes at load for that; libomptarget 16 only for `link` entries and only when the
            // program registered the requirement by a call (clang 17 and older), while clang 18+
            // says it in the image's entries: the plugin copies them.
            if !global.writable {
                return Err(PluginError::InvalidImage(format!(
                    "entry {} is read-only on the device; unified shared memory needs it written",
                    entry.name
                )));
            }
            // SAFETY: libomptarget's contract for the host's entries: a global entry's address is
            // the host variable, `size` bytes long, alive while the program is.
            let host = unsafe { std::slice::from_raw_parts(entry.addr as *const u8, entry.size as usize) };
            self.backend.write(device, global.addr, host)?;
        }
        // Read-only globals (constants) are not libomptarget's to copy into.
        if global.writable {
            resolved.globals.push((global.addr, entry.size));
        }
        Ok(global.addr)
    }

    /// An indirect function's entry: the device function's address its global holds, paired with
    /// the host function's. libomptarget maps the host function to what the table says, so a
    /// captured pointer arrives translated.
    fn resolve_indirect(
        &self,
        device: i32,
        image: &B::Image,
        entry: &OffloadEntry,
        resolved: &mut Resolved<B>,
    ) -> Result<u64> {
        let global = self.entry_global(image, entry)?;
        let mut word = [0u8; 8];
        self.backend.read(device, &mut word, global.addr)?;
        let device_fn = u64::from_le_bytes(word);
        self.backend
            .check_function(image, device_fn)
            .map_err(|err| PluginError::InvalidImage(format!("indirect entry {}: {err}", entry.name)))?;
        resolved.indirect.push(FptrMapEntry { host_ptr: entry.addr, tgt_ptr: device_fn });
        Ok(device_fn)
    }

    /// `(host word, device word)` for every word of every vtable `bytes` (the image `image` was
    /// loaded from) defines a word global for and the host defines too ([`host_table::vtables`]).
    /// A vtable the host program does not define (or does not name: a stripped executable) is
    /// left out and said with `LIBOMPTARGET_INFO`.
    fn vtable_pairs(
        &self,
        device: i32,
        image: &B::Image,
        bytes: &[u8],
    ) -> Result<(Vec<FptrMapEntry>, VtableCount)> {
        let words = host_table::vtables::device_words(&host_table::vtables::defined_symbols(bytes));
        if words.is_empty() {
            return Ok(Default::default());
        }
        if !self.vtables {
            static NOTICED: AtomicBool = AtomicBool::new(false);
            let env = host_table::vtables::VTABLES_ENV;
            diagnostics::notice_once(
                &NOTICED,
                B::NAME,
                format_args!(
                    "{env}=0: the images' vtables are not paired (host-built objects keep host vtables)"
                ),
            );
            return Ok(Default::default());
        }
        let names = words.iter().map(|w| w.vtable.as_str()).collect();
        let host = host_table::vtables::host_definitions(&names);
        let mut pairs = Vec::new();
        let mut count = VtableCount::default();
        let mut missing = std::collections::BTreeSet::new();
        for word in &words {
            let Some(definitions) = host.get(&word.vtable) else {
                missing.insert(word.vtable.as_str());
                continue;
            };
            let global = self
                .backend
                .global(image, &word.symbol)?
                .ok_or_else(|| PluginError::MissingSymbol(word.symbol.clone()))?;
            let mut value = [0u8; 8];
            self.backend.read(device, &mut value, global.addr)?;
            let device_word = u64::from_le_bytes(value);
            if device_word == 0 {
                return Err(PluginError::InvalidImage(format!("{} holds no address", word.symbol)));
            }
            let offset = word.index * 8;
            let before = pairs.len();
            pairs.extend(
                definitions
                    .iter()
                    .filter(|&&(_, size)| offset + 8 <= size)
                    .map(|&(host, _)| FptrMapEntry { host_ptr: host + offset, tgt_ptr: device_word }),
            );
            count.words += (pairs.len() - before) as u64;
            if word.index == 0 {
                count.vtables += 1;
            }
        }
        if !missing.is_empty() {
            diagnostics::info(
                B::NAME,
                format_args!(
                    "device {device}: {} vtable(s) of the image not found in the host program (stripped, or not \
                     linked in): {}",
                    missing.len(),
                    missing.into_iter().collect::<Vec<_>>().join(", ")
                ),
            );
        }
        Ok((pairs, count))
    }

    /// `__tgt_rtl_init_requires`: the program's `OMP_REQ_*` flags as libomptarget knows them
    /// (clang 17 and older register them by a call; clang 18+ by an entry of each image, which
    /// [`Plugin::load_binary`] checks). Returns them, as LLVM's plugins do.
    pub fn init_requires(&self, flags: i64) -> i64 {
        self.requires.fetch_or(flags as u64, std::sync::atomic::Ordering::Relaxed);
        flags
    }

    /// Unloads the image registered under `key` and reinstalls the map of the remaining ones.
    pub fn unload_binary(&self, device: i32, key: usize) -> Result<()> {
        let mut state = self.lock(device)?;
        let index = state.images.iter().position(|i| i.key == key).ok_or_else(|| {
            PluginError::InvalidArgument(format!("no image at {key:#x} is loaded on this device"))
        })?;
        let img = state.images.remove(index);
        // Its handles go first, with no kernel running: the new map is installed without this
        // image, and the table it retires is the one this image's globals still point at, so
        // none of its kernels may start after the install (they would translate through freed
        // memory).
        {
            let _no_launches = self.no_launches(device);
            self.registry(device)?.remove_image(&img.globals, &img.kernels);
        }
        let result = self.install_images_map(device, &mut state);
        // No kernel of the device runs while it unloads.
        let _no_launches = self.no_launches(device);
        self.unload(device, img)?;
        result
    }

    /// `__tgt_rtl_deinit_device`: unloads every image and frees the map.
    pub fn deinit_device(&self, device: i32) -> Result<()> {
        let mut state = self.lock(device)?;
        let mut first_error = self.install(device, &mut state, &FptrTable::from_sorted(&[])?, None).err();
        let _no_launches = self.no_launches(device);
        self.registry(device)?.clear_images();
        for img in state.images.drain(..) {
            if let Err(err) = self.unload(device, img) {
                first_error.get_or_insert(err);
            }
        }
        // Where clearing the map failed, no image is left to point at its tables.
        let tables = state.table.take().into_iter().chain(std::mem::take(&mut state.stranded));
        if let Err(err) = self.free_tables(device, tables) {
            first_error.get_or_insert(err);
        }
        host_calls::device_closed(&self.backend, device);
        first_error.map_or(Ok(()), Err)
    }

    /// `__tgt_rtl_deinit_plugin`: [`Plugin::deinit_device`] for every device.
    pub fn deinit(&self) -> Result<()> {
        let mut first_error = None;
        for device in 0..self.device_count() {
            if let Err(err) = self.deinit_device(device) {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `__tgt_rtl_set_function_ptr_map`: validates `entries`, then installs them on `device`.
    pub fn set_function_ptr_map(&self, device: i32, entries: &[FptrMapEntry]) -> Result<()> {
        let table = FptrTable::from_sorted(entries)?;
        let mut state = self.lock(device)?;
        self.install(device, &mut state, &table, None)
    }

    /// `__tgt_rtl_launch_kernel`: runs a kernel of a loaded image, with the map installed when
    /// it starts in force until it ends.
    pub fn launch(&self, device: i32, launch: &LaunchParams<'_>) -> Result<()> {
        self.check_device(device)?;
        // Held before the handle is checked: an image is unloaded only under the gate, so a
        // handle found live stays live until the kernel ends.
        let _map_in_force = self.launching(device);
        self.registry(device)?.check_kernel(launch.kernel)?;
        // SAFETY: the registry holds exactly the handles of loaded images' kernels, each the
        // address of a `Box<LoadedKernel<B>>` owned by its `LoadedImage`, which the gate keeps
        // loaded.
        let loaded = unsafe { &*(launch.kernel as *const LoadedKernel<B>) };
        let ka = launch.kernel_args;
        let Some(info) = self.backend.device_info(device) else {
            // No DeviceRTL reads `dyn_ptr` or a launch environment here (host offload).
            let mut args = Vec::with_capacity(launch.args.len() + 1);
            if launch.wants_dyn_ptr() {
                args.push(0);
            }
            args.extend_from_slice(launch.args);
            let launch = Launch {
                args: &args,
                blocks: ka.num_teams[0].max(1),
                threads: ka.thread_limit[0].max(1),
                dynamic_shared_bytes: ka.dyn_cgroup_mem,
            };
            return self.backend.launch(device, &loaded.kernel, &launch);
        };
        let limits = info.limits.for_kernel(loaded.max_threads);
        let (blocks, threads) =
            launch_geometry(&loaded.config, &limits, ka.num_teams[0], ka.thread_limit[0], ka.tripcount);
        let _noted = host_calls::launching(&self.backend, device, launch.kernel);
        let result = with_kernel_arguments(&self.backend, device, launch, &loaded.config, |args| {
            let launch = Launch { args, blocks, threads, dynamic_shared_bytes: ka.dyn_cgroup_mem };
            self.backend.launch(device, &loaded.kernel, &launch)
        });
        if result.is_err() {
            host_calls::launch_failed::<B>(device);
        }
        result
    }
}
