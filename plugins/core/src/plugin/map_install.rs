//! The map install: a function-pointer table (and its hash index) put into device memory and
//! every loaded image pointed at it, as one transaction under the launch gate.

use std::sync::atomic::AtomicBool;

use super::{DeviceState, Plugin, VtableCount};
use crate::backend::{Backend, DeviceSymbol};
use crate::device_runtime::write_indirect_call_table;
use crate::environment::EnvironmentGlobal;
use host_table::diagnostics::{self, MapSummary};
use host_table::error::{PluginError, Result};
use host_table::fptr_map::{map_global_writes, slot_bytes, FptrTable, HashIndex};
use host_table::rtl_interface::{AllocKind, FptrIndex, FptrMapEntry, FPTR_INDEX, FPTR_MAP_P, FPTR_MAP_SIZE};
use host_table::switches::MAP_ON_LOAD_ENV;
use host_table::vtable_slots::{self, PairedVtable};
use host_table::vtables::HostObjects;

/// A function-pointer table in device memory, with its hash index if one was built.
#[derive(Debug, Clone, Copy)]
pub(super) struct DeviceTable {
    ptr: u64,
    len: u64,
    /// What `__omp_offloading_fptr_index` holds for this table: `slots` is device memory owned
    /// here, or 0 (and the header all zero) without an index.
    index: FptrIndex,
    /// Bytes of the index's slots (0 without an index) and the longest probe in them.
    index_bytes: u64,
    longest_probe: Option<u32>,
    /// The device copies of vtables its pairs point into (`(address, bytes)`), owned here
    /// ([`host_table::vtable_slots`]).
    vtable_copies: Option<(u64, usize)>,
}

/// Where one loaded image holds the installed map.
#[derive(Debug, Clone, Copy)]
pub(super) struct MapTargets {
    /// Its map globals, if its device code uses them.
    globals: Option<MapGlobals>,
    /// Its DeviceRTL's device environment `(address, size)`, whose table fields mirror the map.
    environment: Option<EnvironmentGlobal>,
}

/// The globals of one image that describe the installed map.
#[derive(Debug, Clone, Copy)]
pub(super) struct MapGlobals {
    p: DeviceSymbol,
    size: DeviceSymbol,
    /// Only images linked with this project's device runtime define it.
    index: Option<DeviceSymbol>,
}

impl<B: Backend> Plugin<B> {
    pub(super) fn install_images_map(&self, device: i32, state: &mut DeviceState<B>) -> Result<()> {
        if !self.map_on_load {
            static NOTICED: AtomicBool = AtomicBool::new(false);
            diagnostics::notice_once(
                &NOTICED,
                B::NAME,
                format_args!(
                    "{MAP_ON_LOAD_ENV}=0: loading an image installs no function-pointer map \
                     (translation returns pointers unchanged)"
                ),
            );
            return Ok(());
        }
        // Two images may each define a copy of the same inline function or vtable (a class with
        // no key function in a library and in the program), equal by the ODR but not in what
        // they call: the program's copy of a library class's inline function calls the library's
        // out-of-line functions, which only the library's image has. So a key two images pair
        // keeps the address of the image its own host object registered (a shared library's
        // host vtable pairs with that library's image), else the earlier image's.
        // (The loaded objects from dl_iterate_phdr, which takes only the loader's list lock, not
        // the lock a dlopen holds while its constructors register with libomptarget.)
        let objects = HostObjects::now();
        let mut first: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
        let mut pairs: Vec<FptrMapEntry> = Vec::new();
        for image in &state.images {
            let registered_by = objects.object_of(image.key as u64);
            for pair in &image.indirect {
                match first.get(&pair.host_ptr) {
                    None => {
                        first.insert(pair.host_ptr, pairs.len());
                        pairs.push(*pair);
                    }
                    Some(&at)
                        if pairs[at].tgt_ptr != pair.tgt_ptr
                            && registered_by.is_some()
                            && objects.object_of(pair.host_ptr) == registered_by =>
                    {
                        pairs[at] = *pair;
                    }
                    Some(_) => {}
                }
            }
        }
        let copies = self.retargeted_vtables(device, state, &objects, &mut pairs);
        let table = match FptrTable::from_pairs(pairs) {
            Ok(table) => table,
            Err(err) => {
                self.free_copies(device, copies);
                return Err(err);
            }
        };
        self.install(device, state, &table, copies)
    }

    /// Device copies of the vtables whose slots name another image's functions
    /// ([`host_table::vtable_slots`]), written to new device memory, and `pairs` pointed at them; the
    /// allocation (`(address, bytes)`), none when no vtable needs one. A copy that cannot be made
    /// leaves the images' vtables paired, said under `LIBOMPTARGET_INFO`.
    fn retargeted_vtables(
        &self,
        device: i32,
        state: &DeviceState<B>,
        objects: &HostObjects,
        pairs: &mut [FptrMapEntry],
    ) -> Option<(u64, usize)> {
        let chosen: std::collections::HashMap<u64, u64> =
            pairs.iter().map(|p| (p.host_ptr, p.tgt_ptr)).collect();
        let mut vtables = Vec::new();
        let mut functions = Vec::new();
        for image in &state.images {
            let registered_by = objects.object_of(image.key as u64);
            functions.extend(
                image.indirect[..image.functions].iter().map(|p| (p.host_ptr, p.tgt_ptr, registered_by)),
            );
            // The copies whose every word the map pairs with this image's.
            vtables.extend(
                image
                    .vtable_copies
                    .iter()
                    .filter(|words| words.iter().all(|(h, d)| chosen.get(h) == Some(d)))
                    .map(|words| PairedVtable { words: words.clone(), registered_by }),
            );
        }
        let read = |at: u64, words: usize| {
            let mut bytes = vec![0u8; 8 * words];
            self.backend.read(device, &mut bytes, at).ok()?;
            Some(vtable_slots::words_of(&bytes))
        };
        let retargeted = vtable_slots::retarget(&vtables, &functions, objects, read);
        if retargeted.is_empty() {
            return None;
        }
        let size = vtable_slots::copies_size(&retargeted);
        let made = self.backend.alloc(device, size, AllocKind::Device).and_then(|base| {
            let (bytes, replacements) = vtable_slots::lay_out(&vtables, &retargeted, base);
            match self.backend.write(device, base, &bytes) {
                Ok(()) => Ok((base, replacements)),
                Err(err) => {
                    let _ = self.backend.free(device, base, AllocKind::Device);
                    Err(err)
                }
            }
        });
        match made {
            Ok((base, replacements)) => {
                vtable_slots::replace_pairs(pairs, &replacements);
                let slots = vtable_slots::slots_changed(&retargeted);
                diagnostics::info(
                    B::NAME,
                    format_args!(
                        "device {device}: {} vtable(s) copied with {slots} slot(s) naming another image's functions \
                         ({size} B)",
                        retargeted.len()
                    ),
                );
                Some((base, size))
            }
            Err(err) => {
                diagnostics::info(
                    B::NAME,
                    format_args!(
                        "device {device}: {} vtable(s) whose slots name another image's functions keep their \
                         image's slots: {err}",
                        retargeted.len()
                    ),
                );
                None
            }
        }
    }

    /// Frees vtable copies no table came to own.
    fn free_copies(&self, device: i32, copies: Option<(u64, usize)>) {
        if let Some((base, _)) = copies {
            let _ = self.backend.free(device, base, AllocKind::Device);
        }
    }

    /// Replaces the device's map with `table` as one transaction: build (the table and its hash
    /// index in new device memory), write (every loaded image's map globals and device
    /// environment point at it, under the launch gate), publish (it becomes the device's table),
    /// retire (the previous one is freed). Every check comes before the first change; a failed
    /// write points every image back at the previous table and frees the new one, so the
    /// previous map stays in force. An empty table clears the map.
    pub(super) fn install(
        &self,
        device: i32,
        state: &mut DeviceState<B>,
        table: &FptrTable<'_>,
        vtable_copies: Option<(u64, usize)>,
    ) -> Result<()> {
        let targets = state
            .images
            .iter()
            .map(|img| {
                Ok(MapTargets { globals: self.map_globals(&img.image)?, environment: img.environment })
            })
            .collect::<Result<Vec<_>>>();
        // Build (the copies belong to the new table from here, or are freed).
        let new = targets.and_then(|targets| {
            let new = if table.is_empty() { None } else { Some(self.upload(device, table)?) };
            Ok((targets, new))
        });
        let (targets, new) = match new {
            Ok((targets, Some(mut t))) => {
                t.vtable_copies = vtable_copies;
                (targets, Some(t))
            }
            Ok((targets, None)) => {
                self.free_copies(device, vtable_copies);
                (targets, None)
            }
            Err(err) => {
                self.free_copies(device, vtable_copies);
                return Err(err);
            }
        };
        // Write: from here to the old table's release, no kernel of this device runs.
        let _no_launches = self.no_launches(device);
        for (done, target) in targets.iter().enumerate() {
            if let Err(err) = self.point(device, target, new) {
                // Every image that may have seen the new table goes back to the installed one;
                // each is tried even after one fails.
                let restored = targets[..=done]
                    .iter()
                    .fold(true, |ok, target| self.point(device, target, state.table).is_ok() && ok);
                if let Some(t) = new {
                    if restored {
                        let _ = self.free_table(device, t);
                    } else {
                        state.stranded.push(t);
                    }
                }
                return Err(err);
            }
        }
        // Publish.
        if let Some(t) = new {
            let vtables = state.images.iter().fold(VtableCount::default(), |all, i| VtableCount {
                vtables: all.vtables + i.vtables.vtables,
                words: all.words + i.vtables.words,
            });
            let summary = MapSummary {
                functions: t.len - vtables.words.min(t.len),
                vtables: vtables.vtables,
                vtable_words: vtables.words,
                table_bytes: t.len * 16,
                index_bytes: t.index_bytes,
                longest_probe: t.longest_probe,
            };
            diagnostics::info(B::NAME, format_args!("device {device}: {summary}"));
        }
        let old = std::mem::replace(&mut state.table, new);
        // Retire: no image points at the previous table, nor at any stranded one, any more.
        self.free_tables(device, old.into_iter().chain(state.stranded.drain(..)))
    }

    /// Frees each of `tables`; the first error, after trying them all.
    pub(super) fn free_tables(&self, device: i32, tables: impl Iterator<Item = DeviceTable>) -> Result<()> {
        let mut result = Ok(());
        for table in tables {
            let freed = self.free_table(device, table);
            result = result.and(freed);
        }
        result
    }

    /// Points one image's copies of the map (its map globals, its device environment's table
    /// fields) at `table`; `None` clears them.
    pub(super) fn point(&self, device: i32, target: &MapTargets, table: Option<DeviceTable>) -> Result<()> {
        if let Some(globals) = &target.globals {
            self.patch(device, globals, table)?;
        }
        write_indirect_call_table(&self.backend, device, target.environment, table.map(|t| (t.ptr, t.len)))
    }

    /// Copies a non-empty `table` and, unless switched off, its hash index to new device memory.
    pub(super) fn upload(&self, device: i32, table: &FptrTable<'_>) -> Result<DeviceTable> {
        let bytes = table.as_bytes();
        let ptr = self.backend.alloc(device, bytes.len(), AllocKind::Device)?;
        let mut uploaded = DeviceTable {
            ptr,
            len: table.len() as u64,
            index: FptrIndex::NONE,
            index_bytes: 0,
            longest_probe: None,
            vtable_copies: None,
        };
        let capacity = match (self.hash_index, self.backend.device_info(device)) {
            (false, _) => None,
            // Host offload: the x86_64 device, which scans a small table sooner.
            (true, None) => HashIndex::capacity_on_host_device(table),
            (true, Some(_)) => HashIndex::capacity(table),
        };
        let result = self.backend.write(device, ptr, bytes).and_then(|()| {
            let Some(capacity) = capacity else { return Ok(()) };
            let slots_ptr = self.backend.alloc(device, capacity * 16, AllocKind::Device)?;
            // Recorded before anything can fail, so that the error path frees the slots too.
            uploaded.index.slots = slots_ptr;
            if slots_ptr % 16 != 0 {
                return Err(PluginError::Backend(format!(
                    "device memory at {slots_ptr:#x} is not 16-byte aligned, as the index needs"
                )));
            }
            let built = match self.backend.host_address(device, slots_ptr) {
                Some(host) => {
                    // SAFETY: the backend says the host addresses this fresh, 16-aligned
                    // allocation of `capacity * 16` bytes directly; nothing else refers to it.
                    let slots = unsafe { std::slice::from_raw_parts_mut(host.cast::<[u64; 2]>(), capacity) };
                    slots.fill([0, 0]);
                    HashIndex::build_into(table, slots)
                }
                None => match HashIndex::build(table) {
                    Some((index, slots)) => {
                        self.backend.write(device, slots_ptr, slot_bytes(&slots))?;
                        Some(index)
                    }
                    None => None,
                },
            };
            let index =
                built.ok_or_else(|| PluginError::Backend("the hash index could not be built".into()))?;
            uploaded.index = index.header_at(ptr, slots_ptr);
            uploaded.index_bytes = capacity as u64 * 16;
            uploaded.longest_probe = Some(index.longest_probe());
            Ok(())
        });
        match result {
            Ok(()) => Ok(uploaded),
            Err(err) => {
                let _ = self.free_table(device, uploaded);
                Err(err)
            }
        }
    }

    /// Frees a table, its index slots and its vtable copies.
    pub(super) fn free_table(&self, device: i32, table: DeviceTable) -> Result<()> {
        let index = match table.index.slots {
            0 => Ok(()),
            slots => self.backend.free(device, slots, AllocKind::Device),
        };
        let copies = match table.vtable_copies {
            None => Ok(()),
            Some((base, _)) => self.backend.free(device, base, AllocKind::Device),
        };
        self.backend.free(device, table.ptr, AllocKind::Device).and(index).and(copies)
    }

    /// The map globals of `image`, size-checked; `None` if it defines neither map global.
    pub(super) fn map_globals(&self, image: &B::Image) -> Result<Option<MapGlobals>> {
        let p = self.backend.global(image, FPTR_MAP_P)?;
        let size = self.backend.global(image, FPTR_MAP_SIZE)?;
        let (p, size) = match (p, size) {
            (None, None) => return Ok(None),
            (Some(p), Some(size)) => (p, size),
            (Some(_), None) => {
                return Err(PluginError::MissingSymbol(format!(
                    "{FPTR_MAP_SIZE} (the image defines {FPTR_MAP_P})"
                )))
            }
            (None, Some(_)) => {
                return Err(PluginError::MissingSymbol(format!(
                    "{FPTR_MAP_P} (the image defines {FPTR_MAP_SIZE})"
                )))
            }
        };
        let index = self.backend.global(image, FPTR_INDEX)?;
        let expected = [(FPTR_MAP_P, Some(p), 8), (FPTR_MAP_SIZE, Some(size), 8), (FPTR_INDEX, index, 48)];
        for (name, sym) in expected.iter().map(|(n, s, _)| (n, s)) {
            if sym.is_some_and(|s| !s.writable) {
                return Err(PluginError::InvalidImage(format!("{name} is in read-only memory")));
            }
        }
        for (name, sym, want) in expected {
            if let Some(bytes) = sym.and_then(|s| s.size).filter(|&s| s != want) {
                return Err(PluginError::InvalidImage(format!("{name} is {bytes} bytes, expected {want}")));
            }
        }
        Ok(Some(MapGlobals { p, size, index }))
    }

    /// Writes one image's globals in [`map_global_writes`]'s order (its index header only where the
    /// image has one).
    pub(super) fn patch(&self, device: i32, globals: &MapGlobals, table: Option<DeviceTable>) -> Result<()> {
        for (global, bytes) in map_global_writes(table.map(|t| (t.ptr, t.len, t.index))) {
            let at = match global {
                FPTR_MAP_P => Some(globals.p),
                FPTR_MAP_SIZE => Some(globals.size),
                _ => globals.index,
            };
            if let Some(symbol) = at {
                self.backend.write(device, symbol.addr, &bytes)?;
            }
        }
        Ok(())
    }
}
