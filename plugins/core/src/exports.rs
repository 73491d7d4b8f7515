//! The `__tgt_rtl_*` C entry points, written once. [`export_plugin!`](crate::export_plugin) instantiates them for a
//! backend; each shim calls one generic function here, which catches panics, reports failures
//! through [`host_table::diagnostics`], and returns `OFFLOAD_FAIL` / null instead of unwinding into C.

use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use crate::backend::{Backend, LaunchParams};
use crate::hidden_helpers::{self, HelperTeam};
use crate::plugin::Plugin;
use host_table::error::{PluginError, Result};
use host_table::rtl_interface::{
    AllocKind, FptrMapEntry, KernelArgs, TgtDeviceImage, TgtImageInfo, TgtTargetTable, OFFLOAD_FAIL,
    OFFLOAD_SUCCESS,
};
use host_table::{diagnostics, entries, image};

/// The process-wide plugin instance of one backend, created on first use.
pub struct PluginCell<B: Backend> {
    plugin: OnceLock<Result<Plugin<B>>>,
}

impl<B: Backend> Default for PluginCell<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Backend> PluginCell<B> {
    /// An empty cell, for a `static`.
    pub const fn new() -> Self {
        PluginCell { plugin: OnceLock::new() }
    }

    /// The plugin, initialising it on first call. A failed initialisation is kept, and every
    /// call answers it as [`PluginError::Unavailable`]: the backend has no usable device.
    pub fn get(&self) -> Result<&Plugin<B>> {
        self.plugin.get_or_init(Plugin::new).as_ref().map_err(|err| match err {
            PluginError::Unavailable(_) => err.clone(),
            other => PluginError::Unavailable(other.to_string()),
        })
    }
}

/// Runs `body`, turning an error or a panic into `fail` plus one diagnostic line.
fn guard<T>(call: &str, device: Option<i32>, plugin: &str, fail: T, body: impl FnOnce() -> Result<T>) -> T {
    guarded(call, device, plugin, fail, false, body)
}

/// [`guard`] for a call whose failure is an answer ("not an image of mine"): reported only as
/// information.
fn guard_question<T>(call: &str, plugin: &str, fail: T, body: impl FnOnce() -> Result<T>) -> T {
    guarded(call, None, plugin, fail, true, body)
}

fn guarded<T>(
    call: &str,
    device: Option<i32>,
    plugin: &str,
    fail: T,
    quiet: bool,
    body: impl FnOnce() -> Result<T>,
) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(err)) => {
            diagnostics::failed(plugin, call, device, &err, quiet);
            fail
        }
        Err(_) => {
            diagnostics::panicked(plugin, call, device);
            fail
        }
    }
}

fn status(result: Result<()>) -> Result<i32> {
    result.map(|()| OFFLOAD_SUCCESS)
}

/// Reads the device image bytes described by `image`.
///
/// # Safety
/// `image` must be null or point to a valid `__tgt_device_image` whose range is readable.
unsafe fn image_bytes<'a>(image: *const TgtDeviceImage) -> Result<(&'a TgtDeviceImage, &'a [u8])> {
    let image =
        // SAFETY: `as_ref` checks for null; a non-null `image` is valid by the caller's contract.
        unsafe { image.as_ref() }.ok_or_else(|| PluginError::InvalidArgument("null device image".into()))?;
    let (start, end) = (image.image_start as usize, image.image_end as usize);
    if start == 0 || end <= start {
        return Err(PluginError::InvalidImage(format!("bad image range {start:#x}..{end:#x}")));
    }
    // SAFETY: the caller guarantees the range is readable.
    Ok((image, unsafe { std::slice::from_raw_parts(start as *const u8, end - start) }))
}

/// `int32_t __tgt_rtl_init_plugin(void)`: 0 when the backend initialised. Starts the hidden
/// helper team of a libomp before 19 first ([`hidden_helpers`]).
pub fn init_plugin<B: Backend>(cell: &PluginCell<B>) -> i32 {
    guard("__tgt_rtl_init_plugin", None, B::NAME, OFFLOAD_FAIL, || {
        report_helper_team(B::NAME, hidden_helpers::start_team_early());
        cell.get().map(|_| OFFLOAD_SUCCESS)
    })
}

fn report_helper_team(plugin: &str, team: HelperTeam) {
    match team {
        HelperTeam::Started => diagnostics::info(
            plugin,
            "this libomp predates 19, whose hidden helper team started after a parallel region \
             crashes target tasks (llvm-project#87117): started it now",
        ),
        HelperTeam::TooLate => diagnostics::info(
            plugin,
            "this libomp predates 19 (llvm-project#87117) and other threads run already (the helper \
             team an earlier plugin started, or the program's own): left alone; should a target \
             nowait task after a parallel region crash in libomp, LIBOMP_NUM_HIDDEN_HELPER_THREADS=0 \
             avoids it",
        ),
        HelperTeam::SwitchedOff => diagnostics::info(
            plugin,
            "this libomp predates 19 (llvm-project#87117); OMPTARGET_INDIRECT_HELPER_TEAM=0: its hidden \
             helper team was not started early",
        ),
        HelperTeam::NotNeeded => {}
    }
}

/// `int32_t __tgt_rtl_deinit_plugin(void)`: unloads every image and frees every table.
pub fn deinit_plugin<B: Backend>(cell: &PluginCell<B>) -> i32 {
    guard("__tgt_rtl_deinit_plugin", None, B::NAME, OFFLOAD_FAIL, || status(cell.get()?.deinit()))
}

/// `int32_t __tgt_rtl_number_of_devices(void)`: 0 when the backend is unusable.
pub fn number_of_devices<B: Backend>(cell: &PluginCell<B>) -> i32 {
    guard("__tgt_rtl_number_of_devices", None, B::NAME, 0, || Ok(cell.get()?.device_count()))
}

/// `int32_t __tgt_rtl_is_valid_binary(__tgt_device_image *)` and the `_info` variant: 1 if this
/// plugin can run the image.
///
/// # Safety
/// As `image_bytes`: a null or valid image whose range is readable; `info` null or valid with a null or NUL-terminated `arch`.
pub unsafe fn is_valid_binary<B: Backend>(
    cell: &PluginCell<B>,
    image: *const TgtDeviceImage,
    info: *const TgtImageInfo,
) -> i32 {
    guard_question("__tgt_rtl_is_valid_binary", B::NAME, 0, || {
        // SAFETY: `image` is null or valid with a readable range (this function's contract).
        let (_, bytes) = unsafe { image_bytes(image)? };
        // SAFETY: `info` is null or valid (this function's contract); `as_ref` checks null.
        let arch = unsafe { info.as_ref() }
            .filter(|i| !i.arch.is_null())
            // SAFETY: a non-null `arch` of a valid `info` is NUL-terminated (contract).
            .map(|i| unsafe { CStr::from_ptr(i.arch) }.to_string_lossy().into_owned());
        let unwrapped = image::unwrap(bytes)?;
        cell.get()?.backend().check_image(&unwrapped, arch.as_deref())?;
        Ok(1)
    })
}

/// `int64_t __tgt_rtl_init_requires(int64_t flags)`: records the program's `OMP_REQ_*` flags
/// (images needing what the devices cannot give are then refused at load) and returns them.
pub fn init_requires<B: Backend>(cell: &PluginCell<B>, flags: i64) -> i64 {
    guard("__tgt_rtl_init_requires", None, B::NAME, flags, || Ok(cell.get()?.init_requires(flags)))
}

/// `int32_t __tgt_rtl_init_device(int32_t)`.
pub fn init_device<B: Backend>(cell: &PluginCell<B>, device: i32) -> i32 {
    guard("__tgt_rtl_init_device", Some(device), B::NAME, OFFLOAD_FAIL, || {
        status(cell.get()?.init_device(device))
    })
}

/// `int32_t __tgt_rtl_deinit_device(int32_t)`.
pub fn deinit_device<B: Backend>(cell: &PluginCell<B>, device: i32) -> i32 {
    guard("__tgt_rtl_deinit_device", Some(device), B::NAME, OFFLOAD_FAIL, || {
        status(cell.get()?.deinit_device(device))
    })
}

/// `__tgt_target_table *__tgt_rtl_load_binary(int32_t, __tgt_device_image *)`: null on error;
/// for an image the device has loaded already (the same `image_start`), its table again.
///
/// # Safety
/// `image` must be null or a valid `__tgt_device_image` whose image and entry ranges are
/// readable and whose entry names are C strings.
pub unsafe fn load_binary<B: Backend>(
    cell: &PluginCell<B>,
    device: i32,
    image: *const TgtDeviceImage,
) -> *mut TgtTargetTable {
    guard("__tgt_rtl_load_binary", Some(device), B::NAME, std::ptr::null_mut(), || {
        let plugin = cell.get()?;
        plugin.check_device(device)?;
        // SAFETY: `image` is null or valid with a readable range (this function's contract).
        let (desc, bytes) = unsafe { image_bytes(image)? };
        // SAFETY: a valid image's entry range is readable and its names are C strings (contract).
        let entries = unsafe { entries::of_image(desc)? };
        let unwrapped = image::unwrap(bytes)?;
        plugin.load_binary(device, desc.image_start as usize, unwrapped.bytes, &entries)
    })
}

/// `int32_t __tgt_rtl_unload_binary(int32_t, __tgt_device_image *)` (extension: libomptarget 16
/// never calls it): unloads the image and reinstalls the map of the others.
///
/// # Safety
/// `image` must be null or a valid `__tgt_device_image`.
pub unsafe fn unload_binary<B: Backend>(
    cell: &PluginCell<B>,
    device: i32,
    image: *const TgtDeviceImage,
) -> i32 {
    guard("__tgt_rtl_unload_binary", Some(device), B::NAME, OFFLOAD_FAIL, || {
        // SAFETY: null checked; validity is the caller's contract.
        let desc = unsafe { image.as_ref() }
            .ok_or_else(|| PluginError::InvalidArgument("null device image".into()))?;
        status(cell.get()?.unload_binary(device, desc.image_start as usize))
    })
}

/// `int32_t __tgt_rtl_set_function_ptr_map(int32_t, uint64_t size, const
/// __omp_offloading_fptr_map_ty *table)`.
///
/// # Safety
/// `table` must be null or point to `size` readable entries.
pub unsafe fn set_function_ptr_map<B: Backend>(
    cell: &PluginCell<B>,
    device: i32,
    size: u64,
    table: *const FptrMapEntry,
) -> i32 {
    guard("__tgt_rtl_set_function_ptr_map", Some(device), B::NAME, OFFLOAD_FAIL, || {
        let plugin = cell.get()?;
        plugin.check_device(device)?;
        let entries: &[FptrMapEntry] = if size == 0 {
            &[]
        } else if table.is_null() {
            return Err(PluginError::InvalidArgument(format!("null table with size {size}")));
        } else if !table.is_aligned() {
            return Err(PluginError::InvalidArgument(format!("table {table:p} is not 8-byte aligned")));
        } else {
            let len = usize::try_from(size)
                .ok()
                .filter(|&n| n <= isize::MAX as usize / std::mem::size_of::<FptrMapEntry>())
                .ok_or_else(|| PluginError::InvalidArgument(format!("size {size} is too large")))?;
            // SAFETY: non-null, aligned, and `len` readable entries by the caller's contract.
            unsafe { std::slice::from_raw_parts(table, len) }
        };
        status(plugin.set_function_ptr_map(device, entries))
    })
}

/// `void *__tgt_rtl_data_alloc(int32_t, int64_t size, void *host_ptr, int32_t kind)`.
pub fn data_alloc<B: Backend>(cell: &PluginCell<B>, device: i32, size: i64, kind: i32) -> *mut c_void {
    guard("__tgt_rtl_data_alloc", Some(device), B::NAME, std::ptr::null_mut(), || {
        let plugin = cell.get()?;
        plugin.check_device(device)?;
        let size = usize::try_from(size).map_err(|_| PluginError::InvalidArgument(format!("size {size}")))?;
        let kind = AllocKind::from_raw(kind).map_err(PluginError::InvalidArgument)?;
        Ok(plugin.alloc(device, size, kind)? as *mut c_void)
    })
}

/// `int32_t __tgt_rtl_data_delete(int32_t, void *tgt_ptr, int32_t kind)`. The memory is freed
/// as the kind it was allocated as, whatever `kind` says.
pub fn data_delete<B: Backend>(cell: &PluginCell<B>, device: i32, ptr: *mut c_void, _kind: i32) -> i32 {
    guard("__tgt_rtl_data_delete", Some(device), B::NAME, OFFLOAD_FAIL, || {
        let plugin = cell.get()?;
        plugin.check_device(device)?;
        status(plugin.free(device, ptr as u64))
    })
}

fn length(size: i64) -> Result<usize> {
    usize::try_from(size).map_err(|_| PluginError::InvalidArgument(format!("negative size {size}")))
}

/// `int32_t __tgt_rtl_data_submit(int32_t, void *tgt_ptr, void *hst_ptr, int64_t size)` (and
/// the `_async` variant, which completes before returning).
///
/// # Safety
/// `host` must be readable for `size` bytes.
pub unsafe fn data_submit<B: Backend>(
    cell: &PluginCell<B>,
    device: i32,
    target: *mut c_void,
    host: *const c_void,
    size: i64,
) -> i32 {
    guard("__tgt_rtl_data_submit", Some(device), B::NAME, OFFLOAD_FAIL, || {
        let plugin = cell.get()?;
        plugin.check_device(device)?;
        let len = length(size)?;
        if len == 0 {
            return Ok(OFFLOAD_SUCCESS);
        }
        if host.is_null() || target.is_null() {
            return Err(PluginError::InvalidArgument("null pointer".into()));
        }
        // SAFETY: the caller's contract.
        status(unsafe { plugin.write(device, target as u64, host.cast::<u8>(), len) })
    })
}

/// `int32_t __tgt_rtl_data_retrieve(int32_t, void *hst_ptr, void *tgt_ptr, int64_t size)` (and
/// the `_async` variant, which completes before returning).
///
/// # Safety
/// `host` must be writable for `size` bytes.
pub unsafe fn data_retrieve<B: Backend>(
    cell: &PluginCell<B>,
    device: i32,
    host: *mut c_void,
    target: *const c_void,
    size: i64,
) -> i32 {
    guard("__tgt_rtl_data_retrieve", Some(device), B::NAME, OFFLOAD_FAIL, || {
        let plugin = cell.get()?;
        plugin.check_device(device)?;
        let len = length(size)?;
        if len == 0 {
            return Ok(OFFLOAD_SUCCESS);
        }
        if host.is_null() || target.is_null() {
            return Err(PluginError::InvalidArgument("null pointer".into()));
        }
        // SAFETY: the caller's contract.
        status(unsafe { plugin.read(device, host.cast::<u8>(), target as u64, len) })
    })
}

/// `KernelArgsTy` versions whose layout this plugin knows: 2 (clang 16), 3 (clang 18/19).
pub const KNOWN_KERNEL_ARGS_VERSIONS: [u32; 2] = [2, 3];

/// The most arguments a launch may pass. Outlined OpenMP regions take one per mapped variable;
/// CUDA caps kernel parameters at 4 KiB (512 pointers; 32 KiB from CUDA 12.1). Far more would
/// only exhaust the stack of the call that passes them.
pub const MAX_KERNEL_ARGS: u32 = 4096;

/// `int32_t __tgt_rtl_launch_kernel(int32_t, void *entry, void **args, ptrdiff_t *offsets,
/// KernelArgsTy *, __tgt_async_info *)`: runs the kernel to completion.
///
/// # Safety
/// `args` and `offsets` must hold `kernel_args.num_args` elements; `kernel_args` must be valid.
pub unsafe fn launch_kernel<B: Backend>(
    cell: &PluginCell<B>,
    device: i32,
    entry: *mut c_void,
    args: *const *mut c_void,
    offsets: *const isize,
    kernel_args: *const KernelArgs,
) -> i32 {
    guard("__tgt_rtl_launch_kernel", Some(device), B::NAME, OFFLOAD_FAIL, || {
        let plugin = cell.get()?;
        // SAFETY: the caller's contract.
        let kernel_args = unsafe { kernel_args.as_ref() }
            .ok_or_else(|| PluginError::InvalidArgument("null KernelArgs".into()))?;
        if entry.is_null() {
            return Err(PluginError::InvalidArgument("null kernel".into()));
        }
        if !KNOWN_KERNEL_ARGS_VERSIONS.contains(&kernel_args.version) {
            return Err(PluginError::InvalidArgument(format!(
                "KernelArgs version {} (known: {KNOWN_KERNEL_ARGS_VERSIONS:?})",
                kernel_args.version
            )));
        }
        if kernel_args.num_args > MAX_KERNEL_ARGS {
            return Err(PluginError::InvalidArgument(format!(
                "{} kernel arguments (at most {MAX_KERNEL_ARGS})",
                kernel_args.num_args
            )));
        }
        let n = kernel_args.num_args as usize;
        if n > 0 && (args.is_null() || offsets.is_null()) {
            return Err(PluginError::InvalidArgument(format!("{n} arguments but null args or offsets")));
        }
        let values: Vec<u64> = (0..n)
            // SAFETY: `n` readable elements each, by the caller's contract.
            .map(|i| unsafe { (*args.add(i) as u64).wrapping_add(*offsets.add(i) as u64) })
            .collect();
        status(plugin.launch(device, &LaunchParams { kernel: entry as u64, args: &values, kernel_args }))
    })
}

/// `int32_t __tgt_rtl_synchronize(int32_t, __tgt_async_info *)`: every operation already
/// completed when its call returned, so this only checks the device.
pub fn synchronize<B: Backend>(cell: &PluginCell<B>, device: i32) -> i32 {
    guard("__tgt_rtl_synchronize", Some(device), B::NAME, OFFLOAD_FAIL, || {
        status(cell.get()?.check_device(device))
    })
}

/// Defines every `__tgt_rtl_*` export of a plugin for backend type `$backend`.
#[macro_export]
macro_rules! export_plugin {
    ($backend:ty) => {
        static PLUGIN: $crate::exports::PluginCell<$backend> = $crate::exports::PluginCell::new();

        #[global_allocator]
        static ALLOCATOR: $crate::heap::CountingAllocator = $crate::heap::CountingAllocator;

        /// The bytes the plugin's own code holds on the heap now ([`plugin_core::heap`]): what a
        /// leak check of load/unload cycles compares. Never fails; reads one counter. (In
        /// libomptarget's `__tgt_rtl_` namespace because a plugin exports nothing else; no
        /// libomptarget release looks it up.)
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_omptarget_indirect_held_bytes() -> usize {
            $crate::heap::held_bytes()
        }

        /// Initialises the plugin; 0 on success, non-zero drops the plugin.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_init_plugin() -> i32 {
            $crate::exports::init_plugin(&PLUGIN)
        }

        /// Unloads every image and frees every function-pointer table.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_deinit_plugin() -> i32 {
            $crate::exports::deinit_plugin(&PLUGIN)
        }

        /// Number of devices; 0 if the backend is unusable.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_number_of_devices() -> i32 {
            $crate::exports::number_of_devices(&PLUGIN)
        }

        /// 1 if the image can run on this plugin's devices, else 0.
        ///
        /// # Safety
        /// `image` null or a valid `__tgt_device_image`.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_is_valid_binary(
            image: *const $crate::host_table::rtl_interface::TgtDeviceImage,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `is_valid_binary` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::is_valid_binary(&PLUGIN, image, std::ptr::null()) }
        }

        /// As `__tgt_rtl_is_valid_binary`, also given the image's target architecture.
        ///
        /// # Safety
        /// `image` null or valid; `info` null or valid.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_is_valid_binary_info(
            image: *const $crate::host_table::rtl_interface::TgtDeviceImage,
            info: *const $crate::host_table::rtl_interface::TgtImageInfo,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `is_valid_binary` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::is_valid_binary(&PLUGIN, image, info) }
        }

        /// Accepts the program's `requires` flags and returns them.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_init_requires(flags: i64) -> i64 {
            $crate::exports::init_requires(&PLUGIN, flags)
        }

        /// Prepares a device.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_init_device(device: i32) -> i32 {
            $crate::exports::init_device(&PLUGIN, device)
        }

        /// Unloads the device's images and frees its table.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_deinit_device(device: i32) -> i32 {
            $crate::exports::deinit_device(&PLUGIN, device)
        }

        /// Loads an image; returns its target table, or null.
        ///
        /// # Safety
        /// `image` null or a valid `__tgt_device_image` with readable entries.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_load_binary(
            device: i32,
            image: *const $crate::host_table::rtl_interface::TgtDeviceImage,
        ) -> *mut $crate::host_table::rtl_interface::TgtTargetTable {
            // SAFETY: this export's `# Safety` contract is the one `load_binary` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::load_binary(&PLUGIN, device, image) }
        }

        /// Unloads an image loaded by `__tgt_rtl_load_binary` (extension).
        ///
        /// # Safety
        /// `image` null or a valid `__tgt_device_image`.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_unload_binary(
            device: i32,
            image: *const $crate::host_table::rtl_interface::TgtDeviceImage,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `unload_binary` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::unload_binary(&PLUGIN, device, image) }
        }

        /// Installs a sorted function-pointer table on a device (size 0 clears it).
        ///
        /// # Safety
        /// `table` null or `size` readable entries.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_set_function_ptr_map(
            device: i32,
            size: u64,
            table: *const $crate::host_table::rtl_interface::FptrMapEntry,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `set_function_ptr_map` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::set_function_ptr_map(&PLUGIN, device, size, table) }
        }

        /// Allocates device memory; null on failure.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_data_alloc(
            device: i32,
            size: i64,
            _host_ptr: *mut std::ffi::c_void,
            kind: i32,
        ) -> *mut std::ffi::c_void {
            $crate::exports::data_alloc(&PLUGIN, device, size, kind)
        }

        /// Frees device memory.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_data_delete(device: i32, ptr: *mut std::ffi::c_void, kind: i32) -> i32 {
            $crate::exports::data_delete(&PLUGIN, device, ptr, kind)
        }

        /// Copies host memory to the device.
        ///
        /// # Safety
        /// `host` readable for `size` bytes, `target` a device allocation of at least `size`.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_data_submit(
            device: i32,
            target: *mut std::ffi::c_void,
            host: *const std::ffi::c_void,
            size: i64,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `data_submit` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::data_submit(&PLUGIN, device, target, host, size) }
        }

        /// As `__tgt_rtl_data_submit`; completes before returning.
        ///
        /// # Safety
        /// As `__tgt_rtl_data_submit`.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_data_submit_async(
            device: i32,
            target: *mut std::ffi::c_void,
            host: *const std::ffi::c_void,
            size: i64,
            _async_info: *mut $crate::host_table::rtl_interface::TgtAsyncInfo,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `data_submit` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::data_submit(&PLUGIN, device, target, host, size) }
        }

        /// Copies device memory to the host.
        ///
        /// # Safety
        /// `host` writable for `size` bytes, `target` a device allocation of at least `size`.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_data_retrieve(
            device: i32,
            host: *mut std::ffi::c_void,
            target: *const std::ffi::c_void,
            size: i64,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `data_retrieve` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::data_retrieve(&PLUGIN, device, host, target, size) }
        }

        /// As `__tgt_rtl_data_retrieve`; completes before returning.
        ///
        /// # Safety
        /// As `__tgt_rtl_data_retrieve`.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_data_retrieve_async(
            device: i32,
            host: *mut std::ffi::c_void,
            target: *const std::ffi::c_void,
            size: i64,
            _async_info: *mut $crate::host_table::rtl_interface::TgtAsyncInfo,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `data_retrieve` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::data_retrieve(&PLUGIN, device, host, target, size) }
        }

        /// Runs a kernel to completion.
        ///
        /// # Safety
        /// `args`/`offsets` hold `kernel_args.num_args` elements; `kernel_args` valid.
        #[no_mangle]
        pub unsafe extern "C" fn __tgt_rtl_launch_kernel(
            device: i32,
            entry: *mut std::ffi::c_void,
            args: *const *mut std::ffi::c_void,
            offsets: *const isize,
            kernel_args: *const $crate::host_table::rtl_interface::KernelArgs,
            _async_info: *mut $crate::host_table::rtl_interface::TgtAsyncInfo,
        ) -> i32 {
            // SAFETY: this export's `# Safety` contract is the one `launch_kernel` requires: libomptarget
            // passes pointers as its plugin interface promises.
            unsafe { $crate::exports::launch_kernel(&PLUGIN, device, entry, args, offsets, kernel_args) }
        }

        /// Waits for the device's queued work; every operation here is already complete.
        #[no_mangle]
        pub extern "C" fn __tgt_rtl_synchronize(
            device: i32,
            _async_info: *mut $crate::host_table::rtl_interface::TgtAsyncInfo,
        ) -> i32 {
            $crate::exports::synchronize(&PLUGIN, device)
        }
    };
}
