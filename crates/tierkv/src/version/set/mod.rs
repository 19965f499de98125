//! `VersionSet`: the current version, the file-number and sequence counters, and the manifest.
//!
//! Manifest protocol (DESIGN.md section 4): every change is written to the manifest and synced
//! before the new version is installed. Each open starts a fresh manifest whose first record is a
//! snapshot of the whole state, so a torn tail of an older manifest is never appended to.
//! `CURRENT` names the live manifest; it is replaced by writing a temporary file, syncing it,
//! renaming it over `CURRENT` and syncing the directory. The manifest is a file of the database
//! directory or, with `pm.manifest_on_pm`, of the PM pool's file system (then `CURRENT`, still
//! in the directory, also says how to open the pool: `super::current`); the open decides, and
//! each fresh manifest goes where the options of that open say.
//!
//! Thread-safety: not internally synchronized; the database keeps it under its state mutex.

use super::{set_current, Current, StageLayout, Version, VersionEdit};
use crate::filename::{manifest_file_name, parse_file_name};
use crate::fs::FileSystem;
use crate::log::{LogReader, LogWriter};
use crate::options::Options;
use crate::stats::{Counters, IoPurpose, Part};
use crate::tier::Tier;
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A manifest in the database directory is replaced by a fresh snapshot at this size (as
/// RocksDB's `max_manifest_file_size`, smaller: a snapshot is cheap next to 64 MiB of edits).
pub const DEFAULT_MANIFEST_ROLL_BYTES: u64 = 64 << 20;

/// The on-disk format version written by this build.
pub const FORMAT_VERSION: u32 = 3;
/// The oldest format version this build opens. Format 1 had no database identity (its PM pools
/// cannot be bound to it), format 2 no per-stage records; both are refused with an error naming
/// the versions (no database of either was released).
pub const MIN_FORMAT_VERSION: u32 = 3;

/// The current version plus the counters and the manifest writer.
pub struct VersionSet {
    dir: PathBuf,
    /// The directory's file system (`CURRENT`).
    fs: Arc<dyn FileSystem>,
    /// Where the next manifest is written: the directory's file system or the pool's.
    manifest_place: (Tier, Arc<dyn FileSystem>),
    counters: Arc<Counters>,
    current: Arc<Version>,
    design: String,
    wal_tier: Tier,
    identity: u128,
    /// Where the PM pool is, when not `pm.pool` in the directory (see [`VersionEdit::pm_path`]);
    /// written into every manifest snapshot.
    pm_path: Option<PathBuf>,
    /// The PM pool's open epoch this database reached (see [`VersionEdit::pool_epoch`]);
    /// written into every manifest snapshot.
    pool_epoch: Option<u64>,
    /// The pool epoch the manifest holds: until it is `pool_epoch`, the next edit carries it.
    pool_epoch_written: Option<u64>,
    /// Whether the WAL numbered `log_number` exists (false between recovery's manifest record
    /// of a new log number and its creation of that WAL).
    pub log_created: bool,
    /// Bytes of a damaged or incomplete last record dropped from the manifest when it was read.
    pub manifest_torn_bytes: u64,
    /// Next file number to hand out.
    pub next_file_number: u64,
    /// Last sequence number persisted in the manifest (set by the caller before each edit).
    pub last_sequence: u64,
    /// WAL files below this number are obsolete.
    pub log_number: u64,
    /// Per stage and group: where the next size-triggered compaction starts (round-robin; the
    /// largest key of the last one), empty for the start.
    pub pointers: Vec<Vec<Vec<u8>>>,
    manifest: Option<(LogWriter, u64)>,
    /// Bytes in the live manifest, and in its first record (the snapshot).
    manifest_bytes: (u64, u64),
    /// The live manifest is replaced by a fresh snapshot once it holds this many bytes and
    /// four times its snapshot ([`VersionSet::set_manifest_roll_bytes`]).
    roll_bytes: u64,
    /// The number of the manifest this set was recovered from.
    recovered: Option<u64>,
}

impl VersionSet {
    /// Creates the manifest and `CURRENT` of a new, empty database, the manifest on the file
    /// system of `manifest_place` (the directory's, or the pool's for a manifest on PM).
    /// `identity` is the new database's identity (see [`new_identity`]).
    pub fn create(
        dir: &Path,
        options: &Options,
        identity: u128,
        counters: Arc<Counters>,
        manifest_place: (Tier, Arc<dyn FileSystem>),
    ) -> Result<VersionSet> {
        let layouts = options.design.layouts(options);
        let mut vs = VersionSet {
            dir: dir.to_path_buf(),
            fs: options.fs.clone(),
            manifest_place,
            counters,
            pointers: empty_pointers(&layouts),
            current: Arc::new(Version::new(layouts)),
            design: options.design.name().to_string(),
            wal_tier: options.design.wal_tier(options),
            identity,
            pm_path: pool_path_to_record(dir, options),
            pool_epoch: None,
            pool_epoch_written: None,
            log_created: true,
            manifest_torn_bytes: 0,
            next_file_number: 1,
            last_sequence: 0,
            log_number: 0,
            manifest: None,
            manifest_bytes: (0, 0),
            roll_bytes: DEFAULT_MANIFEST_ROLL_BYTES,
            recovered: None,
        };
        vs.log_and_apply(VersionEdit::default())?;
        Ok(vs)
    }

    /// Reads the manifest `current` names from `fs` (the directory's file system, or the
    /// pool's for a manifest on PM); writes nothing. Checks that the database was created with
    /// `options.design` and a compatible format, and that a manifest in the pool belongs to the
    /// database `CURRENT` describes. The set writes its next manifest back to the same place
    /// unless [`VersionSet::set_manifest_place`] moves it.
    pub fn recover(
        dir: &Path,
        options: &Options,
        counters: Arc<Counters>,
        current: &Current,
        fs: Arc<dyn FileSystem>,
    ) -> Result<VersionSet> {
        let name = current.manifest_name();
        let current_path = super::current_file_name(dir);
        let place = (current.tier(), fs);
        let vs =
            Self::recover_manifest(dir, &name, options, counters, place).map_err(|e| match e {
                Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                    Error::corruption(
                        current_path.display().to_string(),
                        format!(
                            "CURRENT names {name}{}, which is missing",
                            match current.tier() {
                                Tier::Pm => " in the PM pool",
                                Tier::Ssd => "",
                            }
                        ),
                    )
                }
                other => other,
            })?;
        if let Current::Pool { identity, .. } = current {
            if vs.identity != *identity {
                return Err(Error::corruption(
                    current_path.display().to_string(),
                    format!(
                        "CURRENT gives identity {identity:032x}, the manifest {name} in the PM \
                         pool {:032x}",
                        vs.identity
                    ),
                ));
            }
        }
        Ok(vs)
    }

    /// Reads the manifest `name` (whatever `CURRENT` says) from the file system of `place`,
    /// on which the set then writes its next manifest; writes nothing.
    pub fn recover_manifest(
        dir: &Path,
        name: &str,
        options: &Options,
        counters: Arc<Counters>,
        place: (Tier, Arc<dyn FileSystem>),
    ) -> Result<VersionSet> {
        let manifest_path = dir.join(name);
        let data = place.1.read_all(&manifest_path)?;
        counters.add_read(place.0, Part::Db, IoPurpose::Recovery, data.len() as u64);
        let location = match place.0 {
            Tier::Pm => format!("{} (in the PM pool)", manifest_path.display()),
            Tier::Ssd => manifest_path.display().to_string(),
        };
        let mut reader = LogReader::new(data, location.clone());
        let layouts = options.design.layouts(options);
        let mut r = Replayed {
            pointers: empty_pointers(&layouts),
            version: Version::new(Arc::clone(&layouts)),
            ..Replayed::default()
        };
        while let Some(record) = reader.next_record()? {
            let edit = VersionEdit::decode(&record, &location)?;
            r.apply(edit, dir, options, &layouts, &location)?;
        }
        let missing = |what: &str| Error::corruption(location.clone(), format!("no {what} record"));
        let design = r.design.ok_or_else(|| missing("design"))?;
        Ok(VersionSet {
            dir: dir.to_path_buf(),
            fs: options.fs.clone(),
            manifest_place: place,
            counters,
            current: Arc::new(r.version),
            design,
            wal_tier: options.design.wal_tier(options),
            identity: r.identity.ok_or_else(|| missing("identity"))?,
            pm_path: r.pm_path,
            pool_epoch: r.pool_epoch,
            pool_epoch_written: r.pool_epoch,
            log_created: r.log_created,
            manifest_torn_bytes: reader.tail().dropped_bytes,
            next_file_number: r.next_file.ok_or_else(|| missing("next file number"))?,
            last_sequence: r.last_seq.ok_or_else(|| missing("last sequence"))?,
            log_number: r.log_number.ok_or_else(|| missing("log number"))?,
            pointers: r.pointers,
            manifest: None,
            manifest_bytes: (0, 0),
            roll_bytes: DEFAULT_MANIFEST_ROLL_BYTES,
            recovered: parse_file_name(name).map(|(_, n)| n),
        })
    }

    /// Replaces the live manifest by a fresh snapshot once it holds `bytes` (and at least four
    /// times its snapshot, so that a large version is not rewritten at every edit). Default
    /// [`DEFAULT_MANIFEST_ROLL_BYTES`]; a manifest in the pool rolls at a chunk, so that it
    /// stays within the chunks the pool keeps for it.
    pub fn set_manifest_roll_bytes(&mut self, bytes: u64) {
        self.roll_bytes = bytes.max(1);
    }

    /// True if the live manifest is due for a rollover.
    fn manifest_full(&self) -> bool {
        let (bytes, snapshot) = self.manifest_bytes;
        bytes >= self.roll_bytes.max(snapshot.saturating_mul(4))
    }

    /// Where the next manifest (the first this process writes) goes. A manifest already
    /// started stays where it is.
    pub fn set_manifest_place(&mut self, tier: Tier, fs: Arc<dyn FileSystem>) {
        self.manifest_place = (tier, fs);
    }

    /// The number of the manifest this set was recovered from (`None` for a new database).
    pub fn recovered_manifest(&self) -> Option<u64> {
        self.recovered
    }

    /// The database's identity.
    pub fn identity(&self) -> u128 {
        self.identity
    }

    /// Where the manifest says the PM pool is, when not `pm.pool` in the directory.
    pub fn pm_path(&self) -> Option<&Path> {
        self.pm_path.as_deref()
    }

    /// Records where the PM pool is (`None`: `pm.pool` in the directory). An open that found
    /// the pool at an explicitly given path records that path, so a pool that moved needs its
    /// new path only once. Written with the next manifest snapshot (every open starts a fresh
    /// manifest).
    pub fn set_pm_path(&mut self, path: Option<PathBuf>) {
        self.pm_path = path;
    }

    /// The PM pool's open epoch the manifest records (`None`: never recorded).
    pub fn pool_epoch(&self) -> Option<u64> {
        self.pool_epoch
    }

    /// Sets the pool's open epoch; the next edit (or snapshot) records it.
    pub fn set_pool_epoch(&mut self, epoch: u64) {
        self.pool_epoch = Some(epoch);
    }

    /// True once the manifest records the pool epoch set last.
    pub fn pool_epoch_logged(&self) -> bool {
        self.pool_epoch == self.pool_epoch_written
    }

    /// The installed version.
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// Allocates a file number.
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Makes sure a later allocation never returns `n` (used while replaying WALs).
    pub fn mark_file_number_used(&mut self, n: u64) {
        self.next_file_number = self.next_file_number.max(n + 1);
    }

    /// The number of the live manifest, once one was written by this process.
    pub fn manifest_number(&self) -> Option<u64> {
        self.manifest.as_ref().map(|m| m.1)
    }

    /// Logs `edit` to the manifest (starting a fresh manifest if this process has none yet),
    /// syncs it, then installs the resulting version. On error nothing is installed and the
    /// caller must poison the database: the manifest's durable state is unknown.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        if edit.log_number.is_none() {
            edit.log_number = Some(self.log_number);
        }
        if !self.pool_epoch_logged() {
            edit.pool_epoch = self.pool_epoch;
        }
        let new_version = self.current.apply(&edit)?;
        for s in &edit.stages {
            for (group, key) in &s.pointers {
                self.pointers[s.stage][*group] = key.clone();
            }
        }
        let full = self.manifest_full();
        match self.manifest.as_mut() {
            Some(_) if full => {
                // A rollover: a fresh snapshot in a new manifest, `CURRENT` switched; the old
                // one is deleted by the next scan for obsolete files. A new manifest that finds
                // no room (a full pool) is removed again and the edit appended to the live
                // one, which `CURRENT` still names; the next attempt waits until the live one
                // has grown fourfold.
                let number = self.new_file_number();
                edit.next_file_number = Some(self.next_file_number);
                edit.last_sequence = Some(self.last_sequence);
                match self.write_manifest(number, &new_version, &edit) {
                    Ok(written) => self.switch_manifest(written)?,
                    Err(Error::NoSpace(_)) => {
                        self.manifest_bytes.1 = self.manifest_bytes.0;
                        let appended = self.append_edit(&edit);
                        self.or_to_directory(appended, &new_version, &mut edit)?;
                    }
                    Err(e) => return Err(e),
                }
            }
            Some(_) => {
                edit.next_file_number = Some(self.next_file_number);
                edit.last_sequence = Some(self.last_sequence);
                let appended = self.append_edit(&edit);
                self.or_to_directory(appended, &new_version, &mut edit)?;
            }
            None => {
                // Allocate the manifest's number before recording next_file_number in it.
                let number = self.new_file_number();
                edit.next_file_number = Some(self.next_file_number);
                edit.last_sequence = Some(self.last_sequence);
                let started = self.start_manifest(number, &new_version, &edit);
                self.or_to_directory(started, &new_version, &mut edit)?;
            }
        }
        self.log_created = next_log_created(&edit, self.log_number, self.log_created);
        self.log_number = edit.log_number.expect("set above");
        self.pool_epoch_written = self.pool_epoch;
        self.current = Arc::new(new_version);
        Ok(self.current())
    }

    /// What a commit does when writing `edit` to the manifest ended in `written`: a manifest
    /// in the pool that found no room (`NoSpace`, the pool full) moves to the database
    /// directory, as a flush that finds no room writes its run to the SSD. A fresh manifest
    /// there (a snapshot of `version` plus `edit`'s counters) commits the edit once `CURRENT`
    /// names it; until then `CURRENT` names the manifest in the pool, to which nothing of the
    /// edit was appended (its space is taken before a record is written).
    /// The manifest in the pool is deleted by the next scan for obsolete files; the next open
    /// puts the manifest where its options say (`pm.manifest_on_pm`). Every other outcome is
    /// returned as it is.
    fn or_to_directory(
        &mut self,
        written: Result<()>,
        version: &Version,
        edit: &mut VersionEdit,
    ) -> Result<()> {
        match written {
            Err(Error::NoSpace(m)) if self.manifest_place.0 == Tier::Pm => {
                let number = self.new_file_number();
                edit.next_file_number = Some(self.next_file_number);
                edit.last_sequence = Some(self.last_sequence);
                let place =
                    std::mem::replace(&mut self.manifest_place, (Tier::Ssd, Arc::clone(&self.fs)));
                let moved = self
                    .write_manifest(number, version, edit)
                    .and_then(|written| self.switch_manifest(written));
                if let Err(e) = moved {
                    self.manifest_place = place;
                    return Err(match e {
                        Error::NoSpace(e) => Error::NoSpace(format!(
                            "{m}; moving the manifest to the database directory failed too: {e}"
                        )),
                        e => e,
                    });
                }
                self.roll_bytes = DEFAULT_MANIFEST_ROLL_BYTES;
                self.counters
                    .pm_manifest_fallbacks
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            other => other,
        }
    }

    /// Writes a new manifest holding a snapshot of `version` plus `edit`'s counters on its
    /// place's file system, syncs it and its directory, then points `CURRENT` at it.
    fn start_manifest(&mut self, number: u64, version: &Version, edit: &VersionEdit) -> Result<()> {
        let written = self.write_manifest(number, version, edit)?;
        self.switch_manifest(written)
    }

    /// Writes and syncs a new manifest (a snapshot of `version` plus `edit`'s counters) on its
    /// place's file system, and its directory; `CURRENT` is not touched. On error the file is
    /// removed again.
    fn write_manifest(
        &self,
        number: u64,
        version: &Version,
        edit: &VersionEdit,
    ) -> Result<NewManifest> {
        let path = manifest_file_name(&self.dir, number);
        let mut snapshot = VersionEdit {
            design: Some(self.design.clone()),
            format_version: Some(FORMAT_VERSION),
            wal_tier: Some(self.wal_tier),
            identity: Some(self.identity),
            pm_path: self.pm_path.clone(),
            pool_epoch: self.pool_epoch,
            log_created: Some(next_log_created(edit, self.log_number, self.log_created)),
            log_number: edit.log_number,
            next_file_number: edit.next_file_number,
            last_sequence: edit.last_sequence,
            ..VersionEdit::default()
        };
        for (stage, state) in version.stages.iter().enumerate() {
            let s = snapshot.stage_mut(stage);
            s.group_count = Some(state.groups.len());
            s.trees = state.trees;
            for (group, runs) in state.groups.iter().enumerate() {
                s.added.extend(runs.iter().map(|f| (group, (**f).clone())));
            }
            for (group, key) in self.pointers[stage].iter().enumerate() {
                if !key.is_empty() {
                    s.pointers.push((group, key.clone()));
                }
            }
        }
        let current = match self.manifest_place.0 {
            Tier::Ssd => Current::Directory(number),
            Tier::Pm => Current::Pool {
                number,
                design: self.design.clone(),
                identity: self.identity,
                pool: self.pm_path.clone(),
            },
        };
        // A pool path CURRENT cannot hold is refused before anything is written.
        current.encode()?;
        let (tier, fs) = (self.manifest_place.0, Arc::clone(&self.manifest_place.1));
        let written = fs.create_log(&path).and_then(|file| {
            let mut writer = LogWriter::new(file);
            let n = writer.add_record(&snapshot.encode())?;
            writer.sync()?;
            fs.sync_dir(&self.dir)?;
            Ok((writer, n))
        });
        match written {
            Ok((writer, n)) => {
                self.counters
                    .add_written(tier, Part::Db, IoPurpose::Manifest, n);
                Ok(NewManifest {
                    writer,
                    number,
                    bytes: n,
                    current,
                })
            }
            Err(e) => {
                // Named by nothing: CURRENT was not switched.
                let _ = fs.remove(&path);
                Err(manifest_error(tier, e))
            }
        }
    }

    /// Points `CURRENT` at a manifest [`VersionSet::write_manifest`] wrote and makes it the
    /// live one.
    fn switch_manifest(&mut self, m: NewManifest) -> Result<()> {
        set_current(&*self.fs, &self.dir, &m.current, &self.counters)?;
        self.manifest = Some((m.writer, m.number));
        self.manifest_bytes = (m.bytes, m.bytes);
        Ok(())
    }

    /// Appends `edit` to the live manifest and syncs it.
    fn append_edit(&mut self, edit: &VersionEdit) -> Result<()> {
        let tier = self.manifest_place.0;
        let (writer, _) = self.manifest.as_mut().expect("a live manifest");
        let record = edit.encode();
        // The record's space first: a full pool is `NoSpace` with nothing appended.
        let n = writer
            .reserve_record(record.len())
            .and_then(|()| writer.add_record(&record))
            .and_then(|n| writer.sync().map(|()| n))
            .map_err(|e| manifest_error(tier, e))?;
        self.counters
            .add_written(tier, Part::Db, IoPurpose::Manifest, n);
        self.manifest_bytes.0 += n;
        Ok(())
    }
}

/// A manifest written and synced, not yet named by `CURRENT`.
struct NewManifest {
    writer: LogWriter,
    number: u64,
    bytes: u64,
    current: Current,
}

/// A full pool met by a manifest in the pool says how to keep the manifest elsewhere.
fn manifest_error(tier: Tier, e: Error) -> Error {
    match (tier, e) {
        (Tier::Pm, Error::NoSpace(m)) => Error::NoSpace(format!(
            "{m}; the manifest is in the PM pool (pm.manifest_on_pm): an open with \
             pm.manifest_on_pm = false writes it to the database directory instead"
        )),
        (_, e) => e,
    }
}

/// Whether the WAL named by the log number after `edit` exists (see
/// [`VersionEdit::log_created`]).
fn next_log_created(edit: &VersionEdit, log_number: u64, log_created: bool) -> bool {
    edit.log_created.unwrap_or(match edit.log_number {
        Some(n) if n != log_number => true,
        _ => log_created,
    })
}

/// What a database fixed at creation, as its manifest's first record says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreationFields {
    /// The design's name.
    pub design: String,
    /// The format version it was created with.
    pub format_version: u32,
    /// The number of groups of the first stage (the levels of the leveled designs).
    pub num_levels: usize,
    /// Whether the WAL lives on PM.
    pub wal_on_pm: bool,
    /// The PM pool's absolute path, as given when the database was created (or last opened
    /// with an explicit path), when that is not `pm.pool` in the database directory; `None`
    /// for the default and for manifests written before the path was recorded. An open
    /// without `pm.path` uses it.
    pub pm_path: Option<PathBuf>,
    /// Whether the live manifest is in the PM pool (`pm.manifest_on_pm`).
    pub manifest_on_pm: bool,
}

impl CreationFields {
    /// Sets in `options` (whose design is already this database's) what the database fixed
    /// at creation: the WAL's tier, and the level count where the design's first stage takes
    /// its group count from `compaction.num_levels` (a design whose first stage has a fixed
    /// number of groups, such as SLM-DB's single level, keeps the option as it is).
    pub fn apply_to(&self, options: &mut Options) {
        options.pm.wal_on_pm = self.wal_on_pm;
        let groups = |o: &Options| o.design.layouts(o).first().map(|l| l.groups.len());
        if groups(options) == Some(self.num_levels) || !(2..=20).contains(&self.num_levels) {
            return;
        }
        let mut trial = options.clone();
        trial.compaction.num_levels = self.num_levels;
        if groups(&trial) == Some(self.num_levels) {
            options.compaction.num_levels = self.num_levels;
        }
    }
}

/// Reads what a database was created with from the first record of the manifest at `path`.
pub fn read_manifest_creation_fields(fs: &dyn FileSystem, path: &Path) -> Result<CreationFields> {
    let location = path.display().to_string();
    let mut reader = LogReader::new(fs.read_all(path)?, location.clone());
    let missing = |what: &str| Error::corruption(location.clone(), format!("no {what} record"));
    let first = reader.next_record()?.ok_or_else(|| missing("snapshot"))?;
    let e = VersionEdit::decode(&first, &location)?;
    let levels = e
        .stages
        .iter()
        .find(|s| s.stage == 0)
        .and_then(|s| s.group_count);
    Ok(CreationFields {
        design: e.design.ok_or_else(|| missing("design"))?,
        format_version: e.format_version.ok_or_else(|| missing("format version"))?,
        num_levels: levels.ok_or_else(|| missing("stage 0 group count"))?,
        wal_on_pm: e.wal_tier.ok_or_else(|| missing("WAL tier"))? == Tier::Pm,
        pm_path: e.pm_path,
        manifest_on_pm: false,
    })
}

/// The pool path a database opened with `options` in `dir` records in its manifest: the
/// absolute form of `pm.path` (a relative path would name another file from another working
/// directory), or `None` for a design without PM, a pool given as an object (`pm.pool`), no
/// `pm.path`, or the default `pm.pool` in `dir` (left unrecorded so that it follows the
/// directory when the database is moved).
pub(crate) fn pool_path_to_record(dir: &Path, options: &Options) -> Option<PathBuf> {
    if !options.design.uses_pm(options) || options.pm.pool.is_some() {
        return None;
    }
    let given = options.pm.path.as_deref()?;
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let path = absolute(given);
    (path != absolute(&dir.join("pm.pool"))).then_some(path)
}

/// A new database identity: 128 bits from the standard library's randomly keyed hasher (seeded
/// from the operating system), the time and the process id; never 0.
pub fn new_identity() -> u128 {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut id = 0u128;
    for half in 0u8..2 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(nanos);
        h.write_u32(std::process::id());
        h.write_u8(half);
        id = id << 64 | u128::from(h.finish());
    }
    id.max(1)
}

fn empty_pointers(layouts: &[StageLayout]) -> Vec<Vec<Vec<u8>>> {
    layouts
        .iter()
        .map(|l| vec![Vec::new(); l.groups.len()])
        .collect()
}

/// The state accumulated while replaying a manifest.
struct Replayed {
    version: Version,
    next_file: Option<u64>,
    last_seq: Option<u64>,
    log_number: Option<u64>,
    log_created: bool,
    pointers: Vec<Vec<Vec<u8>>>,
    design: Option<String>,
    identity: Option<u128>,
    pm_path: Option<PathBuf>,
    pool_epoch: Option<u64>,
}

impl Default for Replayed {
    fn default() -> Self {
        Replayed {
            version: Version::new(Vec::new().into()),
            next_file: None,
            last_seq: None,
            log_number: None,
            log_created: true,
            pointers: Vec::new(),
            design: None,
            identity: None,
            pm_path: None,
            pool_epoch: None,
        }
    }
}

impl Replayed {
    /// Checks the creation-time fields of `edit` against `options`, then applies it.
    fn apply(
        &mut self,
        edit: VersionEdit,
        dir: &Path,
        options: &Options,
        layouts: &[StageLayout],
        location: &str,
    ) -> Result<()> {
        check_creation_fields(&edit, dir, options, layouts, location)?;
        if edit.design.is_some() {
            self.design = edit.design.clone();
        }
        self.version = self.version.apply(&edit).map_err(|e| match e {
            Error::Corruption { reason, .. } => Error::corruption(location, reason),
            other => other,
        })?;
        for s in &edit.stages {
            for (group, key) in &s.pointers {
                self.pointers[s.stage][*group] = key.clone();
            }
        }
        self.log_created = next_log_created(&edit, self.log_number.unwrap_or(0), self.log_created);
        self.identity = edit.identity.or(self.identity);
        if edit.pm_path.is_some() {
            self.pm_path = edit.pm_path;
        }
        self.pool_epoch = edit.pool_epoch.or(self.pool_epoch);
        self.next_file = edit.next_file_number.or(self.next_file);
        self.last_seq = edit.last_sequence.or(self.last_seq);
        self.log_number = edit.log_number.or(self.log_number);
        Ok(())
    }
}

/// Checks the fields a database fixes at creation (design, format, WAL tier, level count).
fn check_creation_fields(
    edit: &VersionEdit,
    dir: &Path,
    options: &Options,
    layouts: &[StageLayout],
    location: &str,
) -> Result<()> {
    if let Some(d) = &edit.design {
        // The design is the first thing to agree on: its mismatch explains any other.
        if d != options.design.name() {
            return Err(Error::InvalidArgument(format!(
                "database {} was created with design {d:?}, opened with {:?}",
                dir.display(),
                options.design.name()
            )));
        }
    }
    if let Some(fv) = edit.format_version {
        if fv > FORMAT_VERSION {
            return Err(Error::InvalidArgument(format!(
                "{location} has format version {fv}; this build reads up to {FORMAT_VERSION}"
            )));
        }
        if fv < MIN_FORMAT_VERSION {
            return Err(Error::InvalidArgument(format!(
                "{location} has format version {fv}, written by an older TierKV; this build \
                 reads format {MIN_FORMAT_VERSION} and later"
            )));
        }
    }
    if let Some(t) = edit.wal_tier {
        if t != options.design.wal_tier(options) {
            return Err(Error::InvalidArgument(format!(
                "database keeps its WAL on {}, but the options put it on {} \
                 (pm.wal_on_pm must stay as it was at creation)",
                t.name(),
                options.design.wal_tier(options).name()
            )));
        }
    }
    for s in &edit.stages {
        let Some(layout) = layouts.get(s.stage) else {
            return Err(Error::corruption(
                location,
                format!(
                    "record names stage {}, the design has {}",
                    s.stage,
                    layouts.len()
                ),
            ));
        };
        if let Some(n) = s.group_count {
            if n != layout.groups.len() {
                // Today every stage's group count is its number of levels.
                return Err(Error::InvalidArgument(format!(
                    "database was created with {n} groups in stage {} ({}: num_levels {n}), \
                     opened with {}",
                    s.stage,
                    layout.name,
                    layout.groups.len()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
