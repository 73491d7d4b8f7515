//! The x86_64 device's table where libomptarget fills none (LLVM 18-21: only their CUDA and
//! AMDGPU plugins build one; LLVM 22 and later build it for every device).
//!
//! On x86_64 host offload the device image is a shared object loaded into this process; its copy
//! of the device library calls [`__omptarget_indirect_x86_64_image_loaded`] from a constructor
//! while it is loaded (`device-rtl/src/image_loaded.rs`). This library then does for the image
//! what LLVM's GPU plugins do: for every indirect entry of size 8 the program registered (the
//! vtable words this library added included), read the device address from the image's global
//! of that name and pair it with the host address; and installs the pairs as this project's
//! plugins do, in the image's `__omp_offloading_fptr_map_*` globals with the hash index, which
//! the device library's translation searches first. Device memory is this process's memory, so
//! the table and index are ordinary allocations, kept as long as the image may run.
//!
//! The plugins' switches apply: `OMPTARGET_INDIRECT_MAP=0` installs nothing (one notice),
//! `OMPTARGET_INDIRECT_INDEX=0` the table without the index; `LIBOMPTARGET_INFO` prints what was
//! installed, in the plugins' words.

use std::collections::BTreeSet;
use std::ffi::{c_void, CStr};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use host_table::diagnostics::{self, MapSummary};
use host_table::fptr_map::{map_global_writes, FptrTable, HashIndex};
use host_table::rtl_interface::{FptrIndex, FptrMapEntry, FPTR_MAP_P, OMP_DECLARE_TARGET_INDIRECT};
use host_table::switches::{switch_from_env, HASH_INDEX_ENV, MAP_ON_LOAD_ENV};
use omptarget_indirect_abi::{c_names, vtable_word, IndexSlot};

use crate::registered::REGISTERED;
use crate::NAME;
use crate::{host_calls, next};

/// A table installed in one image, kept while the image may run.
struct Installed {
    /// The address of the image's `__omp_offloading_fptr_map_p` (an image loaded again at the
    /// same place replaces the table of the one before).
    global: usize,
    _table: FptrTable<'static>,
    _slots: Box<[IndexSlot]>,
}

static INSTALLED: Mutex<Vec<Installed>> = Mutex::new(Vec::new());

/// `void __omptarget_indirect_x86_64_image_loaded(const void *anchor)`: installs the table of the
/// x86_64 device image that holds `anchor` (any address inside the image), when the libomptarget
/// this library registers with fills none for that device. Called by the device library's
/// constructor while the image is loaded, before any of its kernels can run. Never fails the
/// program: a table it cannot build is reported on stderr (one line) and the image keeps its
/// globals as they were (host copies then run, as without this library).
///
/// # Safety
/// `anchor` must be null or an address inside a loaded shared object.
#[no_mangle]
pub unsafe extern "C" fn __omptarget_indirect_x86_64_image_loaded(anchor: *const c_void) {
    if anchor.is_null() {
        return;
    }
    if runtime_closes_images_twice() && switch_from_env(HOLD_IMAGES_ENV) {
        hold_image(anchor);
    }
    if let Some(image) = object_file(anchor).and_then(|file| Handle::of_loaded(&file)) {
        let _ = std::panic::catch_unwind(|| host_calls::image_loaded(|name| image.symbol(name)));
    }
    if !runtime_fills_none() {
        return;
    }
    let map_on_load = switch_from_env(MAP_ON_LOAD_ENV);
    if !map_on_load {
        static NOTICED: AtomicBool = AtomicBool::new(false);
        diagnostics::notice_once(
            &NOTICED,
            NAME,
            format_args!(
                "{MAP_ON_LOAD_ENV}=0: loading an x86_64 device image installs no function-pointer map \
                 (translation returns pointers unchanged)"
            ),
        );
    }
    // SAFETY: the caller's contract.
    let outcome = std::panic::catch_unwind(|| unsafe { install(anchor, map_on_load) });
    match outcome {
        Ok(Ok(Some(message))) => diagnostics::info(NAME, message),
        Ok(Ok(None)) => {}
        Ok(Err(why)) => {
            eprintln!("omptarget-indirect ({NAME}) error: no table for an x86_64 device image: {why}")
        }
        Err(_) => {
            eprintln!("omptarget-indirect ({NAME}) error: no table for an x86_64 device image: a panic")
        }
    }
}

/// An entry point of libomptarget since LLVM 22, the first release whose libomptarget fills the
/// x86_64 device's table itself: whether the libomptarget behind this library defines it tells
/// the two apart, whatever the file is called (a custom build's `libomptarget.so` included).
const SINCE_FILLING_X86_64: &CStr = c"__tgt_target_sync";

/// An entry point of libomptarget since LLVM 24 (its main branch), whose x86_64 device closes
/// every image it loaded twice when the process exits: LLVM's `DynamicLibrary` handle set closes
/// it in its static destructor, then the plugin's deinitialization closes the same handle again.
/// The second `dlclose` reads a link map the first one freed, and the program dies at exit (or
/// not, as the heap happens to lie): `docs/llvm24.md`.
const SINCE_CLOSING_TWICE: &CStr = c"__tgt_get_mapped_ptr";

/// The switch of [`hold_image`]: `OMPTARGET_INDIRECT_HOLD_IMAGES=0` takes no extra reference
/// (the negative control of the double close).
pub const HOLD_IMAGES_ENV: &str = "OMPTARGET_INDIRECT_HOLD_IMAGES";

/// The libomptarget behind this library (the object defining the `__tgt_register_lib` after
/// this library's), if any.
fn libomptarget() -> Option<(String, Handle)> {
    let register = next(c"__tgt_register_lib")?;
    let file = object_file(register as *const c_void)?;
    let handle = Handle::of_loaded(&file)?;
    Some((file, handle))
}

/// Whether the libomptarget behind this library closes its x86_64 images twice at exit (it
/// defines [`SINCE_CLOSING_TWICE`]). Says under `LIBOMPTARGET_INFO` what it found, once.
fn runtime_closes_images_twice() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        let Some((file, libomptarget)) = libomptarget() else { return false };
        let twice = libomptarget.symbol(SINCE_CLOSING_TWICE).is_some();
        if twice {
            diagnostics::info(
                NAME,
                format_args!(
                    "{file} defines {}: LLVM 24, which closes each x86_64 device image twice at exit; this \
                     library holds one more reference to each",
                    SINCE_CLOSING_TWICE.to_string_lossy()
                ),
            );
        }
        twice
    })
}

/// Takes one more reference to the image holding `anchor` (being initialized), never released:
/// the runtime's two `dlclose` calls at exit then leave it unloaded once, as one would have.
/// Nothing happens when the loader knows no object there.
fn hold_image(anchor: *const c_void) {
    if let Some(image) = object_file(anchor).and_then(|file| Handle::of_loaded(&file)) {
        std::mem::forget(image);
    }
}

/// Whether the libomptarget behind this library leaves the x86_64 device without a table (LLVM
/// 21 and older: it lacks [`SINCE_FILLING_X86_64`]). Says under `LIBOMPTARGET_INFO` what it
/// found, once. Without a libomptarget to ask, no (nothing is installed for it).
pub(crate) fn runtime_fills_none() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        let Some((file, libomptarget)) = libomptarget() else { return false };
        let fills_none = libomptarget.symbol(SINCE_FILLING_X86_64).is_none();
        diagnostics::info(
            NAME,
            format_args!(
                "{file} {} {}: {}",
                if fills_none { "lacks" } else { "defines" },
                SINCE_FILLING_X86_64.to_string_lossy(),
                if fills_none {
                    "LLVM 21 or older, which fills no table for the x86_64 device: this library installs it"
                } else {
                    "LLVM 22 or newer, which fills the x86_64 device's table itself"
                }
            ),
        );
        fills_none
    })
}

/// The file of the loaded object holding `address`.
fn object_file(address: *const c_void) -> Option<String> {
    // SAFETY: `Dl_info` is plain C data, valid all zero.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer; dladdr only reads the loader's tables.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: the loader's NUL-terminated name of the object, alive while it is loaded.
    Some(unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
}

/// A handle of a loaded object, released when dropped.
struct Handle(*mut c_void);

impl Handle {
    /// A handle of the object `file`, already loaded (libomptarget, or an image being
    /// initialized); `None` when it is not loaded or its name holds a NUL.
    fn of_loaded(file: &str) -> Option<Handle> {
        let path = std::ffi::CString::new(file).ok()?;
        // SAFETY: RTLD_NOLOAD only finds an object already loaded; it loads nothing.
        let raw = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        (!raw.is_null()).then_some(Handle(raw))
    }

    /// The object's symbol `name`, looked up in it and its dependencies only.
    fn symbol(&self, name: &CStr) -> Option<*mut c_void> {
        // SAFETY: a live handle and a NUL-terminated name.
        let found = unsafe { libc::dlsym(self.0, name.as_ptr()) };
        (!found.is_null()).then_some(found)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: a handle of dlopen's, closed once (RTLD_NOLOAD took one more reference).
        unsafe { libc::dlclose(self.0) };
    }
}

/// Builds and installs the table of the image holding `anchor` (with `map_on_load`); says what
/// it did.
///
/// Either way it makes the entries' device globals writable: libomptarget 21, under `requires
/// unified_shared_memory`, writes each indirect entry's host bytes over its device global (LLVM
/// 22 skips indirect entries there), and on x86_64 those globals are read-only after
/// relocation, so the program would fault in its first target region. The table holds what the
/// globals held before.
///
/// # Safety
/// As [`__omptarget_indirect_x86_64_image_loaded`].
unsafe fn install(anchor: *const c_void, map_on_load: bool) -> Result<Option<String>, String> {
    let file = object_file(anchor).ok_or("the loader knows no object at the address it gave")?;
    let image = Handle::of_loaded(&file).ok_or_else(|| format!("{file} is not a loaded object"))?;
    let (pairs, globals, vtables) = pairs_of(&image);
    for global in globals {
        make_writable(global);
    }
    if !map_on_load {
        return Ok(None);
    }
    if pairs.is_empty() {
        return Ok(Some(format!(
            "x86_64 device image {file}: no indirect entry of the program is in it, no table installed"
        )));
    }
    let table = FptrTable::from_pairs(pairs).map_err(|e| e.to_string())?;
    let capacity = if switch_from_env(HASH_INDEX_ENV) {
        HashIndex::capacity_on_host_device(&table).unwrap_or(0)
    } else {
        0
    };
    let mut slots = vec![IndexSlot::default(); capacity].into_boxed_slice();
    // SAFETY: IndexSlot is `#[repr(C, align(16))] {u64, u64}`, 16 bytes like `[u64; 2]` and
    // more strictly aligned; the slice covers exactly the boxed slots.
    let as_pairs =
        unsafe { std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast::<[u64; 2]>(), slots.len()) };
    let (address, len) = (table.entries().as_ptr() as u64, table.len() as u64);
    let index = HashIndex::build_into(&table, as_pairs);
    let header = index.map_or(FptrIndex::NONE, |index| index.header_at(address, slots.as_ptr() as u64));
    let map_p = image.symbol(c_names::FPTR_MAP_P).ok_or(format!("{file} has no {FPTR_MAP_P}"))?;
    for (global, bytes) in map_global_writes(Some((address, len, header))) {
        let name = std::ffi::CString::new(global).map_err(|_| "a global name with a NUL")?;
        let Some(at) = image.symbol(&name) else {
            continue; // An image without the index global: the table is searched.
        };
        // SAFETY: the image's global of that name, at least as large as what it is given (the
        // device library's layout); no kernel of the image runs while it is being loaded.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at.cast::<u8>(), bytes.len()) };
    }
    let summary = MapSummary {
        functions: len - vtables.words.min(len),
        vtables: vtables.names.len() as u64,
        vtable_words: vtables.words,
        table_bytes: len * 16,
        index_bytes: if index.is_some() { 16 * slots.len() as u64 } else { 0 },
        longest_probe: index.map(|i| i.longest_probe()),
    };
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    installed.retain(|i| i.global != map_p as usize);
    installed.push(Installed { global: map_p as usize, _table: table, _slots: slots });
    Ok(Some(format!("x86_64 device image {file} (this libomptarget fills no table for it): {summary}")))
}

/// The vtables whose words a table pairs.
#[derive(Default)]
struct Vtables {
    names: BTreeSet<String>,
    words: u64,
}

/// `(host, device)` for every indirect entry of size 8 of the registered descriptors whose
/// device global the image defines: the global holds the device address (a function's, or a
/// vtable word's), as LLVM's GPU plugins read it.
fn pairs_of(image: &Handle) -> (Vec<FptrMapEntry>, Vec<*mut c_void>, Vtables) {
    let registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    let mut pairs = Vec::new();
    let mut globals = Vec::new();
    let mut vtables = Vtables::default();
    for desc in registered.iter().filter(|r| r.live) {
        // SAFETY: a live descriptor's entries.
        for entry in unsafe { desc.entries() } {
            if entry.flags & OMP_DECLARE_TARGET_INDIRECT == 0
                || entry.size != 8
                || entry.symbol_name.is_null()
            {
                continue;
            }
            // SAFETY: the entry's NUL-terminated symbol name (the program's or this library's).
            let name = unsafe { CStr::from_ptr(entry.symbol_name) };
            let Some(global) = image.symbol(name) else { continue };
            // SAFETY: the image's 8-byte global of that name (the entry's size).
            let device = unsafe { global.cast::<u64>().read_unaligned() };
            pairs.push(FptrMapEntry { host_ptr: entry.address as u64, tgt_ptr: device });
            globals.push(global);
            if let Some((_, vtable)) = name.to_str().ok().and_then(vtable_word) {
                vtables.names.insert(vtable.to_string());
                vtables.words += 1;
            }
        }
    }
    (pairs, globals, vtables)
}

/// Makes the page(s) of the 8-byte global at `global` readable and writable (see [`install`]).
/// A failure is reported under `LIBOMPTARGET_INFO` and otherwise left alone: the program then
/// faults only where libomptarget 21 writes there.
fn make_writable(global: *mut c_void) {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
    let start = global as usize / page * page;
    let end = (global as usize + 8).div_ceil(page) * page;
    // SAFETY: whole pages of a loaded image's data (the global's), given read and write access
    // they keep for the image's lifetime; no code lives on a page that holds a data global.
    let status =
        unsafe { libc::mprotect(start as *mut c_void, end - start, libc::PROT_READ | libc::PROT_WRITE) };
    if status != 0 {
        diagnostics::info(
            NAME,
            format_args!(
                "mprotect of the page of the device global at {global:p} failed ({}): it stays read-only",
                std::io::Error::last_os_error()
            ),
        );
    }
}
