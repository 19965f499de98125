//! The file-system seam: the narrow set of file and directory operations the engine uses.
//!
//! Every byte the engine writes to or reads from SSD goes through a [`FileSystem`], so tests can
//! swap the POSIX implementation ([`PosixFs`]) for an in-memory one (`MemFs`, with the
//! `test-util` feature) that simulates crashes (keeping only synced data and synced directory
//! entries) and injects I/O errors. [`SsdModelFs`] wraps either to make it behave like an SSD
//! of a given bandwidth, optionally with direct (page-cache bypassing) reads
//! ([`crate::Options::ssd`]).
//!
//! Durability contract the engine relies on, which both implementations honour:
//! * data appended to a [`WritableFile`] survives a *process* crash once `flush` returns, and a
//!   *power* failure only once `sync` returns;
//! * a created, renamed or removed directory entry survives a power failure only once
//!   [`FileSystem::sync_dir`] on its directory returns.
//!
//! Thread-safety: a `FileSystem` and a [`RandomAccessFile`] are shared across threads; a
//! `WritableFile` has one owner.

mod direct;
#[cfg(any(test, feature = "test-util"))]
mod mem;
mod overlay;
mod pm;
mod pm_open;
pub(crate) use pm::{check16, decode_checked, encode_checked};
mod posix;
mod ssd_model;

pub use direct::DIRECT_IO_ALIGN;
#[cfg(any(test, feature = "test-util"))]
pub use mem::{CrashMode, FaultSpec, FsOp, MemFs};
pub use overlay::OverlayFs;
pub(crate) use pm::{
    min_pool_chunks, PmWords, MANIFEST_CHUNKS, POOL_OVERHEAD_CHUNKS, SPARE_CHUNKS,
};
pub use pm::{
    EmptyManifestTest, PmFs, PmFsOwner, PmSpace, PmSpacePolicy, PMFS_MIN_CHUNK_BYTES,
    PMFS_ROOT_NAME,
};
pub use pm_open::{open_pm_owners, PmFsOpen, PmOpenReport, PmOwner};
pub use posix::PosixFs;
pub use ssd_model::{
    Clock, SsdModelFs, SsdModelOptions, SsdModelStats, SystemClock, TokenBucket, BURST_DIVISOR,
    MIN_BURST_BYTES, MIN_SSD_BYTES_PER_SEC,
};

use crate::Result;
use std::path::Path;
use std::sync::Arc;

/// The file system of `tier`: `ssd`, or `pm` for the PM tier; a file (`path`, a `what`) on PM
/// in a database without a pool is corruption.
pub(crate) fn fs_of_tier<'a>(
    tier: crate::tier::Tier,
    ssd: &'a Arc<dyn FileSystem>,
    pm: Option<&'a Arc<dyn FileSystem>>,
    path: &Path,
    what: &str,
) -> Result<&'a Arc<dyn FileSystem>> {
    match tier {
        crate::tier::Tier::Ssd => Ok(ssd),
        crate::tier::Tier::Pm => pm.ok_or_else(|| {
            crate::Error::corruption(
                path.display().to_string(),
                format!("{what} is on PM but the database has no PM pool"),
            )
        }),
    }
}

/// A file opened for appending.
pub trait WritableFile: Send {
    /// Appends `data` (it may stay in a user-space buffer until `flush`).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered data to the operating system: it then survives a process crash.
    fn flush(&mut self) -> Result<()>;
    /// Flushes and makes the file's data durable (fdatasync).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn size(&self) -> u64;
    /// Takes the space for `additional` more bytes now, so that appending them cannot run out
    /// of space half-way (a PM log links its chunks ahead). Out of space is
    /// [`crate::Error::NoSpace`] with nothing appended. The default (SSD files) does nothing:
    /// a file system reports a full disk at the append or sync.
    fn reserve(&mut self, additional: u64) -> Result<()> {
        let _ = additional;
        Ok(())
    }
}

/// A file opened for positional reads.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` with the bytes at `offset`; a short read is an error.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// The file's size in bytes.
    fn size(&self) -> u64;
}

/// A lock on a database directory (exclusive, or shared by read-only opens), released on drop.
pub trait FileLock: Send + Sync {}

/// The file and directory operations the engine needs.
pub trait FileSystem: Send + Sync + 'static {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) a file for a record log. A log's reader finds a torn tail by
    /// checksums, so the bytes of an interrupted append must read back as either the new bytes
    /// or zeros, never as stale content of another file (which could hold valid old records).
    /// POSIX and the in-memory file system already guarantee that for any file; `PmFs`, whose
    /// chunks are reused, zeroes the chunks of a log before it links them.
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens an existing file for positional reads.
    fn open_readable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens an existing file for positional reads that bypass the operating system's page
    /// cache (`O_DIRECT`), for the SSD model's direct reads. Only [`PosixFs`] has them, and it
    /// refuses a file system that rejects `O_DIRECT` or lives in RAM (tmpfs); the default says
    /// this file system has none. Either way the error is an [`crate::Error::InvalidArgument`].
    fn open_readable_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Err(crate::Error::InvalidArgument(format!(
            "direct reads (ssd.direct_reads, --use_direct_reads) are not supported by this \
             file system (opening {}): they need the POSIX file system",
            path.display()
        )))
    }
    /// This file system as the SSD model, if it is one (so that opening a database with the
    /// options of an open one does not wrap the model twice, and callers can read its
    /// [`SsdModelFs::stats`]).
    fn as_ssd_model(&self) -> Option<&SsdModelFs> {
        None
    }
    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let f = self.open_readable(path)?;
        let mut buf = vec![0u8; f.size() as usize];
        f.read_exact_at(0, &mut buf)?;
        Ok(buf)
    }
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// True if the path exists.
    fn exists(&self, path: &Path) -> bool;
    /// The names (not paths) of the entries of a directory.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// The size of a file.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Takes an exclusive lock on `path` (created if missing), failing if another holder exists.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Takes a shared lock on `path` if it exists, creating nothing: `None` when there is no
    /// such file. Fails (an [`crate::Error::InvalidArgument`] saying "held by a writer") while
    /// an exclusive [`FileSystem::lock`] is held; shared holders do not exclude each other, and
    /// keep a writer out until they drop. The default takes no lock (file systems with no
    /// other process to exclude).
    fn lock_shared(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        let _ = path;
        Ok(None)
    }
}
