//! `VersionEdit`: one manifest record, the difference between two versions.
//!
//! Encoding (see `docs/FORMATS.md`): a sequence of `tag: varint32` + fields. Unknown tags are
//! corruption (an older binary must not silently drop fields of a newer one).

use crate::tier::Tier;
use crate::util::coding::{put_length_prefixed, put_varint32, put_varint64, Decoder};
use crate::version::FileMetaData;
use crate::{Error, Result};

const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE_NUMBER: u32 = 3;
const TAG_LAST_SEQUENCE: u32 = 4;
const TAG_COMPACT_POINTER: u32 = 5;
const TAG_DELETED_FILE: u32 = 6;
const TAG_NEW_FILE: u32 = 7;
const TAG_NEW_PM_FILE: u32 = 8;
const TAG_DESIGN: u32 = 20;
const TAG_FORMAT_VERSION: u32 = 21;
const TAG_NUM_LEVELS: u32 = 22;
const TAG_WAL_TIER: u32 = 23;
const TAG_IDENTITY: u32 = 24;
const TAG_LOG_CREATED: u32 = 25;

/// Changes to apply to a version, plus database-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WAL files numbered below this are obsolete (their data is in tables).
    pub log_number: Option<u64>,
    /// The next file number to allocate.
    pub next_file_number: Option<u64>,
    /// The last sequence number used by data in the tables.
    pub last_sequence: Option<u64>,
    /// Where the next size-triggered compaction of a level starts (round-robin).
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Files removed: (level, file number).
    pub deleted_files: Vec<(usize, u64)>,
    /// Files added: (level, metadata).
    pub new_files: Vec<(usize, FileMetaData)>,
    /// The design the database was created with (first record of every manifest).
    pub design: Option<String>,
    /// The on-disk format version the database was created with.
    pub format_version: Option<u32>,
    /// The number of levels the database was created with.
    pub num_levels: Option<u32>,
    /// Where the database keeps its WAL (0 SSD, 1 PM), fixed at creation.
    pub wal_tier: Option<u32>,
    /// The database's identity, fixed at creation (also recorded in its PM pool).
    pub identity: Option<u128>,
    /// Whether the WAL numbered `log_number` exists: `Some(false)` when recovery logs a new
    /// log number before it creates that WAL (it then logs `Some(true)`). An edit that sets
    /// `log_number` without this field names a WAL that exists.
    pub log_created: Option<bool>,
}

impl VersionEdit {
    /// Serializes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(d) = &self.design {
            put_varint32(&mut b, TAG_DESIGN);
            put_length_prefixed(&mut b, d.as_bytes());
        }
        if let Some(v) = self.format_version {
            put_varint32(&mut b, TAG_FORMAT_VERSION);
            put_varint32(&mut b, v);
        }
        if let Some(v) = self.num_levels {
            put_varint32(&mut b, TAG_NUM_LEVELS);
            put_varint32(&mut b, v);
        }
        if let Some(v) = self.wal_tier {
            put_varint32(&mut b, TAG_WAL_TIER);
            put_varint32(&mut b, v);
        }
        if let Some(id) = self.identity {
            put_varint32(&mut b, TAG_IDENTITY);
            b.extend_from_slice(&id.to_le_bytes());
        }
        if let Some(created) = self.log_created {
            put_varint32(&mut b, TAG_LOG_CREATED);
            put_varint32(&mut b, u32::from(created));
        }
        for (tag, v) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE_NUMBER, self.next_file_number),
            (TAG_LAST_SEQUENCE, self.last_sequence),
        ] {
            if let Some(v) = v {
                put_varint32(&mut b, tag);
                put_varint64(&mut b, v);
            }
        }
        for (level, key) in &self.compact_pointers {
            put_varint32(&mut b, TAG_COMPACT_POINTER);
            put_varint32(&mut b, *level as u32);
            put_length_prefixed(&mut b, key);
        }
        for (level, number) in &self.deleted_files {
            put_varint32(&mut b, TAG_DELETED_FILE);
            put_varint32(&mut b, *level as u32);
            put_varint64(&mut b, *number);
        }
        for (level, f) in &self.new_files {
            put_varint32(
                &mut b,
                match f.tier {
                    Tier::Ssd => TAG_NEW_FILE,
                    Tier::Pm => TAG_NEW_PM_FILE,
                },
            );
            put_varint32(&mut b, *level as u32);
            put_varint64(&mut b, f.number);
            put_varint64(&mut b, f.file_size);
            put_varint64(&mut b, f.num_entries);
            put_length_prefixed(&mut b, &f.smallest);
            put_length_prefixed(&mut b, &f.largest);
        }
        b
    }

    /// Parses an edit; `location` names the manifest in errors.
    pub fn decode(src: &[u8], location: &str) -> Result<VersionEdit> {
        let bad = |what: &str| Error::corruption(location, format!("version edit: bad {what}"));
        let mut d = Decoder::new(src);
        let mut e = VersionEdit::default();
        while !d.is_empty() {
            let tag = d.varint32().ok_or_else(|| bad("tag"))?;
            match tag {
                TAG_LOG_NUMBER => {
                    e.log_number = Some(d.varint64().ok_or_else(|| bad("log number"))?)
                }
                TAG_NEXT_FILE_NUMBER => {
                    e.next_file_number = Some(d.varint64().ok_or_else(|| bad("next file"))?)
                }
                TAG_LAST_SEQUENCE => {
                    e.last_sequence = Some(d.varint64().ok_or_else(|| bad("last sequence"))?)
                }
                TAG_COMPACT_POINTER => {
                    let level = d.varint32().ok_or_else(|| bad("level"))? as usize;
                    let key = d.length_prefixed().ok_or_else(|| bad("compact pointer"))?;
                    e.compact_pointers.push((level, key.to_vec()));
                }
                TAG_DELETED_FILE => {
                    let level = d.varint32().ok_or_else(|| bad("level"))? as usize;
                    let n = d.varint64().ok_or_else(|| bad("deleted file"))?;
                    e.deleted_files.push((level, n));
                }
                TAG_NEW_FILE | TAG_NEW_PM_FILE => {
                    let level = d.varint32().ok_or_else(|| bad("level"))? as usize;
                    let f = FileMetaData {
                        number: d.varint64().ok_or_else(|| bad("file number"))?,
                        file_size: d.varint64().ok_or_else(|| bad("file size"))?,
                        num_entries: d.varint64().ok_or_else(|| bad("entry count"))?,
                        smallest: d
                            .length_prefixed()
                            .ok_or_else(|| bad("smallest key"))?
                            .to_vec(),
                        largest: d
                            .length_prefixed()
                            .ok_or_else(|| bad("largest key"))?
                            .to_vec(),
                        tier: if tag == TAG_NEW_PM_FILE {
                            Tier::Pm
                        } else {
                            Tier::Ssd
                        },
                    };
                    e.new_files.push((level, f));
                }
                TAG_DESIGN => {
                    let s = d.length_prefixed().ok_or_else(|| bad("design"))?;
                    e.design = Some(String::from_utf8(s.to_vec()).map_err(|_| bad("design name"))?);
                }
                TAG_FORMAT_VERSION => {
                    e.format_version = Some(d.varint32().ok_or_else(|| bad("format version"))?)
                }
                TAG_WAL_TIER => e.wal_tier = Some(d.varint32().ok_or_else(|| bad("WAL tier"))?),
                TAG_NUM_LEVELS => {
                    e.num_levels = Some(d.varint32().ok_or_else(|| bad("level count"))?)
                }
                TAG_IDENTITY => {
                    let id = d.bytes(16).ok_or_else(|| bad("identity"))?;
                    e.identity = Some(u128::from_le_bytes(id.try_into().expect("16 bytes")));
                }
                TAG_LOG_CREATED => {
                    e.log_created = match d.varint32() {
                        Some(0) => Some(false),
                        Some(1) => Some(true),
                        _ => return Err(bad("log state")),
                    }
                }
                _ => return Err(bad(&format!("tag {tag}"))),
            }
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};

    #[test]
    fn round_trip_and_truncation() {
        let e = VersionEdit {
            log_number: Some(7),
            next_file_number: Some(12),
            last_sequence: Some(1 << 40),
            compact_pointers: vec![(2, make_internal_key(b"m", 5, ValueType::Value))],
            deleted_files: vec![(1, 4), (2, 9)],
            new_files: vec![
                (
                    3,
                    FileMetaData {
                        number: 11,
                        file_size: 4096,
                        num_entries: 10,
                        smallest: make_internal_key(b"a", 1, ValueType::Value),
                        largest: make_internal_key(b"z", 2, ValueType::Deletion),
                        tier: Tier::Ssd,
                    },
                ),
                (
                    0,
                    FileMetaData {
                        number: 12,
                        file_size: 8192,
                        num_entries: 3,
                        smallest: make_internal_key(b"b", 3, ValueType::Value),
                        largest: make_internal_key(b"c", 4, ValueType::Value),
                        tier: Tier::Pm,
                    },
                ),
            ],
            design: Some("leveled".into()),
            format_version: Some(2),
            num_levels: Some(7),
            wal_tier: Some(1),
            identity: Some(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210),
            log_created: Some(false),
        };
        let enc = e.encode();
        assert_eq!(VersionEdit::decode(&enc, "m").unwrap(), e);
        for cut in 1..enc.len() {
            // Every strict prefix either fails or decodes to something different: never a panic.
            if let Ok(d) = VersionEdit::decode(&enc[..cut], "m") {
                assert_ne!(d, e);
            }
        }
        assert!(VersionEdit::decode(&[99], "m").unwrap_err().is_corruption());
    }
}
