//! Vtable slots that name another object's function: each paired with the device copy that
//! object's own image defines (`docs/virtual.md`, "Slots across images").
//!
//! The map pairs every word of a host vtable with the same word of a device copy of that vtable,
//! and device code reads the slots from the device copy. A class of the program derived from a
//! shared library's class (`struct Square : Rect`, with `Rect::area` out of line in the library)
//! has its vtable in the program's image alone, and there the slot of `area` holds what the
//! program's device link found for it: a weak definition that traps, since only the library's
//! image defines `Rect::area` (device images are linked apart). The host's slot holds the host's
//! `Rect::area`, in the library; the library's image has its device copy, in the slots of its
//! own vtables that hold `Rect::area` on the host.
//!
//! So, when the map is built for a device: a slot whose host function lies in another host object
//! than the vtable, one that registered an image on the device, takes the device function that
//! object's image pairs with it (a word of one of its own vtables, or one of its indirect
//! functions). A vtable with such a slot gets a copy in device memory with those slots replaced,
//! and the map pairs its host words with the copy's instead of the image's. Everything else of the
//! vtable (offsets, RTTI, the other slots) is the image's own. Device-built objects keep the
//! image's vtable. Only vtables with slots into another object with an image are read from the
//! device: a program without such libraries reads nothing.

use std::collections::{HashMap, HashSet};

use crate::rtl_interface::FptrMapEntry;
use crate::switches::{switch_from_env, SLOT_COPIES_ENV};
use crate::vtables::HostObjects;

/// One copy of a host vtable as the device's map pairs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedVtable {
    /// `(host address, device address)` of each of its words, word 0 first.
    pub words: Vec<(u64, u64)>,
    /// The host object (its position in [`HostObjects`]) that registered the image whose device
    /// copy the words pair with, if known.
    pub registered_by: Option<usize>,
}

/// What the host program looks like to [`retarget`]: which object an address lies in, and what a
/// word of it holds.
pub trait HostView {
    /// The object holding `address`.
    fn object_of(&self, address: u64) -> Option<usize>;
    /// The word at `address`, if it lies in a loaded object.
    fn word(&self, address: u64) -> Option<u64>;
}

impl HostView for HostObjects {
    fn object_of(&self, address: u64) -> Option<usize> {
        HostObjects::object_of(self, address)
    }
    fn word(&self, address: u64) -> Option<u64> {
        HostObjects::word(self, address)
    }
}

/// A vtable of [`retarget`]'s input that needs a device copy of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retargeted {
    /// Its position in the input.
    pub vtable: usize,
    /// The copy's words.
    pub contents: Vec<u64>,
    /// How many of them differ from the image's.
    pub slots: usize,
}

/// Which of `vtables` need a device copy of their own, and with what (module documentation);
/// none with [`SLOT_COPIES_ENV`] off. `functions` are the indirect functions of the device's
/// images: `(host, device, registered by)`. `read(device address, words)` reads device memory; a
/// vtable it cannot read is left as it is.
pub fn retarget(
    vtables: &[PairedVtable],
    functions: &[(u64, u64, Option<usize>)],
    host: &impl HostView,
    read: impl FnMut(u64, usize) -> Option<Vec<u64>>,
) -> Vec<Retargeted> {
    if !switch_from_env(SLOT_COPIES_ENV) {
        return Vec::new();
    }
    retarget_always(vtables, functions, host, read)
}

/// [`retarget`], whatever the environment says.
fn retarget_always(
    vtables: &[PairedVtable],
    functions: &[(u64, u64, Option<usize>)],
    host: &impl HostView,
    mut read: impl FnMut(u64, usize) -> Option<Vec<u64>>,
) -> Vec<Retargeted> {
    let with_images: HashSet<usize> =
        vtables.iter().filter_map(|v| v.registered_by).chain(functions.iter().filter_map(|f| f.2)).collect();
    // What each vtable holds on the host, and where it is; none for one the map does not pair
    // word after word (the copy would have holes).
    let seen: Vec<Option<(Vec<u64>, Option<usize>)>> = vtables
        .iter()
        .map(|v| {
            let consecutive = v
                .words
                .windows(2)
                .all(|w| w[1].0 == w[0].0.wrapping_add(8) && w[1].1 == w[0].1.wrapping_add(8));
            if v.words.is_empty() || !consecutive {
                return None;
            }
            let contents = v.words.iter().map(|&(h, _)| host.word(h)).collect::<Option<Vec<u64>>>()?;
            Some((contents, host.object_of(v.words[0].0)))
        })
        .collect();
    // A slot into another object that has an image on the device.
    let elsewhere = |content: u64, own: Option<usize>| {
        host.object_of(content).is_some_and(|object| Some(object) != own && with_images.contains(&object))
    };
    let needed: HashSet<u64> = seen
        .iter()
        .flatten()
        .flat_map(|(contents, own)| contents.iter().copied().filter(|&c| elsewhere(c, *own)))
        .collect();
    if needed.is_empty() {
        return Vec::new();
    }
    // Each needed function's device copy, from its own object's image.
    let mut owned: HashMap<u64, u64> = HashMap::new();
    for &(host_fn, device_fn, registered_by) in functions {
        if needed.contains(&host_fn) && registered_by.is_some() && host.object_of(host_fn) == registered_by {
            owned.entry(host_fn).or_insert(device_fn);
        }
    }
    let mut device_contents: HashMap<usize, Vec<u64>> = HashMap::new();
    for (at, (v, seen)) in vtables.iter().zip(&seen).enumerate() {
        let Some((contents, own)) = seen else { continue };
        if own.is_none() || *own != v.registered_by {
            continue;
        }
        let provides = |c: &u64, owned: &HashMap<u64, u64>| {
            needed.contains(c) && !owned.contains_key(c) && host.object_of(*c) == *own
        };
        if !contents.iter().any(|c| provides(c, &owned)) {
            continue;
        }
        let Some(device) = read(v.words[0].1, v.words.len()).filter(|d| d.len() == contents.len()) else {
            continue;
        };
        for (c, d) in contents.iter().zip(&device) {
            if provides(c, &owned) {
                owned.insert(*c, *d);
            }
        }
        device_contents.insert(at, device);
    }
    let mut retargeted = Vec::new();
    for (at, (v, seen)) in vtables.iter().zip(&seen).enumerate() {
        let Some((contents, own)) = seen else { continue };
        let wanted = |k: usize| Some(contents[k]).filter(|&c| elsewhere(c, *own)).and_then(|c| owned.get(&c));
        if !(0..contents.len()).any(|k| wanted(k).is_some()) {
            continue;
        }
        let device = match device_contents.get(&at) {
            Some(device) => device.clone(),
            None => match read(v.words[0].1, v.words.len()).filter(|d| d.len() == contents.len()) {
                Some(device) => device,
                None => continue,
            },
        };
        let mut copy = device.clone();
        for (k, word) in copy.iter_mut().enumerate() {
            if let Some(&to) = wanted(k) {
                *word = to;
            }
        }
        let slots = copy.iter().zip(&device).filter(|(a, b)| a != b).count();
        if slots > 0 {
            retargeted.push(Retargeted { vtable: at, contents: copy, slots });
        }
    }
    retargeted
}

/// The copies of `retargeted` laid out one after the other from device address `base`: their
/// bytes, and the map's pairs of the vtables' host words with the copies' words.
pub fn lay_out(
    vtables: &[PairedVtable],
    retargeted: &[Retargeted],
    base: u64,
) -> (Vec<u8>, Vec<FptrMapEntry>) {
    let mut bytes = Vec::new();
    let mut pairs = Vec::new();
    for r in retargeted {
        let start = base + bytes.len() as u64;
        for (k, &(host_word, _)) in vtables[r.vtable].words.iter().enumerate() {
            pairs.push(FptrMapEntry { host_ptr: host_word, tgt_ptr: start + 8 * k as u64 });
        }
        bytes.extend(r.contents.iter().flat_map(|w| w.to_le_bytes()));
    }
    (bytes, pairs)
}

/// How many slots of `retargeted` differ from their images'.
pub fn slots_changed(retargeted: &[Retargeted]) -> usize {
    retargeted.iter().map(|r| r.slots).sum()
}

/// Device memory read back as the little-endian words a vtable is made of.
pub fn words_of(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
        .collect()
}

/// The bytes [`lay_out`] will need for `retargeted`.
pub fn copies_size(retargeted: &[Retargeted]) -> usize {
    retargeted.iter().map(|r| 8 * r.contents.len()).sum()
}

/// `pairs` with every key of `replacements` paired as they say.
pub fn replace_pairs(pairs: &mut [FptrMapEntry], replacements: &[FptrMapEntry]) {
    let by_host: HashMap<u64, u64> = replacements.iter().map(|p| (p.host_ptr, p.tgt_ptr)).collect();
    for pair in pairs {
        if let Some(&to) = by_host.get(&pair.host_ptr) {
            pair.tgt_ptr = to;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Objects 0 (the program, 0x1000..0x2000) and 1 (a library, 0x5000..0x6000); host memory
    /// as a map of words.
    struct FakeHost(HashMap<u64, u64>);

    impl HostView for FakeHost {
        fn object_of(&self, address: u64) -> Option<usize> {
            match address {
                0x1000..0x2000 => Some(0),
                0x5000..0x6000 => Some(1),
                0x9000..0xa000 => Some(2),
                _ => None,
            }
        }
        fn word(&self, address: u64) -> Option<u64> {
            self.0.get(&address).copied()
        }
    }

    fn vtable(host: u64, device: u64, words: usize, registered_by: usize) -> PairedVtable {
        PairedVtable {
            words: (0..words as u64).map(|k| (host + 8 * k, device + 8 * k)).collect(),
            registered_by: Some(registered_by),
        }
    }

    /// The program's Square (host 0x1100: offset, RTTI, area = the library's 0x5800, name = the
    /// program's 0x1800) and the library's Rect (host 0x5100: offset, RTTI, area 0x5800, name
    /// 0x5900); device memory: the program's image's Square at 0xd100 holds a trap (0xdead) for
    /// area, the library's image's Rect at 0xe100 the library's device area 0xe800.
    fn square_over_rect() -> (Vec<PairedVtable>, FakeHost, HashMap<u64, u64>) {
        let host = FakeHost(HashMap::from([
            (0x1100, 0),
            (0x1108, 0x1f00),
            (0x1110, 0x5800),
            (0x1118, 0x1800),
            (0x5100, 0),
            (0x5108, 0x5f00),
            (0x5110, 0x5800),
            (0x5118, 0x5900),
        ]));
        let device = HashMap::from([
            (0xd100, 0),
            (0xd108, 0xdf00),
            (0xd110, 0xdead),
            (0xd118, 0xd800),
            (0xe100, 0),
            (0xe108, 0xef00),
            (0xe110, 0xe800),
            (0xe118, 0xe900),
        ]);
        (vec![vtable(0x1100, 0xd100, 4, 0), vtable(0x5100, 0xe100, 4, 1)], host, device)
    }

    fn reader<'a>(
        device: &HashMap<u64, u64>,
        reads: &'a mut Vec<u64>,
    ) -> impl FnMut(u64, usize) -> Option<Vec<u64>> + 'a {
        let device = device.clone();
        move |at, words| {
            reads.push(at);
            (0..words as u64).map(|k| device.get(&(at + 8 * k)).copied()).collect()
        }
    }

    #[test]
    fn a_slot_into_a_library_takes_the_library_images_function() {
        let (vtables, host, device) = square_over_rect();
        let mut reads = Vec::new();
        let found = retarget_always(&vtables, &[], &host, reader(&device, &mut reads));
        assert_eq!(found, [Retargeted { vtable: 0, contents: vec![0, 0xdf00, 0xe800, 0xd800], slots: 1 }]);
        let (bytes, pairs) = lay_out(&vtables, &found, 0x7000);
        assert_eq!(bytes.len(), copies_size(&found));
        assert_eq!(&bytes[16..24], &0xe800u64.to_le_bytes());
        assert_eq!(
            pairs.iter().map(|p| (p.host_ptr, p.tgt_ptr)).collect::<Vec<_>>(),
            [(0x1100, 0x7000), (0x1108, 0x7008), (0x1110, 0x7010), (0x1118, 0x7018)]
        );
        let mut map = vec![
            FptrMapEntry { host_ptr: 0x1110, tgt_ptr: 0xd110 },
            FptrMapEntry { host_ptr: 0x5110, tgt_ptr: 0xe110 },
        ];
        replace_pairs(&mut map, &pairs);
        assert_eq!((map[0].tgt_ptr, map[1].tgt_ptr), (0x7010, 0xe110));
    }

    #[test]
    fn nothing_is_read_without_slots_into_another_image() {
        let (mut vtables, host, device) = square_over_rect();
        // The library registered no image: its functions have no device copy to take.
        vtables.truncate(1);
        vtables[0].registered_by = Some(0);
        let mut reads = Vec::new();
        assert!(retarget_always(&vtables, &[], &host, reader(&device, &mut reads)).is_empty());
        assert!(reads.is_empty(), "{reads:x?}");
    }

    #[test]
    fn an_image_that_already_holds_the_owners_function_is_left_alone() {
        let (vtables, host, mut device) = square_over_rect();
        device.insert(0xd110, 0xe800);
        let mut reads = Vec::new();
        assert!(retarget_always(&vtables, &[], &host, reader(&device, &mut reads)).is_empty());
    }

    #[test]
    fn an_indirect_function_of_the_owner_is_its_device_copy_too() {
        let (mut vtables, host, device) = square_over_rect();
        vtables.truncate(1);
        let functions = [(0x5800, 0xe800, Some(1))];
        let mut reads = Vec::new();
        let found = retarget_always(&vtables, &functions, &host, reader(&device, &mut reads));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].contents[2], 0xe800);
        assert_eq!(reads, [0xd100], "only the vtable to copy is read");
    }

    #[test]
    fn a_vtable_of_another_object_than_its_image_provides_nothing() {
        // The library's Rect paired with the program's image (registered by object 0): its
        // words are no device copy of the library's own.
        let (mut vtables, host, device) = square_over_rect();
        vtables[1].registered_by = Some(0);
        vtables.push(PairedVtable { words: vec![], registered_by: Some(1) });
        let mut reads = Vec::new();
        assert!(retarget_always(&vtables, &[], &host, reader(&device, &mut reads)).is_empty());
    }

    #[test]
    fn unreadable_or_broken_vtables_are_left_as_they_are() {
        let (mut vtables, host, device) = square_over_rect();
        vtables[0].words.swap(1, 2);
        let mut reads = Vec::new();
        assert!(retarget_always(&vtables, &[], &host, reader(&device, &mut reads)).is_empty());
        let (vtables, host, _) = square_over_rect();
        assert!(retarget_always(&vtables, &[], &host, |_, _| None).is_empty());
    }
}
