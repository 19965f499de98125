//! `VersionEdit`: one manifest record, the difference between two versions.
//!
//! Encoding (see `docs/FORMATS.md`): a sequence of `tag: varint32` + fields. Database-wide and
//! front-end fields have a tag each; every stage's changes are one tagged block holding its own
//! sub-tags, so one record can change several stages at once (a compaction that moves runs
//! from one stage to the next commits in one record). Unknown tags are corruption (an older
//! binary must not silently drop fields of a newer one).

use crate::tier::Tier;
use crate::util::coding::{put_length_prefixed, put_varint32, put_varint64, Decoder};
use crate::version::{Backing, FileMetaData, KeyRange, RowInfo, RunKind, TreeRoles};
use crate::{Error, Result};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE_NUMBER: u32 = 3;
const TAG_LAST_SEQUENCE: u32 = 4;
const TAG_DESIGN: u32 = 20;
const TAG_FORMAT_VERSION: u32 = 21;
const TAG_WAL_TIER: u32 = 23;
const TAG_IDENTITY: u32 = 24;
const TAG_LOG_CREATED: u32 = 25;
/// The PM pool's path, when it is not `pm.pool` in the database directory (optional: older
/// manifests lack it).
const TAG_PM_PATH: u32 = 26;
/// The pool's open epoch (`db/owner.rs`).
const TAG_POOL_EPOCH: u32 = 27;
const TAG_STAGE: u32 = 30;

const STAGE_GROUP_COUNT: u32 = 1;
const STAGE_DELETED_RUN: u32 = 2;
const STAGE_ADDED_RUN: u32 = 3;
const STAGE_POINTER: u32 = 4;
/// A run added to a set of a `Sets` group: the fields of `STAGE_ADDED_RUN`, then the set id.
const STAGE_ADDED_SET_RUN: u32 = 5;
/// A row added to a row container: the fields of `STAGE_ADDED_RUN`, then the row's
/// `RowInfo` (hints, dead ranges, size sketch).
const STAGE_ADDED_ROW: u32 = 6;
/// The roles of the stage's L0 trees (LAB-DB): varint64 mutable, varint64 immutable tree
/// numbers, 0 for none. Optional: a stage without trees never writes it, so manifests of other
/// designs, and those written before it existed, read unchanged.
const STAGE_TREES: u32 = 7;
/// A row added to a row container with the entries of its dead ranges: the fields of
/// `STAGE_ADDED_ROW`, then the count of entry intervals (0, or one per dead range) and per
/// interval its first and end entry (varint32 each). Rows recorded by `STAGE_ADDED_ROW` (the
/// format before it) read with their intervals unknown.
const STAGE_ADDED_ROW_ENTRIES: u32 = 8;
/// The value logs a run added by the record before names (key-value separation): varint64
/// run number, the count, then per log varint64 number and varint64 record bytes. Written
/// only for runs that name logs, so other manifests read unchanged.
const STAGE_VALUE_REFS: u32 = 9;
/// After an added run made of part of another run's file: the run's number, then the file's
/// number and size.
const STAGE_BACKING: u32 = 10;

/// The tier's code in the manifest.
pub(crate) fn tier_code(tier: Tier) -> u32 {
    match tier {
        Tier::Ssd => 0,
        Tier::Pm => 1,
    }
}

fn tier_from_code(code: u32) -> Option<Tier> {
    match code {
        0 => Some(Tier::Ssd),
        1 => Some(Tier::Pm),
        _ => None,
    }
}

/// The changes of one stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StageEdit {
    /// The stage's index in the design.
    pub stage: usize,
    /// The stage's group count, fixed at creation (snapshot records only).
    pub group_count: Option<usize>,
    /// Runs removed: (group, file number).
    pub deleted: Vec<(usize, u64)>,
    /// Runs added: (group, metadata).
    pub added: Vec<(usize, FileMetaData)>,
    /// Where the next size-triggered compaction of a group starts (round-robin): (group, key).
    pub pointers: Vec<(usize, Vec<u8>)>,
    /// The new roles of the stage's L0 trees (LAB-DB: a switch, or the immutable tree retired
    /// by its last chunk compaction); in a snapshot record, the current roles.
    pub trees: Option<TreeRoles>,
}

impl StageEdit {
    fn is_empty(&self) -> bool {
        self.group_count.is_none()
            && self.deleted.is_empty()
            && self.added.is_empty()
            && self.pointers.is_empty()
            && self.trees.is_none()
    }
}

/// Changes to apply to a version, plus database-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WAL files numbered below this are obsolete (their data is in the stages).
    pub log_number: Option<u64>,
    /// The next file number to allocate.
    pub next_file_number: Option<u64>,
    /// The last sequence number used by data in the stages.
    pub last_sequence: Option<u64>,
    /// Per-stage changes, at most one per stage.
    pub stages: Vec<StageEdit>,
    /// The design the database was created with (first record of every manifest).
    pub design: Option<String>,
    /// The on-disk format version the database was created with.
    pub format_version: Option<u32>,
    /// Where the database keeps its WAL, fixed at creation.
    pub wal_tier: Option<Tier>,
    /// The database's identity, fixed at creation (also recorded in its PM pool).
    pub identity: Option<u128>,
    /// Whether the WAL numbered `log_number` exists: `Some(false)` when recovery logs a new
    /// log number before it creates that WAL (it then logs `Some(true)`). An edit that sets
    /// `log_number` without this field names a WAL that exists.
    pub log_created: Option<bool>,
    /// Where the database's PM pool is: the absolute path it was created or last opened with,
    /// recorded only when that is not `pm.pool` in the database directory (snapshot records
    /// only; manifests written before the field existed lack it, which means the default).
    pub pm_path: Option<PathBuf>,
    /// The PM pool's open epoch this database reached (raised by every writable open; the pool
    /// holds it too, so a copy of the pool older or newer than the manifest is refused).
    /// Manifests written before the field existed lack it: no check.
    pub pool_epoch: Option<u64>,
}

impl VersionEdit {
    /// The changes of `stage`, added if the edit has none yet.
    pub fn stage_mut(&mut self, stage: usize) -> &mut StageEdit {
        match self.stages.iter().position(|s| s.stage == stage) {
            Some(i) => &mut self.stages[i],
            None => {
                self.stages.push(StageEdit {
                    stage,
                    ..StageEdit::default()
                });
                self.stages.last_mut().expect("just pushed")
            }
        }
    }

    /// Every run added, with its stage and group.
    pub fn added_runs(&self) -> impl Iterator<Item = (usize, usize, &FileMetaData)> + '_ {
        self.stages
            .iter()
            .flat_map(|s| s.added.iter().map(move |(g, f)| (s.stage, *g, f)))
    }

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
        if let Some(t) = self.wal_tier {
            put_varint32(&mut b, TAG_WAL_TIER);
            put_varint32(&mut b, tier_code(t));
        }
        if let Some(id) = self.identity {
            put_varint32(&mut b, TAG_IDENTITY);
            b.extend_from_slice(&id.to_le_bytes());
        }
        if let Some(created) = self.log_created {
            put_varint32(&mut b, TAG_LOG_CREATED);
            put_varint32(&mut b, u32::from(created));
        }
        if let Some(path) = &self.pm_path {
            put_varint32(&mut b, TAG_PM_PATH);
            put_length_prefixed(&mut b, path.as_os_str().as_bytes());
        }
        for (tag, v) in [
            (TAG_POOL_EPOCH, self.pool_epoch),
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE_NUMBER, self.next_file_number),
            (TAG_LAST_SEQUENCE, self.last_sequence),
        ] {
            if let Some(v) = v {
                put_varint32(&mut b, tag);
                put_varint64(&mut b, v);
            }
        }
        for s in self.stages.iter().filter(|s| !s.is_empty()) {
            let block = encode_stage(s);
            put_varint32(&mut b, TAG_STAGE);
            put_varint32(&mut b, s.stage as u32);
            put_length_prefixed(&mut b, &block);
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
                TAG_DESIGN => {
                    let s = d.length_prefixed().ok_or_else(|| bad("design"))?;
                    e.design = Some(String::from_utf8(s.to_vec()).map_err(|_| bad("design name"))?);
                }
                TAG_FORMAT_VERSION => {
                    e.format_version = Some(d.varint32().ok_or_else(|| bad("format version"))?)
                }
                TAG_WAL_TIER => {
                    let code = d.varint32().ok_or_else(|| bad("WAL tier"))?;
                    e.wal_tier = Some(tier_from_code(code).ok_or_else(|| bad("WAL tier"))?);
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
                TAG_POOL_EPOCH => {
                    e.pool_epoch = Some(d.varint64().ok_or_else(|| bad("pool epoch"))?)
                }
                TAG_PM_PATH => {
                    let p = d.length_prefixed().ok_or_else(|| bad("PM pool path"))?;
                    if p.is_empty() {
                        return Err(bad("PM pool path (empty)"));
                    }
                    e.pm_path = Some(PathBuf::from(OsStr::from_bytes(p)));
                }
                TAG_STAGE => {
                    let stage = d.varint32().ok_or_else(|| bad("stage"))? as usize;
                    let block = d.length_prefixed().ok_or_else(|| bad("stage block"))?;
                    if e.stages.iter().any(|s| s.stage == stage) {
                        return Err(bad("stage block (stage named twice)"));
                    }
                    let mut s = decode_stage(block).map_err(&bad)?;
                    s.stage = stage;
                    e.stages.push(s);
                }
                _ => {
                    return Err(bad(&format!(
                        "tag {tag} (unknown: a newer format, or damage)"
                    )))
                }
            }
        }
        Ok(e)
    }
}

fn encode_stage(s: &StageEdit) -> Vec<u8> {
    let mut b = Vec::new();
    if let Some(n) = s.group_count {
        put_varint32(&mut b, STAGE_GROUP_COUNT);
        put_varint32(&mut b, n as u32);
    }
    for (group, key) in &s.pointers {
        put_varint32(&mut b, STAGE_POINTER);
        put_varint32(&mut b, *group as u32);
        put_length_prefixed(&mut b, key);
    }
    if let Some(t) = s.trees {
        put_varint32(&mut b, STAGE_TREES);
        put_varint64(&mut b, t.mutable);
        put_varint64(&mut b, t.immutable);
    }
    for (group, number) in &s.deleted {
        put_varint32(&mut b, STAGE_DELETED_RUN);
        put_varint32(&mut b, *group as u32);
        put_varint64(&mut b, *number);
    }
    for (group, f) in &s.added {
        let tag = match (&f.row, f.set) {
            (Some(_), _) => STAGE_ADDED_ROW_ENTRIES,
            (None, 0) => STAGE_ADDED_RUN,
            (None, _) => STAGE_ADDED_SET_RUN,
        };
        put_varint32(&mut b, tag);
        put_varint32(&mut b, *group as u32);
        b.push(f.kind.code());
        put_varint32(&mut b, tier_code(f.tier));
        put_varint64(&mut b, f.number);
        put_varint64(&mut b, f.file_size);
        put_varint64(&mut b, f.num_entries);
        put_length_prefixed(&mut b, &f.smallest);
        put_length_prefixed(&mut b, &f.largest);
        match &f.row {
            Some(row) => encode_row(&mut b, row),
            None if f.set != 0 => put_varint64(&mut b, f.set),
            None => {}
        }
        if !f.value_refs.is_empty() {
            put_varint32(&mut b, STAGE_VALUE_REFS);
            put_varint64(&mut b, f.number);
            put_varint32(&mut b, f.value_refs.len() as u32);
            for (n, bytes) in &f.value_refs {
                put_varint64(&mut b, *n);
                put_varint64(&mut b, *bytes);
            }
        }
        if let Some(backing) = &f.backing {
            put_varint32(&mut b, STAGE_BACKING);
            put_varint64(&mut b, f.number);
            put_varint64(&mut b, backing.number);
            put_varint64(&mut b, backing.file_size);
        }
    }
    b
}

/// A row's `RowInfo`: hints (varint64), dead ranges (count, then per range the start,
/// whether it has an end (one byte, 0 or 1) and the end), sketch (count, then per point the
/// key and the offset).
fn encode_row(b: &mut Vec<u8>, row: &RowInfo) {
    put_varint64(b, row.hints_into);
    put_varint32(b, row.dead.len() as u32);
    for r in &row.dead {
        put_length_prefixed(b, &r.start);
        match &r.end {
            Some(e) => {
                b.push(1);
                put_length_prefixed(b, e);
            }
            None => b.push(0),
        }
    }
    put_varint32(b, row.sketch.len() as u32);
    for (key, offset) in &row.sketch {
        put_length_prefixed(b, key);
        put_varint64(b, *offset);
    }
    put_varint32(b, row.dead_entries.len() as u32);
    for (first, end) in &row.dead_entries {
        put_varint32(b, *first);
        put_varint32(b, *end);
    }
}

fn decode_row(d: &mut Decoder, with_entries: bool) -> std::result::Result<RowInfo, &'static str> {
    let hints_into = d.varint64().ok_or("row hints")?;
    let n = d.varint32().ok_or("row dead ranges")?;
    let mut dead = Vec::new();
    for _ in 0..n {
        let start = d.length_prefixed().ok_or("dead range")?.to_vec();
        let end = match d.u8().ok_or("dead range")? {
            0 => None,
            1 => Some(d.length_prefixed().ok_or("dead range")?.to_vec()),
            _ => return Err("dead range"),
        };
        dead.push(KeyRange { start, end });
    }
    let n = d.varint32().ok_or("row sketch")?;
    let mut sketch = Vec::new();
    for _ in 0..n {
        let key = d.length_prefixed().ok_or("row sketch")?.to_vec();
        sketch.push((key, d.varint64().ok_or("row sketch")?));
    }
    let mut dead_entries = Vec::new();
    if with_entries {
        let n = d.varint32().ok_or("row dead entries")?;
        for _ in 0..n {
            let first = d.varint32().ok_or("row dead entries")?;
            dead_entries.push((first, d.varint32().ok_or("row dead entries")?));
        }
    }
    Ok(RowInfo {
        hints_into,
        dead,
        dead_entries,
        sketch,
    })
}

/// Decodes a stage block; the error names what was bad.
fn decode_stage(block: &[u8]) -> std::result::Result<StageEdit, &'static str> {
    let mut d = Decoder::new(block);
    let mut s = StageEdit::default();
    let group = |d: &mut Decoder| d.varint32().map(|g| g as usize).ok_or("group");
    while !d.is_empty() {
        match d.varint32().ok_or("stage tag")? {
            STAGE_GROUP_COUNT => s.group_count = Some(group(&mut d)?),
            STAGE_POINTER => {
                let g = group(&mut d)?;
                let key = d.length_prefixed().ok_or("compaction pointer")?;
                s.pointers.push((g, key.to_vec()));
            }
            STAGE_TREES => {
                if s.trees.is_some() {
                    return Err("tree roles (named twice)");
                }
                let mutable = d.varint64().ok_or("tree roles")?;
                let immutable = d.varint64().ok_or("tree roles")?;
                if immutable != 0 && (mutable == immutable || mutable == 0) {
                    return Err("tree roles (an immutable tree without a distinct mutable one)");
                }
                s.trees = Some(TreeRoles { mutable, immutable });
            }
            STAGE_DELETED_RUN => {
                let g = group(&mut d)?;
                s.deleted.push((g, d.varint64().ok_or("deleted run")?));
            }
            tag @ (STAGE_ADDED_RUN
            | STAGE_ADDED_SET_RUN
            | STAGE_ADDED_ROW
            | STAGE_ADDED_ROW_ENTRIES) => {
                let g = group(&mut d)?;
                let kind = d.u8().and_then(RunKind::from_code).ok_or("run kind")?;
                let tier = d.varint32().and_then(tier_from_code).ok_or("run tier")?;
                let f = FileMetaData {
                    number: d.varint64().ok_or("run number")?,
                    file_size: d.varint64().ok_or("run size")?,
                    num_entries: d.varint64().ok_or("entry count")?,
                    smallest: d.length_prefixed().ok_or("smallest key")?.to_vec(),
                    largest: d.length_prefixed().ok_or("largest key")?.to_vec(),
                    tier,
                    kind,
                    set: 0,
                    row: None,
                    value_refs: Vec::new(),
                    backing: None,
                };
                let (set, row) = match tag {
                    STAGE_ADDED_SET_RUN => match d.varint64() {
                        Some(set) if set != 0 => (set, None),
                        _ => return Err("run set"),
                    },
                    STAGE_ADDED_ROW => (0, Some(Box::new(decode_row(&mut d, false)?))),
                    STAGE_ADDED_ROW_ENTRIES => (0, Some(Box::new(decode_row(&mut d, true)?))),
                    _ => (0, None),
                };
                s.added.push((g, FileMetaData { set, row, ..f }));
            }
            STAGE_VALUE_REFS => {
                let number = d.varint64().ok_or("value refs")?;
                let count = d.varint32().ok_or("value refs")?;
                let mut refs = Vec::new();
                for _ in 0..count {
                    let n = d.varint64().ok_or("value refs")?;
                    refs.push((n, d.varint64().ok_or("value refs")?));
                }
                match s.added.last_mut() {
                    Some((_, f)) if f.number == number && f.value_refs.is_empty() => {
                        f.value_refs = refs;
                    }
                    _ => return Err("value refs of a run the record before did not add"),
                }
            }
            STAGE_BACKING => {
                let number = d.varint64().ok_or("backing file")?;
                let file = d.varint64().ok_or("backing file")?;
                let file_size = d.varint64().ok_or("backing file")?;
                match s.added.last_mut() {
                    Some((_, f)) if f.number == number && f.backing.is_none() && file != number => {
                        f.backing = Some(Backing {
                            number: file,
                            file_size,
                        });
                    }
                    _ => return Err("backing file of a run the record before did not add"),
                }
            }
            _ => return Err("stage tag (unknown: a newer format, or damage)"),
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};

    fn run(number: u64, tier: Tier) -> FileMetaData {
        FileMetaData {
            number,
            file_size: 4096 * number,
            num_entries: 10,
            smallest: make_internal_key(b"a", 1, ValueType::Value),
            largest: make_internal_key(b"z", 2, ValueType::Deletion),
            tier,
            kind: RunKind::Sst,
            set: 0,
            row: None,
            value_refs: Vec::new(),
            backing: None,
        }
    }

    /// A tag this build does not know (one a newer build wrote) is corruption that says so,
    /// at the top level and inside a stage block, never a field silently dropped.
    #[test]
    fn unknown_tags_are_reported_as_a_newer_format_or_damage() {
        let mut b = VersionEdit {
            log_number: Some(7),
            ..VersionEdit::default()
        }
        .encode();
        put_varint32(&mut b, 99);
        put_varint64(&mut b, 1);
        let e = VersionEdit::decode(&b, "MANIFEST-000001").unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert!(
            e.to_string().contains("tag 99 (unknown: a newer format"),
            "{e}"
        );

        let mut block = Vec::new();
        put_varint32(&mut block, STAGE_GROUP_COUNT);
        put_varint32(&mut block, 3);
        put_varint32(&mut block, 77);
        let mut b = Vec::new();
        put_varint32(&mut b, TAG_STAGE);
        put_varint32(&mut b, 1);
        put_length_prefixed(&mut b, &block);
        let e = VersionEdit::decode(&b, "MANIFEST-000001").unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("stage tag (unknown"), "{e}");
        assert!(e.to_string().contains("MANIFEST-000001"), "{e}");
    }

    #[test]
    fn round_trip_and_truncation() {
        let mut e = VersionEdit {
            log_number: Some(7),
            next_file_number: Some(12),
            last_sequence: Some(1 << 40),
            design: Some("leveled".into()),
            format_version: Some(3),
            wal_tier: Some(Tier::Pm),
            identity: Some(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210),
            log_created: Some(false),
            pm_path: Some(PathBuf::from("/dev/shm/db \u{e9}.pool")),
            pool_epoch: Some(1 << 33),
            ..VersionEdit::default()
        };
        let s0 = e.stage_mut(0);
        s0.group_count = Some(7);
        s0.pointers
            .push((2, make_internal_key(b"m", 5, ValueType::Value)));
        s0.deleted.extend([(1, 4), (2, 9)]);
        s0.added.push((3, run(11, Tier::Ssd)));
        s0.trees = Some(TreeRoles {
            mutable: 300,
            immutable: 1 << 40,
        });
        e.stage_mut(2).added.push((0, run(12, Tier::Pm)));
        e.stage_mut(2).added.push((
            0,
            FileMetaData {
                value_refs: vec![(9, 1 << 33), (14, 517)],
                backing: None,
                ..run(14, Tier::Pm)
            },
        ));
        // Part of run 14's file, with 14's value refs.
        e.stage_mut(2).added.push((
            0,
            FileMetaData {
                value_refs: vec![(9, 1 << 32), (14, 258)],
                backing: Some(Backing {
                    number: 14,
                    file_size: 4096 * 14,
                }),
                ..run(15, Tier::Pm)
            },
        ));
        e.stage_mut(2).added.push((
            1,
            FileMetaData {
                kind: RunKind::PmArray,
                set: 12,
                ..run(13, Tier::Pm)
            },
        ));
        e.stage_mut(2).added.push((
            0,
            FileMetaData {
                kind: RunKind::PmArray,
                row: Some(Box::new(RowInfo {
                    hints_into: 13,
                    dead: vec![
                        KeyRange {
                            start: Vec::new(),
                            end: Some(b"c".to_vec()),
                        },
                        KeyRange {
                            start: b"x".to_vec(),
                            end: None,
                        },
                    ],
                    dead_entries: vec![(0, 3), (40, 50)],
                    sketch: vec![(b"a".to_vec(), 0), (b"m".to_vec(), 4096)],
                })),
                ..run(14, Tier::Pm)
            },
        ));
        e.stage_mut(2).added.push((
            0,
            FileMetaData {
                row: Some(Box::default()),
                ..run(15, Tier::Pm)
            },
        ));
        let enc = e.encode();
        assert_eq!(VersionEdit::decode(&enc, "m").unwrap(), e);
        for cut in 1..enc.len() {
            // Every strict prefix either fails or decodes to something different: never a panic.
            if let Ok(d) = VersionEdit::decode(&enc[..cut], "m") {
                assert_ne!(d, e);
            }
        }
        assert!(VersionEdit::decode(&[99], "m").unwrap_err().is_corruption());
        // A pool path is any bytes a Unix path holds; an empty one is corruption.
        let odd = VersionEdit {
            pm_path: Some(PathBuf::from(OsStr::from_bytes(b"/pm/\xff\x01.pool"))),
            ..VersionEdit::default()
        };
        assert_eq!(VersionEdit::decode(&odd.encode(), "m").unwrap(), odd);
        let mut empty = Vec::new();
        put_varint32(&mut empty, TAG_PM_PATH);
        put_length_prefixed(&mut empty, b"");
        assert!(VersionEdit::decode(&empty, "m")
            .unwrap_err()
            .is_corruption());
        // A stage named twice is corruption.
        let mut twice = e.encode();
        twice.extend_from_slice(&e.encode());
        assert!(VersionEdit::decode(&twice, "m")
            .unwrap_err()
            .is_corruption());
    }

    /// A backing file names the run added just before it, once, and not the run itself.
    #[test]
    fn a_backing_file_must_follow_its_run() {
        let mut e = VersionEdit::default();
        e.stage_mut(0).added.push((
            1,
            FileMetaData {
                backing: Some(Backing {
                    number: 3,
                    file_size: 100,
                }),
                ..run(7, Tier::Pm)
            },
        ));
        let enc = e.encode();
        assert_eq!(VersionEdit::decode(&enc, "m").unwrap(), e);
        let stage_of = |backing_of: u64, file: u64| {
            let mut b = encode_stage(&StageEdit {
                added: vec![(1, run(7, Tier::Pm))],
                ..StageEdit::default()
            });
            put_varint32(&mut b, STAGE_BACKING);
            put_varint64(&mut b, backing_of);
            put_varint64(&mut b, file);
            put_varint64(&mut b, 100);
            decode_stage(&b)
        };
        assert!(stage_of(7, 3).is_ok());
        assert_eq!(
            stage_of(8, 3).unwrap_err(),
            "backing file of a run the record before did not add"
        );
        assert!(stage_of(7, 7).is_err(), "a run cannot back itself");
    }

    /// A row recorded by the format before dead entry intervals (stage sub-tag 6) reads with
    /// its intervals unknown; the current sub-tag 8 carries them.
    #[test]
    fn rows_of_the_older_format_read_with_unknown_dead_entries() {
        let info = RowInfo {
            hints_into: 3,
            dead: vec![KeyRange {
                start: b"b".to_vec(),
                end: Some(b"d".to_vec()),
            }],
            dead_entries: Vec::new(),
            sketch: vec![(b"a".to_vec(), 0)],
        };
        let mut s = StageEdit::default();
        s.added.push((
            0,
            FileMetaData {
                kind: RunKind::PmArray,
                row: Some(Box::new(info.clone())),
                ..run(9, Tier::Pm)
            },
        ));
        let block = encode_stage(&s);
        assert_eq!(block[0] as u32, STAGE_ADDED_ROW_ENTRIES);
        assert_eq!(*block.last().unwrap(), 0, "no intervals");
        let mut old = vec![STAGE_ADDED_ROW as u8];
        old.extend_from_slice(&block[1..block.len() - 1]);
        let d = decode_stage(&old).unwrap();
        assert_eq!(d, s);
        assert!(d.added[0].1.row.as_ref().unwrap().dead_entries.is_empty());
        // With intervals, the current sub-tag round-trips them.
        let mut s2 = s.clone();
        s2.added[0].1.row.as_mut().unwrap().dead_entries = vec![(2, 7)];
        assert_eq!(decode_stage(&encode_stage(&s2)).unwrap(), s2);
    }

    /// The tree roles (stage sub-tag 7) round-trip, alone or with other changes, and a stage
    /// block without them (every manifest written before they existed) reads as before.
    #[test]
    fn tree_roles_round_trip_and_old_records_read_unchanged() {
        for roles in [
            TreeRoles::default(),
            TreeRoles {
                mutable: 5,
                immutable: 0,
            },
            TreeRoles {
                mutable: 9,
                immutable: 5,
            },
        ] {
            let mut e = VersionEdit {
                log_number: Some(4),
                ..VersionEdit::default()
            };
            e.stage_mut(0).trees = Some(roles);
            let enc = e.encode();
            let d = VersionEdit::decode(&enc, "m").unwrap();
            assert_eq!(d, e);
            assert_eq!(d.stages[0].trees, Some(roles));
        }
        // An old snapshot record, written field by field as builds before the sub-tag did:
        // log number 3, stage 0 with 7 groups and one SST added to group 1.
        let f = run(8, Tier::Ssd);
        let mut block = Vec::new();
        put_varint32(&mut block, 1);
        put_varint32(&mut block, 7);
        put_varint32(&mut block, 3);
        put_varint32(&mut block, 1);
        block.push(1);
        put_varint32(&mut block, 0);
        put_varint64(&mut block, f.number);
        put_varint64(&mut block, f.file_size);
        put_varint64(&mut block, f.num_entries);
        put_length_prefixed(&mut block, &f.smallest);
        put_length_prefixed(&mut block, &f.largest);
        let mut old = Vec::new();
        put_varint32(&mut old, 2);
        put_varint64(&mut old, 3);
        put_varint32(&mut old, 30);
        put_varint32(&mut old, 0);
        put_length_prefixed(&mut old, &block);
        let d = VersionEdit::decode(&old, "m").unwrap();
        let mut expected = VersionEdit {
            log_number: Some(3),
            ..VersionEdit::default()
        };
        expected.stage_mut(0).group_count = Some(7);
        expected.stage_mut(0).added.push((1, f));
        assert_eq!(d, expected);
        assert_eq!(d.stages[0].trees, None);
        // And an edit without roles encodes exactly as before (no sub-tag 7 anywhere).
        assert_eq!(expected.encode(), old);

        // Damage: roles named twice, a truncated pair, an immutable tree without a distinct
        // mutable one.
        let stage_block = |body: &dyn Fn(&mut Vec<u8>)| {
            let mut block = Vec::new();
            body(&mut block);
            let mut b = Vec::new();
            put_varint32(&mut b, TAG_STAGE);
            put_varint32(&mut b, 0);
            put_length_prefixed(&mut b, &block);
            VersionEdit::decode(&b, "MANIFEST-000002")
        };
        let roles = |b: &mut Vec<u8>, m: u64, i: u64| {
            put_varint32(b, STAGE_TREES);
            put_varint64(b, m);
            put_varint64(b, i);
        };
        assert!(stage_block(&|b| roles(b, 9, 5)).is_ok());
        for bad in [
            stage_block(&|b| {
                roles(b, 9, 5);
                roles(b, 9, 5);
            }),
            stage_block(&|b| {
                put_varint32(b, STAGE_TREES);
                put_varint64(b, 9);
            }),
            stage_block(&|b| roles(b, 5, 5)),
            stage_block(&|b| roles(b, 0, 5)),
        ] {
            let e = bad.unwrap_err();
            assert!(
                e.is_corruption() && e.to_string().contains("tree roles"),
                "{e}"
            );
        }
    }
}
