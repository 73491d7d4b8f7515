//! The host side of the check of calls into host code on the x86_64 device
//! (`device-rtl/src/host_calls.rs`): the device's ranges, and the answer for a key outside them.
//!
//! The x86_64 device runs in this process, so the device library can ask: a translation that
//! found no entry, for a key outside the objects device code may call
//! ([`loaded_objects::device_ranges`]), calls the library's `ask_host`, which gives the key to
//! [`HostCallCheck::answer`]. That key is the host program's when one of its objects holds it (the main
//! executable and the user's libraries, [`LoadedObject::is_host_program`]): a function no image
//! pairs, a vtable of a class without device copies. It is reported in one line, with the
//! function or vtable, its object, the target region and the fix, and then, as
//! [`HOST_CALLS_ENV`] says, the program stops as on a GPU (the default) or the host copy runs.
//!
//! The objects are listed outside kernels ([`HostCallCheck::refresh`], at each image load and
//! before each launch after the loader's list changed): on the strict device the host program's
//! own program headers are closed while a kernel runs.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use omptarget_indirect_abi::HostCalls;

use crate::loaded_objects::{self, demangled, file_facts, LoadedObject};
use crate::switches::HOST_CALLS_ENV;

pub use omptarget_indirect_abi::host_calls::STOP_EXIT_STATUS;

/// What [`HOST_CALLS_ENV`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnHostCall {
    /// Report the call and end the program with [`STOP_EXIT_STATUS`], as a GPU stops at it: the
    /// default, so that a program that would fault on a GPU does not pass on the x86_64 device.
    Stop,
    /// Report the call (once per function), then run the host copy.
    Report,
    /// No check: the host copy runs, as without it.
    Off,
}

impl OnHostCall {
    /// From the environment: `stop` (or unset), `report`, `off` / `0`; anything else is `stop`.
    pub fn from_env() -> OnHostCall {
        match std::env::var(HOST_CALLS_ENV).as_deref().map(str::trim) {
            Ok("report") => OnHostCall::Report,
            Ok("off" | "0") => OnHostCall::Off,
            _ => OnHostCall::Stop,
        }
    }
}

/// A launch in flight: the kernel's host address and the `ident_t *` clang passed.
type Launch = (u64, u64);

/// The process's check: what the library publishing it (the registration library, or the x86_64
/// plugin) knows. One per library, in a `static`.
pub struct HostCallCheck {
    /// The library's name in its messages.
    name: &'static str,
    /// The objects as last listed, and the loader's counts they were listed at.
    objects: Mutex<(Vec<LoadedObject>, (u64, u64))>,
    /// Every range list published (devices may read any of them while their image is loaded).
    lists: Mutex<Vec<Box<[u64]>>>,
    /// The images' globals, each given the newest list.
    globals: Mutex<Vec<usize>>,
    /// Launches in flight.
    launches: Mutex<Vec<Launch>>,
    /// How each launch seen so far names its target region, read when it was first launched:
    /// kernel names and source locations are the host program's data, which the strict device
    /// closes while kernels run.
    regions: Mutex<BTreeMap<Launch, String>>,
    /// Keys reported so far (with [`OnHostCall::Report`]).
    reported: Mutex<BTreeSet<u64>>,
    /// Set by the thread that reports a stop.
    stopping: AtomicBool,
    /// Names a kernel by its host address (the library's offload entries).
    kernel_names: OnceLock<fn(u64) -> Option<String>>,
}

impl HostCallCheck {
    /// An empty check for the library `name`.
    pub const fn new(name: &'static str) -> HostCallCheck {
        HostCallCheck {
            name,
            objects: Mutex::new((Vec::new(), (0, 0))),
            lists: Mutex::new(Vec::new()),
            globals: Mutex::new(Vec::new()),
            launches: Mutex::new(Vec::new()),
            regions: Mutex::new(BTreeMap::new()),
            reported: Mutex::new(BTreeSet::new()),
            stopping: AtomicBool::new(false),
            kernel_names: OnceLock::new(),
        }
    }

    /// Sets how the library names a kernel from its host address (first call only).
    pub fn name_kernels_with(&self, names: fn(u64) -> Option<String>) {
        let _ = self.kernel_names.set(names);
    }

    /// Lists the objects again if the loader's list changed since, and gives every image the new
    /// ranges. Call outside kernels: at an image's load, before a launch.
    pub fn refresh(&self) {
        let now = loaded_objects::generation();
        let mut objects = lock(&self.objects);
        if objects.1 == now && !objects.0.is_empty() {
            return;
        }
        *objects = (loaded_objects::loaded_objects(), now);
        let list: Box<[u64]> = loaded_objects::device_ranges(&objects.0).into_boxed_slice();
        let address = list.as_ptr() as u64;
        lock(&self.lists).push(list);
        let mut globals = lock(&self.globals);
        // Images unloaded since are forgotten: only a loaded image's global is written.
        globals.retain(|&g| objects.0.iter().any(|o| o.is_device_image() && o.holds(g as u64)));
        for &global in globals.iter() {
            // SAFETY: a global of an image given to `install`, loaded (just listed; the objects'
            // lock keeps this check and the write together against another refresh); an aligned
            // 8-byte store of the list's address, which a kernel reads whole, old list or new.
            unsafe { set_ranges(global, address) };
        }
    }

    /// Sets up the check in the image global `global` (the image's
    /// `__omptarget_indirect_host_calls`) with `ask_host` as the host's answer, unless
    /// [`HOST_CALLS_ENV`] turns it off.
    ///
    /// # Safety
    /// `global` is the address of a loaded x86_64 image's [`HostCalls`] global, writable, and no
    /// kernel of the image runs.
    pub unsafe fn install(
        &self,
        global: *mut c_void,
        ask_host: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    ) {
        if OnHostCall::from_env() == OnHostCall::Off {
            return;
        }
        self.refresh();
        let ranges = lock(&self.lists).last().map_or(0, |l| l.as_ptr() as u64);
        let check = HostCalls {
            kind: HostCalls::DEVICE_RANGES,
            ranges,
            ask_host: ask_host as usize as u64,
            ..HostCalls::NONE
        };
        // SAFETY: the caller's contract.
        unsafe { global.cast::<HostCalls>().write_unaligned(check) };
        let mut globals = lock(&self.globals);
        if !globals.contains(&(global as usize)) {
            globals.push(global as usize);
        }
    }

    /// Forgets the images' globals (their program was unregistered: they are about to unload).
    pub fn forget_images(&self) {
        lock(&self.globals).clear();
    }

    /// Forgets the image global `global` (its image is about to unload).
    pub fn forget(&self, global: *mut c_void) {
        lock(&self.globals).retain(|&g| g != global as usize);
    }

    /// Notes a launch of the kernel at host address `kernel` (with clang's `ident_t *`), until
    /// the guard is dropped, after giving the images the loader's newest objects (where an image
    /// has the check: the first launch on a device loads its images after this).
    pub fn launching(&self, kernel: u64, ident: u64) -> LaunchGuard<'_> {
        if !lock(&self.globals).is_empty() {
            self.refresh();
        }
        let launch = (kernel, ident);
        lock(&self.regions).entry(launch).or_insert_with(|| {
            let name = self.kernel_names.get().and_then(|names| names(kernel));
            describe_region(name.as_deref(), source_location(ident))
        });
        lock(&self.launches).push(launch);
        LaunchGuard { check: self, launch }
    }

    /// The answer for `key`, missed by the device's lookup and outside its ranges: itself,
    /// after a report when the host program holds it (and the program ends there unless
    /// [`OnHostCall::Report`]).
    pub fn answer(&self, key: u64) -> u64 {
        let host_object = {
            let objects = lock(&self.objects);
            let Some(object) = objects.0.iter().find(|o| o.holds(key)) else { return key };
            if !object.is_host_program() {
                return key;
            }
            object.clone()
        };
        let mode = OnHostCall::from_env();
        if mode == OnHostCall::Off {
            return key;
        }
        if mode == OnHostCall::Report && !lock(&self.reported).insert(key) {
            return key;
        }
        if mode == OnHostCall::Stop && self.stopping.swap(true, Ordering::SeqCst) {
            // Another thread of the region reports and ends the process.
            loop {
                // SAFETY: waiting for a signal; the reporting thread's _exit ends this one.
                unsafe { libc::pause() };
            }
        }
        let line = self.report(&host_object, key, mode);
        eprintln!("{line}");
        if mode == OnHostCall::Stop {
            // SAFETY: ends the process without running the host program's exit handlers, as a
            // GPU's failed kernel ends it; stderr is unbuffered.
            unsafe { libc::_exit(STOP_EXIT_STATUS) };
        }
        key
    }

    /// The check a GPU's images hold ([`HostCalls::HOST_RANGES`]): the host program's objects as
    /// the loader lists them now, and `record`, the host-visible word where the device stores the
    /// first key it finds inside one; `None` when [`HOST_CALLS_ENV`] turns the check off. Call
    /// outside kernels.
    pub fn gpu_check(&self, record: u64) -> Option<HostCalls> {
        if OnHostCall::from_env() == OnHostCall::Off {
            return None;
        }
        self.refresh();
        let objects = lock(&self.objects);
        let host = loaded_objects::host_program_spans(&objects.0);
        Some(HostCalls { kind: HostCalls::HOST_RANGES, record, host, ..HostCalls::NONE })
    }

    /// Reports `key`, which a GPU's check stored before its kernel trapped, once per key (the
    /// device ends the kernel; the program ends with it). Returns whether a line was printed: a
    /// key no host program's object holds is not reported.
    pub fn report_recorded(&self, key: u64) -> bool {
        let object = {
            let objects = lock(&self.objects);
            match objects.0.iter().find(|o| o.holds(key) && o.is_host_program()) {
                Some(object) => object.clone(),
                None => return false,
            }
        };
        if !lock(&self.reported).insert(key) {
            return false;
        }
        eprintln!("{}", self.report(&object, key, OnHostCall::Stop));
        true
    }

    /// The report line for `key` in `object`.
    fn report(&self, object: &LoadedObject, key: u64, mode: OnHostCall) -> String {
        let (symbol, has_offloading) = file_facts(object, key).unwrap_or((None, false));
        let what = match &symbol {
            Some(s) if s.function => format!("host function `{}`", demangled(&s.name)),
            Some(s) if is_vtable(&s.name) => {
                format!("a virtual function through the host's vtable of {}", vtable_class(&s.name))
            }
            Some(s) => format!("host variable `{}`", demangled(&s.name)),
            None => "a host address".to_string(),
        };
        let region = self.region();
        let fix = fix(symbol.as_ref().map(|s| (s.name.as_str(), s.function)), &object.path, has_offloading);
        let then = match mode {
            OnHostCall::Report => "; the host copy runs",
            _ => "",
        };
        format!(
            "omptarget-indirect ({}) error: device code called {what} at {key:#x} in {}{region}, which no device image pairs: {fix}{then}",
            self.name, object.path
        )
    }

    /// ` from the target region of <function> at <file>:<line> (kernel <name>)` for the one
    /// launch in flight; the regions when several are.
    fn region(&self) -> String {
        let launches = lock(&self.launches).clone();
        let regions = lock(&self.regions);
        let described: BTreeSet<&String> = launches.iter().filter_map(|l| regions.get(l)).collect();
        match described.into_iter().collect::<Vec<_>>().as_slice() {
            [] => String::new(),
            [one] => format!(" from {one}"),
            many => {
                format!(" from one of {}", many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "))
            }
        }
    }
}

/// Ends a launch's note ([`HostCallCheck::launching`]).
pub struct LaunchGuard<'a> {
    check: &'a HostCallCheck,
    launch: Launch,
}

impl Drop for LaunchGuard<'_> {
    fn drop(&mut self) {
        let mut launches = lock(&self.check.launches);
        if let Some(i) = launches.iter().position(|l| *l == self.launch) {
            launches.swap_remove(i);
        }
    }
}

/// Locks `mutex`, whether or not a thread panicked holding it (the data stays consistent: each
/// holder writes whole values).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes the range list's address into the [`HostCalls`] global at `global`.
///
/// # Safety
/// As for [`HostCallCheck::install`], except that kernels may run: the store is one aligned word.
unsafe fn set_ranges(global: usize, address: u64) {
    let field = (global + std::mem::offset_of!(HostCalls, ranges)) as *const std::sync::atomic::AtomicU64;
    // SAFETY: the caller's contract; the field is 8-aligned (the global is).
    unsafe { (*field).store(address, Ordering::Release) };
}

/// Whether `name` is a vtable or construction vtable (Itanium ABI) or a Fortran type
/// descriptor.
fn is_vtable(name: &str) -> bool {
    omptarget_indirect_abi::is_dispatch_table(name.as_bytes())
}

/// `class <name>` of a vtable symbol, or the type of a Fortran type descriptor.
fn vtable_class(name: &str) -> String {
    if let Some(class) = name.strip_prefix("_ZTV") {
        let readable = demangled(&format!("_ZTS{class}"));
        let readable = readable.strip_prefix("typeinfo name for ").unwrap_or(&readable).to_string();
        return format!("class `{readable}`");
    }
    match name.rsplit_once("EXdtX") {
        Some((_, type_name)) => format!("type `{type_name}`"),
        None => format!("`{}`", demangled(name)),
    }
}

/// What to do about a call of `symbol` (its name, whether a function) in the object `path`.
fn fix(symbol: Option<(&str, bool)>, path: &str, has_offloading: bool) -> String {
    let object = path.rsplit('/').next().unwrap_or(path);
    let fortran = symbol.is_some_and(|(name, _)| name.starts_with("_Q"));
    let name_it = if fortran {
        "name it for the device with a `type(indirect)` variable of module `omptarget_indirect`, declared target \
         (docs/fortran.md)"
    } else {
        "declare it `#pragma omp declare target indirect` around its definition"
    };
    match (symbol, has_offloading) {
        (Some((_, true)), true) => {
            format!("{name_it}, in a file compiled with offloading and the configuration file")
        }
        (Some((_, true)), false) => format!(
            "{object} was compiled without offloading; compile it with offloading and the configuration file, and \
             {name_it}"
        ),
        (Some((name, false)), true) if is_vtable(name) => "compile the file that defines the class with the \
            configuration file (`--config=clang-NN.cfg`), which gives its vtable a device copy"
            .to_string(),
        (Some((name, false)), false) if is_vtable(name) => format!(
            "{object} was compiled without offloading; compile it with offloading and the configuration file, or \
             build these objects in device code"
        ),
        _ => "only functions and vtables with device copies can be called in device code".to_string(),
    }
}

/// `the target region of <function> at line <N> (kernel <name>)`, from the kernel's name as
/// clang and flang spell it (`__omp_offloading_<device>_<file>_<function>_l<line>`) and clang's
/// source location (`file:line`, with `-g`).
fn describe_region(kernel: Option<&str>, source: Option<String>) -> String {
    let parsed = kernel.and_then(|k| {
        let rest = k.strip_prefix("__omp_offloading_")?;
        let mut parts = rest.splitn(3, '_');
        let (_, _, tail) = (parts.next()?, parts.next()?, parts.next()?);
        let (function, line) = tail.rsplit_once("_l")?;
        line.parse::<u32>().ok().map(|line| (demangled(function), line))
    });
    let at = match (&parsed, source) {
        (_, Some(file_line)) => format!(" at {file_line}"),
        (Some((_, line)), None) => format!(" at line {line}"),
        (None, None) => String::new(),
    };
    match (parsed, kernel) {
        (Some((function, _)), Some(kernel)) => {
            // `the main program` (flang's `_QQmain`) is words, not a name.
            let function = if function.starts_with("the ") { function } else { format!("`{function}`") };
            format!("the target region in {function}{at} (kernel {kernel})")
        }
        (None, Some(kernel)) => format!("kernel {kernel}{at}"),
        (_, None) => format!("a target region{at}"),
    }
}

/// `file:line` of clang's `ident_t *` (its `psource`, `;file;function;line;column;;`), when it
/// names a file (clang names one with `-g`).
fn source_location(ident: u64) -> Option<String> {
    if ident == 0 {
        return None;
    }
    // SAFETY: clang's `ident_t` ({i32 x4, const char *psource}), passed to the launch and alive
    // for the program's life; psource is NUL-terminated.
    let text = unsafe {
        let psource = *((ident + 16) as *const *const libc::c_char);
        if psource.is_null() {
            return None;
        }
        CStr::from_ptr(psource).to_string_lossy().into_owned()
    };
    let fields: Vec<&str> = text.split(';').collect();
    match fields.as_slice() {
        ["", file, _, line, ..] if *file != "unknown" && !file.is_empty() && *line != "0" => {
            Some(format!("{file}:{line}"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_named_by_function_and_line() {
        let k = "__omp_offloading_fd00_2b3f1a_main_l42";
        assert_eq!(
            describe_region(Some(k), None),
            format!("the target region in `main` at line 42 (kernel {k})")
        );
        let cxx = "__omp_offloading_fd00_2b3f1a__Z6renderv_l7";
        // Demangled where the process has the C++ runtime (this test binary may not).
        let described = describe_region(Some(cxx), Some("scene.cpp:7".into()));
        assert!(
            described.starts_with("the target region in `render()` at scene.cpp:7")
                || described.starts_with("the target region in `_Z6renderv` at scene.cpp:7"),
            "{described}"
        );
        assert_eq!(describe_region(None, None), "a target region");
        let fortran = "__omp_offloading_fd00_2b3f1a__QQmain_l12";
        assert_eq!(
            describe_region(Some(fortran), None),
            format!("the target region in the main program at line 12 (kernel {fortran})")
        );
    }

    #[test]
    fn the_fix_follows_what_was_called_and_where() {
        assert!(fix(Some(("twice", true)), "/a/prog", true).contains("#pragma omp declare target indirect"));
        assert!(fix(Some(("_QPscale", true)), "/a/prog", true).contains("`type(indirect)` variable"));
        assert!(fix(Some(("_ZTV5Shape", false)), "/a/libshapes.so", false)
            .starts_with("libshapes.so was compiled without offloading"));
        assert!(fix(Some(("_ZTV5Shape", false)), "/a/prog", true).contains("configuration file"));
        assert_eq!(vtable_class("_QMshapesEXdtXcircle"), "type `circle`");
    }

    #[test]
    fn a_report_names_the_function_its_object_and_the_region_in_one_line() {
        let check = HostCallCheck::new("register");
        let objects = crate::loaded_objects::loaded_objects();
        let main = objects[0].clone();
        let here = a_report_names_the_function_its_object_and_the_region_in_one_line as usize as u64;
        let line = check.report(&main, here, OnHostCall::Stop);
        assert!(line.starts_with("omptarget-indirect (register) error: "), "{line}");
        assert!(line.contains(omptarget_indirect_abi::host_calls::REPORT_WORDS), "{line}");
        assert!(line.contains("a_report_names_the_function") && line.contains(&main.path), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn a_gpu_holds_the_host_program_and_its_recorded_key_is_reported_once() {
        let check = HostCallCheck::new("register");
        let here = a_gpu_holds_the_host_program_and_its_recorded_key_is_reported_once as usize as u64;
        let gpu = check.gpu_check(0x1000).expect("the check is on unless the environment turns it off");
        assert_eq!((gpu.kind, gpu.record, gpu.ranges, gpu.ask_host), (HostCalls::HOST_RANGES, 0x1000, 0, 0));
        // The executable (this test) is the first object held; a runtime library is not held.
        assert!(gpu.host[0][0] <= here && here < gpu.host[0][1], "{:x?}", gpu.host);
        let libc_function = libc::getpid as usize as u64;
        assert!(!gpu.host.iter().any(|&[start, end]| start <= libc_function && libc_function < end));
        assert!(check.report_recorded(here));
        assert!(!check.report_recorded(here), "a key is reported once");
        assert!(!check.report_recorded(libc_function), "a runtime's function is not the host program's");
    }

    #[test]
    fn a_location_is_read_only_when_clang_gave_a_file() {
        #[repr(C)]
        struct Ident {
            words: [i32; 4],
            psource: *const libc::c_char,
        }
        let with = Ident { words: [0; 4], psource: c";scene.cpp;render;12;3;;".as_ptr() };
        let without = Ident { words: [0; 4], psource: c";unknown;unknown;0;0;;".as_ptr() };
        assert_eq!(source_location(&with as *const Ident as u64), Some("scene.cpp:12".into()));
        assert_eq!(source_location(&without as *const Ident as u64), None);
        assert_eq!(source_location(0), None);
    }
}
