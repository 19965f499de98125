//! The pool file's blocks: backing a chunk when it is first handed out, and (optionally) giving a
//! freed chunk's blocks back.
//!
//! **Purpose.** The pool file is sparse. A store into a hole of a full file system kills the
//! process with `SIGBUS`, so a chunk's range is allocated in the file system (`fallocate` mode
//! 0) when the allocator hands it out for the first time: a full file system is then a
//! `NoSpace` error there. With [`PmPool::set_release_freed`], a freed chunk's range is punched
//! out again (`FALLOC_FL_PUNCH_HOLE`), so that the file's blocks follow the live chunks instead
//! of their high-water mark (on a RAM file system such as `/dev/shm`, its memory); the chunk's
//! next allocation then backs it again.
//!
//! **Thread safety.** Called by the allocating or freeing thread, on a chunk no other thread
//! can be handed at the time (see `ChunkAllocator::free_with`).
//!
//! **Durability.** A punched range reads as zeros at once and after a crash: only a chunk that
//! no published structure references is punched (the pool's contract for freeing a chunk).

use crate::options::{PmError, PmResult};
use crate::pool::{Backend, PmPool};
#[cfg(target_os = "linux")]
use std::fs::File;
use std::sync::atomic::Ordering;

/// With releasing on, up to this many bytes of freed chunks (but at most a sixteenth of the
/// pool, and at least one chunk) stay backed for the next allocations: a design that frees and
/// allocates chunks in turn reuses them without a `fallocate` and page faults each time, and
/// the pool file holds at most this much more than its live chunks.
pub const RELEASE_RESERVE_BYTES: u64 = 64 << 20;

impl PmPool {
    /// Gives freed chunks' file-system blocks back (`true`), or keeps them for their next
    /// allocation (`false`, the default: the file's blocks, or a RAM file system's memory, stay
    /// at the pool's high-water mark). On, freed chunks beyond a reserve of
    /// [`RELEASE_RESERVE_BYTES`] kept backed are punched out as they are freed. Releasing costs
    /// a `fallocate` call per released chunk and again per reallocation, and page faults when
    /// the chunk is written again. File systems that cannot punch holes, and crash-simulation
    /// pools, keep the blocks.
    pub fn set_release_freed(&self, on: bool) {
        self.release_freed.store(on, Ordering::Relaxed);
        let reserve = (RELEASE_RESERVE_BYTES.min(self.size() / 16) / self.chunk_size()).max(1);
        self.alloc.set_keep_backed(if on { reserve } else { 0 });
    }

    /// Allocates file-system blocks for `[offset, offset + len)` of the pool file.
    pub(crate) fn back_range(&self, offset: u64, len: u64) -> PmResult<()> {
        #[cfg(target_os = "linux")]
        if let Backend::File { _file: file, .. } = &self.backend {
            if self.no_fallocate.load(Ordering::Relaxed) {
                return Ok(());
            }
            let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
            else {
                return Err(PmError::InvalidArgument(format!(
                    "chunk at offset {offset} ({len} bytes) is beyond this platform's file offsets"
                )));
            };
            let Err(err) = self.fallocate(file, 0, off, n) else {
                return Ok(());
            };
            return match err.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => {
                    self.no_fallocate.store(true, Ordering::Relaxed);
                    Ok(())
                }
                Some(libc::ENOSPC) | Some(libc::EDQUOT) => Err(PmError::NoSpace(format!(
                    "the file system holding {} has no room for chunk at offset {offset} \
                     ({len} bytes): {err}",
                    self.location
                ))),
                _ => Err(PmError::Io {
                    op: "fallocate",
                    path: self.location.clone(),
                    source: err,
                }),
            };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len, &self.backend);
        Ok(())
    }

    /// Punches `[offset, offset + len)` (a freed chunk) out of the pool file; returns whether
    /// it did (the range then reads as zeros and holds no blocks). Best effort: a failure keeps
    /// the blocks, as when releasing is off; "unsupported" turns releasing off for good.
    pub(crate) fn release_range(&self, offset: u64, len: u64) -> bool {
        #[cfg(target_os = "linux")]
        if let Backend::File { _file: file, .. } = &self.backend {
            if self.no_punch.load(Ordering::Relaxed) {
                return false;
            }
            let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
            else {
                return false;
            };
            let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            return match self.fallocate(file, mode, off, n) {
                Ok(()) => {
                    self.bytes_released.add(len);
                    true
                }
                Err(err) => {
                    if matches!(
                        err.raw_os_error(),
                        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
                    ) {
                        self.no_punch.store(true, Ordering::Relaxed);
                    }
                    false
                }
            };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len, &self.backend);
        false
    }

    /// `fallocate(2)` with `mode` of `[off, off + n)` of the pool file, retried on `EINTR`.
    #[cfg(target_os = "linux")]
    fn fallocate(
        &self,
        file: &File,
        mode: libc::c_int,
        off: libc::off_t,
        n: libc::off_t,
    ) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        #[cfg(test)]
        if let Some(room) = self.simulated_fs_room.lock().as_mut() {
            if mode & libc::FALLOC_FL_PUNCH_HOLE != 0 {
                // Punching gives the range's bytes back to the room (the tests punch only
                // backed chunks).
                *room += n as u64;
                return Ok(());
            }
            // Backing takes `n` bytes of the room left, or fails as on a full file system.
            return match room.checked_sub(n as u64) {
                Some(left) => {
                    *room = left;
                    Ok(())
                }
                None => Err(std::io::Error::from_raw_os_error(libc::ENOSPC)),
            };
        }
        loop {
            // SAFETY: `fallocate` takes no pointers; the descriptor belongs to `file`, which the
            // pool owns and keeps open while it exists. Mode 0 only allocates blocks for the
            // range; the punch mode is always given with `FALLOC_FL_KEEP_SIZE` and only for a
            // freed chunk, which no live mapping user reads or writes (the file's size and
            // the mapping never change: offset + len <= size).
            let r = unsafe { libc::fallocate(file.as_raw_fd(), mode, off, n) };
            if r == 0 {
                return Ok(());
            }
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(err);
            }
        }
    }

    /// Tests: `Some(bytes)` makes backing a chunk behave as on a file system with only `bytes`
    /// of room left, instead of calling `fallocate`; `None` restores the real call.
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn simulate_fs_room(&self, bytes: Option<u64>) {
        *self.simulated_fs_room.lock() = bytes;
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::RELEASE_RESERVE_BYTES;
    use crate::options::{DurabilityMode, LatencyModel, PmError, PoolOptions};
    use crate::PmPool;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    const CHUNK: u64 = 256 << 10;

    fn opts() -> PoolOptions {
        PoolOptions {
            size: 4 << 20,
            mode: DurabilityMode::Emulated,
            latency: LatencyModel::DRAM,
            chunk_size: CHUNK,
        }
    }

    /// Bytes the file system holds for `path`.
    fn held(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().blocks() * 512
    }

    /// A chunk of `p` written full of `byte` and persisted.
    fn filled_chunk(p: &PmPool, byte: u8) -> u64 {
        let c = p.allocate_chunk().unwrap();
        p.write(c, &vec![byte; CHUNK as usize]).unwrap();
        p.persist(c, CHUNK).unwrap();
        c
    }

    fn read_chunk(p: &PmPool, c: u64) -> Vec<u8> {
        let mut buf = vec![1u8; CHUNK as usize];
        p.read(c, &mut buf).unwrap();
        buf
    }

    #[test]
    fn a_released_chunk_gives_its_blocks_back_and_is_backed_again_when_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.pm");
        let p = PmPool::create(&path, &opts()).unwrap();
        p.set_release_freed(true);
        p.alloc.set_keep_backed(0);
        let a = filled_chunk(&p, 0xa5);
        let keep = filled_chunk(&p, 0x5a);
        let before = held(&path);
        p.free_chunk(a);
        assert_eq!(p.stats().bytes_released, CHUNK);
        assert!(
            held(&path) + CHUNK <= before,
            "the file still holds {} of {before} bytes after the release",
            held(&path)
        );
        // Reused, the chunk is backed again and reads as zeros (it is not zeroed by `allocate_chunk`:
        // without the release it would still hold 0xa5).
        assert_eq!(p.allocate_chunk().unwrap(), a);
        assert!(held(&path) >= before, "the reused chunk is backed again");
        assert!(read_chunk(&p, a).iter().all(|&b| b == 0));
        assert!(
            read_chunk(&p, keep).iter().all(|&b| b == 0x5a),
            "others keep their data"
        );
        // A double free releases nothing.
        p.free_chunk(keep);
        assert!(p.try_free_chunk(keep).is_err());
        assert_eq!(p.stats().bytes_released, 2 * CHUNK);
    }

    #[test]
    fn without_release_a_freed_chunk_keeps_its_blocks_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.pm");
        let p = PmPool::create(&path, &opts()).unwrap();
        let a = filled_chunk(&p, 0xa5);
        let before = held(&path);
        p.free_chunk(a);
        assert_eq!(held(&path), before);
        assert_eq!(p.stats().bytes_released, 0);
        assert_eq!(p.allocate_chunk().unwrap(), a);
        assert!(read_chunk(&p, a).iter().all(|&b| b == 0xa5));
    }

    #[test]
    fn released_room_is_room_for_the_next_allocation() {
        let dir = tempfile::tempdir().unwrap();
        let p = PmPool::create(&dir.path().join("p.pm"), &opts()).unwrap();
        p.set_release_freed(true);
        p.alloc.set_keep_backed(0);
        p.simulate_fs_room(Some(2 * CHUNK));
        let a = filled_chunk(&p, 1);
        filled_chunk(&p, 2);
        assert!(matches!(p.allocate_chunk(), Err(PmError::NoSpace(_))));
        p.free_chunk(a);
        assert_eq!(*p.simulated_fs_room.lock(), Some(CHUNK));
        // The released chunk comes back as a first use: backed again from the room.
        assert_eq!(p.allocate_zeroed_chunk(0).unwrap(), a);
        assert_eq!(*p.simulated_fs_room.lock(), Some(0));
        assert!(matches!(p.allocate_chunk(), Err(PmError::NoSpace(_))));
    }

    #[test]
    fn a_reopened_pool_releases_the_chunks_its_structures_do_not_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.pm");
        let (a, b, c) = {
            let p = PmPool::create(&path, &opts()).unwrap();
            (
                filled_chunk(&p, 1),
                filled_chunk(&p, 2),
                filled_chunk(&p, 3),
            )
        };
        let before = held(&path);
        let p = PmPool::open(&path, &opts()).unwrap();
        p.set_release_freed(true);
        p.rebuild_allocator(&[b]).unwrap();
        assert!(
            held(&path) + 2 * CHUNK <= before,
            "{} of {before}",
            held(&path)
        );
        assert!(read_chunk(&p, b).iter().all(|&x| x == 2));
        for free in [a, c] {
            assert!(read_chunk(&p, free).iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn freed_chunks_up_to_the_reserve_stay_backed_the_rest_are_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.pm");
        let p = PmPool::create(&path, &opts()).unwrap();
        p.set_release_freed(true);
        assert_eq!(
            p.alloc.keep_backed(),
            (RELEASE_RESERVE_BYTES.min(p.size() / 16) / CHUNK).max(1),
            "the default reserve"
        );
        p.alloc.set_keep_backed(2);
        let chunks: Vec<u64> = (1..=4).map(|i| filled_chunk(&p, i)).collect();
        let full = held(&path);
        for &c in &chunks {
            p.free_chunk(c);
        }
        // The first two freed stay backed, the other two are released.
        assert_eq!(p.stats().bytes_released, 2 * CHUNK);
        assert_eq!(p.alloc.backed_free_chunks(), 2);
        assert!(held(&path) + 2 * CHUNK <= full, "{} of {full}", held(&path));
        // The kept ones are handed out first, with their old bytes (not first uses: nothing
        // backs or zeroes them), then the released ones, zeroed and backed again.
        let again: Vec<u64> = (0..4).map(|_| p.allocate_chunk().unwrap()).collect();
        assert_eq!(again, [chunks[1], chunks[0], chunks[3], chunks[2]]);
        assert!(read_chunk(&p, chunks[1]).iter().all(|&b| b == 2));
        assert!(read_chunk(&p, chunks[0]).iter().all(|&b| b == 1));
        assert!(read_chunk(&p, chunks[3]).iter().all(|&b| b == 0));
        assert!(read_chunk(&p, chunks[2]).iter().all(|&b| b == 0));
        assert_eq!(p.alloc.backed_free_chunks(), 0);
        assert!(held(&path) >= full, "every chunk is backed again");
        // Off, nothing is kept in reserve or released.
        p.set_release_freed(false);
        assert_eq!(p.alloc.keep_backed(), 0);
    }

    #[test]
    fn a_crash_simulation_pool_keeps_freed_chunks() {
        let p = PmPool::create_crash_sim(&opts(), false).unwrap();
        p.set_release_freed(true);
        let a = filled_chunk(&p, 0xa5);
        p.free_chunk(a);
        assert_eq!(p.stats().bytes_released, 0);
        assert_eq!(p.allocate_chunk().unwrap(), a);
        assert!(read_chunk(&p, a).iter().all(|&b| b == 0xa5));
    }
}
