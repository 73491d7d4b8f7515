//! Device resources that release themselves: the layer over [`Driver`]'s calls that owns what
//! they create. A [`DeviceBuffer`] is freed and a [`LoadedModule`] unloaded when dropped, so a
//! caller that fails half-way leaks nothing. They borrow the driver, which outlives them.

use std::ffi::CStr;

use crate::error::Result;

use crate::sys::{CuDevicePtr, CuHandle};
use crate::Driver;

/// Device memory, freed on drop.
pub struct DeviceBuffer<'d> {
    driver: &'d Driver,
    ptr: CuDevicePtr,
    bytes: usize,
}

impl<'d> DeviceBuffer<'d> {
    /// `bytes` (at least one) of uninitialised device memory in the current context.
    pub fn alloc(driver: &'d Driver, bytes: usize) -> Result<DeviceBuffer<'d>> {
        let bytes = bytes.max(1);
        Ok(DeviceBuffer { driver, ptr: driver.alloc(bytes)?, bytes })
    }

    /// Device memory holding a copy of `data`.
    pub fn upload(driver: &'d Driver, data: &[u8]) -> Result<DeviceBuffer<'d>> {
        let buffer = DeviceBuffer::alloc(driver, data.len())?;
        driver.write(buffer.ptr, data)?;
        Ok(buffer)
    }

    /// The device address.
    pub fn ptr(&self) -> CuDevicePtr {
        self.ptr
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether it holds no byte (never: allocations are at least one byte).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Copies the first `out.len()` bytes (at most the buffer's) back to the host.
    pub fn read(&self, out: &mut [u8]) -> Result<()> {
        let n = out.len().min(self.bytes);
        self.driver.read(&mut out[..n], self.ptr)
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        let _ = self.driver.free(self.ptr);
    }
}

/// A module loaded into the current context, unloaded on drop.
pub struct LoadedModule<'d> {
    driver: &'d Driver,
    handle: CuHandle,
}

impl<'d> LoadedModule<'d> {
    /// Loads a cubin or a NUL-terminated PTX text.
    pub fn load(driver: &'d Driver, image: &[u8]) -> Result<LoadedModule<'d>> {
        Ok(LoadedModule { driver, handle: driver.load_module(image)? })
    }

    /// The kernel `name`, if the module has one.
    pub fn function(&self, name: &CStr) -> Result<Option<CuHandle>> {
        // SAFETY: the handle is a loaded module until this value is dropped.
        unsafe { self.driver.function(self.handle, name) }
    }

    /// Address and size of the global `name`, if the module has one.
    pub fn global(&self, name: &CStr) -> Result<Option<(CuDevicePtr, usize)>> {
        // SAFETY: as above.
        unsafe { self.driver.global(self.handle, name) }
    }
}

impl Drop for LoadedModule<'_> {
    fn drop(&mut self) {
        // SAFETY: loaded in `load`, unloaded once, here.
        let _ = unsafe { self.driver.unload_module(self.handle) };
    }
}
