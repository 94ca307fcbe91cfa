//! A global allocator for the bindings (feature `mimalloc`; the core itself does not set one).
//!
//! Small allocations (job data, futures, channel nodes: made on the tokio thread and freed on the
//! Python or JS thread, and the other way round) go to mimalloc, which frees to the owning
//! thread's page without a lock; glibc malloc handles that cross-thread traffic poorly (arena
//! locks, `malloc_consolidate`: a fifth of the tokio thread's time in the Node job bench). Large
//! blocks (bulk-enqueue buffers, big replies) stay with the system allocator, whose `realloc` of a
//! large block is an `mremap` rather than a copy, and which does not return and re-fault them
//! between calls (all-mimalloc made a cold 20 000-job `enqueueMany` up to 40 % slower). A block's
//! layout is handed back on free and realloc, so its size says which allocator owns it.
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: tideq::alloc::Split = tideq::alloc::Split;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};

use mimalloc::MiMalloc;

/// Blocks of this size and up go to the system allocator.
const LARGE: usize = 64 * 1024;

/// The allocator: `#[global_allocator] static GLOBAL: Split = Split;`.
pub struct Split;

fn small(layout: &Layout) -> bool {
    layout.size() < LARGE
}

unsafe impl GlobalAlloc for Split {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if small(&layout) {
            unsafe { MiMalloc.alloc(layout) }
        } else {
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if small(&layout) {
            unsafe { MiMalloc.alloc_zeroed(layout) }
        } else {
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if small(&layout) {
            unsafe { MiMalloc.dealloc(ptr, layout) }
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let was_small = small(&layout);
        if was_small == (new_size < LARGE) {
            return if was_small {
                unsafe { MiMalloc.realloc(ptr, layout, new_size) }
            } else {
                unsafe { System.realloc(ptr, layout, new_size) }
            };
        }
        // Crossing the threshold: move the block to the other allocator.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocates through `Split` (not the test binary's allocator).
    unsafe fn grow(ptr: *mut u8, from: usize, to: usize) -> *mut u8 {
        let layout = Layout::from_size_align(from, 8).unwrap();
        unsafe { Split.realloc(ptr, layout, to) }
    }

    #[test]
    fn a_block_keeps_its_bytes_when_realloc_moves_it_between_the_allocators() {
        unsafe {
            let small = Layout::from_size_align(1000, 8).unwrap();
            let p = Split.alloc(small);
            assert!(!p.is_null());
            for i in 0..1000 {
                *p.add(i) = (i % 251) as u8;
            }
            // small -> large (mimalloc -> system), large -> larger (system), large -> small.
            let p = grow(p, 1000, LARGE * 3);
            let p = grow(p, LARGE * 3, LARGE * 8);
            let p = grow(p, LARGE * 8, 500);
            for i in 0..500 {
                assert_eq!(*p.add(i), (i % 251) as u8, "byte {i}");
            }
            Split.dealloc(p, Layout::from_size_align(500, 8).unwrap());
            let z = Split.alloc_zeroed(Layout::from_size_align(LARGE * 2, 64).unwrap());
            assert!((0..LARGE * 2).all(|i| *z.add(i) == 0));
            assert_eq!(z as usize % 64, 0, "alignment kept");
            Split.dealloc(z, Layout::from_size_align(LARGE * 2, 64).unwrap());
        }
    }
}
