//! What the plugin tests, the plugin benchmark and the GPU bundle share: a plugin's `__tgt_rtl_*`
//! entry points resolved by name from the installed `.so` ([`Api`]), device images with a
//! host-side entry table as libomptarget passes them ([`OffloadImage`]), and reproducible
//! pseudo-random function-pointer tables ([`random`]).
#![deny(missing_docs)]

pub mod elf_mutations;
pub mod random;

use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};

use host_table::rtl_interface::{
    FptrMapEntry, KernelArgs, TgtDeviceImage, TgtImageInfo, TgtOffloadEntry, TgtTargetTable, OFFLOAD_FAIL,
    OFFLOAD_SUCCESS,
};

/// `target/dist/<relative>`, the dist tree `cargo xtask build` writes (plugins, device
/// libraries). Where it is missing, as in a fresh clone where `cargo test --workspace` runs before
/// any build, the test binary stops at once with one line saying what to run first (no panic, no
/// backtrace, no further test of it).
pub fn dist(relative: &str) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("plugins/test-support");
    let path = workspace.join("target/dist").join(relative);
    if !path.exists() {
        // Straight to the stream: the test harness captures eprintln!, and exiting drops it.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!(
                "{} is missing: run `cargo xtask build` (or scripts/test.sh) before `cargo test --workspace`\n",
                path.display()
            )
            .as_bytes(),
        );
        std::process::exit(1);
    }
    path
}

/// `__tgt_rtl_init_plugin`, `deinit_plugin`, `number_of_devices`.
pub type NoArgs = unsafe extern "C" fn() -> i32;
/// `__tgt_rtl_is_valid_binary_info`.
pub type IsValidBinaryInfo = unsafe extern "C" fn(*const TgtDeviceImage, *const TgtImageInfo) -> i32;
/// `__tgt_rtl_init_requires`.
pub type InitRequires = unsafe extern "C" fn(i64) -> i64;
/// `__tgt_rtl_init_device`, `deinit_device`, `synchronize`-like calls taking a device id.
pub type DeviceCall = unsafe extern "C" fn(i32) -> i32;
/// `__tgt_rtl_load_binary`.
pub type LoadBinary = unsafe extern "C" fn(i32, *const TgtDeviceImage) -> *mut TgtTargetTable;
/// `__tgt_rtl_unload_binary`.
pub type UnloadBinary = unsafe extern "C" fn(i32, *const TgtDeviceImage) -> i32;
/// `__tgt_rtl_omptarget_indirect_held_bytes`: the bytes the plugin's own code holds on the heap.
pub type HeldBytes = unsafe extern "C" fn() -> usize;
/// `__tgt_rtl_set_function_ptr_map`.
pub type SetMap = unsafe extern "C" fn(i32, u64, *const FptrMapEntry) -> i32;
/// `__tgt_rtl_data_alloc`.
pub type DataAlloc = unsafe extern "C" fn(i32, i64, *mut c_void, i32) -> *mut c_void;
/// `__tgt_rtl_data_delete`.
pub type DataDelete = unsafe extern "C" fn(i32, *mut c_void, i32) -> i32;
/// `__tgt_rtl_data_submit` (device, target pointer, host pointer, size).
pub type DataSubmit = unsafe extern "C" fn(i32, *mut c_void, *const c_void, i64) -> i32;
/// `__tgt_rtl_data_retrieve` (device, host pointer, target pointer, size).
pub type DataRetrieve = unsafe extern "C" fn(i32, *mut c_void, *const c_void, i64) -> i32;
/// `__tgt_rtl_launch_kernel`.
pub type LaunchKernel = unsafe extern "C" fn(
    i32,
    *mut c_void,
    *const *mut c_void,
    *const isize,
    *const KernelArgs,
    *mut c_void,
) -> i32;

macro_rules! api_table {
    ($($field:ident: $ty:ty = $symbol:literal,)*) => {
        /// A plugin's entry points, resolved by name as libomptarget resolves them. The library
        /// stays loaded for the rest of the process.
        pub struct Api {
            $(#[doc = concat!("`", $symbol, "`.")] pub $field: $ty,)*
        }

        impl Api {
            /// `dlopen`s the plugin at `path` and resolves every entry point; an error names the
            /// file or the missing symbol.
            pub fn load(path: &Path) -> Result<Api, String> {
                let cpath = CString::new(path.to_str().ok_or("plugin path is not UTF-8")?)
                    .map_err(|_| "plugin path contains NUL".to_string())?;
                // SAFETY: valid C string; the plugin's initialisers only register state.
                let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
                if handle.is_null() {
                    // SAFETY: dlerror returns a C string or null.
                    let why = unsafe { libc::dlerror() };
                    let why = if why.is_null() {
                        String::new()
                    } else {
                        // SAFETY: non-null C string from dlerror.
                        unsafe { std::ffi::CStr::from_ptr(why) }.to_string_lossy().into_owned()
                    };
                    return Err(format!("cannot dlopen {}: {why}", path.display()));
                }
                Ok(Api {
                    $($field: {
                        // SAFETY: valid handle and NUL-terminated name.
                        let f = unsafe { libc::dlsym(handle, concat!($symbol, "\0").as_ptr().cast()) };
                        if f.is_null() {
                            return Err(format!("{} does not export {}", path.display(), $symbol));
                        }
                        // SAFETY: the plugin exports this symbol with this C signature
                        // (docs/llvm.md, "libomptarget 16: how it loads a plugin").
                        unsafe { std::mem::transmute::<*mut c_void, $ty>(f) }
                    },)*
                })
            }
        }
    };
}

api_table! {
    init_plugin: NoArgs = "__tgt_rtl_init_plugin",
    deinit_plugin: NoArgs = "__tgt_rtl_deinit_plugin",
    number_of_devices: NoArgs = "__tgt_rtl_number_of_devices",
    is_valid_binary_info: IsValidBinaryInfo = "__tgt_rtl_is_valid_binary_info",
    init_requires: InitRequires = "__tgt_rtl_init_requires",
    init_device: DeviceCall = "__tgt_rtl_init_device",
    deinit_device: DeviceCall = "__tgt_rtl_deinit_device",
    load_binary: LoadBinary = "__tgt_rtl_load_binary",
    unload_binary: UnloadBinary = "__tgt_rtl_unload_binary",
    set_function_ptr_map: SetMap = "__tgt_rtl_set_function_ptr_map",
    data_alloc: DataAlloc = "__tgt_rtl_data_alloc",
    data_delete: DataDelete = "__tgt_rtl_data_delete",
    data_submit: DataSubmit = "__tgt_rtl_data_submit",
    data_retrieve: DataRetrieve = "__tgt_rtl_data_retrieve",
    launch_kernel: LaunchKernel = "__tgt_rtl_launch_kernel",
    held_bytes: HeldBytes = "__tgt_rtl_omptarget_indirect_held_bytes",
}

/// A device image with its host-side entry table, as libomptarget hands it to `load_binary`.
/// Boxed so that the descriptor's pointers stay valid.
pub struct OffloadImage {
    bytes: Vec<u8>,
    _names: Vec<CString>,
    entries: Vec<TgtOffloadEntry>,
    /// The descriptor libomptarget would pass; tests may corrupt it on purpose.
    pub desc: TgtDeviceImage,
}

impl OffloadImage {
    /// `bytes` with entries `(host address, device symbol name, size, flags)`.
    pub fn new(bytes: Vec<u8>, entries: &[(*mut c_void, &str, usize, i32)]) -> Box<OffloadImage> {
        let names: Vec<CString> = entries.iter().map(|e| CString::new(e.1).expect("NUL in a name")).collect();
        let entries: Vec<TgtOffloadEntry> = entries
            .iter()
            .zip(&names)
            .map(|(e, n)| TgtOffloadEntry {
                addr: e.0,
                name: n.as_ptr() as *mut c_char,
                size: e.2,
                flags: e.3,
                reserved: 0,
            })
            .collect();
        let null = std::ptr::null_mut();
        let mut image = Box::new(OffloadImage {
            bytes,
            _names: names,
            entries,
            desc: TgtDeviceImage {
                image_start: null,
                image_end: null,
                entries_begin: null as _,
                entries_end: null as _,
            },
        });
        let range = image.bytes.as_mut_ptr_range();
        let entries = image.entries.as_mut_ptr_range();
        image.desc = TgtDeviceImage {
            image_start: range.start.cast(),
            image_end: range.end.cast(),
            entries_begin: entries.start,
            entries_end: entries.end,
        };
        image
    }

    /// Sets entry `index`'s `reserved` word (where clang 18+ puts a requirement's `OMP_REQ_*`
    /// flags).
    pub fn set_entry_data(&mut self, index: usize, data: i32) {
        self.entries[index].reserved = data;
    }

    /// The descriptor to pass to the plugin.
    pub fn ptr(&self) -> *const TgtDeviceImage {
        &self.desc
    }
}

/// `KernelArgs` as libomptarget fills them for a launch of `num_args` pointer arguments with no
/// mapping information: one team, `thread_limit` threads (0: the plugin's default).
pub fn kernel_args(num_args: u32, version: u32, thread_limit: u32) -> KernelArgs {
    let null = std::ptr::null_mut();
    KernelArgs {
        version,
        num_args,
        base_ptrs: null,
        ptrs: null,
        sizes: std::ptr::null_mut(),
        map_types: std::ptr::null_mut(),
        map_names: null,
        mappers: null,
        tripcount: 0,
        flags: 0,
        num_teams: [1, 0, 0],
        thread_limit: [thread_limit, 0, 0],
        dyn_cgroup_mem: 0,
    }
}

/// Copies the device-side entries out of a table `load_binary` returned.
///
/// # Safety
/// `table` is null or a table returned by `load_binary` whose image is still loaded.
pub unsafe fn target_entries(table: *mut TgtTargetTable) -> Option<Vec<TgtOffloadEntry>> {
    if table.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: a live table from load_binary.
    unsafe {
        let t = &*table;
        let n = usize::try_from(t.entries_end.offset_from(t.entries_begin)).ok()?;
        Some(std::slice::from_raw_parts(t.entries_begin, n).to_vec())
    }
}

/// What a GPU plugin must do with bad input on any machine: where its driver and devices are
/// missing, `init_plugin` fails (so libomptarget drops the plugin), it reports 0 devices,
/// rejects `image`, and refuses every device call with `OFFLOAD_FAIL` or null; where it has devices, it rejects bytes that
/// are no image at all (`image` may be a real one of theirs), refuses every call naming a device it does not have (the first past the last,
/// and -1) with `OFFLOAD_FAIL` or null instead of crashing, and deinitialises cleanly. Returns
/// the devices it reported, for the test to say which half ran.
///
/// # Safety
/// `api` was loaded from a plugin that implements the libomptarget 16 plugin ABI.
pub unsafe fn assert_refuses_bad_input(api: &Api, image: &OffloadImage) -> i32 {
    // SAFETY: the plugin's C ABI with valid or null arguments, which it must refuse cleanly.
    unsafe {
        if (api.init_plugin)() != OFFLOAD_SUCCESS {
            assert_eq!((api.number_of_devices)(), 0, "init_plugin failed, so no device is offered");
            assert_eq!((api.is_valid_binary_info)(image.ptr(), std::ptr::null()), 0);
            assert!((api.load_binary)(0, image.ptr()).is_null());
            assert_eq!((api.set_function_ptr_map)(0, 0, std::ptr::null()), OFFLOAD_FAIL);
            assert!((api.data_alloc)(0, 64, std::ptr::null_mut(), 0).is_null());
            assert_eq!((api.init_device)(0), OFFLOAD_FAIL);
            assert_eq!((api.deinit_plugin)(), OFFLOAD_FAIL);
            return 0;
        }
        let devices = (api.number_of_devices)();
        assert!(
            devices > 0,
            "init_plugin succeeded with no device: libomptarget keeps a plugin it cannot use"
        );
        let junk = OffloadImage::new(vec![0u8; 32], &[]);
        assert_eq!((api.is_valid_binary_info)(junk.ptr(), std::ptr::null()), 0, "32 zero bytes are no image");
        for absent in [devices, -1] {
            assert!((api.load_binary)(absent, image.ptr()).is_null(), "load_binary on device {absent}");
            assert_eq!(
                (api.set_function_ptr_map)(absent, 0, std::ptr::null()),
                OFFLOAD_FAIL,
                "device {absent}"
            );
            assert!(
                (api.data_alloc)(absent, 64, std::ptr::null_mut(), 0).is_null(),
                "data_alloc on {absent}"
            );
            assert_eq!((api.init_device)(absent), OFFLOAD_FAIL, "init_device({absent})");
        }
        assert_eq!((api.deinit_plugin)(), OFFLOAD_SUCCESS);
        devices
    }
}
