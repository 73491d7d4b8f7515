//! The registration library's reading of a program's descriptor (`libomptarget-indirect-register.so`,
//! which runs before `main` in every program of a stock release, clang 21 and later): images of any bytes sharing LLVM 20+
//! entries of any fields, their names from a fixed list (the library's own globals, vtable words,
//! indirect functions, clang's vtable entries, requirements, garbage, null). An answer or an
//! error, never a panic.
#![no_main]

use std::ffi::{c_char, c_void, CStr};

use libfuzzer_sys::fuzz_target;
use host_table::rtl_interface::TgtOffloadEntryV1;

/// The names an entry may have.
const NAMES: [&CStr; 9] = [
    c"__omp_offloading_fptr_map_p",
    c"__omp_offloading_fptr_map_size",
    c"__omp_offloading_fptr_index",
    c"__omptarget_indirect_vtable_1__ZTV1A",
    c"__omp_offloading_indirect__Z1fv",
    c"__omp_offloading_requires",
    c"__omp_offloading_fe00_1_main_l7",
    c"",
    c"\xff\xfe not utf-8",
];

/// Bytes of one entry in the input.
const ENTRY_BYTES: usize = 32;

fuzz_target!(|data: &[u8]| {
    let [images, entries, rest @ ..] = data else { return };
    let (images, entries) = (usize::from(*images % 4), usize::from(*entries % 16));
    let Some((table, rest)) = rest.split_at_checked(entries * ENTRY_BYTES) else { return };
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mut parsed: Vec<TgtOffloadEntryV1> = table
        .chunks_exact(ENTRY_BYTES)
        .map(|e| {
            let name = usize::from(e[31]);
            TgtOffloadEntryV1 {
                reserved: u64::from(e[0] & 1),
                version: u16::from(e[1] & 3),
                kind: u16::from(e[2] & 3),
                flags: u32::from_le_bytes(e[3..7].try_into().unwrap()),
                address: u64_at(e, 7) as *mut c_void,
                symbol_name: NAMES.get(name % 10).map_or(std::ptr::null(), |n| n.as_ptr() as *const c_char),
                // Mostly small multiples of 8, sometimes any 64-bit size.
                size: if e[16] & 0x80 != 0 { u64_at(e, 23) } else { u64::from(e[15]) * 8 + u64::from(e[16] & 7) },
                data: u64_at(e, 17),
                aux_addr: std::ptr::null_mut(),
            }
        })
        .collect();
    let share = if images == 0 { 0 } else { rest.len() / images };
    let image_bytes: Vec<&[u8]> = (0..images).map(|i| &rest[i * share..(i + 1) * share]).collect();
    let _ = omptarget_indirect_register::read_descriptor_for_fuzzing(&image_bytes, &mut parsed);
});
