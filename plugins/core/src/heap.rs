//! The plugins' global allocator: the system's, counting the bytes the plugin's own code holds.
//!
//! A process's allocator statistics (`mallinfo2`) also move with what the dynamic loader keeps
//! of each `dlopen`ed image and with the allocator's own bookkeeping, by kilobytes and not in
//! step with the plugin; this count moves only with the plugin's allocations, so a test can ask
//! that a load/unload cycle leaves it exactly where it was. Two relaxed atomic additions per
//! allocation: the plugins allocate when images load and maps install, never per launch.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// [`System`], counting the bytes of the live allocations it made ([`held_bytes`]).
pub struct CountingAllocator;

static HELD: AtomicUsize = AtomicUsize::new(0);

/// The bytes of the allocations the plugin's code made and has not freed, at their requested
/// sizes.
pub fn held_bytes() -> usize {
    HELD.load(Ordering::Relaxed)
}

// SAFETY: every method forwards to `System` with the caller's own arguments, whose contracts are
// the callers'; the count is a side effect that touches no memory the allocator hands out.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `layout` contract is `System.alloc`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            HELD.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            HELD.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (hence from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; `new_size` is the caller's.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            HELD.fetch_add(new_size, Ordering::Relaxed);
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_follows_allocations_and_frees() {
        let layout = Layout::from_size_align(4096, 8).unwrap();
        let before = held_bytes();
        // SAFETY: a non-zero layout; freed below with the same layout.
        let ptr = unsafe { CountingAllocator.alloc(layout) };
        assert!(!ptr.is_null());
        assert_eq!(held_bytes() - before, 4096);
        // SAFETY: `ptr` is this allocator's, of `layout`.
        let ptr = unsafe { CountingAllocator.realloc(ptr, layout, 8192) };
        assert_eq!(held_bytes() - before, 8192);
        // SAFETY: `ptr` is this allocator's, now of 8192 bytes.
        unsafe { CountingAllocator.dealloc(ptr, Layout::from_size_align(8192, 8).unwrap()) };
        assert_eq!(held_bytes(), before);
    }
}
