//! The pool header: layout, encoding and validation.
//!
//! **Purpose.** The first [`HEADER_LEN`] bytes of chunk 0 (which is never allocated) hold:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic [`POOL_MAGIC`] (`"TIERKVPM"`, little-endian) |
//! | 8 | 4 | format version [`FORMAT_VERSION`] |
//! | 12 | 4 | reserved (0) |
//! | 16 | 8 | pool size in bytes |
//! | 24 | 8 | chunk size in bytes |
//! | 32 | 4 | crc32c of bytes 0..32 |
//! | 36 | 4 | reserved (0) |
//! | 40 | 8 | the grown size: 0, or (low 32 bits) the pool's chunk count after a grow and (high 32 bits) the crc32c of those 4 bytes |
//! | 48 | 16 | reserved (0) |
//! | 64 | 8 x [`crate::ROOT_SLOTS`] | raw root slots (8-byte atomic, not checksummed) |
//! | 192 | 2304 | the root directory (named roots and the pool's identity; see `roots.rs`) |
//!
//! All integers are little-endian. The root slots live on their own cache lines so that a root
//! update never rewrites the checksummed fields. `[0, HEADER_LEN)` is written only by this
//! crate (create, [`crate::PmPool::set_root`], the root directory's updates).
//!
//! Format version 2 added the root directory; a pool of version 1 (whose engine structures
//! were found through raw root slot 0) is refused with an error naming its version.
//!
//! **Thread safety.** Pure functions over byte slices.
//!
//! **Durability.** The checksummed fields are written once at create and persisted (and
//! msynced) before `create` returns, after the initial root directory; they never change.
//! Growing a pool ([`crate::PmPool::grow`], offline) lengthens the file first, then records the
//! new chunk count in the grown-size word with one 8-byte write; the word carries its own
//! checksum, so it reads as either the old size or the new one, and a damaged word is
//! corruption. The pool's size is the grown size when the word is set, else the size field. Each
//! root slot is durable when `set_root` returns; a torn root is impossible (8-byte aligned
//! atomic store).

use crate::options::{PmError, PmResult};
use crate::ROOT_SLOTS;

/// Magic number at offset 0 of every pool: the bytes `"TIERKVPM"`.
pub const POOL_MAGIC: u64 = u64::from_le_bytes(*b"TIERKVPM");
/// On-PM format version of the pool (header, root slots and root directory).
pub const FORMAT_VERSION: u32 = 2;
/// Offset of root slot 0 (slot `i` is at `ROOTS_OFFSET + 8 * i`).
pub const ROOTS_OFFSET: u64 = 64;
/// Offset of the root directory (after the root slots).
pub const ROOT_DIRECTORY_OFFSET: u64 = ROOTS_OFFSET + 8 * ROOT_SLOTS as u64;
/// Bytes of chunk 0 the pool reserves: the header line, the root slots and the root directory.
/// Writes into `[0, HEADER_LEN)` are refused except through [`crate::PmPool::set_root`] and
/// the root directory's methods ([`crate::PmPool::update_root_table`]).
pub const HEADER_LEN: u64 = ROOT_DIRECTORY_OFFSET + crate::roots::ROOT_DIRECTORY_LEN;

/// Bytes of the checksummed part (line 0).
pub(crate) const FIXED_LEN: usize = 64;
const CRC_OFFSET: usize = 32;
/// Offset of the grown-size word.
pub(crate) const GROWN_OFFSET: usize = 40;

/// The smallest allowed chunk (and alignment unit of chunk sizes): one 4 KiB page, so that
/// every chunk is page-aligned for `msync`.
pub(crate) const MIN_CHUNK: u64 = 4096;

const _: () = assert!(HEADER_LEN <= MIN_CHUNK && HEADER_LEN.is_multiple_of(64));

/// The geometry recorded in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub size: u64,
    pub chunk_size: u64,
}

/// Checks a pool geometry; returns a description of the problem.
fn geometry_problem(size: u64, chunk_size: u64) -> Option<String> {
    if chunk_size == 0 || !chunk_size.is_multiple_of(MIN_CHUNK) {
        return Some(format!(
            "chunk size {chunk_size} is not a non-zero multiple of {MIN_CHUNK}"
        ));
    }
    if !size.is_multiple_of(chunk_size) {
        return Some(format!(
            "pool size {size} is not a multiple of the chunk size {chunk_size}"
        ));
    }
    if size / chunk_size < 2 {
        return Some(format!(
            "pool size {size} holds fewer than 2 chunks of {chunk_size} bytes (chunk 0 is the header)"
        ));
    }
    if usize::try_from(size).is_err() || isize::try_from(size).is_err() {
        return Some(format!("pool size {size} does not fit the address space"));
    }
    None
}

/// Validates create-time options (`InvalidArgument`).
pub(crate) fn check_geometry(size: u64, chunk_size: u64) -> PmResult<()> {
    match geometry_problem(size, chunk_size) {
        Some(p) => Err(PmError::InvalidArgument(p)),
        None => Ok(()),
    }
}

/// The grown-size word recording `chunks` chunks.
pub(crate) fn grown_word(chunks: u32) -> u64 {
    let crc = crc32c::crc32c(&chunks.to_le_bytes());
    (u64::from(crc) << 32) | u64::from(chunks)
}

/// The chunk count a grown-size word records (`None` for 0: never grown), or why it is bad.
fn decode_grown(word: u64) -> Result<Option<u64>, String> {
    if word == 0 {
        return Ok(None);
    }
    let chunks = word as u32;
    if grown_word(chunks) != word {
        return Err(format!("grown-size word {word:#018x} fails its checksum"));
    }
    Ok(Some(u64::from(chunks)))
}

impl Header {
    /// The checksummed first line.
    pub fn encode(&self) -> [u8; FIXED_LEN] {
        let mut b = [0u8; FIXED_LEN];
        b[0..8].copy_from_slice(&POOL_MAGIC.to_le_bytes());
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..32].copy_from_slice(&self.chunk_size.to_le_bytes());
        let crc = crc32c::crc32c(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and validates the first line of a pool of `actual_len` bytes; errors are
    /// `Corruption` naming `location`.
    pub fn decode(bytes: &[u8], actual_len: u64, location: &str) -> PmResult<Header> {
        let corrupt = |reason: String| PmError::Corruption {
            location: format!("{location} (pool header at offset 0)"),
            reason,
        };
        if actual_len < HEADER_LEN || bytes.len() < FIXED_LEN {
            return Err(corrupt(format!(
                "pool is {actual_len} bytes, smaller than the {HEADER_LEN}-byte header"
            )));
        }
        let header = Self::decode_line(bytes, location)?;
        if header.size < actual_len {
            return Err(corrupt(format!(
                "header records a pool of {} bytes but the pool has {actual_len} bytes (if \
                 `tierkv grow-pool` was interrupted, run it again)",
                header.size
            )));
        }
        if header.size != actual_len {
            return Err(corrupt(format!(
                "header records a pool of {} bytes but the pool has {actual_len} bytes",
                header.size
            )));
        }
        Ok(header)
    }

    /// Decodes and validates the first line (`FIXED_LEN` bytes) without the file's length:
    /// magic, checksum, version, geometry (the grown size when recorded).
    pub fn decode_line(bytes: &[u8], location: &str) -> PmResult<Header> {
        let corrupt = |reason: String| PmError::Corruption {
            location: format!("{location} (pool header at offset 0)"),
            reason,
        };
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
        let magic = u64_at(0);
        if magic != POOL_MAGIC {
            return Err(corrupt(format!(
                "bad magic {magic:#018x} (expected {POOL_MAGIC:#018x}): not a TierKV PM pool"
            )));
        }
        let stored_crc = u32_at(CRC_OFFSET);
        let crc = crc32c::crc32c(&bytes[..CRC_OFFSET]);
        if stored_crc != crc {
            return Err(corrupt(format!(
                "header checksum mismatch (stored {stored_crc:#010x}, computed {crc:#010x})"
            )));
        }
        let version = u32_at(8);
        if version == 1 {
            return Err(PmError::InvalidArgument(format!(
                "{location}: a TierKV PM pool of format version 1 (no root directory; written \
                 by an older TierKV): this build reads format version {FORMAT_VERSION} only"
            )));
        }
        if version != FORMAT_VERSION {
            return Err(corrupt(format!(
                "unsupported format version {version} (this build reads {FORMAT_VERSION})"
            )));
        }
        Self::decode_geometry(bytes).map_err(corrupt)
    }

    /// The geometry of a first line whose checksum and version were checked: the grown size
    /// when recorded, else the created size, validated.
    pub(crate) fn decode_geometry(bytes: &[u8]) -> Result<Header, String> {
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
        let mut header = Header {
            size: u64_at(16),
            chunk_size: u64_at(24),
        };
        if let Some(p) = geometry_problem(header.size, header.chunk_size) {
            return Err(p);
        }
        if let Some(chunks) = decode_grown(u64_at(GROWN_OFFSET))? {
            let grown = chunks
                .checked_mul(header.chunk_size)
                .filter(|&g| g > header.size)
                .ok_or_else(|| {
                    format!(
                        "grown size of {chunks} chunks is not larger than the created size {}",
                        header.size
                    )
                })?;
            header.size = grown;
            if let Some(p) = geometry_problem(header.size, header.chunk_size) {
                return Err(p);
            }
        }
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let h = Header {
            size: 1 << 20,
            chunk_size: 64 << 10,
        };
        let b = h.encode();
        assert_eq!(Header::decode(&b, 1 << 20, "x").unwrap(), h);
        // Every single-byte flip of the checksummed fields is detected.
        for i in 0..36 {
            let mut d = b;
            d[i] ^= 0x10;
            let e = Header::decode(&d, 1 << 20, "pool.pm").unwrap_err();
            match e {
                PmError::Corruption { location, .. } => assert!(location.contains("pool.pm")),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    /// A pool of format version 1 (no root directory) is refused with an error naming it;
    /// another unknown version is corruption.
    #[test]
    fn older_format_is_refused_by_name() {
        let h = Header {
            size: 1 << 20,
            chunk_size: 64 << 10,
        };
        for (version, older) in [(1u32, true), (3, false)] {
            let mut b = h.encode();
            b[8..12].copy_from_slice(&version.to_le_bytes());
            let crc = crc32c::crc32c(&b[..CRC_OFFSET]);
            b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
            match Header::decode(&b, 1 << 20, "old.pm").unwrap_err() {
                PmError::InvalidArgument(m) if older => {
                    assert!(m.contains("version 1") && m.contains("old.pm"), "{m}")
                }
                PmError::Corruption { reason, .. } if !older => {
                    assert!(reason.contains("version 3"), "{reason}")
                }
                other => panic!("version {version}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_grown_size_word_is_all_or_nothing() {
        let h = Header {
            size: 1 << 20,
            chunk_size: 64 << 10,
        };
        let mut b = h.encode();
        b[GROWN_OFFSET..GROWN_OFFSET + 8].copy_from_slice(&grown_word(32).to_le_bytes());
        assert_eq!(Header::decode(&b, 2 << 20, "x").unwrap().size, 2 << 20);
        // The old length: a grow that lengthened nothing yet is impossible (the file first).
        let e = Header::decode(&b, 1 << 20, "x").unwrap_err().to_string();
        assert!(e.contains("records a pool of 2097152 bytes"), "{e}");
        // Longer than recorded: an interrupted grow, named.
        let e = Header::decode(&h.encode(), 2 << 20, "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("grow-pool"), "{e}");
        // Any flipped bit of the word is caught, and a word that would shrink the pool.
        for bit in 0..64 {
            let mut d = b;
            let w = grown_word(32) ^ (1 << bit);
            d[GROWN_OFFSET..GROWN_OFFSET + 8].copy_from_slice(&w.to_le_bytes());
            assert!(Header::decode(&d, 2 << 20, "x").is_err(), "bit {bit}");
        }
        let mut d = b;
        d[GROWN_OFFSET..GROWN_OFFSET + 8].copy_from_slice(&grown_word(8).to_le_bytes());
        let e = Header::decode(&d, 1 << 20, "x").unwrap_err().to_string();
        assert!(e.contains("not larger"), "{e}");
    }

    #[test]
    fn geometry_rules() {
        assert!(check_geometry(8192, 4096).is_ok());
        assert!(check_geometry(4096, 4096).is_err()); // one chunk
        assert!(check_geometry(12288, 8192).is_err()); // not a multiple
        assert!(check_geometry(8192, 0).is_err());
        assert!(check_geometry(8192, 100).is_err());
    }
}
