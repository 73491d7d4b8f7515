//! One table per device, with its hash index, on the stock libomptarget (LLVM 21 and later) of
//! every device: GPUs and x86_64 host offload alike (`docs/stock-runtime-table.md`).
//!
//! The stock runtime gives each image its own sorted table in `__omp_rtl_device_environment`,
//! which the device library can only binary-search, and which holds only that image's pairs: an
//! object whose vtable another image (a shared library's) defines is not translated there. This
//! module installs instead, in every image, the table this project's own plugins install: the
//! pairs of every image loaded on the device, and the hash index over them, in the device
//! library's `__omp_offloading_fptr_map_*` globals, which its translation reads first.
//!
//! - **Where the globals are**: [`crate::registration::extend`] adds to each descriptor one entry per global
//!   (flags 0, a `declare target` variable of the global's size) whose host address is a
//!   [`Shadows`](crate::registered::Shadows) field of this library; libomptarget maps it to the image's global when it loads
//!   the image, and `omp_get_mapped_ptr` answers where.
//! - **The pairs**: libomptarget maps the host address of every indirect entry (functions, and
//!   the vtable words [`crate::registration::extend`] adds) to the device address the entry's global holds,
//!   the first image's where two define one; `omp_get_mapped_ptr` answers it per key.
//! - **When**: before a kernel is launched on a device (`__tgt_target_kernel`, which this
//!   library defines ahead of libomptarget's), if a descriptor was registered since the device's
//!   table was built: `omp_get_mapped_ptr` loads the device's pending images first, so this
//!   happens after libomptarget built its own tables and before any kernel of a new image runs.
//!   Otherwise a launch costs two atomic loads. An image's globals are written once, before its
//!   first kernel: an image loaded later (`dlopen` after the device ran kernels) gets a table with
//!   every image's pairs, and the images before it keep theirs.
//!   A launch on the default device (-1) also reads that device's number (an ICV).
//! - **Memory**: the table and its slots are one `omp_target_alloc` per build, freed with
//!   `omp_target_free` when the last descriptor is unregistered.
//!
//! Nothing here fails the program: whatever goes wrong leaves the images with the stock table
//! (binary search), says why under `LIBOMPTARGET_INFO`, and is not tried again for that device
//! until another descriptor is registered. `OMPTARGET_INDIRECT_MAP=0` installs nothing,
//! `OMPTARGET_INDIRECT_INDEX=0` the table without the index.

use std::collections::{BTreeMap, HashSet};
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use host_table::diagnostics;
use host_table::fptr_map::{map_global_writes, slot_bytes, FptrTable, HashIndex};
use host_table::rtl_interface::{FptrIndex, FptrMapEntry, FPTR_MAP_P, FPTR_MAP_SIZE};
use host_table::switches::{switch_from_env, HASH_INDEX_ENV, MAP_ON_LOAD_ENV};
use host_table::vtable_slots::{self, PairedVtable};
use host_table::vtables::HostObjects;

use crate::registered::{indirect_keys, vtable_copies, Shadows, REGISTERED};
use crate::{host_calls, NAME};

/// Devices this module installs tables on (device numbers `0..MAX_DEVICES`); the others keep
/// the stock tables.
pub(crate) const MAX_DEVICES: usize = 64;

/// Bumped by every registration that adds [`Shadows`]: a device whose [`BUILT`] differs builds
/// its table again before its next launch.
static REGISTRATIONS: AtomicU64 = AtomicU64::new(0);

/// Per device, the [`REGISTRATIONS`] its table was last built for (or given up at).
static BUILT: [AtomicU64; MAX_DEVICES] = [const { AtomicU64::new(0) }; MAX_DEVICES];

/// What this module allocated and wrote on one device.
#[derive(Default)]
struct DeviceTables {
    /// Device allocations holding tables and slots, freed with the last descriptor.
    allocations: Vec<u64>,
    /// The [`Shadows`] (by address) whose image on this device has its globals written.
    installed: HashSet<u64>,
}

static DEVICES: Mutex<BTreeMap<c_int, DeviceTables>> = Mutex::new(BTreeMap::new());

/// Called by [`crate::registration::__tgt_register_lib`] once it registered a descriptor with [`Shadows`].
pub(crate) fn registered() {
    REGISTRATIONS.fetch_add(1, Ordering::AcqRel);
}

/// The OpenMP API functions this library calls (libomptarget's and libomp's, found in the
/// process when first needed: this library does not link them).
pub(crate) struct OpenMp {
    get_mapped_ptr: unsafe extern "C" fn(*const c_void, c_int) -> *mut c_void,
    target_alloc: unsafe extern "C" fn(usize, c_int) -> *mut c_void,
    target_free: unsafe extern "C" fn(*mut c_void, c_int),
    target_memcpy:
        unsafe extern "C" fn(*mut c_void, *const c_void, usize, usize, usize, c_int, c_int) -> c_int,
    get_initial_device: unsafe extern "C" fn() -> c_int,
    get_default_device: unsafe extern "C" fn() -> c_int,
    get_num_devices: unsafe extern "C" fn() -> c_int,
    /// libomptarget's `llvm_omp_target_alloc_host` and `llvm_omp_target_free_host` (page-locked
    /// host memory a device can write), where it has them.
    pub(crate) host_memory: Option<HostMemory>,
}

/// `void *llvm_omp_target_alloc_host(size_t, int device)` and `void
/// llvm_omp_target_free_host(void *, int device)`.
#[derive(Clone, Copy)]
pub(crate) struct HostMemory {
    pub(crate) alloc: unsafe extern "C" fn(usize, c_int) -> *mut c_void,
    pub(crate) free: unsafe extern "C" fn(*mut c_void, c_int),
}

impl OpenMp {
    /// The functions, or None when one is missing (no OpenMP runtime in the process).
    pub(crate) fn get() -> Option<&'static OpenMp> {
        static API: OnceLock<Option<OpenMp>> = OnceLock::new();
        API.get_or_init(|| {
            /// `name` in the process, as a function of type `F`.
            fn find<F>(name: &CStr) -> Option<F> {
                // SAFETY: dlsym with a NUL-terminated name.
                let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
                // SAFETY: a non-null result is the OpenMP function of that name, whose C
                // signature is the type `F` each caller names (OpenMP 5.1, 18.8 and 3.2).
                (!found.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&found) })
            }
            Some(OpenMp {
                get_mapped_ptr: find(c"omp_get_mapped_ptr")?,
                target_alloc: find(c"omp_target_alloc")?,
                target_free: find(c"omp_target_free")?,
                target_memcpy: find(c"omp_target_memcpy")?,
                get_initial_device: find(c"omp_get_initial_device")?,
                get_default_device: find(c"omp_get_default_device")?,
                get_num_devices: find(c"omp_get_num_devices")?,
                host_memory: find(c"llvm_omp_target_alloc_host")
                    .zip(find(c"llvm_omp_target_free_host"))
                    .map(|(alloc, free)| HostMemory { alloc, free }),
            })
        })
        .as_ref()
    }

    /// Copies `bytes` from the host to `device` memory at `to`.
    pub(crate) fn upload(&self, device: c_int, to: u64, bytes: &[u8]) -> Result<(), String> {
        // SAFETY: `to` is device memory of `device` at least `bytes.len()` long (an allocation of
        // ours, or a global of the image's that size); the source is host memory.
        let status = unsafe {
            (self.target_memcpy)(
                to as *mut c_void,
                bytes.as_ptr().cast(),
                bytes.len(),
                0,
                0,
                device,
                (self.get_initial_device)(),
            )
        };
        if status == 0 {
            Ok(())
        } else {
            Err(format!("omp_target_memcpy of {} bytes to device {device} failed ({status})", bytes.len()))
        }
    }

    /// The `words` 8-byte words at `from` in `device` memory.
    fn download(&self, device: c_int, from: u64, words: usize) -> Result<Vec<u64>, String> {
        let mut bytes = vec![0u8; 8 * words];
        // SAFETY: the destination is host memory of that length; `from` is device memory of
        // `device` (a vtable of an image libomptarget loaded there, as its mapping says).
        let status = unsafe {
            (self.target_memcpy)(
                bytes.as_mut_ptr().cast(),
                from as *const c_void,
                bytes.len(),
                0,
                0,
                (self.get_initial_device)(),
                device,
            )
        };
        if status != 0 {
            return Err(format!(
                "omp_target_memcpy of {} bytes from device {device} failed ({status})",
                bytes.len()
            ));
        }
        Ok(vtable_slots::words_of(&bytes))
    }

    /// The device address libomptarget maps the host address `host` to on `device`, if any.
    fn mapped(&self, device: c_int, host: u64) -> Option<u64> {
        // SAFETY: omp_get_mapped_ptr only looks the address up; `device` is a valid device number.
        let found = unsafe { (self.get_mapped_ptr)(host as *const c_void, device) };
        (!found.is_null()).then_some(found as u64)
    }
}

/// Before a kernel is launched on `device_id` (libomptarget's device argument, -1 for the
/// default device): builds and installs the device's table if a descriptor was registered since
/// it was last built, and keeps the device's check of calls into host code current
/// ([`host_calls::gpu_launching`]). Never fails: see the module documentation.
pub(crate) fn before_launch(device_id: i64) {
    let generation = REGISTRATIONS.load(Ordering::Acquire);
    if generation == 0 {
        return;
    }
    let Some(api) = OpenMp::get() else { return };
    // libomptarget's checkDevice: -1 is the default device (an ICV read).
    let device = if device_id == -1 {
        // SAFETY: an OpenMP API query without arguments.
        unsafe { (api.get_default_device)() }
    } else {
        c_int::try_from(device_id).unwrap_or(-1)
    };
    let Ok(slot) = usize::try_from(device) else { return };
    if slot >= MAX_DEVICES {
        return;
    }
    if BUILT[slot].load(Ordering::Acquire) != generation {
        build(api, device, slot);
    }
    host_calls::gpu_launching(api, device);
}

/// Builds and installs the table of `device` (number `slot`), unless another thread did.
fn build(api: &OpenMp, device: c_int, slot: usize) {
    // Nothing for the host device or where there is no device (as the launch will find).
    // SAFETY: OpenMP API queries without arguments.
    let (devices, initial) = unsafe { ((api.get_num_devices)(), (api.get_initial_device)()) };
    if device >= devices || device == initial {
        if device == initial {
            // The host: never a device with images; not asked again.
            BUILT[slot].store(REGISTRATIONS.load(Ordering::Acquire), Ordering::Release);
        }
        return;
    }
    let mut devices_state = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
    // Read again under the lock: a registration may have come while this thread waited, and the
    // build below (from every descriptor in REGISTERED, each pushed there before its count)
    // covers it; so BUILT only grows. Another thread may have built it meanwhile.
    let generation = REGISTRATIONS.load(Ordering::Acquire);
    if BUILT[slot].load(Ordering::Acquire) == generation {
        return;
    }
    let tables = devices_state.entry(device).or_default();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| install(api, device, tables))) {
        Ok(Ok(Some(message))) => diagnostics::info(NAME, message),
        Ok(Ok(None)) => {}
        Ok(Err(why)) => diagnostics::info(
            NAME,
            format_args!("device {device}: the images keep the runtime's own tables (binary search): {why}"),
        ),
        Err(_) => diagnostics::info(NAME, format_args!("device {device}: no table installed: a panic")),
    }
    BUILT[slot].store(generation, Ordering::Release);
}

/// Builds the table of `device` from every registered descriptor's pairs there and writes it
/// into the globals of each image not yet written; says what it did.
fn install(api: &OpenMp, device: c_int, tables: &mut DeviceTables) -> Result<Option<String>, String> {
    if !switch_from_env(MAP_ON_LOAD_ENV) {
        return Ok(None);
    }
    // What the registered descriptors give: their stand-ins' addresses, their keys, and per
    // descriptor (by the address of the program's own) its keys and vtable copies.
    let (shadows, keys, by_descriptor) = {
        let registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        let mut shadows = Vec::new();
        let mut keys = Vec::new();
        let mut by_descriptor = Vec::new();
        for desc in registered.iter().filter(|r| r.live) {
            let Some(shadow) = desc.shadows() else { continue };
            shadows.push(shadow as *const Shadows as u64);
            // SAFETY: a live descriptor's entries.
            let own: Vec<(u64, bool)> = unsafe { indirect_keys(desc.entries()) }.collect();
            keys.extend(&own);
            // SAFETY: a live descriptor's entries, whose names are null or NUL-terminated.
            let vtable_copies = unsafe { vtable_copies(desc.entries()) };
            by_descriptor.push(DescriptorKeys { original: desc.original as u64, keys: own, vtable_copies });
        }
        (shadows, keys, by_descriptor)
    };
    // The first question loads the device's pending images (libomptarget's getDevice), which
    // calls back into this library (x86_64 images' constructors): REGISTERED is not held.
    let images: Vec<(u64, [u64; 3])> = shadows
        .iter()
        .filter_map(|&shadow| {
            // SAFETY: the address of a registered descriptor's Shadows, a box that is never freed
            // (a replacement stays allocated after it is unregistered).
            let shadow = unsafe { &*(shadow as *const Shadows) };
            // In the order of `Shadows::entries`: pointer, size, index.
            let globals = shadow.entries().map(|(_, host, _)| api.mapped(device, host).unwrap_or(0));
            globals.iter().all(|&g| g != 0).then_some((shadow as *const Shadows as u64, globals))
        })
        .collect();
    let fresh: Vec<&(u64, [u64; 3])> = images.iter().filter(|(s, _)| !tables.installed.contains(s)).collect();
    if fresh.is_empty() {
        return Ok(None);
    }
    // The x86_64 device's images are objects of this process: their check of calls into host
    // code was set up as each loaded, and their small tables are scanned.
    let objects = host_table::loaded_objects::loaded_objects();
    let on_host_device = fresh
        .iter()
        .any(|&&(_, [map_p, _, _])| objects.iter().any(|o| o.is_device_image() && o.holds(map_p)));
    for &&(shadow, _) in fresh.iter().filter(|_| !on_host_device) {
        // SAFETY: as above, a registered descriptor's Shadows.
        let shadow = unsafe { &*(shadow as *const Shadows) };
        let Some((_, host, _)) = shadow.host_calls_entry() else { continue };
        let Some(global) = api.mapped(device, host) else { continue };
        if let Err(why) = host_calls::gpu_image_loaded(api, device, global) {
            diagnostics::info(
                NAME,
                format_args!("device {device}: calls into host code are not checked: {why}"),
            );
        }
    }
    let pairs = device_pairs(api, device, &keys)?;
    let vtable_words = pairs.iter().filter(|(_, word)| *word).count() as u64;
    let mut pairs: Vec<FptrMapEntry> = pairs.into_iter().map(|(pair, _)| pair).collect();
    let copied = retarget_vtables(api, device, tables, &by_descriptor, &mut pairs);
    let table = FptrTable::from_pairs(pairs).map_err(|e| e.to_string())?;
    if table.is_empty() {
        return Ok(Some(format!("device {device}: no indirect entry is on it, no table installed")));
    }
    let capacity = match (switch_from_env(HASH_INDEX_ENV), on_host_device) {
        (false, _) => 0,
        (true, true) => HashIndex::capacity_on_host_device(&table).unwrap_or(0),
        (true, false) => HashIndex::capacity(&table).unwrap_or(0),
    };
    let table_bytes = table.as_bytes();
    let slots_at = table_bytes.len().next_multiple_of(16);
    let total = slots_at + 16 * capacity;
    // SAFETY: an allocation on a valid device (freed in `free_all`).
    let base = unsafe { (api.target_alloc)(total, device) } as u64;
    if base == 0 {
        return Err(format!("omp_target_alloc of {total} bytes failed"));
    }
    tables.allocations.push(base);
    let mut slots = vec![[0u64; 2]; capacity];
    let index = HashIndex::build_into(&table, &mut slots);
    let header = index.map_or(FptrIndex::NONE, |index| index.header_at(base, base + slots_at as u64));
    api.upload(device, base, table_bytes)?;
    if index.is_some() {
        api.upload(device, base + slots_at as u64, slot_bytes(&slots))?;
    }
    for &&(shadow, [map_p, map_size, index_global]) in &fresh {
        for (global, bytes) in map_global_writes(Some((base, table.len() as u64, header))) {
            let at = match global {
                FPTR_MAP_P => map_p,
                FPTR_MAP_SIZE => map_size,
                _ => index_global,
            };
            api.upload(device, at, &bytes)?;
        }
        tables.installed.insert(shadow);
    }
    let probe = index.map_or_else(|| "-".to_string(), |i| i.longest_probe().to_string());
    Ok(Some(format!(
        "device {device}: one table for the {} images on it ({} written now): {} indirect functions and {} \
         vtable words, table {} B, index {} B, longest probe {probe}{copied}",
        images.len(),
        fresh.len(),
        table.len() as u64 - vtable_words.min(table.len() as u64),
        vtable_words,
        table_bytes.len(),
        16 * capacity
    )))
}

/// What one registered descriptor gives [`retarget_vtables`].
struct DescriptorKeys {
    /// The address of the program's own descriptor: in the object that registered it.
    original: u64,
    /// Its keys ([`indirect_keys`]).
    keys: Vec<(u64, bool)>,
    /// The host words of its vtable copies ([`vtable_copies`]).
    vtable_copies: Vec<Vec<u64>>,
}

/// Device copies of the vtables whose slots name another image's functions
/// ([`host_table::vtable_slots`]), in new device memory (freed with the tables), and `pairs`
/// pointed at them. Says what it did, for the table's line; a copy that cannot be made leaves
/// the images' vtables paired.
fn retarget_vtables(
    api: &OpenMp,
    device: c_int,
    tables: &mut DeviceTables,
    by_descriptor: &[DescriptorKeys],
    pairs: &mut [FptrMapEntry],
) -> String {
    let mapped: std::collections::HashMap<u64, u64> = pairs.iter().map(|p| (p.host_ptr, p.tgt_ptr)).collect();
    let objects = HostObjects::now();
    let mut vtables = Vec::new();
    let mut functions = Vec::new();
    for descriptor in by_descriptor {
        let registered_by = objects.object_of(descriptor.original);
        for &(key, _) in descriptor.keys.iter().filter(|(_, word)| !word) {
            if let Some(&to) = mapped.get(&key) {
                functions.push((key, to, registered_by));
            }
        }
        for copy in &descriptor.vtable_copies {
            let Some(words) = copy.iter().map(|h| Some((*h, *mapped.get(h)?))).collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            vtables.push(PairedVtable { words, registered_by });
        }
    }
    let read = |at: u64, words: usize| api.download(device, at, words).ok();
    let retargeted = vtable_slots::retarget(&vtables, &functions, &objects, read);
    if retargeted.is_empty() {
        return String::new();
    }
    let size = vtable_slots::copies_size(&retargeted);
    // SAFETY: an allocation on a valid device (freed in `free_all`).
    let base = unsafe { (api.target_alloc)(size, device) } as u64;
    if base == 0 {
        return format!(
            "; {} vtable(s) keep their images' slots: omp_target_alloc of {size} bytes failed",
            retargeted.len()
        );
    }
    tables.allocations.push(base);
    let (bytes, replacements) = vtable_slots::lay_out(&vtables, &retargeted, base);
    if let Err(why) = api.upload(device, base, &bytes) {
        return format!("; {} vtable(s) keep their images' slots: {why}", retargeted.len());
    }
    vtable_slots::replace_pairs(pairs, &replacements);
    let slots = vtable_slots::slots_changed(&retargeted);
    format!(
        "; {} vtable(s) copied with {slots} slot(s) naming another image's functions ({size} B)",
        retargeted.len()
    )
}

/// `(pair, is a vtable word)` for each key libomptarget maps on `device`. Keys closer than 8
/// bytes to each other, or a key mapped to itself, refuse the whole table: libomptarget maps each
/// key as 8 bytes, and of two overlapping ranges answers the first for both.
fn device_pairs(
    api: &OpenMp,
    device: c_int,
    keys: &[(u64, bool)],
) -> Result<Vec<(FptrMapEntry, bool)>, String> {
    let mut sorted: Vec<(u64, bool)> = keys.to_vec();
    sorted.sort_unstable();
    sorted.dedup_by_key(|(key, _)| *key);
    if let Some(pair) = sorted.windows(2).find(|w| w[1].0 - w[0].0 < 8) {
        return Err(format!(
            "two indirect entries less than 8 bytes apart ({:#x}, {:#x}): the runtime's mapping cannot tell them apart",
            pair[0].0, pair[1].0
        ));
    }
    let mut pairs = Vec::with_capacity(sorted.len());
    for (key, word) in sorted.into_iter().filter(|&(key, _)| key != 0) {
        let Some(tgt_ptr) = api.mapped(device, key) else { continue };
        // A range mapped to itself: clang's own vtable entry (flag 0x20, emitted for classes of
        // objects in map clauses) covers the key, libomptarget maps that range to the host's
        // addresses, and then skips the entries inside it (the words this library added).
        if tgt_ptr == key {
            return Err(format!(
                "{key:#x} maps to itself (a vtable entry of clang's covers it): the runtime's mapping does not say \
                 where its device copy is"
            ));
        }
        pairs.push((FptrMapEntry { host_ptr: key, tgt_ptr }, word));
    }
    Ok(pairs)
}

/// Frees every table of every device (the last descriptor is being unregistered: its images
/// are about to be unloaded), and forgets what was written.
pub(crate) fn free_all() {
    let Some(api) = OpenMp::get() else { return };
    host_calls::gpu_images_unloading(api);
    let mut devices = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
    for (&device, tables) in devices.iter_mut() {
        for &allocation in &tables.allocations {
            // SAFETY: an allocation of ours on that device, freed once.
            unsafe { (api.target_free)(allocation as *mut c_void, device) };
        }
    }
    devices.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use host_table::rtl_interface::FPTR_INDEX;

    #[test]
    fn shadows_name_the_three_globals_at_their_own_addresses() {
        let shadows = Shadows::default();
        let entries = shadows.entries();
        let names: Vec<&str> = entries.iter().map(|(n, _, _)| n.to_str().unwrap()).collect();
        assert_eq!(names, [FPTR_MAP_P, FPTR_MAP_SIZE, FPTR_INDEX]);
        assert_eq!(entries.map(|(_, _, size)| size), [8, 8, 48]);
        let base = &shadows as *const Shadows as u64;
        assert_eq!(entries.map(|(_, address, _)| address - base), [0, 8, 16]);
    }
}
