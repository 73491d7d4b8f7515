//! What a backend (x86_64 host offload, CUDA, HSA) implements; everything else is generic.

use crate::abi::KernelArgs;
use crate::error::Result;
use crate::image::DeviceImage;

/// A global found in a loaded image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSymbol {
    /// Its device address.
    pub addr: u64,
    /// Its size in bytes, where the loader knows it (`dlsym` does not).
    pub size: Option<u64>,
    /// Whether the plugin may write it: false for read-only memory of the image (on host
    /// offload, a read-only segment or RELRO), where a write would crash the process.
    pub writable: bool,
}

/// A kernel launch as libomptarget asked for it.
#[derive(Debug)]
pub struct LaunchParams<'a> {
    /// The kernel handle the target table gave libomptarget (the address of the core's box of
    /// the backend's [`Backend::Kernel`]).
    pub kernel: u64,
    /// The kernel's arguments, offsets applied, without clang 19's leading `dyn_ptr`.
    pub args: &'a [u64],
    /// libomptarget's launch description (version, teams, threads).
    pub kernel_args: &'a KernelArgs,
}

impl LaunchParams<'_> {
    /// clang 19 kernels (`KernelArgs` version 3 and later) take a leading `dyn_ptr` argument.
    pub fn wants_dyn_ptr(&self) -> bool {
        self.kernel_args.version >= 3
    }
}

/// The vendor-specific half of a plugin. Device ids reaching these methods are already checked
/// against [`Backend::device_count`]. Implementations report failures as errors, never panic.
pub trait Backend: Sized + Send + Sync + 'static {
    /// A loaded image (module, executable, shared object).
    type Image: Send;

    /// What the backend needs to launch one kernel of a loaded image (its function, its launch
    /// configuration). The core owns it, boxed, for as long as its image is loaded, gives
    /// libomptarget the box's address as the kernel's handle, and hands it back to
    /// [`Backend::launch`] only for a handle of a loaded image. Must not be zero-sized.
    type Kernel: Send + Sync;

    /// Short name used in diagnostics, e.g. `x86_64`.
    const NAME: &'static str;

    /// Loads the vendor runtime and finds the devices. An error makes the plugin report 0
    /// devices.
    fn init() -> Result<Self>;

    /// Number of devices.
    fn device_count(&self) -> i32;

    /// Accepts `image` (already unwrapped from an OffloadBinary) for at least one device, or
    /// says why not. `arch` is what libomptarget's image info says, if anything.
    fn check_image(&self, image: &DeviceImage<'_>, arch: Option<&str>) -> Result<()>;

    /// Prepares a device for use.
    fn init_device(&self, device: i32) -> Result<()>;

    /// Loads an image onto a device.
    fn load_image(&self, device: i32, image: &[u8]) -> Result<Self::Image>;

    /// Unloads an image loaded by [`Backend::load_image`].
    fn unload_image(&self, device: i32, image: Self::Image) -> Result<()>;

    /// Kernel `name` of `image`, or `None` if the image has no such kernel.
    fn kernel(&self, image: &Self::Image, name: &str) -> Result<Option<Self::Kernel>>;

    /// Global `name` of `image`, or `None` if the image does not define it.
    fn global(&self, image: &Self::Image, name: &str) -> Result<Option<DeviceSymbol>>;

    /// Succeeds if `addr` is a function defined by `image`: what an indirect entry's global must
    /// hold. Backends that cannot tell accept any address (the default).
    fn check_function(&self, _image: &Self::Image, _addr: u64) -> Result<()> {
        Ok(())
    }

    /// Allocates `size` bytes of device memory of libomptarget's allocation `kind`.
    fn alloc(&self, device: i32, size: usize, kind: i32) -> Result<u64>;

    /// Frees memory from [`Backend::alloc`].
    fn free(&self, device: i32, ptr: u64, kind: i32) -> Result<()>;

    /// Copies host bytes to device memory.
    fn write(&self, device: i32, dst: u64, src: &[u8]) -> Result<()>;

    /// Copies device memory to host bytes.
    fn read(&self, device: i32, dst: &mut [u8], src: u64) -> Result<()>;

    /// Runs `kernel` (of an image loaded on `device`) to completion.
    fn launch(&self, device: i32, kernel: &Self::Kernel, launch: &LaunchParams<'_>) -> Result<()>;

    /// Where the host can write the device memory at `ptr` directly, when the device's memory
    /// is the host's (host offload): large structures are then built in place instead of built
    /// and copied. `None` (the default) for memory the host cannot address.
    fn host_address(&self, _device: i32, _ptr: u64) -> Option<*mut u8> {
        None
    }

    /// Called for every image on `device` once a new map is in place (`table` is `(device
    /// address, entries)`, `None` when cleared), before the previous one is freed: a backend
    /// whose images keep another copy of the table pointer (LLVM 18+'s device environment)
    /// updates it here. An error undoes the whole installation.
    fn map_installed(&self, _device: i32, _image: &Self::Image, _table: Option<(u64, u64)>) -> Result<()> {
        Ok(())
    }
}
