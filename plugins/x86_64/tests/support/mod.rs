//! What the C-ABI tests and the benchmark share: the installed plugin's entry points, resolved
//! by name as libomptarget resolves them, and device images compiled from `tests/images/*.c`.
// Each user (tests/c_abi.rs, benches/) uses a different part.
#![allow(dead_code)]

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use host_table::rtl_interface::{TgtOffloadEntry, TgtTargetTable, OFFLOAD_SUCCESS};
use plugin_test_support::kernel_args;
pub use plugin_test_support::{Api, OffloadImage};

/// These tests exercise the table and the C ABI: their kernels call the test binary's functions
/// through pointers no image pairs on purpose (to show which copy ran), which the check of calls
/// into host code would stop (the end-to-end programs check the check). It is turned off before
/// `main`, while the process has one thread and no one reads the environment.
extern "C" fn host_call_check_off() {
    // SAFETY: runs from `.init_array`, before any other thread exists; the name and value are
    // NUL-terminated.
    unsafe { libc::setenv(c"OMPTARGET_INDIRECT_HOST_CALLS".as_ptr(), c"off".as_ptr(), 1) };
}

#[used]
#[link_section = ".init_array"]
static HOST_CALL_CHECK_OFF: extern "C" fn() = host_call_check_off;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        let path = plugin_test_support::dist("lib/libomptarget.rtl.x86_64.so");
        Api::load(&path).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// Compiles `tests/images/<name>.c` into a shared object, with the device runtime if asked.
pub fn compile_image(name: &str, with_runtime: bool) -> Vec<u8> {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.so"));
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/images/{name}.c")));
    if with_runtime {
        cc.arg(plugin_test_support::dist("device/x86_64/libdevice_rtl.a"));
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

/// The indirect image with clang 19's entries: two indirect functions and two kernels.
pub fn indirect_image() -> Box<OffloadImage> {
    indirect_image_from(compile_indirect().clone())
}

pub fn indirect_image_from(bytes: Vec<u8>) -> Box<OffloadImage> {
    indirect_image_with(bytes, &[])
}

/// [`indirect_image_from`] with `extra` entries after the four usual ones.
pub fn indirect_image_with(bytes: Vec<u8>, extra: &[(*mut c_void, &str, usize, i32)]) -> Box<OffloadImage> {
    let kernel_id = |k: &'static u8| k as *const u8 as *mut c_void;
    static CALL_ID: u8 = 0;
    static MANY_ID: u8 = 0;
    let mut entries = vec![
        (host_square as *mut c_void, "__omp_offloading_test_square", 8, 8),
        (host_twice as *mut c_void, "__omp_offloading_test_twice", 8, 8),
        (kernel_id(&CALL_ID), "__omp_offloading_test_call", 0, 0),
        (kernel_id(&MANY_ID), "__omp_offloading_test_many", 0, 0),
    ];
    entries.extend_from_slice(extra);
    OffloadImage::new(bytes, &entries)
}

pub fn compile_indirect() -> &'static Vec<u8> {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| compile_image("indirect", true))
}

/// The device-side entries libomptarget gets back.
pub fn target_entries(table: *mut TgtTargetTable) -> Vec<TgtOffloadEntry> {
    // SAFETY: every caller passes a table load_binary just returned, image still loaded.
    unsafe { plugin_test_support::target_entries(table) }.expect("load_binary returned null")
}

/// Serialises the tests of one test binary (the plugin is process-wide state) and starts each
/// from a clean plugin: every device deinitialised and initialised again.
pub fn fresh() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let api = api();
    // SAFETY: plain calls into the plugin.
    unsafe {
        assert_eq!((api.init_plugin)(), host_table::rtl_interface::OFFLOAD_SUCCESS);
        for d in 0..(api.number_of_devices)() {
            assert_eq!((api.deinit_device)(d), host_table::rtl_interface::OFFLOAD_SUCCESS);
            assert_eq!((api.init_device)(d), host_table::rtl_interface::OFFLOAD_SUCCESS);
        }
    }
    guard
}

/// Device buffers for `__omp_offloading_test_call` on one device.
pub struct CallKernel {
    device: i32,
    kernel: *mut c_void,
    slot: *mut c_void,
    input: *mut c_void,
    output: *mut c_void,
    translated: *mut c_void,
}

impl CallKernel {
    pub fn new(device: i32, table: *mut TgtTargetTable) -> CallKernel {
        let api = api();
        let kernel = target_entries(table)[2].addr;
        // SAFETY: plain allocations on a valid device.
        let alloc = |n| unsafe { (api.data_alloc)(device, n, std::ptr::null_mut(), 0) };
        let k = CallKernel {
            device,
            kernel,
            slot: alloc(8),
            input: alloc(4),
            output: alloc(4),
            translated: alloc(8),
        };
        assert!(!k.slot.is_null() && !k.input.is_null() && !k.output.is_null() && !k.translated.is_null());
        k
    }

    /// Stores `fn_ptr` in mapped memory and runs the kernel: (translated pointer, f(7)).
    pub fn run(&self, fn_ptr: *mut c_void) -> (*mut c_void, i32) {
        let api = api();
        let input = 7i32;
        let (mut out, mut translated) = (0i32, std::ptr::null_mut::<c_void>());
        // SAFETY: buffers of the right sizes on this device; the kernel takes four pointers.
        unsafe {
            assert_eq!(
                (api.data_submit)(self.device, self.slot, (&fn_ptr as *const *mut c_void).cast(), 8),
                OFFLOAD_SUCCESS
            );
            assert_eq!(
                (api.data_submit)(self.device, self.input, (&input as *const i32).cast(), 4),
                OFFLOAD_SUCCESS
            );
            let args = [self.slot, self.input, self.output, self.translated];
            let offsets = [0isize; 4];
            let ka = kernel_args(4, 3, 1);
            let rc = (api.launch_kernel)(
                self.device,
                self.kernel,
                args.as_ptr(),
                offsets.as_ptr(),
                &ka,
                std::ptr::null_mut(),
            );
            assert_eq!(rc, OFFLOAD_SUCCESS);
            assert_eq!(
                (api.data_retrieve)(self.device, (&mut out as *mut i32).cast(), self.output, 4),
                OFFLOAD_SUCCESS
            );
            assert_eq!(
                (api.data_retrieve)(
                    self.device,
                    (&mut translated as *mut *mut c_void).cast(),
                    self.translated,
                    8
                ),
                OFFLOAD_SUCCESS
            );
        }
        (translated, out)
    }
}

impl Drop for CallKernel {
    fn drop(&mut self) {
        let api = api();
        for p in [self.slot, self.input, self.output, self.translated] {
            // SAFETY: allocations made in `new`.
            unsafe { assert_eq!((api.data_delete)(self.device, p, 0), OFFLOAD_SUCCESS) };
        }
    }
}

/// What a process holds that an image's load may leave behind: open file descriptors, mappings
/// of the plugin's image files (`memfd:omptarget-indirect-image`) and bytes in use by malloc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub descriptors: usize,
    pub image_mappings: usize,
    /// What the process's allocator hands out (`mallinfo2`): the plugin's, the loader's and the
    /// allocator's own bookkeeping together.
    pub malloc_bytes: usize,
    /// What the plugin's own code holds (its counting allocator).
    pub plugin_bytes: usize,
}

impl Held {
    /// What this process holds now. Counts the whole process: callers hold [`fresh`]'s lock so
    /// that no other test of the binary loads or compiles meanwhile.
    pub fn now() -> Held {
        let descriptors = std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count();
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        let image_mappings = maps.lines().filter(|l| l.contains("memfd:omptarget-indirect-image")).count();
        drop(maps);
        // SAFETY: mallinfo2 only reads the allocator's statistics.
        let info = unsafe { libc::mallinfo2() };
        // SAFETY: the export reads one counter.
        let plugin_bytes = unsafe { (api().held_bytes)() };
        Held { descriptors, image_mappings, malloc_bytes: info.uordblks + info.hblkhd, plugin_bytes }
    }
}
