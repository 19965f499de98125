//! On-disk framing shared by the table builder and reader: block handles, block trailers and the
//! fixed-size footer (see `docs/format-sst.md` for the byte layout).
//!
//! Thread-safety: plain values and free functions; nothing here holds shared state.
//!
//! Invariants: every block on disk is followed by a [`BLOCK_TRAILER_LEN`]-byte trailer (compression
//! type, masked CRC-32C of contents ++ type byte); a [`BlockHandle`] names the contents only (its
//! `size` excludes the trailer). Decoders never panic on damaged input: they return
//! [`crate::Error::Corruption`] naming the file and, where known, the block offset.

use crate::fs::RandomAccessFile;
use crate::util::coding::Decoder;
use crate::util::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, put_varint64};
use crate::util::crc::{crc32c, crc32c_two, mask, unmask};
use crate::{Error, Result};
use std::path::Path;

/// The table magic number, the last 8 bytes of every table (little-endian).
pub const TABLE_MAGIC: u64 = 0x7469_6572_6b76_7373; // "tierkvss" as big-endian ASCII
/// The format version of a table with one index block (read into DRAM whole).
pub const FORMAT_VERSION: u32 = 1;
/// The format version of a table with a partitioned index: the footer's index block is the
/// top-level index, whose entries point at index partitions, whose entries point at data blocks.
pub const FORMAT_VERSION_PARTITIONED: u32 = 2;
/// Format version 1 with separated values: every value is a tag byte and the value or a
/// pointer into a value log (`sst::value_log`).
pub const FORMAT_VERSION_SEPARATED: u32 = 3;
/// Format version 2 (a partitioned index) with separated values.
pub const FORMAT_VERSION_PARTITIONED_SEPARATED: u32 = 4;
/// Bytes after each block: compression type (1) + masked CRC-32C (4).
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Compression type byte for uncompressed blocks (the only supported one).
pub const COMPRESSION_NONE: u8 = 0;
/// Size of the footer: two handles of 2 x fixed64, version u32, masked CRC u32, magic u64.
pub const FOOTER_LEN: usize = 16 + 16 + 4 + 4 + 8;

/// Where a block's contents lie in the file (the trailer follows at `offset + size`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockHandle {
    /// Offset of the first content byte.
    pub offset: u64,
    /// Length of the contents, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the handle as two varint64s (the index-block encoding).
    pub fn encode_varint(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes a varint-encoded handle that must span `src` exactly.
    pub fn decode_varint(src: &[u8]) -> Option<BlockHandle> {
        let mut d = Decoder::new(src);
        let offset = d.varint64()?;
        let size = d.varint64()?;
        if !d.is_empty() {
            return None;
        }
        Some(BlockHandle { offset, size })
    }

    /// Offset one past the block's trailer; `None` on overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The decoded footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    /// The filter block; `size == 0` (and `offset == 0`) when the table has no filter.
    pub filter: BlockHandle,
    /// The index block (the top-level index when `partitioned`).
    pub index: BlockHandle,
    /// Whether the index is partitioned ([`FORMAT_VERSION_PARTITIONED`]).
    pub partitioned: bool,
    /// Whether values are separated ([`FORMAT_VERSION_SEPARATED`]).
    pub separated: bool,
}

impl Footer {
    /// Encodes the footer (exactly [`FOOTER_LEN`] bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(FOOTER_LEN);
        put_fixed64(&mut v, self.filter.offset);
        put_fixed64(&mut v, self.filter.size);
        put_fixed64(&mut v, self.index.offset);
        put_fixed64(&mut v, self.index.size);
        put_fixed32(
            &mut v,
            match (self.partitioned, self.separated) {
                (false, false) => FORMAT_VERSION,
                (true, false) => FORMAT_VERSION_PARTITIONED,
                (false, true) => FORMAT_VERSION_SEPARATED,
                (true, true) => FORMAT_VERSION_PARTITIONED_SEPARATED,
            },
        );
        let crc = mask(crc32c(&v));
        put_fixed32(&mut v, crc);
        put_fixed64(&mut v, TABLE_MAGIC);
        debug_assert_eq!(v.len(), FOOTER_LEN);
        v
    }

    /// Decodes and checks a footer; `Err(reason)` on a bad magic, checksum or version.
    pub fn decode(src: &[u8]) -> std::result::Result<Footer, String> {
        if src.len() != FOOTER_LEN {
            return Err(format!(
                "footer is {} bytes, expected {FOOTER_LEN}",
                src.len()
            ));
        }
        let magic = decode_fixed64(&src[40..]).ok_or("short footer")?;
        if magic != TABLE_MAGIC {
            return Err(format!("bad table magic {magic:#018x}"));
        }
        let stored = decode_fixed32(&src[36..]).ok_or("short footer")?;
        if unmask(stored) != crc32c(&src[..36]) {
            return Err("footer checksum mismatch".into());
        }
        let version = decode_fixed32(&src[32..]).ok_or("short footer")?;
        let (partitioned, separated) = match version {
            FORMAT_VERSION => (false, false),
            FORMAT_VERSION_PARTITIONED => (true, false),
            FORMAT_VERSION_SEPARATED => (false, true),
            FORMAT_VERSION_PARTITIONED_SEPARATED => (true, true),
            _ => return Err(format!("unsupported table format version {version}")),
        };
        let f = |i: usize| decode_fixed64(&src[i * 8..]).ok_or("short footer");
        Ok(Footer {
            filter: BlockHandle {
                offset: f(0)?,
                size: f(1)?,
            },
            index: BlockHandle {
                offset: f(2)?,
                size: f(3)?,
            },
            partitioned,
            separated,
        })
    }
}

/// The location string of a block, e.g. `"/db/000012.sst block at 4096"`.
pub fn block_location(path: &Path, offset: u64) -> String {
    format!("{} block at {offset}", path.display())
}

/// Builds the trailer of `contents` (uncompressed).
pub fn block_trailer(contents: &[u8]) -> [u8; BLOCK_TRAILER_LEN] {
    let crc = mask(crc32c_two(contents, &[COMPRESSION_NONE]));
    let c = crc.to_le_bytes();
    [COMPRESSION_NONE, c[0], c[1], c[2], c[3]]
}

/// Reads the block named by `handle` and its trailer, verifies the checksum and the compression
/// type, and returns the contents. `data_end` is the offset where blocks must end (the footer's
/// start); a handle reaching past it is corruption, not an I/O error. Returns the contents and the
/// number of bytes read from the file.
pub fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
    data_end: u64,
) -> Result<(Vec<u8>, u64)> {
    let loc = || block_location(path, handle.offset);
    let end = handle
        .end_with_trailer()
        .ok_or_else(|| Error::corruption(loc(), "block handle overflows"))?;
    if end > data_end {
        return Err(Error::corruption(
            loc(),
            format!(
                "block of {} bytes extends to {end}, past the end of the block area at {data_end}",
                handle.size
            ),
        ));
    }
    let n = handle.size as usize + BLOCK_TRAILER_LEN;
    let mut buf = vec![0u8; n];
    file.read_exact_at(handle.offset, &mut buf)?;
    let contents_len = handle.size as usize;
    let ctype = buf[contents_len];
    let stored = u32::from_le_bytes(
        buf[contents_len + 1..contents_len + 5]
            .try_into()
            .expect("4 bytes"),
    );
    if unmask(stored) != crc32c(&buf[..contents_len + 1]) {
        return Err(Error::corruption(loc(), "block checksum mismatch"));
    }
    if ctype != COMPRESSION_NONE {
        return Err(Error::corruption(
            loc(),
            format!("unsupported compression type {ctype}"),
        ));
    }
    buf.truncate(contents_len);
    Ok((buf, n as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trip_and_damage() {
        for (partitioned, separated) in [(false, false), (true, false), (false, true), (true, true)]
        {
            let f = Footer {
                filter: BlockHandle {
                    offset: 100,
                    size: 20,
                },
                index: BlockHandle {
                    offset: 125,
                    size: 300,
                },
                partitioned,
                separated,
            };
            let enc = f.encode();
            assert_eq!(enc.len(), FOOTER_LEN);
            assert_eq!(Footer::decode(&enc).unwrap(), f);
            for i in 0..enc.len() {
                let mut bad = enc.clone();
                bad[i] ^= 0x10;
                assert!(Footer::decode(&bad).is_err(), "flip at {i} accepted");
            }
            assert!(Footer::decode(&enc[1..]).is_err());
        }
    }

    #[test]
    fn handle_varint_exact() {
        let h = BlockHandle {
            offset: 1 << 40,
            size: 4096,
        };
        let mut v = Vec::new();
        h.encode_varint(&mut v);
        assert_eq!(BlockHandle::decode_varint(&v), Some(h));
        v.push(0);
        assert_eq!(BlockHandle::decode_varint(&v), None);
        assert_eq!(BlockHandle::decode_varint(&[0x80]), None);
        let h = BlockHandle {
            offset: u64::MAX,
            size: 1,
        };
        assert_eq!(h.end_with_trailer(), None);
    }
}
