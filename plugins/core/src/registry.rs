//! What libomptarget may name on one device: the memory it allocated through the plugin and has
//! not freed, the globals of the loaded images, and their kernels. Every pointer a `__tgt_rtl_*`
//! call takes is checked against it before the backend sees it, so that a pointer the plugin
//! never handed out, one already freed, or a copy past the end of an allocation is refused with an
//! error instead of crashing the program or freeing the plugin's own memory.

use std::collections::{BTreeMap, HashMap};

use host_table::error::{PluginError, Result};
use host_table::rtl_interface::AllocKind;

/// What a region of device memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// Memory `__tgt_rtl_data_alloc` returned, of that kind: copies may touch it,
    /// `data_delete` frees it.
    Allocation(AllocKind),
    /// A global of a loaded image (a `declare target` variable): copies may touch it, nothing
    /// frees it but unloading the image.
    ImageGlobal,
}

/// One region: its length, what it is, and (for image globals, which two images may name) how
/// many loaded images named it.
#[derive(Debug, Clone, Copy)]
struct Span {
    len: u64,
    region: Region,
    holders: u32,
}

/// The registry of one device.
#[derive(Debug, Default)]
pub struct DeviceRegistry {
    /// Start address -> span. Allocations never overlap anything live; image globals do not
    /// overlap each other.
    spans: BTreeMap<u64, Span>,
    /// Kernel handles of the loaded images, with how many loaded images returned each.
    kernels: HashMap<u64, u32>,
}

impl DeviceRegistry {
    /// Records an allocation of `len` bytes of `kind` at `start` (a 0-byte allocation still
    /// owns 1 byte).
    pub fn add_allocation(&mut self, start: u64, len: u64, kind: AllocKind) {
        self.spans.insert(start, Span { len: len.max(1), region: Region::Allocation(kind), holders: 1 });
    }

    /// Forgets the allocation that starts at `start` and returns its length and kind; an error
    /// if no live allocation of libomptarget's starts there (never allocated, freed already, an
    /// interior pointer, an image global, or memory the plugin owns).
    pub fn remove_allocation(&mut self, start: u64) -> Result<(u64, AllocKind)> {
        match self.spans.get(&start) {
            Some(&Span { len, region: Region::Allocation(kind), .. }) => {
                self.spans.remove(&start);
                Ok((len, kind))
            }
            Some(_) => Err(PluginError::InvalidArgument(format!(
                "{start:#x} is a global of a loaded image, not an allocation"
            ))),
            None => Err(PluginError::InvalidArgument(format!(
                "{start:#x} was not allocated by this plugin on this device, or was freed already"
            ))),
        }
    }

    /// Records a loaded image's globals (`(address, size)`, size > 0) and kernel handles.
    pub fn add_image(&mut self, globals: &[(u64, u64)], kernels: &[u64]) {
        for &(start, len) in globals.iter().filter(|(_, len)| *len > 0) {
            self.spans.entry(start).and_modify(|s| s.holders += 1).or_insert(Span {
                len,
                region: Region::ImageGlobal,
                holders: 1,
            });
        }
        for &kernel in kernels {
            *self.kernels.entry(kernel).or_insert(0) += 1;
        }
    }

    /// Forgets what [`DeviceRegistry::add_image`] recorded for an image being unloaded.
    pub fn remove_image(&mut self, globals: &[(u64, u64)], kernels: &[u64]) {
        for &(start, _) in globals.iter().filter(|(_, len)| *len > 0) {
            if let Some(span) = self.spans.get_mut(&start).filter(|s| s.region == Region::ImageGlobal) {
                span.holders -= 1;
                if span.holders == 0 {
                    self.spans.remove(&start);
                }
            }
        }
        for kernel in kernels {
            if let Some(count) = self.kernels.get_mut(kernel) {
                *count -= 1;
                if *count == 0 {
                    self.kernels.remove(kernel);
                }
            }
        }
    }

    /// Succeeds if `[start, start + len)` (len > 0) lies inside one live allocation or image
    /// global.
    pub fn check_range(&self, start: u64, len: u64) -> Result<()> {
        let end = start.checked_add(len).ok_or_else(|| {
            PluginError::InvalidArgument(format!("{len} bytes at {start:#x} wrap around the address space"))
        })?;
        match self.spans.range(..=start).next_back() {
            Some((&base, span)) if end <= base + span.len => Ok(()),
            Some((&base, span)) if start < base + span.len => Err(PluginError::InvalidArgument(format!(
                "{len} bytes at {start:#x} run past the end of the {}-byte {} at {base:#x}",
                span.len,
                match span.region {
                    Region::Allocation(_) => "allocation",
                    Region::ImageGlobal => "image global",
                }
            ))),
            _ => Err(PluginError::InvalidArgument(format!(
                "{start:#x} is not in memory this plugin allocated on this device, nor in a loaded image's global"
            ))),
        }
    }

    /// Succeeds if `kernel` is a handle a loaded image's target table holds.
    pub fn check_kernel(&self, kernel: u64) -> Result<()> {
        if self.kernels.contains_key(&kernel) {
            Ok(())
        } else {
            Err(PluginError::InvalidArgument(format!(
                "kernel {kernel:#x} is not an entry of an image loaded on this device"
            )))
        }
    }

    /// Forgets every image (the device is being deinitialised); allocations stay.
    pub fn clear_images(&mut self) {
        self.spans.retain(|_, s| matches!(s.region, Region::Allocation(_)));
        self.kernels.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_freed_once_and_only_from_their_start() {
        let mut r = DeviceRegistry::default();
        r.add_allocation(0x1000, 16, AllocKind::Host);
        assert!(r.remove_allocation(0x1008).is_err(), "interior pointer");
        assert!(r.remove_allocation(0x2000).is_err(), "never allocated");
        assert_eq!(r.remove_allocation(0x1000), Ok((16, AllocKind::Host)), "freed as allocated");
        assert!(r.remove_allocation(0x1000).is_err(), "freed twice");
    }

    #[test]
    fn copies_stay_inside_one_region() {
        let mut r = DeviceRegistry::default();
        r.add_allocation(0x1000, 16, AllocKind::Device);
        r.add_image(&[(0x5000, 8)], &[0x9000]);
        assert!(r.check_range(0x1000, 16).is_ok());
        assert!(r.check_range(0x1008, 8).is_ok());
        assert!(r.check_range(0x1008, 9).unwrap_err().to_string().contains("run past the end"));
        assert!(r.check_range(0x1000, 1 << 20).is_err());
        assert!(r.check_range(0x1000, 1 << 40).is_err());
        assert!(r.check_range(0xfff, 2).is_err(), "starts before the allocation");
        assert!(r.check_range(u64::MAX - 4, 16).is_err(), "wraps");
        assert!(r.check_range(0x5000, 8).is_ok(), "an image global");
        assert!(r.check_range(0x5004, 8).is_err());
        assert!(r.remove_allocation(0x5000).is_err(), "globals are not freed through data_delete");
    }

    #[test]
    fn kernels_and_globals_live_as_long_as_an_image_names_them() {
        let mut r = DeviceRegistry::default();
        r.add_image(&[(0x5000, 8)], &[0x9000]);
        r.add_image(&[(0x5000, 8)], &[0x9000]);
        assert!(r.check_kernel(0x9000).is_ok());
        assert!(r.check_kernel(0x9001).is_err());
        r.remove_image(&[(0x5000, 8)], &[0x9000]);
        assert!(r.check_kernel(0x9000).is_ok() && r.check_range(0x5000, 8).is_ok());
        r.remove_image(&[(0x5000, 8)], &[0x9000]);
        assert!(r.check_kernel(0x9000).is_err() && r.check_range(0x5000, 8).is_err());
        r.add_allocation(0x1000, 4, AllocKind::Shared);
        r.add_image(&[(0x5000, 8)], &[0x9000]);
        r.clear_images();
        assert!(r.check_kernel(0x9000).is_err() && r.check_range(0x1000, 4).is_ok());
    }
}
