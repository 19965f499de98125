//! The volatile chunk allocator.
//!
//! **Purpose.** Hands out the pool's chunks (chunk 0 holds the header and is never handed out)
//! from a DRAM free list. Chunks are coarse (megabytes): logs, runs and trees allocate small
//! objects inside them themselves.
//!
//! **Thread safety.** One `parking_lot::Mutex` around the free list and the in-use bitmap;
//! allocation and free are O(1), rebuild O(chunks).
//!
//! **Durability.** None, on purpose: the allocator's state lives only in DRAM. After `open`
//! every chunk is free until `rebuild_allocator(live)` is called with exactly the chunks the
//! pool's recovered (published) structures reference, those of every owner together. A chunk
//! that was allocated but whose use was not yet published when the process crashed is
//! therefore free again after recovery: nothing leaks, and nothing allocated but unpublished
//! stays allocated.

use crate::options::{PmError, PmResult};
use parking_lot::Mutex;

struct State {
    /// Free chunk indices that are not backed (never handed out, or released); `pop` yields the
    /// next one to hand out once `free_backed` is empty.
    free: Vec<u64>,
    /// Free chunk indices that are backed (handed out before and not released): handed out
    /// first, so that a reused chunk costs no `fallocate` and no page faults.
    free_backed: Vec<u64>,
    /// In-use flag per chunk index (index 0, the header chunk, is always `true`).
    used: Vec<bool>,
    /// Chunks in use, the header chunk excluded.
    live: u64,
    /// Per chunk index: handed out since this allocator was made, and not released since (kept
    /// across `rebuild`; see [`ChunkAllocator::free_with`]).
    handed_out: Vec<bool>,
    /// [`ChunkAllocator::free_with`] keeps a freed chunk backed, without releasing it, while
    /// fewer than this many free chunks are backed.
    keep_backed: u64,
}

/// A chunk handed out by [`ChunkAllocator::allocate_tracked`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Allocated {
    /// Offset of the chunk.
    pub offset: u64,
    /// The chunk was never handed out before by this allocator, or was released when it was
    /// last freed: it is not backed, and (in a pool this process created) reads as zeros.
    pub first_use: bool,
}

pub(crate) struct ChunkAllocator {
    chunk_size: u64,
    chunks: u64,
    state: Mutex<State>,
}

impl ChunkAllocator {
    /// All chunks but chunk 0 free.
    pub fn new(size: u64, chunk_size: u64) -> Self {
        let chunks = size / chunk_size;
        let a = ChunkAllocator {
            chunk_size,
            chunks,
            state: Mutex::new(State {
                free: Vec::new(),
                free_backed: Vec::new(),
                used: Vec::new(),
                live: 0,
                handed_out: vec![false; chunks as usize],
                keep_backed: 0,
            }),
        };
        a.reset(&[]);
        a
    }

    fn reset(&self, live_idx: &[u64]) {
        let mut used = vec![false; self.chunks as usize];
        used[0] = true;
        for &i in live_idx {
            used[i as usize] = true;
        }
        // Descending, so that `pop` hands out the lowest offset first.
        let free: Vec<u64> = (1..self.chunks)
            .rev()
            .filter(|&i| !used[i as usize])
            .collect();
        let mut st = self.state.lock();
        st.live = live_idx.len() as u64;
        st.used = used;
        let (backed, unbacked): (Vec<u64>, Vec<u64>) =
            free.into_iter().partition(|&i| st.handed_out[i as usize]);
        st.free = unbacked;
        st.free_backed = backed;
        // Live chunks were written by their owner, whether or not this allocator handed them out.
        for &i in live_idx {
            st.handed_out[i as usize] = true;
        }
    }

    /// Up to `chunks` freed chunks stay backed, unreleased, for the next allocations (see
    /// [`ChunkAllocator::free_with`]).
    pub fn set_keep_backed(&self, chunks: u64) {
        self.state.lock().keep_backed = chunks;
    }

    /// How many freed chunks may stay backed ([`ChunkAllocator::set_keep_backed`]).
    #[cfg(test)]
    pub fn keep_backed(&self) -> u64 {
        self.state.lock().keep_backed
    }

    /// Free chunks that are backed (their blocks kept).
    #[cfg(test)]
    pub fn backed_free_chunks(&self) -> u64 {
        self.state.lock().free_backed.len() as u64
    }

    /// Chunk index of `offset`, or `InvalidArgument`.
    fn index_of(&self, offset: u64, what: &str) -> PmResult<u64> {
        if !offset.is_multiple_of(self.chunk_size) {
            return Err(PmError::InvalidArgument(format!(
                "{what}: offset {offset} is not aligned to the chunk size {}",
                self.chunk_size
            )));
        }
        let idx = offset / self.chunk_size;
        if idx == 0 {
            return Err(PmError::InvalidArgument(format!(
                "{what}: offset 0 is the header chunk, which is never allocated"
            )));
        }
        if idx >= self.chunks {
            return Err(PmError::InvalidArgument(format!(
                "{what}: offset {offset} is beyond the pool ({} chunks of {} bytes)",
                self.chunks, self.chunk_size
            )));
        }
        Ok(idx)
    }

    #[cfg(test)]
    pub fn allocate(&self) -> PmResult<u64> {
        self.allocate_tracked().map(|a| a.offset)
    }

    /// Allocates a chunk and says whether it is handed out for the first time.
    pub fn allocate_tracked(&self) -> PmResult<Allocated> {
        let mut st = self.state.lock();
        match st.free_backed.pop().or_else(|| st.free.pop()) {
            Some(i) => {
                debug_assert!(!st.used[i as usize]);
                st.used[i as usize] = true;
                st.live += 1;
                let first_use = !std::mem::replace(&mut st.handed_out[i as usize], true);
                Ok(Allocated {
                    offset: i * self.chunk_size,
                    first_use,
                })
            }
            None => Err(PmError::NoSpace(format!(
                "all {} chunks of {} bytes are allocated",
                self.chunks - 1,
                self.chunk_size
            ))),
        }
    }

    pub fn free(&self, offset: u64) -> PmResult<()> {
        self.free_with(offset, |_| false)
    }

    /// Takes back a chunk that [`ChunkAllocator::allocate_tracked`] just handed out for the
    /// first time but that the caller could not use (its file-system blocks could not be
    /// allocated): it is free again and its next allocation is again a first use. Both happen
    /// under one lock, so no other thread can get the chunk as a non-first use in between.
    pub fn free_unused_first(&self, a: Allocated) -> PmResult<()> {
        debug_assert!(a.first_use);
        self.free_inner(a.offset, false, |_| true)
    }

    /// Frees the chunk at `offset`, calling `release` on its offset first, while the chunk is
    /// neither in use nor on the free list (no other thread can be handed it, and a second
    /// free of it fails). `release` returns whether the chunk is unbacked again (its
    /// file-system blocks given back, or never obtained): then its next allocation is a first
    /// use, which backs it again. Making it free and marking it happen under one lock.
    ///
    /// While fewer free chunks are backed than [`ChunkAllocator::set_keep_backed`] says, the
    /// chunk is kept backed instead, without calling `release`: the free list hands out the
    /// chunk freed last first, so a design that frees and allocates chunks in turn reuses
    /// backed ones and releases only what its churn leaves free beyond that reserve.
    pub fn free_with(&self, offset: u64, release: impl FnOnce(u64) -> bool) -> PmResult<()> {
        self.free_inner(offset, true, release)
    }

    fn free_inner(
        &self,
        offset: u64,
        may_keep: bool,
        release: impl FnOnce(u64) -> bool,
    ) -> PmResult<()> {
        let idx = self.index_of(offset, "free_chunk")? as usize;
        {
            let mut st = self.state.lock();
            if !st.used[idx] {
                return Err(PmError::InvalidArgument(format!(
                    "free_chunk: chunk at offset {offset} is not allocated (double free?)"
                )));
            }
            st.used[idx] = false;
            st.live -= 1;
            if may_keep && (st.free_backed.len() as u64) < st.keep_backed {
                st.free_backed.push(idx as u64);
                return Ok(());
            }
        }
        let unbacked = release(offset);
        let mut st = self.state.lock();
        if unbacked {
            st.handed_out[idx] = false;
            st.free.push(idx as u64);
        } else {
            st.free_backed.push(idx as u64);
        }
        Ok(())
    }

    pub fn rebuild(&self, live: &[u64]) -> PmResult<()> {
        let mut idx = Vec::with_capacity(live.len());
        for &off in live {
            idx.push(self.index_of(off, "rebuild_allocator")?);
        }
        idx.sort_unstable();
        if let Some(w) = idx.windows(2).find(|w| w[0] == w[1]) {
            return Err(PmError::InvalidArgument(format!(
                "rebuild_allocator: chunk at offset {} is listed twice",
                w[0] * self.chunk_size
            )));
        }
        self.reset(&idx);
        Ok(())
    }

    /// The free chunks as runs of adjacent chunks: `(offset, bytes)`, by offset.
    pub fn free_runs(&self) -> Vec<(u64, u64)> {
        let st = self.state.lock();
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for i in (1..self.chunks).filter(|&i| !st.used[i as usize]) {
            let off = i * self.chunk_size;
            match runs.last_mut() {
                Some((start, len)) if *start + *len == off => *len += self.chunk_size,
                _ => runs.push((off, self.chunk_size)),
            }
        }
        runs
    }

    /// Chunks in use (the header chunk excluded).
    pub fn live_chunks(&self) -> u64 {
        self.state.lock().live
    }

    /// Chunks that can be allocated now.
    pub fn free_chunks(&self) -> u64 {
        let st = self.state.lock();
        (st.free.len() + st.free_backed.len()) as u64
    }

    /// Total chunks, the header chunk included.
    pub fn chunk_count(&self) -> u64 {
        self.chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_lowest_first_and_never_chunk_zero() {
        let a = ChunkAllocator::new(4 * 4096, 4096);
        assert_eq!(a.allocate().unwrap(), 4096);
        assert_eq!(a.allocate().unwrap(), 8192);
        assert_eq!(a.allocate().unwrap(), 12288);
        assert!(matches!(a.allocate(), Err(PmError::NoSpace(_))));
        assert_eq!(a.live_chunks(), 3);
        a.free(8192).unwrap();
        assert!(a.free(8192).is_err());
        assert!(a.free(0).is_err());
        assert!(a.free(100).is_err());
        assert!(a.free(4 * 4096).is_err());
        assert_eq!(a.allocate().unwrap(), 8192);
    }

    #[test]
    fn first_use_is_reported_once_per_chunk_across_frees_and_rebuilds() {
        let a = ChunkAllocator::new(4 * 4096, 4096);
        let x = a.allocate_tracked().unwrap();
        assert_eq!((x.offset, x.first_use), (4096, true));
        a.free(4096).unwrap();
        assert_eq!(
            a.allocate_tracked().unwrap(),
            Allocated {
                offset: 4096,
                first_use: false
            }
        );
        assert!(a.allocate_tracked().unwrap().first_use, "8192 is new");
        assert_eq!(a.free_runs(), [(12288, 4096)]);
        a.free(4096).unwrap();
        assert_eq!(a.free_runs(), [(4096, 4096), (12288, 4096)]);
        a.free(8192).unwrap();
        assert_eq!(a.free_runs(), [(4096, 3 * 4096)]);
        a.rebuild(&[]).unwrap();
        let again: Vec<bool> = (0..3)
            .map(|_| a.allocate_tracked().unwrap().first_use)
            .collect();
        assert_eq!(again, [false, false, true], "rebuild keeps the history");
    }

    #[test]
    fn a_reserve_of_freed_chunks_stays_backed_and_is_handed_out_first() {
        let a = ChunkAllocator::new(8 * 4096, 4096);
        a.set_keep_backed(1);
        let x: Vec<u64> = (0..3).map(|_| a.allocate().unwrap()).collect();
        let mut released = Vec::new();
        for &c in &x {
            a.free_with(c, |off| {
                released.push(off);
                true
            })
            .unwrap();
        }
        assert_eq!(released, [x[1], x[2]], "the first freed is kept");
        assert_eq!(a.backed_free_chunks(), 1);
        // The backed chunk first, then the released ones (freed last first), as first uses.
        let y = a.allocate_tracked().unwrap();
        assert_eq!((y.offset, y.first_use), (x[0], false));
        let z = a.allocate_tracked().unwrap();
        assert_eq!((z.offset, z.first_use), (x[2], true));
        assert_eq!(a.backed_free_chunks(), 0);
        // The reserve refills; beyond it, a chunk that could not be released counts as backed.
        a.free_with(y.offset, |_| panic!("kept, not released"))
            .unwrap();
        a.free_with(z.offset, |_| false).unwrap();
        assert_eq!(a.backed_free_chunks(), 2);
        let again: Vec<Allocated> = (0..3).map(|_| a.allocate_tracked().unwrap()).collect();
        let offsets: Vec<(u64, bool)> = again.iter().map(|g| (g.offset, g.first_use)).collect();
        assert_eq!(offsets, [(x[2], false), (x[0], false), (x[1], true)]);
        // A first use its caller could not back is never kept as backed.
        a.set_keep_backed(8);
        a.free_unused_first(again[2]).unwrap();
        assert_eq!(a.backed_free_chunks(), 0);
        assert_eq!(a.allocate_tracked().unwrap(), again[2]);
        // A rebuild sorts the free chunks again by whether they were handed out.
        a.rebuild(&[x[2]]).unwrap();
        assert_eq!(a.backed_free_chunks(), 2, "x[0] and x[1]");
        assert_eq!(
            a.allocate_tracked().unwrap().offset,
            x[0],
            "lowest backed first"
        );
    }
}
