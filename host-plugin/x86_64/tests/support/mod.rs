//! What the C-ABI tests and the benchmark share: the installed plugin's entry points, resolved
//! by name as libomptarget resolves them, and device images compiled from `tests/images/*.c`.
// Each user (tests/c_abi.rs, benches/) uses a different part.
#![allow(dead_code)]

use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use plugin_core::abi::{
    FptrMapEntry, KernelArgs, TgtDeviceImage, TgtImageInfo, TgtOffloadEntry, TgtTargetTable,
};

pub type InitPlugin = unsafe extern "C" fn() -> i32;
pub type IsValidBinaryInfo = unsafe extern "C" fn(*const TgtDeviceImage, *const TgtImageInfo) -> i32;
pub type InitRequires = unsafe extern "C" fn(i64) -> i64;
pub type DeviceCall = unsafe extern "C" fn(i32) -> i32;
pub type LoadBinary = unsafe extern "C" fn(i32, *const TgtDeviceImage) -> *mut TgtTargetTable;
pub type UnloadBinary = unsafe extern "C" fn(i32, *const TgtDeviceImage) -> i32;
pub type SetMap = unsafe extern "C" fn(i32, u64, *const FptrMapEntry) -> i32;
pub type DataAlloc = unsafe extern "C" fn(i32, i64, *mut c_void, i32) -> *mut c_void;
pub type DataDelete = unsafe extern "C" fn(i32, *mut c_void, i32) -> i32;
pub type DataSubmit = unsafe extern "C" fn(i32, *mut c_void, *const c_void, i64) -> i32;
pub type DataRetrieve = unsafe extern "C" fn(i32, *mut c_void, *const c_void, i64) -> i32;
pub type LaunchKernel = unsafe extern "C" fn(
    i32,
    *mut c_void,
    *const *mut c_void,
    *const isize,
    *const KernelArgs,
    *mut c_void,
) -> i32;

/// The plugin's entry points, resolved by name as libomptarget resolves them.
pub struct Api {
    pub init_plugin: InitPlugin,
    pub deinit_plugin: InitPlugin,
    pub number_of_devices: InitPlugin,
    pub is_valid_binary_info: IsValidBinaryInfo,
    pub init_requires: InitRequires,
    pub init_device: DeviceCall,
    pub deinit_device: DeviceCall,
    pub load_binary: LoadBinary,
    pub unload_binary: UnloadBinary,
    pub set_function_ptr_map: SetMap,
    pub data_alloc: DataAlloc,
    pub data_delete: DataDelete,
    pub data_submit: DataSubmit,
    pub data_retrieve: DataRetrieve,
    pub launch_kernel: LaunchKernel,
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        let path = workspace().join("target/dist/lib/libomptarget.rtl.x86_64.so");
        assert!(
            path.is_file(),
            "{} is missing: run `cargo xtask build` (or `cargo xtask test`)",
            path.display()
        );
        let cpath = CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: loading our own plugin; kept loaded for the whole test process.
        let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!handle.is_null(), "cannot dlopen {}", path.display());
        let sym = |name: &str| {
            let c = CString::new(name).unwrap();
            // SAFETY: valid handle and name.
            let f = unsafe { libc::dlsym(handle, c.as_ptr()) };
            assert!(!f.is_null(), "{name} is not exported");
            f
        };
        // SAFETY: each symbol is the plugin's export with exactly this C signature.
        unsafe {
            Api {
                init_plugin: std::mem::transmute::<*mut c_void, InitPlugin>(sym("__tgt_rtl_init_plugin")),
                deinit_plugin: std::mem::transmute::<*mut c_void, InitPlugin>(sym("__tgt_rtl_deinit_plugin")),
                number_of_devices: std::mem::transmute::<*mut c_void, InitPlugin>(sym(
                    "__tgt_rtl_number_of_devices",
                )),
                is_valid_binary_info: std::mem::transmute::<*mut c_void, IsValidBinaryInfo>(sym(
                    "__tgt_rtl_is_valid_binary_info",
                )),
                init_requires: std::mem::transmute::<*mut c_void, InitRequires>(sym(
                    "__tgt_rtl_init_requires",
                )),
                init_device: std::mem::transmute::<*mut c_void, DeviceCall>(sym("__tgt_rtl_init_device")),
                deinit_device: std::mem::transmute::<*mut c_void, DeviceCall>(sym("__tgt_rtl_deinit_device")),
                load_binary: std::mem::transmute::<*mut c_void, LoadBinary>(sym("__tgt_rtl_load_binary")),
                unload_binary: std::mem::transmute::<*mut c_void, UnloadBinary>(sym(
                    "__tgt_rtl_unload_binary",
                )),
                set_function_ptr_map: std::mem::transmute::<*mut c_void, SetMap>(sym(
                    "__tgt_rtl_set_function_ptr_map",
                )),
                data_alloc: std::mem::transmute::<*mut c_void, DataAlloc>(sym("__tgt_rtl_data_alloc")),
                data_delete: std::mem::transmute::<*mut c_void, DataDelete>(sym("__tgt_rtl_data_delete")),
                data_submit: std::mem::transmute::<*mut c_void, DataSubmit>(sym("__tgt_rtl_data_submit")),
                data_retrieve: std::mem::transmute::<*mut c_void, DataRetrieve>(sym(
                    "__tgt_rtl_data_retrieve",
                )),
                launch_kernel: std::mem::transmute::<*mut c_void, LaunchKernel>(sym(
                    "__tgt_rtl_launch_kernel",
                )),
            }
        }
    })
}

/// Compiles `tests/images/<name>.c` into a shared object, with the device runtime if asked.
pub fn compile_image(name: &str, with_runtime: bool) -> Vec<u8> {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.so"));
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/images/{name}.c")));
    if with_runtime {
        let archive = workspace().join("target/dist/device/x86_64/libdevice_rtl.a");
        assert!(
            archive.is_file(),
            "{} is missing: run `cargo xtask build` (or `cargo xtask test`)",
            archive.display()
        );
        cc.arg(archive);
    }
    let status = cc.arg("-o").arg(&out).status().expect("cannot run cc");
    assert!(status.success(), "cc failed for {name}.c");
    std::fs::read(&out).unwrap()
}

// Host versions of the indirect functions: what the host program's pointers point to.
pub extern "C" fn host_square(x: i32) -> i32 {
    x * x
}
pub extern "C" fn host_twice(x: i32) -> i32 {
    2 * x
}
pub extern "C" fn host_not_indirect(x: i32) -> i32 {
    x + 7
}

/// A device image with its host-side entry table, kept alive while loaded.
pub struct Image {
    bytes: Vec<u8>,
    _names: Vec<CString>,
    entries: Vec<TgtOffloadEntry>,
    /// The descriptor libomptarget would pass; tests may corrupt it on purpose.
    pub desc: TgtDeviceImage,
}

impl Image {
    pub fn new(bytes: Vec<u8>, entries: &[(*mut c_void, &str, usize, i32)]) -> Box<Image> {
        let names: Vec<CString> = entries.iter().map(|e| CString::new(e.1).unwrap()).collect();
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
        let mut image = Box::new(Image {
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

    /// The indirect image with clang 19's entries: two indirect functions and two kernels.
    pub fn indirect() -> Box<Image> {
        Self::indirect_from(compile_indirect().clone())
    }

    pub fn indirect_from(bytes: Vec<u8>) -> Box<Image> {
        let kernel_id = |k: &'static u8| k as *const u8 as *mut c_void;
        static CALL_ID: u8 = 0;
        static MANY_ID: u8 = 0;
        Image::new(
            bytes,
            &[
                (host_square as *mut c_void, "__omp_offloading_test_square", 8, 8),
                (host_twice as *mut c_void, "__omp_offloading_test_twice", 8, 8),
                (kernel_id(&CALL_ID), "__omp_offloading_test_call", 0, 0),
                (kernel_id(&MANY_ID), "__omp_offloading_test_many", 0, 0),
            ],
        )
    }

    pub fn ptr(&self) -> *const TgtDeviceImage {
        &self.desc
    }
}

pub fn compile_indirect() -> &'static Vec<u8> {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| compile_image("indirect", true))
}

/// The device-side entries libomptarget gets back.
pub fn target_entries(table: *mut TgtTargetTable) -> Vec<TgtOffloadEntry> {
    assert!(!table.is_null());
    // SAFETY: a table returned by load_binary, valid while the image is loaded.
    unsafe {
        let t = &*table;
        let n = t.entries_end.offset_from(t.entries_begin) as usize;
        std::slice::from_raw_parts(t.entries_begin, n).to_vec()
    }
}
