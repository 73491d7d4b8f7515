//! `libomptarget.rtl.x86_64.so`: the host-offload plugin. Device images are x86_64 shared
//! objects, loaded from memory (memfd) with `dlopen` when libomptarget checks them ([`PRELOADED`]); "device" memory is host memory; kernels are
//! called through libffi on the calling thread, as LLVM's host plugin does.
#![deny(missing_docs)]

mod host_calls;
pub mod validate;

use std::ffi::{c_void, CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use host_table::image::DeviceImage;
use host_table::rtl_interface::AllocKind;
use libffi::middle::{arg, Cif, CodePtr, Type};
use plugin_core::{Backend, DeviceSymbol, Launch, PluginError, Result};

/// `STT_OBJECT`: a data object.
const STT_OBJECT: u8 = 1;
/// `STT_FUNC`: a function.
const STT_FUNC: u8 = 2;

/// Devices reported: independent "devices" in the same process, each with its own images and
/// function-pointer map.
pub const DEVICES: i32 = 2;

/// The host-offload backend.
pub struct HostOffload;

/// Unloaded images whose kernels ran, kept mapped a while: libomp keeps pointers into the code
/// and data of the images whose kernels it ran (its hot teams keep the outlined functions and
/// `ident_t` locations of the last parallel regions) and may touch them at later forks; later
/// images' kernels replace them. So the [`RETIRED_KEPT`] most recently unloaded images that ran
/// stay; older ones, images that never ran a kernel (refused ones included) and every retired
/// image at the next `init_device` are closed. An unloaded image is inert: its kernels and
/// globals are gone from the registry and the map. (The crash that first suggested keeping
/// them, in the unload/reload/launch stress test, was the test launching the first load's
/// kernel handle after the allocator had given it to another kernel of a reloaded image.)
static RETIRED: std::sync::Mutex<std::collections::VecDeque<Library>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// Copies of checked images, opened for the devices when libomptarget asked whether the plugin
/// runs them (`__tgt_rtl_is_valid_binary`, from `__tgt_register_lib`), so that loading one on a
/// device (`__tgt_rtl_load_binary`) needs no lock of the dynamic loader. libomptarget 16 loads a
/// device's images holding its own lock, and registers a `dlopen`ed library's images from the
/// library's constructor, while the thread that loads the library holds the loader's lock: a
/// load that called `dlopen` then waited for that thread, which waited for libomptarget, and
/// both hung (LLVM 16's own x86_64 plugin hangs the same way). Checking runs in the registering
/// thread, which holds the loader's lock already or runs the program's constructors.
static PRELOADED: std::sync::Mutex<Vec<Preloaded>> = std::sync::Mutex::new(Vec::new());

/// Images [`PRELOADED`] holds at most: an image checked but never loaded is closed when this
/// many newer ones were checked.
const PRELOADED_KEPT: usize = 16;

/// A checked image's copies, one for each device that has not loaded it yet.
struct Preloaded {
    /// Which load of the image's bytes this is, for [`Library::preload`].
    id: u64,
    /// The image's bytes: a load takes a copy only of the same bytes.
    bytes: Vec<u8>,
    copies: Vec<Library>,
}

/// The next [`Preloaded::id`].
static NEXT_PRELOAD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Opens a copy of `bytes` for every device, unless [`PRELOADED`] has them. Nothing is kept on
/// failure: the load opens the image itself then and reports what failed.
fn preload(bytes: &[u8]) {
    let known = |preloaded: &[Preloaded]| preloaded.iter().any(|p| p.bytes == bytes);
    if known(&PRELOADED.lock().unwrap_or_else(|e| e.into_inner())) {
        return;
    }
    let id = NEXT_PRELOAD.fetch_add(1, Ordering::Relaxed);
    // Opened without the lock held: `dlopen` takes the loader's lock, which a load must never
    // wait for behind this one.
    let mut copies = Vec::new();
    for _ in 0..DEVICES {
        match Library::open(bytes, Some(id)) {
            Ok(copy) => copies.push(copy),
            Err(_) => {
                for copy in copies {
                    let _ = copy.close();
                }
                return;
            }
        }
    }
    let closed = {
        let mut preloaded = PRELOADED.lock().unwrap_or_else(|e| e.into_inner());
        if known(&preloaded) {
            copies
        } else {
            preloaded.push(Preloaded { id, bytes: bytes.to_vec(), copies });
            if preloaded.len() > PRELOADED_KEPT {
                preloaded.remove(0).copies
            } else {
                Vec::new()
            }
        }
    };
    for library in closed {
        let _ = library.close();
    }
}

/// A copy of `bytes` that [`preload`] opened, if one is left.
fn take_preloaded(bytes: &[u8]) -> Option<Library> {
    let mut preloaded = PRELOADED.lock().unwrap_or_else(|e| e.into_inner());
    let at = preloaded.iter().position(|p| p.bytes == bytes)?;
    let copy = preloaded[at].copies.pop();
    if preloaded[at].copies.is_empty() {
        preloaded.remove(at);
    }
    copy
}

/// Closes the copies left of the preload `id`: its image was unloaded from a device, so the
/// library that registered it is going away.
fn drop_preloaded(id: u64) {
    let left = {
        let mut preloaded = PRELOADED.lock().unwrap_or_else(|e| e.into_inner());
        match preloaded.iter().position(|p| p.id == id) {
            Some(at) => preloaded.remove(at).copies,
            None => Vec::new(),
        }
    };
    for library in left {
        let _ = library.close();
    }
}

/// The memfds of images the loader kept after their last `dlclose`, open until the process exits.
static UNDELETABLE: std::sync::Mutex<Vec<OwnedFd>> = std::sync::Mutex::new(Vec::new());

/// How many unloaded images that ran kernels [`RETIRED`] keeps mapped: a program that loads and
/// unloads a library with offload code in a loop holds this many images' descriptors and
/// mappings at most, instead of one more a cycle.
const RETIRED_KEPT: usize = 8;

/// A device image loaded with `dlopen`.
pub struct Library {
    handle: *mut c_void,
    /// The name it was loaded under: the loader reports it for each of its symbols.
    path: CString,
    /// Where its executable segments are in this process: its functions, exported or not.
    code: Vec<(u64, u64)>,
    /// Where its memory stays writable after loading (writable segments less RELRO).
    writable: Vec<(u64, u64)>,
    /// Its load base: what its symbols' values are relative to.
    base: u64,
    /// The symbols it defines and exports ([`validate::CheckedImage::symbols`]).
    symbols: std::collections::HashMap<Vec<u8>, validate::DefinedSymbol>,
    /// The [`Preloaded::id`] it was opened for, if [`preload`] opened it.
    preload: Option<u64>,
    /// Set when one of its kernels is launched: only then may libomp hold pointers into it.
    ran: Arc<AtomicBool>,
    /// The memfd the image was loaded from. Kept open while loaded: glibc identifies loaded
    /// objects by path, and `/proc/self/fd/N` must not name another image meanwhile.
    _memfd: OwnedFd,
}

// SAFETY: a dlopen handle may be used and closed from any thread.
unsafe impl Send for Library {}

/// The head of glibc's `struct link_map` (`<link.h>`): the fields dlinfo's callers may read.
#[repr(C)]
struct LinkMap {
    /// Difference between the addresses in the ELF file and in memory.
    l_addr: usize,
}

/// Allocations of at least this many bytes ask for transparent huge pages.
const HUGE_PAGE_ADVICE_FROM: usize = 4 << 20;

/// Asks the kernel to back the whole pages of `[start, start + size)` with transparent huge pages
/// (`MADV_HUGEPAGE`). A 1M-entry table and its index are 48 MiB of fresh memory written once per
/// install: 12k first-touch faults of 4 KiB pages cost more than building them. Advice only: where
/// huge pages are off (`never`) or the range holds no aligned 2 MiB, nothing changes.
fn advise_huge_pages(start: *mut u8, size: usize) {
    const PAGE: usize = 4096;
    let first = (start as usize).next_multiple_of(PAGE);
    let end = (start as usize + size) & !(PAGE - 1);
    if end > first {
        // SAFETY: whole pages inside the allocation just made; the advice changes no contents.
        unsafe { libc::madvise(first as *mut c_void, end - first, libc::MADV_HUGEPAGE) };
    }
}

fn dl_error(what: &str) -> PluginError {
    // SAFETY: dlerror returns null or a thread-local C string valid until the next dl call.
    let msg = unsafe { libc::dlerror() };
    let detail = if msg.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: non-null C string from dlerror.
        unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
    };
    PluginError::Backend(format!("{what}: {detail}"))
}

impl Library {
    /// Checks `bytes` ([`validate`]), writes them to an anonymous memory file and `dlopen`s it.
    fn open(bytes: &[u8], preload: Option<u64>) -> Result<Library> {
        let checked = validate::check_shared_object(bytes)?;
        let name = c"omptarget-indirect-image";
        // SAFETY: valid C string, valid flags.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(PluginError::Backend(format!("memfd_create: {}", std::io::Error::last_os_error())));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file =
            std::fs::File::from(memfd.try_clone().map_err(|e| PluginError::Backend(format!("dup: {e}")))?);
        std::io::Write::write_all(&mut file, bytes)
            .map_err(|e| PluginError::Backend(format!("writing the image: {e}")))?;
        drop(file);
        let path = CString::new(format!("/proc/self/fd/{}", memfd.as_raw_fd())).expect("no NUL");
        // SAFETY: valid path; the image's constructors run here, as for any dlopen.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dl_error("dlopen of the device image"));
        }
        let mut map: *mut LinkMap = std::ptr::null_mut();
        // SAFETY: a live handle; RTLD_DI_LINKMAP stores the object's link_map pointer.
        if unsafe { libc::dlinfo(handle, libc::RTLD_DI_LINKMAP, (&mut map as *mut *mut LinkMap).cast()) } != 0
            || map.is_null()
        {
            let err = dl_error("dlinfo of the device image");
            // SAFETY: the handle is closed once, here.
            unsafe { libc::dlclose(handle) };
            return Err(err);
        }
        // SAFETY: dlinfo returned the object's link_map, valid while it is loaded.
        let base = unsafe { (*map).l_addr } as u64;
        let rebase =
            |ranges: &[(u64, u64)]| ranges.iter().map(|&(start, end)| (base + start, base + end)).collect();
        Ok(Library {
            handle,
            path,
            code: rebase(&checked.code),
            writable: rebase(&checked.writable),
            base,
            symbols: checked.symbols,
            preload,
            ran: Arc::default(),
            _memfd: memfd,
        })
    }

    /// The address and size of `name` if this image itself defines it as a symbol of `kind`
    /// (`STT_FUNC`, `STT_OBJECT`): what `dlsym` on its handle finds in the image itself, from
    /// its own symbol table, asking the loader nothing (`validate::CheckedImage::symbols`). A
    /// symbol the image does not define (libc's `printf`) is absent; one of another kind is an
    /// error (a kernel entry naming a data object, or a global naming a function).
    fn own_symbol(&self, name: &str, kind: u8) -> Result<Option<(*mut c_void, u64)>> {
        let Some(found) = self.symbols.get(name.as_bytes()) else { return Ok(None) };
        if found.kind != kind {
            let what = |k: u8| match k {
                STT_FUNC => "a function".to_string(),
                STT_OBJECT => "a data object".to_string(),
                other => format!("a symbol of type {other}"),
            };
            return Err(PluginError::InvalidImage(format!(
                "{name} is {}, expected {}",
                what(found.kind),
                what(kind)
            )));
        }
        Ok(Some((self.base.wrapping_add(found.value) as *mut c_void, found.size)))
    }

    /// Whether `address` is in the image's code.
    fn holds_code(&self, address: u64) -> bool {
        self.code.iter().any(|&(start, end)| (start..end).contains(&address))
    }

    /// Unmaps the image. Should the loader keep it (the validator refuses what is known to make
    /// an object undeletable), its memfd stays open in [`UNDELETABLE`]: glibc finds loaded
    /// objects by path first, and a later image given the same descriptor number would be
    /// answered with this one.
    fn close(self) -> Result<()> {
        host_calls::image_unloading(&self);
        // SAFETY: the handle came from dlopen and is closed once (self is consumed).
        if unsafe { libc::dlclose(self.handle) } != 0 {
            return Err(dl_error("dlclose"));
        }
        // SAFETY: a valid path; RTLD_NOLOAD loads nothing, it finds an object still loaded
        // under the name, and the extra reference it takes is dropped at once.
        let kept = unsafe { libc::dlopen(self.path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if !kept.is_null() {
            // SAFETY: the reference RTLD_NOLOAD just took.
            unsafe { libc::dlclose(kept) };
            UNDELETABLE.lock().unwrap_or_else(|e| e.into_inner()).push(self._memfd);
        }
        Ok(())
    }
}

/// A kernel: the address of its function in the loaded image.
pub struct Kernel {
    function: usize,
    /// Its image's [`Library::ran`].
    ran: Arc<AtomicBool>,
}

impl Backend for HostOffload {
    type Image = Library;
    type Kernel = Kernel;
    const NAME: &'static str = "x86_64";
    /// Device memory is the host process's memory: host pointers are device pointers
    /// (`unified_address`) and host data is device data (`unified_shared_memory`). Reverse
    /// offload is not implemented (nor by LLVM's runtimes).
    const SUPPORTED_REQUIREMENTS: u64 = host_table::rtl_interface::OMP_REQ_UNIFIED_ADDRESS
        | host_table::rtl_interface::OMP_REQ_UNIFIED_SHARED_MEMORY
        | host_table::rtl_interface::OMP_REQ_DYNAMIC_ALLOCATORS;

    fn init() -> Result<Self> {
        Ok(HostOffload)
    }

    fn device_count(&self) -> i32 {
        DEVICES
    }

    fn check_image(&self, image: &DeviceImage<'_>, _arch: Option<&str>) -> Result<()> {
        if let Some(triple) = image.triple.as_deref().filter(|t| !t.starts_with("x86_64")) {
            return Err(PluginError::InvalidImage(format!("packaged for {triple}, not x86_64")));
        }
        validate::check_shared_object(image.bytes)?;
        preload(image.bytes);
        Ok(())
    }

    fn init_device(&self, _device: i32) -> Result<()> {
        let retired = std::mem::take(&mut *RETIRED.lock().unwrap_or_else(|e| e.into_inner()));
        retired.into_iter().try_for_each(Library::close)
    }

    fn load_image(&self, _device: i32, image: &[u8]) -> Result<Library> {
        let library = take_preloaded(image).map_or_else(|| Library::open(image, None), Ok)?;
        host_calls::image_loaded(&library);
        Ok(library)
    }

    fn unload_image(&self, _device: i32, image: Library) -> Result<()> {
        if let Some(id) = image.preload {
            drop_preloaded(id);
        }
        if !image.ran.load(Ordering::Acquire) {
            return image.close();
        }
        let oldest = {
            let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
            retired.push_back(image);
            (retired.len() > RETIRED_KEPT).then(|| retired.pop_front()).flatten()
        };
        oldest.map_or(Ok(()), Library::close)
    }

    fn kernel(&self, image: &Library, name: &str) -> Result<Option<Kernel>> {
        let found = image.own_symbol(name, STT_FUNC)?;
        if let Some((addr, _)) = found {
            host_calls::kernel_found(addr as u64, name);
        }
        Ok(found.map(|(addr, _)| Kernel { function: addr as usize, ran: image.ran.clone() }))
    }

    fn global(&self, image: &Library, name: &str) -> Result<Option<DeviceSymbol>> {
        Ok(image.own_symbol(name, STT_OBJECT)?.map(|(addr, size)| DeviceSymbol {
            addr: addr as u64,
            size: Some(size),
            writable: image
                .writable
                .iter()
                .any(|&(start, end)| addr as u64 >= start && addr as u64 + size <= end),
        }))
    }

    fn check_function(&self, image: &Library, addr: u64) -> Result<()> {
        // Device functions need not be exported (clang's are often hidden): the address must lie
        // in the image's code.
        if image.holds_code(addr) {
            Ok(())
        } else {
            Err(PluginError::InvalidImage(format!("{addr:#x} is not in the image's code")))
        }
    }

    fn host_address(&self, _device: i32, ptr: u64) -> Option<*mut u8> {
        // Host offload: device memory is this process's memory.
        Some(ptr as *mut u8)
    }

    fn alloc(&self, _device: i32, size: usize, _kind: AllocKind) -> Result<u64> {
        // Every kind is host memory here.
        // SAFETY: plain allocation; at least one byte so that a 0-byte request is a unique
        // pointer libomptarget can free.
        let ptr = unsafe { libc::malloc(size.max(1)) };
        if ptr.is_null() {
            return Err(PluginError::Backend(format!("out of memory allocating {size} bytes")));
        }
        if size >= HUGE_PAGE_ADVICE_FROM {
            advise_huge_pages(ptr.cast(), size);
        }
        Ok(ptr as u64)
    }

    fn free(&self, _device: i32, ptr: u64, _kind: AllocKind) -> Result<()> {
        // SAFETY: the pointer came from `alloc` (libomptarget's contract), or is null.
        unsafe { libc::free(ptr as *mut c_void) };
        Ok(())
    }

    fn write(&self, _device: i32, dst: u64, src: &[u8]) -> Result<()> {
        if dst == 0 {
            return Err(PluginError::InvalidArgument("null destination".into()));
        }
        // SAFETY: device memory is host memory; `dst` is an allocation or global of at least
        // `src.len()` bytes by the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }

    fn read(&self, _device: i32, dst: &mut [u8], src: u64) -> Result<()> {
        if src == 0 {
            return Err(PluginError::InvalidArgument("null source".into()));
        }
        // SAFETY: as in `write`, the other way round.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn launch(&self, _device: i32, kernel: &Kernel, launch: &Launch<'_>) -> Result<()> {
        // One host thread runs the outlined kernel; its OpenMP runtime (libomp) makes the teams
        // and threads, so the geometry is not ours to apply.
        let values = launch.args;
        let cif = Cif::new(values.iter().map(|_| Type::pointer()), Type::void());
        let args: Vec<_> = values.iter().map(arg).collect();
        kernel.ran.store(true, Ordering::Release);
        let _launch = host_calls::launching(kernel.function as u64);
        // SAFETY: `kernel` is a function of a loaded image (the core's registry says so) taking
        // `values.len()` pointer arguments (clang's outlined kernel signature).
        unsafe { cif.call::<()>(CodePtr(kernel.function as *mut c_void), &args) };
        Ok(())
    }
}

plugin_core::export_plugin!(HostOffload);

#[cfg(test)]
mod tests {
    use super::*;
    use plugin_core::device_runtime::with_kernel_arguments;
    use plugin_core::environment::{KernelConfig, NO_LAUNCH_ENVIRONMENT};
    use plugin_core::LaunchParams;
    use plugin_test_support::kernel_args;

    /// The GPU backends' launch-environment logic, run against this backend's real allocator
    /// (host memory), where its buffers can be looked at while the "kernel" runs.
    #[test]
    fn kernels_with_a_teams_reduction_get_a_launch_environment() {
        let backend = HostOffload::init().unwrap();
        let reduction = KernelConfig {
            reduction_data_size: 8,
            reduction_buffer_length: 1024,
            ..KernelConfig::NOT_OPENMP
        };
        let ka = kernel_args(2, 3, 0);
        let launch = LaunchParams { kernel: 0, args: &[11, 22], kernel_args: &ka };
        let mut seen = Vec::new();
        with_kernel_arguments(&backend, 0, &launch, &reduction, |args| {
            seen = args.to_vec();
            let mut kle = [0u8; 16];
            backend.read(0, &mut kle, args[0])?;
            assert_eq!(kle[..8], [0; 8]);
            let buffer = u64::from_le_bytes(kle[8..].try_into().unwrap());
            // The whole 8 KiB buffer is writable memory of its own.
            backend.write(0, buffer, &[0xab; 8 * 1024])?;
            assert_ne!(buffer, args[0]);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen[1..], [11, 22]);

        let plain = KernelConfig::NOT_OPENMP;
        with_kernel_arguments(&backend, 0, &launch, &plain, |args| {
            assert_eq!(args, [NO_LAUNCH_ENVIRONMENT, 11, 22]);
            Ok(())
        })
        .unwrap();
        let clang16 = kernel_args(2, 2, 0);
        let old = LaunchParams { kernel_args: &clang16, ..launch };
        with_kernel_arguments(&backend, 0, &old, &reduction, |args| {
            assert_eq!(args, [11, 22], "clang 16 kernels have no dyn_ptr");
            Ok(())
        })
        .unwrap();
        // The kernel's failure is returned, after the buffers are freed.
        let failed = with_kernel_arguments(&backend, 0, &launch, &reduction, |_| {
            Err(PluginError::Backend("kernel failed".into()))
        });
        assert_eq!(failed, Err(PluginError::Backend("kernel failed".into())));
    }
}
