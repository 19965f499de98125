//! Pools nobody writes: a private (read-only) open, and growing a pool while it is closed.
//!
//! **Purpose.** [`PmPool::open_private`] serves a read-only open of a database: the pool
//! works as usual, stores included, but its file is opened without write access and mapped
//! copy on write, with anonymous headroom after it, so that a recovery which needs chunks (a
//! full pool whose last flush failed) finds them, in memory. [`PmPool::grow`] lengthens a
//! closed pool, so that a full one takes writes again.
//!
//! **Durability.** A private pool makes nothing durable. `grow` is failure-atomic: the file
//! is lengthened and synced first, then the header's grown-size word is written (one 8-byte
//! write in the first sector) and synced; a crash between the two leaves a file longer than
//! its header records, which every open refuses, naming `grow-pool`, until `grow` runs again.
//!
//! **Thread safety.** `grow` needs the pool closed (the caller holds the pool's lock);
//! the private pool is a [`PmPool`] like any other.

use crate::header::{grown_word, Header, FIXED_LEN, GROWN_OFFSET, HEADER_LEN};
use crate::mapping::FileMapping;
use crate::options::{DurabilityMode, PmError, PmResult, PoolOptions};
use crate::pool::{io_err, Backend, PmPool};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Reads the first line of a pool file; returns it with the file's length.
pub(crate) fn read_line(file: &mut File, loc: &str) -> PmResult<([u8; FIXED_LEN], u64)> {
    let len = file.metadata().map_err(io_err("stat", loc))?.len();
    let mut fixed = [0u8; FIXED_LEN];
    if len >= HEADER_LEN {
        file.read_exact(&mut fixed)
            .map_err(io_err("read header", loc))?;
    }
    Ok((fixed, len))
}

impl PmPool {
    /// Opens an existing pool file read-only: the file is opened without write access and
    /// mapped private (copy on write), so the pool works as usual (recovery may store into it)
    /// while not one byte reaches the file. `headroom` bytes (a multiple of the chunk size,
    /// rounded down) of anonymous memory follow the file's bytes as extra chunks, for a
    /// recovery that must allocate in a full pool. Stores cost memory (a page each, first
    /// time) and are lost when the pool drops; persists and fences run and count, harmlessly.
    /// The header is verified as by [`PmPool::open`].
    pub fn open_private(
        path: &Path,
        options: &PoolOptions,
        headroom: u64,
    ) -> PmResult<Arc<PmPool>> {
        let loc = path.display().to_string();
        let mut file = File::open(path).map_err(io_err("open (read-only)", &loc))?;
        let (fixed, len) = read_line(&mut file, &loc)?;
        let mut header = Header::decode(&fixed, len, &loc)?;
        let headroom = headroom / header.chunk_size * header.chunk_size;
        let map = FileMapping::map_private(&file, header.size, headroom, &loc)?;
        if cfg!(target_os = "linux") {
            header.size += headroom;
        }
        let pool = Self::build(
            map.base(),
            header,
            // Private pages never reach the file: no mode could make them durable.
            DurabilityMode::Emulated,
            options.latency,
            loc,
            Backend::File { map, _file: file },
            false,
        );
        // The file cannot be written: chunks are not backed on allocation.
        pool.no_fallocate.store(true, Ordering::Relaxed);
        pool.no_punch.store(true, Ordering::Relaxed);
        Ok(Arc::new(pool))
    }

    /// Grows the closed pool at `path` to `new_size` bytes (a multiple of its chunk size,
    /// larger than its size); returns the size it had. The new chunks are free at the next
    /// open. Finishes an interrupted grow (a file already lengthened) the same way. The
    /// caller must hold the pool's lock: nobody may have it open.
    pub fn grow(path: &Path, new_size: u64) -> PmResult<u64> {
        let loc = path.display().to_string();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io_err("open", &loc))?;
        let (fixed, len) = read_line(&mut file, &loc)?;
        if len < HEADER_LEN {
            // Reported as every open reports it.
            Header::decode(&fixed, len, &loc)?;
        }
        let header = Header::decode_line(&fixed, &loc)?;
        if len < header.size {
            // Shorter than recorded is damage, not an interrupted grow.
            Header::decode(&fixed, len, &loc)?;
        }
        let chunk = header.chunk_size;
        if new_size <= header.size || !new_size.is_multiple_of(chunk) {
            return Err(PmError::InvalidArgument(format!(
                "{loc}: a pool of {} bytes grows only to a larger multiple of its {chunk}-byte \
                 chunks (asked for {new_size})",
                header.size
            )));
        }
        let chunks = u32::try_from(new_size / chunk).map_err(|_| {
            PmError::InvalidArgument(format!(
                "{loc}: {new_size} bytes is more than 2^32 chunks of {chunk} bytes"
            ))
        })?;
        Header::decode_geometry(&with_grown(&fixed, chunks)).map_err(PmError::InvalidArgument)?;
        file.set_len(new_size).map_err(io_err("set_len", &loc))?;
        file.sync_all().map_err(io_err("fsync", &loc))?;
        file.write_all_at(&grown_word(chunks).to_le_bytes(), GROWN_OFFSET as u64)
            .map_err(io_err("write header", &loc))?;
        file.sync_all().map_err(io_err("fsync", &loc))?;
        Ok(header.size)
    }
}

/// `line` with its grown-size word recording `chunks`.
fn with_grown(line: &[u8; FIXED_LEN], chunks: u32) -> [u8; FIXED_LEN] {
    let mut out = *line;
    out[GROWN_OFFSET..GROWN_OFFSET + 8].copy_from_slice(&grown_word(chunks).to_le_bytes());
    out
}
