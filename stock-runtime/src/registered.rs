//! What the program registered, and what this library registered for it ([`REGISTERED`]):
//! written by the registration ([`crate::registration`]), read by the device tables and the
//! x86_64 table; with the stand-ins of the device library's globals a registration adds
//! ([`Shadows`]).

use std::ffi::{CStr, CString};
use std::sync::Mutex;

use host_table::rtl_interface::{
    TgtBinDesc, TgtDeviceImage, TgtOffloadEntryV1 as EntryV1, OMP_DECLARE_TARGET_INDIRECT,
    OMP_DECLARE_TARGET_INDIRECT_VTABLE,
};
use omptarget_indirect_abi::{c_names, vtable_word, HostCalls};

/// A descriptor the program registered, and what this library registered for it.
pub(crate) struct Registered {
    /// The program's descriptor (the key `__tgt_unregister_lib` is called with).
    pub(crate) original: usize,
    /// The copy registered in its place, when its images define vtable words.
    pub(crate) replacement: Option<Replacement>,
    /// The entries libomptarget got for it in LLVM 20+'s layout (the replacement's, else the
    /// program's; none in the legacy layout): what an x86_64 table pairs ([`crate::x86_64_table`]).
    pub(crate) entries: (*const EntryV1, usize),
    /// Whether it is still registered (until `__tgt_unregister_lib`).
    pub(crate) live: bool,
}

/// A descriptor registered in place of the program's, with everything it points to.
pub(crate) struct Replacement {
    /// The copy of the descriptor.
    pub(crate) desc: Box<TgtBinDesc>,
    /// Its images, entries and entry names, which it points to.
    pub(crate) _images: Box<[TgtDeviceImage]>,
    pub(crate) _entries: Box<[EntryV1]>,
    pub(crate) _names: Vec<CString>,
    /// The host stand-ins of the device library's globals its entries name, when every image
    /// defines them ([`crate::device_table`]).
    pub(crate) shadows: Option<Box<Shadows>>,
}

impl Registered {
    /// Its entries in LLVM 20+'s layout.
    ///
    /// # Safety
    /// Only while [`Registered::live`]: the program's entries are alive until it unregisters them.
    pub(crate) unsafe fn entries(&self) -> &[EntryV1] {
        let (first, count) = self.entries;
        if count == 0 {
            return &[];
        }
        // SAFETY: `count` entries at `first`, the replacement's (owned by self) or the program's
        // (alive while registered: the caller's contract).
        unsafe { std::slice::from_raw_parts(first, count) }
    }

    /// The stand-ins of the device library's globals registered for it, if any.
    pub(crate) fn shadows(&self) -> Option<&Shadows> {
        self.replacement.as_ref()?.shadows.as_deref()
    }
}

/// The host address of each indirect entry of size 8 among `entries` (a function's, or a vtable
/// word's: the bool), what libomptarget pairs with the device address the entry's global holds.
///
/// # Safety
/// Each entry's symbol name must be null or NUL-terminated.
pub(crate) unsafe fn indirect_keys(entries: &[EntryV1]) -> impl Iterator<Item = (u64, bool)> + '_ {
    let functions_and_words = entries
        .iter()
        .filter(|e| e.flags & OMP_DECLARE_TARGET_INDIRECT != 0 && e.size == 8 && !e.symbol_name.is_null())
        .map(|e| {
            // SAFETY: a NUL-terminated name (the function's contract).
            let name = unsafe { std::ffi::CStr::from_ptr(e.symbol_name) };
            (e.address as u64, name.to_str().ok().and_then(vtable_word).is_some())
        });
    // Every word of clang's own vtable entries is a key of the stock table, so it must be one of
    // the installed table too: a word the added entries do not cover maps to itself, and the
    // table is refused rather than installed without it.
    // An entry larger than any vtable yields its first word only, which maps to itself: the
    // table is refused, and a malformed size costs no time.
    let clang_vtable_words = entries
        .iter()
        .filter(|e| e.flags & OMP_DECLARE_TARGET_INDIRECT_VTABLE != 0 && !e.address.is_null())
        .flat_map(|e| {
            let words = if e.size / 8 > MAX_VTABLE_WORDS { 1 } else { e.size / 8 };
            (0..words).map(move |i| ((e.address as u64).wrapping_add(8 * i), true))
        });
    functions_and_words.chain(clang_vtable_words)
}

/// The host words of the vtable words among `entries` (those [`extend`] added), one list per
/// host vtable copy, word 0 first: what the device's map pairs word after word
/// ([`host_table::vtable_slots`]).
///
/// # Safety
/// As [`indirect_keys`].
pub(crate) unsafe fn vtable_copies(entries: &[EntryV1]) -> Vec<Vec<u64>> {
    let mut copies: std::collections::BTreeMap<(&str, u64), Vec<(u64, u64)>> =
        std::collections::BTreeMap::new();
    for e in entries.iter().filter(|e| e.flags & OMP_DECLARE_TARGET_INDIRECT != 0 && e.size == 8) {
        if e.symbol_name.is_null() {
            continue;
        }
        // SAFETY: a NUL-terminated name (the function's contract).
        let Ok(name) = unsafe { std::ffi::CStr::from_ptr(e.symbol_name) }.to_str() else { continue };
        let Some((index, vtable)) = vtable_word(name) else { continue };
        let address = e.address as u64;
        let start = address.wrapping_sub(index.wrapping_mul(8));
        copies.entry((vtable, start)).or_default().push((index, address));
    }
    copies
        .into_values()
        .map(|mut words| {
            words.sort_unstable();
            words.into_iter().map(|(_, address)| address).collect()
        })
        .collect()
}

/// The most words a vtable entry of clang's is taken to have (512 KiB of vtable).
const MAX_VTABLE_WORDS: u64 = 1 << 16;

// SAFETY: the raw pointers point into the boxes the value owns or the program's own constant
// data; nothing is shared with another thread except under REGISTERED's lock.
unsafe impl Send for Registered {}

pub(crate) static REGISTERED: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

/// Host stand-ins of the device library's globals, one set per registered descriptor: their
/// addresses are the host addresses of the entries [`crate::registration::extend`] adds, which
/// libomptarget maps to the globals of each image it loads. Never read or written here (under
/// `requires unified_shared_memory` libomptarget copies them over the globals when it loads an
/// image: all zero, the globals' initial value).
#[repr(C, align(16))]
#[derive(Default)]
pub(crate) struct Shadows {
    map_p: u64,
    map_size: u64,
    index: [u64; 6],
    host_calls: HostCalls,
    /// Whether every image defines the check's global (`__omptarget_indirect_host_calls`), so
    /// that its entry is added: a device library older than the check has none.
    pub(crate) with_host_calls: bool,
}

impl Shadows {
    /// `(symbol, host address, size)` of each table global's stand-in, as the entries name them.
    pub(crate) fn entries(&self) -> [(&'static CStr, u64, u64); 3] {
        [
            (c_names::FPTR_MAP_P, &self.map_p as *const u64 as u64, 8),
            (c_names::FPTR_MAP_SIZE, &self.map_size as *const u64 as u64, 8),
            (c_names::FPTR_INDEX, self.index.as_ptr() as u64, 48),
        ]
    }

    /// The check's global's stand-in, as [`Shadows::entries`], when its entry is added.
    pub(crate) fn host_calls_entry(&self) -> Option<(&'static CStr, u64, u64)> {
        let size = std::mem::size_of::<HostCalls>() as u64;
        self.with_host_calls.then_some((
            c_names::HOST_CALLS,
            &self.host_calls as *const HostCalls as u64,
            size,
        ))
    }
}
