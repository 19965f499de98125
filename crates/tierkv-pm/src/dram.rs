//! DRAM primitives of the engine that need `unsafe`, kept in this crate (the workspace's only
//! one allowed `unsafe`) but apart from its PM modules: nothing here is persistent.
//!
//! [`AtomicWords`]: zeroed anonymous memory viewed as a slice of atomic words, the DRAM arena of
//! the engine's memtable. [`prefetch`]: a cache-line prefetch hint.
//!
//! The engine cannot build such a slice itself without `unsafe` (a zeroed heap allocation of
//! `AtomicU64` through the global allocator works, but allocators such as mimalloc then zero
//! the pages a second time with `memset`, and the pages get no huge-page advice). An anonymous
//! mapping comes zeroed from the kernel, is faulted in on first touch, and is advised for
//! transparent huge pages: a memtable's skiplist hops between random nodes, and with 4 KiB
//! pages most hops miss the TLB, which under virtualization costs a two-dimensional page walk.

use memmap2::{MmapMut, MmapOptions};
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

/// Regions at least this large are advised for transparent huge pages.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// A fixed-size, zero-initialised array of `AtomicU64` in its own anonymous mapping.
pub struct AtomicWords {
    /// Start of the mapping, taken once at creation; the mapping is never accessed through
    /// `map` again (no `&[u8]` to it ever exists while atomics may change it).
    ptr: NonNull<AtomicU64>,
    len: usize,
    /// Owns the mapping; unmapped on drop. `None` for an empty array.
    _map: Option<MmapMut>,
}

// SAFETY: the struct owns its mapping (like `MmapMut`, which is `Send`); `ptr` points into it
// and stays valid wherever the struct moves, since moving it does not move the mapping.
unsafe impl Send for AtomicWords {}
// SAFETY: the only access to the memory is through `&[AtomicU64]`, whose operations are
// atomic and therefore free of data races between threads.
unsafe impl Sync for AtomicWords {}

impl AtomicWords {
    /// `words` zeroed words. Fails when the address space cannot be mapped.
    pub fn zeroed(words: usize) -> std::io::Result<Self> {
        let bytes = words.checked_mul(8).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "word count overflows")
        })?;
        if bytes == 0 {
            return Ok(AtomicWords::default());
        }
        let map = MmapOptions::new().len(bytes).map_anon()?;
        #[cfg(target_os = "linux")]
        if bytes >= HUGE_PAGE_BYTES {
            // Advice only: without transparent huge pages the region keeps 4 KiB pages.
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        let ptr = NonNull::new(map.as_ptr() as *mut AtomicU64)
            .ok_or_else(|| std::io::Error::other("anonymous mapping returned a null address"))?;
        Ok(AtomicWords {
            ptr,
            len: words,
            _map: Some(map),
        })
    }

    /// The words.
    #[inline]
    pub fn as_slice(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is the page-aligned (so 8-aligned) start of a live anonymous mapping of
        // `len * 8` bytes owned by `self` (or dangling with `len == 0`); the kernel zeroed it,
        // and all zero bits is a valid `AtomicU64`, which has the size and alignment of `u64`.
        // The mapping lives as long as `self`, which bounds the returned lifetime, and no
        // non-atomic reference to it is ever created, so concurrent use through this slice is
        // race-free.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty array.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Hints the CPU to bring the cache line holding `word` into the cache (no effect on other
/// targets). Used to overlap the cache miss of the next entry of a scan with work on the current.
#[inline(always)]
pub fn prefetch(word: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` only hints the cache; it never faults and changes no memory or
    // architectural state, and the address comes from a live reference anyway. SSE is part of
    // the x86_64 baseline, so the target feature is always present.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (word as *const AtomicU64).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = word;
}

impl Default for AtomicWords {
    /// The empty array (no mapping).
    fn default() -> Self {
        AtomicWords {
            ptr: NonNull::dangling(),
            len: 0,
            _map: None,
        }
    }
}

impl std::fmt::Debug for AtomicWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicWords")
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn words_start_zeroed_and_keep_what_is_stored() {
        for n in [0usize, 1, 511, 512, 300_000] {
            let w = AtomicWords::zeroed(n).unwrap();
            assert_eq!((w.len(), w.is_empty()), (n, n == 0));
            let s = w.as_slice();
            assert!(s.iter().all(|x| x.load(Relaxed) == 0));
            for (i, x) in s.iter().enumerate().step_by(97) {
                x.store(i as u64 ^ 0xdead_beef, Relaxed);
            }
            // A prefetch is only a hint: it leaves every word as it was.
            s.iter().for_each(prefetch);
            for (i, x) in s.iter().enumerate() {
                let want = if i % 97 == 0 {
                    i as u64 ^ 0xdead_beef
                } else {
                    0
                };
                assert_eq!(x.load(Relaxed), want);
            }
        }
    }

    #[test]
    fn words_are_shared_between_threads() {
        let w = std::sync::Arc::new(AtomicWords::zeroed(1024).unwrap());
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let w = w.clone();
                std::thread::spawn(move || {
                    for x in w.as_slice().iter().skip(t).step_by(4) {
                        x.fetch_add(t as u64 + 1, Relaxed);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        for (i, x) in w.as_slice().iter().enumerate() {
            assert_eq!(x.load(Relaxed), (i % 4) as u64 + 1);
        }
    }

    #[test]
    fn an_impossible_size_is_an_error() {
        assert!(AtomicWords::zeroed(usize::MAX).is_err());
        assert!(AtomicWords::zeroed(usize::MAX / 8).is_err());
    }
}
