//! What a backend (x86_64 host offload, CUDA, HSA) implements; everything else is generic.

use crate::environment::DeviceLimits;
use host_table::error::Result;
use host_table::image::DeviceImage;
use host_table::rtl_interface::{AllocKind, KernelArgs};

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

/// What the core needs to know about a device whose images run LLVM's DeviceRTL (the GPUs):
/// the values of the device environment it writes into every image, and the limits it computes
/// each launch's geometry within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Block and grid limits, warp size, multiprocessors, default block size.
    pub limits: DeviceLimits,
    /// `ClockFrequency` of the device environment, in Hz.
    pub clock_hz: u64,
    /// `HardwareParallelism` of the device environment: what LLVM's plugin for this kind of
    /// device reports (CUDA: multiprocessors x warps per multiprocessor).
    pub hardware_parallelism: u64,
    /// Bytes of device memory an image whose DeviceRTL has `__omp_rtl_device_memory_pool` gets
    /// for it (device `malloc`); 0: the device's DeviceRTL allocates elsewhere (CUDA's heap).
    pub memory_pool_bytes: u64,
}

/// A launch as the core prepared it for the backend: geometry within the device's and the
/// kernel's limits, and the complete argument list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch<'a> {
    /// Every kernel argument in order: for clang 19 kernels the leading `dyn_ptr` first.
    pub args: &'a [u64],
    /// Blocks (teams) in the grid.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Bytes of dynamic shared (group) memory per block.
    pub dynamic_shared_bytes: u32,
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

    /// The `OMP_REQ_*` requirements (`#pragma omp requires`) this backend's devices meet: by
    /// default `dynamic_allocators` alone (the DeviceRTL allocates on the device). An image of a
    /// program that requires more is refused at load, with its requirements named.
    const SUPPORTED_REQUIREMENTS: u64 = host_table::rtl_interface::OMP_REQ_DYNAMIC_ALLOCATORS;

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

    /// The device's facts for LLVM's DeviceRTL, or `None` where no DeviceRTL runs (host
    /// offload, the default): the core then writes no device environment, reads no kernel
    /// configuration and launches with the requested geometry.
    fn device_info(&self, _device: i32) -> Option<DeviceInfo> {
        None
    }

    /// Loads an image onto a device.
    fn load_image(&self, device: i32, image: &[u8]) -> Result<Self::Image>;

    /// Unloads an image loaded by [`Backend::load_image`].
    fn unload_image(&self, device: i32, image: Self::Image) -> Result<()>;

    /// Kernel `name` of `image`, or `None` if the image has no such kernel.
    fn kernel(&self, image: &Self::Image, name: &str) -> Result<Option<Self::Kernel>>;

    /// The most threads per block `kernel` can run with, where the compiled code limits it
    /// (CUDA's `maxntid`, register use); `None` (the default) where only the device limits.
    fn kernel_max_threads(&self, _kernel: &Self::Kernel) -> Option<u32> {
        None
    }

    /// Global `name` of `image`, or `None` if the image does not define it.
    fn global(&self, image: &Self::Image, name: &str) -> Result<Option<DeviceSymbol>>;

    /// Succeeds if `addr` is a function defined by `image`: what an indirect entry's global must
    /// hold. Backends that cannot tell accept any address (the default).
    fn check_function(&self, _image: &Self::Image, _addr: u64) -> Result<()> {
        Ok(())
    }

    /// Allocates `size` bytes (at least one: a 0-byte request still gets a unique pointer) of
    /// memory of `kind` for `device`.
    fn alloc(&self, device: i32, size: usize, kind: AllocKind) -> Result<u64>;

    /// Frees memory [`Backend::alloc`] returned for `kind`.
    fn free(&self, device: i32, ptr: u64, kind: AllocKind) -> Result<()>;

    /// Copies host bytes to device memory.
    fn write(&self, device: i32, dst: u64, src: &[u8]) -> Result<()>;

    /// Copies device memory to host bytes.
    fn read(&self, device: i32, dst: &mut [u8], src: u64) -> Result<()>;

    /// Runs `kernel` (of an image loaded on `device`) to completion with the geometry and
    /// arguments of `launch`.
    fn launch(&self, device: i32, kernel: &Self::Kernel, launch: &Launch<'_>) -> Result<()>;

    /// Where the host can write the device memory at `ptr` directly, when the device's memory
    /// is the host's (host offload): large structures are then built in place instead of built
    /// and copied. `None` (the default) for memory the host cannot address.
    fn host_address(&self, _device: i32, _ptr: u64) -> Option<*mut u8> {
        None
    }
}
