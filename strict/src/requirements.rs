//! Whether the program requires unified shared memory: the `#pragma omp requires` entry clang
//! 18+ puts in the executable's offload entries (flags 0x10, `OMP_REQ_*` in the data word).

use object::{Object, ObjectSection};

const OMP_REGISTER_REQUIRES: u32 = 0x10;
const OMP_REQ_UNIFIED_SHARED_MEMORY: u64 = 0x008;

/// Whether an entry of the executable requires unified shared memory.
pub fn unified_shared_memory() -> bool {
    let Ok(data) = std::fs::read("/proc/self/exe") else { return false };
    let Ok(file) = object::File::parse(&*data) else { return false };
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let half = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    // clang 16-19: 32-byte entries; LLVM 20+: 56-byte entries.
    for (section, size) in [("omp_offloading_entries", 32), ("llvm_offload_entries", 56)] {
        let Some(bytes) = file.section_by_name(section).and_then(|s| s.data().ok()) else { continue };
        for entry in bytes.chunks_exact(size) {
            let (flags, data) = if size == 32 {
                (half(entry, 24), u64::from(half(entry, 28)))
            } else {
                (half(entry, 12), word(entry, 40))
            };
            if flags & OMP_REGISTER_REQUIRES != 0 && data & OMP_REQ_UNIFIED_SHARED_MEMORY != 0 {
                return true;
            }
        }
    }
    false
}
