//! The subcommands of the `tierkv` tool: `bench` (the whole benchmark run: open, header,
//! benchmarks, engine figures, JSON, close) and the tools that act on an existing database
//! (`put`, `get`, `delete`, `scan`, `stats`, `check`, `repair`).
//!
//! The tools open a database with what it recorded at creation (design, level count, WAL tier,
//! and the engine finds the PM pool at the path its manifest records), so an existing database
//! needs only `--db`. `bench` checks where its reports go before it runs, and removes its
//! temporary database when it is interrupted (Ctrl-C, SIGTERM, SIGHUP).
//!
//! Keys and values are read and shown as described in [`crate::text`].

use crate::config::{BenchConfig, DesignChoice, DesignEntry, EngineKind};
use crate::engine::{EngineResult, KvEngine, MemEngine, NullEngine, TierKvEngine};
use crate::overrides::{apply_overrides, OptionOverride};
use crate::report::{self, format_bytes, BenchResult, DesignRun, JsonReport};
use crate::text::{display_bytes, parse_bytes_arg};
use crate::verify::VerifyingEngine;
use crate::{plot, runner};
use serde::Serialize;
use std::io::Write;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Mutex, OnceLock, PoisonError};
use tierkv::stats::{DbStats, GlobalIndexStats, LabStats, LevelStats};
use tierkv::{CheckReport, CreationFields, Db, Design, Options, ReadOptions};

/// The database flags shared by the tool subcommands.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct DbArgs {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    /// The design: for an existing database, the one it was created with (read from its
    /// manifest; giving another one is an error); for `put` into a new one, the design to
    /// create it with (default `leveled`).
    #[arg(long, value_parser = |s: &str| Design::from_str(s).map_err(|e| e.to_string()))]
    pub design: Option<Design>,
    /// The PM pool file, for designs that use PM. For a new database, default `pm.pool` in
    /// the database directory; another path is recorded in the database. For an existing one,
    /// default the path it recorded; give it only when the pool moved (the new path is then
    /// recorded).
    #[arg(long = "pm_path")]
    pub pm_path: Option<PathBuf>,
    /// Sets one engine option for this open, as `tierkv bench --set` does (PATH=VALUE, e.g.
    /// `pm.manifest_on_pm=false`); applied after the design's defaults and what the database
    /// recorded. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE", value_parser = OptionOverride::from_str)]
    pub set: Vec<OptionOverride>,
    /// Opens without writing one byte to the directory or the PM pool (`Options::read_only`):
    /// for `get`, `scan`, `stats` and `check` of a database on a full or read-only file
    /// system. Refused while a writer has the database open; writes are refused.
    #[arg(long = "read_only")]
    pub read_only: bool,
}

impl DbArgs {
    /// Options to open the database; only `put` may create it. The design's defaults apply
    /// (as in `tierkv bench`). For an existing database the design, level count and WAL tier
    /// come from its manifest, so every database opens whatever it was created with (a
    /// `leveled` one with `--wal_on_pm`, say), and its manifest stays where it is.
    pub fn options(&self, create_if_missing: bool) -> EngineResult<Options> {
        let mut o = Options {
            design: self.design.unwrap_or(Design::LEVELED),
            create_if_missing,
            ..Options::default()
        };
        // Without --pm_path the engine opens the pool the manifest names (or `pm.pool` in the
        // directory).
        o.pm.path = self.pm_path.clone();
        // A manifest in a pool that is not where CURRENT says: the engine's error names the
        // pool (opening with a guessed design would report the design instead).
        if let Err(e @ tierkv::Error::NotFound(_)) = self.describe() {
            return Err(e.into());
        }
        let described = self.describe();
        if let (Err(_), None) = (&described, self.design) {
            // A pool that cannot be read (damaged, truncated) behind a `CURRENT` that names
            // the design: open with that design, so that the engine reports the pool's damage
            // and not a design mismatch.
            if let Some(design) = self.design_in_current() {
                o.design = design;
            }
        }
        if let Ok(created) = described {
            let design = Design::from_str(&created.design)?;
            if self.design.is_some_and(|d| d != design) {
                return Err(format!(
                    "database {} was created with design {design}, not {}",
                    self.db.display(),
                    o.design
                )
                .into());
            }
            o.design = design;
            o = design.options(o);
            created.apply_to(&mut o);
            // The manifest stays where it is (`--set=pm.manifest_on_pm=...` moves it).
            o.pm.manifest_on_pm = Some(created.manifest_on_pm);
        } else {
            o = o.design.options(o);
        }
        o.read_only = self.read_only;
        Ok(apply_overrides(&o, &self.set)?)
    }

    /// The design a `CURRENT` of a manifest in the pool names (its `design` line), if any.
    fn design_in_current(&self) -> Option<Design> {
        let text = std::fs::read_to_string(self.db.join("CURRENT")).ok()?;
        if !text.starts_with("pm:") {
            return None;
        }
        text.lines()
            .find_map(|l| l.strip_prefix("design "))
            .and_then(|d| Design::from_str(d.trim()).ok())
    }

    /// What the database recorded at creation, when `--db` holds one.
    fn created(&self) -> Option<CreationFields> {
        self.describe().ok()
    }

    fn describe(&self) -> tierkv::Result<CreationFields> {
        Db::describe_with_pool(&self.db, &tierkv::fs::PosixFs, self.pm_path.as_deref())
    }

    /// The pool file the database is opened with: `--pm_path`, else the recorded path, else
    /// `pm.pool` in the directory (as the engine resolves it); `None` without PM.
    fn pool_path(&self, options: &Options, created: Option<&CreationFields>) -> Option<PathBuf> {
        if !options.design.uses_pm(options) {
            return None;
        }
        let recorded = created.and_then(|c| c.pm_path.clone());
        Some(
            self.pm_path
                .clone()
                .or(recorded)
                .unwrap_or_else(|| self.db.join("pm.pool")),
        )
    }

    fn open(&self, create_if_missing: bool) -> EngineResult<Db> {
        let db = Db::open(&self.db, self.options(create_if_missing)?).map_err(|e| {
            let read_only_fs = matches!(&e, tierkv::Error::Io { source, .. }
                if source.kind() == std::io::ErrorKind::ReadOnlyFilesystem);
            let hint = if read_only_fs && !self.read_only {
                " (the file system is read-only: give --read_only to read the database)"
            } else {
                ""
            };
            format!("opening database {}: {e}{hint}", self.db.display())
        })?;
        if let Some(reason) = db.read_only_reason() {
            eprintln!(
                "warning: database {} is open read-only: {reason}; reads work, writes are \
                 refused until the pool is grown (`tierkv grow-pool --db {} --size BYTES`) or \
                 space is freed",
                self.db.display(),
                self.db.display()
            );
        }
        Ok(db)
    }
}

/// `tierkv put`: writes `key` -> `value`, creating the database if needed.
pub fn put(args: &DbArgs, key: &str, value: &str) -> EngineResult<()> {
    let (key, value) = (parse_bytes_arg(key)?, parse_bytes_arg(value)?);
    let db = args.open(true)?;
    db.put(&key, &value)?;
    Ok(db.close()?)
}

/// `tierkv get`: prints the value of `key`; returns whether it was found.
pub fn get(args: &DbArgs, key: &str, out: &mut dyn Write) -> EngineResult<bool> {
    let key = parse_bytes_arg(key)?;
    let db = args.open(false)?;
    let value = db.get(&key)?;
    if let Some(v) = &value {
        writeln!(out, "{}", display_bytes(v))?;
    }
    db.close()?;
    Ok(value.is_some())
}

/// `tierkv delete`: deletes `key`.
pub fn delete(args: &DbArgs, key: &str) -> EngineResult<()> {
    let key = parse_bytes_arg(key)?;
    let db = args.open(false)?;
    db.delete(&key)?;
    Ok(db.close()?)
}

/// `tierkv scan`: prints `key<TAB>value` lines for keys in `[from, to)`, at most `limit` of
/// them; returns the number printed.
pub fn scan(
    args: &DbArgs,
    from: Option<&str>,
    to: Option<&str>,
    limit: Option<u64>,
    out: &mut dyn Write,
) -> EngineResult<u64> {
    let from = from.map(parse_bytes_arg).transpose()?;
    let to = to.map(parse_bytes_arg).transpose()?;
    let db = args.open(false)?;
    let lower = from.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let upper = to.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let limit = limit.unwrap_or(u64::MAX);
    let mut n = 0;
    {
        // The iterator ends before the database closes.
        let mut it = db.scan((lower, upper))?;
        while n < limit && it.valid() {
            let (k, v) = (display_bytes(it.key()), display_bytes(it.value()));
            writeln!(out, "{k}\t{v}")?;
            n += 1;
            it.next();
        }
        it.status()?;
    }
    db.close()?;
    Ok(n)
}

/// What a database holds, as `tierkv stats` prints it: what it was created with, its live
/// data, each stage's groups (levels) with their tables by tier, the WAL and the PM pool.
///
/// Every figure describes the database, not the process that opened it (a process that only
/// opened a database has written and read nothing, so its counters say nothing about it). One
/// caveat follows from opening: recovery moves what the WAL held into the first stage, so the
/// WAL replayed at open is reported separately from the WAL left afterwards.
#[derive(Clone, Debug, Serialize)]
pub struct DbSummary {
    /// The database directory.
    pub path: PathBuf,
    /// The design it was created with.
    pub design: String,
    /// The on-disk format version of its manifest.
    pub format_version: u32,
    /// Where its WAL lives (`ssd` or `pm`; a design without a WAL reports `ssd` and no WAL
    /// bytes).
    pub wal_tier: String,
    /// Where its write buffers live (`dram`, or `pm` for a persistent memtable).
    pub write_buffer_tier: String,
    /// Where its manifest lives (`ssd`: the database directory; `pm`: the pool).
    pub manifest_tier: String,
    /// Live keys (the latest version of each, deletions left out).
    pub live_keys: u64,
    /// Key + value bytes of the live keys.
    pub live_bytes: u64,
    /// The design's stages, in pipeline order.
    pub stages: Vec<StageSummary>,
    /// Tables of every stage, on SSD.
    pub ssd_tables: TierUsage,
    /// Tables of every stage, on PM.
    pub pm_tables: TierUsage,
    /// WAL bytes the open replayed into the first stage, on SSD and on PM.
    pub wal_replayed_ssd_bytes: u64,
    /// See `wal_replayed_ssd_bytes`.
    pub wal_replayed_pm_bytes: u64,
    /// Bytes of live WAL files after the open, on SSD.
    pub wal_ssd_bytes: u64,
    /// The same on PM.
    pub wal_pm_bytes: u64,
    /// Bytes of the write buffers after the open.
    pub write_buffer_bytes: u64,
    /// The PM pool, for a design that uses one.
    pub pool: Option<PoolSummary>,
    /// The global index (`slmdb`).
    pub global_index: Option<GlobalIndexStats>,
    /// LAB-DB's L0 trees (keys and value addresses in PM leaves) and the value arrays on the
    /// SSD they point into (`labdb`).
    #[serde(default)]
    pub labdb: Option<LabStats>,
    /// Whether a flush or compaction was due or running when the figures were taken (one that
    /// started finishes before the tool closes the database, which then differs from this
    /// summary).
    pub background_pending: bool,
}

/// One stage of a [`DbSummary`].
#[derive(Clone, Debug, Serialize)]
pub struct StageSummary {
    /// The stage's name (`levels`, `components`, ...).
    pub name: String,
    /// Its groups (the levels of a leveled stage), each with its tables by tier.
    pub groups: Vec<GroupSummary>,
}

/// One group (level) of a stage.
#[derive(Clone, Debug, Serialize)]
pub struct GroupSummary {
    /// `L0`, `L1`, ... for a leveled stage, else `group 0`, `group 1`, ...
    pub name: String,
    /// Its tables on SSD.
    pub ssd: TierUsage,
    /// Its tables on PM.
    pub pm: TierUsage,
}

/// Files and bytes on one tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TierUsage {
    /// Number of files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

impl TierUsage {
    fn add(&mut self, other: TierUsage) {
        self.files += other.files;
        self.bytes += other.bytes;
    }
}

/// The PM pool of a [`DbSummary`].
#[derive(Clone, Debug, Serialize)]
pub struct PoolSummary {
    /// The pool file.
    pub path: Option<PathBuf>,
    /// The durability mode it was opened in.
    pub mode: String,
    /// The pool's size.
    pub size_bytes: u64,
    /// Bytes in allocated chunks (tables, WALs, the compaction log, the global index, the
    /// pool's own header and directory).
    pub allocated_bytes: u64,
}

impl DbSummary {
    /// The summary of an open database: `created` is what its manifest recorded, `pool` the
    /// pool file it was opened with, `stats` its figures right after the open.
    fn new(
        path: &Path,
        created: &CreationFields,
        pool: Option<PathBuf>,
        stats: &DbStats,
        (live_keys, live_bytes): (u64, u64),
        memtable_on_pm: bool,
    ) -> DbSummary {
        let usage = |l: &LevelStats| TierUsage {
            files: l.files,
            bytes: l.bytes,
        };
        let stages: Vec<StageSummary> = stats
            .stages
            .iter()
            .map(|st| StageSummary {
                name: st.name.clone(),
                groups: st
                    .groups
                    .iter()
                    .enumerate()
                    .map(|(i, all)| {
                        let pm = st.pm_groups.get(i).map(usage).unwrap_or_default();
                        GroupSummary {
                            name: if st.name == "levels" {
                                format!("L{i}")
                            } else {
                                format!("group {i}")
                            },
                            ssd: TierUsage {
                                files: all.files.saturating_sub(pm.files),
                                bytes: all.bytes.saturating_sub(pm.bytes),
                            },
                            pm,
                        }
                    })
                    .collect(),
            })
            .collect();
        let (mut ssd_tables, mut pm_tables) = (TierUsage::default(), TierUsage::default());
        for g in stages.iter().flat_map(|s| &s.groups) {
            ssd_tables.add(g.ssd);
            pm_tables.add(g.pm);
        }
        // The front end's recovery reads (the WAL replayed into the first stage), per tier.
        let replayed = |tier: &str| -> u64 {
            stats
                .io
                .iter()
                .filter(|c| c.tier.name() == tier && c.part == "front_end")
                .filter(|c| c.purpose == "recovery")
                .map(|c| c.read)
                .sum()
        };
        DbSummary {
            path: path.to_path_buf(),
            design: created.design.clone(),
            format_version: created.format_version,
            wal_tier: if created.wal_on_pm { "pm" } else { "ssd" }.to_string(),
            write_buffer_tier: if memtable_on_pm { "pm" } else { "dram" }.to_string(),
            manifest_tier: if created.manifest_on_pm { "pm" } else { "ssd" }.to_string(),
            live_keys,
            live_bytes,
            stages,
            ssd_tables,
            pm_tables,
            wal_replayed_ssd_bytes: replayed("ssd"),
            wal_replayed_pm_bytes: replayed("pm"),
            wal_ssd_bytes: stats.wal_bytes,
            wal_pm_bytes: stats.pm_wal_bytes,
            write_buffer_bytes: stats.dram.memtable_bytes,
            pool: stats.pm.as_ref().map(|pm| PoolSummary {
                path: pool,
                mode: pm.mode.clone(),
                size_bytes: pm.pool_bytes,
                allocated_bytes: pm.bytes_allocated,
            }),
            global_index: stats.global_index.clone(),
            labdb: stats.labdb,
            background_pending: stats.background_pending,
        }
    }
}

/// `n` files and their bytes, e.g. `2 files, 8192 B (8.0 KiB)`.
fn files_and_bytes(u: TierUsage) -> String {
    let files = if u.files == 1 { "file" } else { "files" };
    format!("{} {files}, {}", u.files, format_bytes(u.bytes))
}

/// A group's tables by tier: `1 file, 4096 B (4.0 KiB) on PM`, both tiers when it has both,
/// `empty` without tables.
fn group_usage(g: &GroupSummary) -> String {
    match (g.ssd.files, g.pm.files) {
        (0, 0) => "empty".to_string(),
        (_, 0) => format!("{} on SSD", files_and_bytes(g.ssd)),
        (0, _) => format!("{} on PM", files_and_bytes(g.pm)),
        _ => format!(
            "{} on PM, {} on SSD",
            files_and_bytes(g.pm),
            files_and_bytes(g.ssd)
        ),
    }
}

/// The text `tierkv stats` prints: one line per figure, one per non-empty group (runs of
/// empty groups on one line).
pub fn format_db_summary(s: &DbSummary) -> String {
    use std::fmt::Write as _;
    let b = format_bytes;
    let mut o = String::new();
    let _ = writeln!(o, "Database:        {}", s.path.display());
    let _ = writeln!(
        o,
        "Design:          {} (format {}, WAL on {}, write buffers in {}, manifest on {})",
        s.design,
        s.format_version,
        s.wal_tier.to_uppercase(),
        s.write_buffer_tier.to_uppercase(),
        s.manifest_tier.to_uppercase()
    );
    let _ = writeln!(
        o,
        "Live data:       {} {}, {} of keys and values",
        s.live_keys,
        if s.live_keys == 1 { "key" } else { "keys" },
        b(s.live_bytes)
    );
    for (i, st) in s.stages.iter().enumerate() {
        let mut total = TierUsage::default();
        for g in &st.groups {
            total.add(g.ssd);
            total.add(g.pm);
        }
        let _ = writeln!(
            o,
            "Stage {i} ({}):  {} in {} groups",
            st.name,
            files_and_bytes(total),
            st.groups.len()
        );
        let mut g = 0;
        while g < st.groups.len() {
            let group = &st.groups[g];
            if group.ssd.files + group.pm.files > 0 {
                let _ = writeln!(
                    o,
                    "  {:<9} {}",
                    format!("{}:", group.name),
                    group_usage(group)
                );
                g += 1;
                continue;
            }
            let mut last = g;
            while last + 1 < st.groups.len()
                && st.groups[last + 1].ssd.files + st.groups[last + 1].pm.files == 0
            {
                last += 1;
            }
            let names = if last == g {
                group.name.clone()
            } else {
                format!("{}-{}", group.name, st.groups[last].name)
            };
            let _ = writeln!(o, "  {:<9} empty", format!("{names}:"));
            g = last + 1;
        }
    }
    let _ = writeln!(
        o,
        "Tables:          {} on SSD, {} on PM",
        files_and_bytes(s.ssd_tables),
        files_and_bytes(s.pm_tables)
    );
    let _ = writeln!(
        o,
        "WAL:             {} on SSD, {} on PM (after the open replayed {} from SSD and {} \
         from PM into stage 0)",
        b(s.wal_ssd_bytes),
        b(s.wal_pm_bytes),
        b(s.wal_replayed_ssd_bytes),
        b(s.wal_replayed_pm_bytes)
    );
    let _ = writeln!(
        o,
        "Write buffers:   {} in {}",
        b(s.write_buffer_bytes),
        s.write_buffer_tier.to_uppercase()
    );
    match &s.pool {
        Some(p) => {
            let path = p
                .path
                .as_ref()
                .map_or_else(|| "(given)".to_string(), |p| p.display().to_string());
            let percent = if p.size_bytes == 0 {
                0.0
            } else {
                100.0 * p.allocated_bytes as f64 / p.size_bytes as f64
            };
            let _ = writeln!(
                o,
                "PM pool:         {path} ({}): {} allocated of {} ({percent:.1}%)",
                p.mode,
                b(p.allocated_bytes),
                b(p.size_bytes)
            );
        }
        None => {
            let _ = writeln!(o, "PM pool:         none (the design keeps nothing on PM)");
        }
    }
    if let Some(ix) = &s.global_index {
        let _ = writeln!(
            o,
            "Global index:    {} keys in {} leaves and {} inner nodes, {} on PM, {} in DRAM",
            ix.keys,
            ix.leaves,
            ix.inner_nodes,
            b(ix.pm_bytes),
            b(ix.dram_bytes)
        );
    }
    if let Some(lab) = &s.labdb {
        let _ = writeln!(
            o,
            "L0 trees:        {} keys ({} in the mutable tree, {} in the immutable one), {} of \
             leaves on PM, {} of inner nodes in DRAM",
            lab.mutable_keys + lab.immutable_keys,
            lab.mutable_keys,
            lab.immutable_keys,
            b(lab.pm_bytes),
            b(lab.dram_bytes)
        );
        let _ = writeln!(
            o,
            "Value arrays:    {} files, {} on SSD ({} of it live), the values of the L0 trees' \
             keys",
            lab.value_files,
            b(lab.value_bytes),
            b(lab.value_live_bytes)
        );
    }
    if s.background_pending {
        let _ = writeln!(
            o,
            "Background work: a flush or compaction was due or running when these figures were \
             taken; one that started finished before the database closed, changing its stages"
        );
    }
    let ratio = |a: u64| {
        if s.live_bytes == 0 {
            "n/a".to_string()
        } else {
            format!("{:.3}", a as f64 / s.live_bytes as f64)
        }
    };
    // LAB-DB's value arrays on the SSD and tree leaves on PM hold data as tables do.
    let (lab_ssd, lab_pm) = s
        .labdb
        .as_ref()
        .map_or((0, 0), |l| (l.value_bytes, l.pm_bytes));
    let ssd = s.ssd_tables.bytes + s.wal_ssd_bytes + lab_ssd;
    let pm = s.pm_tables.bytes + s.wal_pm_bytes + lab_pm;
    let _ = writeln!(
        o,
        "Space:           SSD {} ({} of the live data), PM {} ({}) in tables{} and WAL",
        b(ssd),
        ratio(ssd),
        b(pm),
        ratio(pm),
        if s.labdb.is_some() {
            ", L0 trees, value arrays"
        } else {
            ""
        }
    );
    o
}

/// `tierkv stats`: opens the database and prints what it holds ([`DbSummary`]), as text or,
/// with `json`, as one JSON document.
pub fn stats(args: &DbArgs, json: bool, out: &mut dyn Write) -> EngineResult<()> {
    let created = Db::describe(&args.db, &tierkv::fs::PosixFs)
        .map_err(|e| format!("reading database {}: {e}", args.db.display()))?;
    let options = args.options(false)?;
    let pool = args.pool_path(&options, Some(&created));
    let memtable_on_pm = options.design.memtable_on_pm();
    let db = args.open(false)?;
    let stats = db.stats();
    let live = {
        // The iterator ends before the database closes; scanned blocks stay out of the cache.
        let ro = ReadOptions {
            skip_cache_fill: true,
            ..ReadOptions::default()
        };
        let mut it = db.iter(&ro)?;
        it.seek_to_first();
        let (mut keys, mut bytes) = (0u64, 0u64);
        while it.valid() {
            keys += 1;
            bytes += (it.key().len() + it.value().len()) as u64;
            it.next();
        }
        it.status()?;
        (keys, bytes)
    };
    db.close()?;
    // What the manifest says after the open (a moved pool's new path is recorded by it).
    let created = args.created().unwrap_or(created);
    let summary = DbSummary::new(&args.db, &created, pool, &stats, live, memtable_on_pm);
    if json {
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| format!("encoding the summary as JSON: {e}"))?;
        writeln!(out, "{text}")?;
    } else {
        write!(out, "{}", format_db_summary(&summary))?;
    }
    Ok(())
}

/// The lines of `tierkv check`'s report: one figure a line, then notes on what the next open
/// will do about what was found.
pub fn format_check_report(db: &Path, design: &str, r: &CheckReport) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "OK: no damage found in {} (design {design})",
        db.display()
    );
    for (what, n) in [
        ("tables checked", r.tables_checked as u64),
        ("entries checked", r.entries_checked),
        ("pointers checked", r.pointers_checked),
        ("WAL files checked", r.wal_files_checked as u64),
        ("WAL records checked", r.wal_records_checked),
        ("WAL torn tail bytes", r.wal_torn_tail_bytes),
        ("WAL files ignored", r.wal_files_ignored as u64),
        ("index keys checked", r.index_keys_checked),
        ("index tables to adopt", r.index_tables_to_adopt as u64),
    ] {
        let _ = writeln!(o, "{:<23}{n}", format!("{what}:"));
    }
    if r.wal_torn_tail_bytes > 0 {
        let _ = writeln!(
            o,
            "note: the WAL ends in {} torn bytes (a write that was never acknowledged, or \
             unsynced writes cut by a power failure); the next open drops them",
            r.wal_torn_tail_bytes
        );
    }
    if r.wal_files_ignored > 0 {
        let _ = writeln!(
            o,
            "note: {} WAL files follow a cut in the log and hold only writes acknowledged \
             without sync; the next open ignores them",
            r.wal_files_ignored
        );
    }
    if r.pm_chunks > 0 {
        let _ = writeln!(
            o,
            "{:<23}{} of {}",
            "PM chunks free:", r.pm_free_chunks, r.pm_chunks
        );
    }
    if let Some(reason) = &r.next_open_read_only {
        let _ = writeln!(
            o,
            "note: the next open cannot recover with write access ({reason}): it will open \
             read-only, every key readable, until the pool is grown (`tierkv grow-pool --db \
             {} --size BYTES`) or space is freed",
            db.display()
        );
    }
    if r.index_tables_to_adopt > 0 {
        let _ = writeln!(
            o,
            "note: the global index names {} tables the manifest does not (a crash between \
             their index updates and their manifest record); the next open adopts them",
            r.index_tables_to_adopt
        );
    }
    o
}

/// `tierkv check`: verifies every checksum and invariant; prints the report. Damage is an error
/// that says so (and the caller exits non-zero).
pub fn check(args: &DbArgs, out: &mut dyn Write) -> EngineResult<()> {
    let options = args.options(false)?;
    let report = Db::check(&args.db, options.clone()).map_err(|e| {
        if e.is_corruption() {
            format!("check of {} found damage: {e}", args.db.display())
        } else {
            format!("check of {} failed: {e}", args.db.display())
        }
    })?;
    write!(
        out,
        "{}",
        format_check_report(&args.db, options.design.name(), &report)
    )?;
    Ok(())
}

/// `tierkv repair`: points `CURRENT` at the newest manifest from which the database opens
/// consistently; prints what it did and the manifests it passed over.
pub fn repair(args: &DbArgs, out: &mut dyn Write) -> EngineResult<()> {
    // Each candidate manifest says what the database was created with; the identity check of
    // each one guards the pool.
    if args.read_only {
        return Err(
            "repair rewrites CURRENT (and IDENTITY): it cannot run with --read_only".into(),
        );
    }
    let options = args.options(false)?;
    let report = Db::repair(&args.db, options)
        .map_err(|e| format!("repair of {} failed: {e}", args.db.display()))?;
    for (name, why) in &report.rejected {
        writeln!(out, "passed over {name}: {why}")?;
    }
    if report.changed {
        writeln!(out, "CURRENT now names {}", report.manifest)?;
    } else {
        writeln!(
            out,
            "nothing to repair: CURRENT names {}, which opens consistently",
            report.manifest
        )?;
    }
    Ok(())
}

/// `tierkv grow-pool`: grows the closed database's PM pool to `size` bytes; prints the pool
/// and both sizes.
pub fn grow_pool(args: &DbArgs, size: u64, out: &mut dyn Write) -> EngineResult<()> {
    if args.read_only {
        return Err("grow-pool writes the pool: it cannot run with --read_only".into());
    }
    let options = args.options(false)?;
    let pool = args.pool_path(&options, args.created().as_ref());
    let old = Db::grow_pool(&args.db, options, size)
        .map_err(|e| format!("growing the pool of {} failed: {e}", args.db.display()))?;
    let pool = pool.map_or_else(|| "the pool".to_string(), |p| p.display().to_string());
    writeln!(out, "grew {pool} from {old} to {size} bytes")?;
    Ok(())
}

/// The directory of an entry's database: `--db` (or `temp`) itself for a single design, else
/// a subdirectory named after the entry's label, so every design starts from a fresh database.
pub fn design_path(config: &BenchConfig, root: &Path, entry: &DesignEntry) -> PathBuf {
    if config.design.len() == 1 {
        root.to_path_buf()
    } else {
        root.join(&entry.label)
    }
}

/// The full options an entry is opened with, as JSON (for the header and the report).
pub fn design_options(
    config: &BenchConfig,
    entry: &DesignEntry,
) -> EngineResult<serde_json::Value> {
    Ok(match entry.design {
        DesignChoice::Tierkv(_) => {
            serde_json::to_value(config.entry_options(entry)?).unwrap_or(serde_json::Value::Null)
        }
        DesignChoice::Rocksdb => crate::rocks::options_json(&config.entry_config(entry)),
    })
}

/// Opens the engine that runs `entry` in `path` (null and memory engines ignore both), wrapped
/// in the verifier under `--verify`.
pub fn open_engine(
    config: &BenchConfig,
    entry: &DesignEntry,
    path: &Path,
) -> EngineResult<Box<dyn KvEngine>> {
    let engine: Box<dyn KvEngine> = match (config.engine, entry.design) {
        (EngineKind::Null, _) => Box::new(NullEngine::default()),
        (EngineKind::Memory, _) => Box::new(MemEngine::default()),
        (EngineKind::Tierkv, DesignChoice::Tierkv(design)) => {
            let mut options = config.entry_options(entry)?;
            if let (Some(pool), false) = (&options.pm.path, config.use_existing_db) {
                // A fresh database gets a fresh pool: the bench replaces a pool it was given,
                // but never a file that is not one.
                if pool.exists() && !is_pm_pool(pool) {
                    return Err(format!(
                        "--pm_path {}: the file exists and is not a TierKV PM pool; the bench \
                         replaces only pools (remove it or choose another path)",
                        pool.display()
                    )
                    .into());
                }
                let _ = std::fs::remove_file(pool);
            }
            if config.use_existing_db {
                // As the tools: an existing database's pool is where its manifest says (the
                // engine's default without --pm_path); its design must be given, as it picks
                // the options of the run, and a mismatch names the one to give.
                let described =
                    Db::describe_with_pool(path, &tierkv::fs::PosixFs, options.pm.path.as_deref());
                if let Ok(created) = described {
                    if created.design != design.name() {
                        return Err(format!(
                            "database {} was created with design {}; run it with --design {}",
                            path.display(),
                            created.design,
                            created.design
                        )
                        .into());
                    }
                    // Its manifest stays where it is, as with the tools, unless --set (or the
                    // design entry) moves it.
                    let moved = config
                        .set
                        .iter()
                        .chain(&entry.overrides)
                        .any(|o| o.path == "pm.manifest_on_pm" || o.path == "pm");
                    if !moved {
                        options.pm.manifest_on_pm = Some(created.manifest_on_pm);
                    }
                }
            }
            let engine =
                TierKvEngine::open(path, options, config.write_options()).map_err(|e| {
                    // db_bench users expect a kept --db to be reused: say how.
                    let hint = if !config.use_existing_db && path.join("CURRENT").exists() {
                        "; give --use_existing_db to run on it (fill benchmarks are then \
                         skipped), or remove it for a fresh run"
                    } else {
                        ""
                    };
                    format!("opening database {}: {e}{hint}", path.display())
                })?;
            Box::new(engine)
        }
        (EngineKind::Tierkv, DesignChoice::Rocksdb) => {
            crate::rocks::open(&config.entry_config(entry), path)?
        }
    };
    Ok(if config.verify {
        Box::new(VerifyingEngine::new(engine))
    } else {
        engine
    })
}

/// Whether the file at `path` starts with a TierKV PM pool's magic.
fn is_pm_pool(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| u64::from_le_bytes(magic) == tierkv::pm::POOL_MAGIC)
}

/// `tierkv bench`: for each `--design`, opens a fresh database (`--db`, or a temporary
/// directory removed at the end), runs the benchmarks with the same seeds and prints the
/// engine figures; then prints the designs side by side, writes the JSON report and the plots.
pub fn bench(config: &BenchConfig, out: &mut dyn Write) -> EngineResult<Vec<DesignRun>> {
    // A YCSB workload file (-P) sets the record count, operation count and value size.
    let mut resolved = config.clone();
    resolved.resolve()?;
    let config = &resolved;
    config.validate()?;
    check_report_paths(config)?;
    let temp;
    let _registered;
    let root = match &config.db {
        Some(p) => p.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("tierkv-bench-")
                .tempdir_in(std::env::temp_dir())
                .map_err(|e| format!("creating a temporary database directory: {e}"))?;
            // Dropped before `temp`: the handler lets go of the directory before it is removed.
            _registered = TempDbGuard::register(temp.path())?;
            temp.path().to_path_buf()
        }
    };
    let kept = if config.db.is_some() {
        "kept"
    } else {
        "temporary, removed at exit"
    };
    let mut runs = Vec::with_capacity(config.design.len());
    for entry in config.design.iter() {
        let path = design_path(config, &root, entry);
        if config.engine == EngineKind::Tierkv {
            writeln!(out, "Database:   {} ({kept})", path.display())?;
        }
        if entry.is_variant() {
            writeln!(out, "Variant:    {entry}")?;
        }
        let options = design_options(config, entry)?;
        let engine = {
            // Not while the interrupt handler removes the temporary directory: an open would
            // create it again.
            let _removal = TEMP_DB.lock().unwrap_or_else(PoisonError::into_inner);
            let started = std::time::Instant::now();
            let engine = open_engine(config, entry, &path)?;
            let secs = started.elapsed().as_secs_f64();
            writeln!(out, "Opened in:  {secs:.3} s")?;
            (engine, secs)
        };
        let (engine, open_seconds) = engine;
        // A pool this run creates beside a temporary database goes with it.
        let made_pool = made_pool(config, entry)?;
        let _pool = made_pool.as_deref().map(TempPoolGuard::register);
        let mut run = run_design(engine, config, &entry.label, options, out)?;
        run.open_seconds = Some(open_seconds);
        if entry.is_variant() {
            run.base_design = Some(entry.design.name().to_string());
            run.overrides = entry.overrides.iter().map(|o| o.to_string()).collect();
        }
        runs.push(run);
        if config.design.len() > 1 {
            writeln!(out, "{}", "=".repeat(72))?;
        }
    }
    write_reports(config, &runs, out)?;
    Ok(runs)
}

/// Checks, before a run, that its reports can be written where `--json` and `--plot` say: the
/// JSON file's directory exists and takes a new file (and the file, if it exists, is a file that
/// can be written), and the plot directory exists or can be created and takes a new file. A
/// long run must not end in an error that was there from the start.
pub fn check_report_paths(config: &BenchConfig) -> EngineResult<()> {
    /// Creates and removes a file in `dir`.
    fn probe(dir: &Path) -> std::io::Result<()> {
        tempfile::Builder::new()
            .prefix(".tierkv-write-check-")
            .tempfile_in(dir)
            .map(drop)
    }
    if let Some(path) = &config.json {
        let bad = |why: String| format!("--json {}: {why}", path.display());
        if path.is_dir() {
            return Err(bad("is a directory; give a file path".into()).into());
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            let what = if dir.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            return Err(bad(format!("the directory {} {what}", dir.display())).into());
        }
        probe(dir).map_err(|e| bad(format!("cannot create a file in {}: {e}", dir.display())))?;
        if path.exists() {
            std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .map_err(|e| bad(format!("cannot be written: {e}")))?;
        }
    }
    if let Some(dir) = &config.plot {
        let bad = |why: String| format!("--plot {}: {why}", dir.display());
        std::fs::create_dir_all(dir)
            .map_err(|e| bad(format!("cannot create the directory: {e}")))?;
        probe(dir).map_err(|e| bad(format!("cannot create a file in it: {e}")))?;
    }
    Ok(())
}

/// The pool file a run of `entry` creates outside its temporary database directory (`--pm_path`
/// without `--db`, on a design that keeps data in PM): `None` when the run keeps its database
/// (`--db`) or the pool is in the directory.
fn made_pool(config: &BenchConfig, entry: &DesignEntry) -> EngineResult<Option<PathBuf>> {
    if config.db.is_some() || config.use_existing_db || config.engine != EngineKind::Tierkv {
        return Ok(None);
    }
    if !matches!(entry.design, DesignChoice::Tierkv(_)) {
        return Ok(None);
    }
    Ok(config.entry_options(entry)?.pm.path)
}

/// The pool files (and their lock files) of temporary databases, removed with them: at the end
/// of the design's run, or by the interrupt handler.
static TEMP_POOLS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A pool file registered in [`TEMP_POOLS`] while its run lasts; dropping it removes the file
/// and its lock file.
struct TempPoolGuard(PathBuf);

impl TempPoolGuard {
    fn register(pool: &Path) -> TempPoolGuard {
        TEMP_POOLS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(pool.to_path_buf());
        TempPoolGuard(pool.to_path_buf())
    }
}

impl Drop for TempPoolGuard {
    fn drop(&mut self) {
        remove_pool_files(&self.0);
        TEMP_POOLS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|p| p != &self.0);
    }
}

/// Removes `pool` if it is a PM pool (never another file that took its name meanwhile) and
/// its lock file.
fn remove_pool_files(pool: &Path) {
    if is_pm_pool(pool) {
        let _ = std::fs::remove_file(pool);
    }
    let _ = std::fs::remove_file(tierkv::pool_lock_path(pool));
}

/// The temporary database directory of the `bench` that is running, if it made one: what the
/// interrupt handler removes. `bench` holds the lock while it opens a database, so that the
/// handler never removes the directory while an open creates it again.
static TEMP_DB: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Registers a temporary database directory with the interrupt handler (installed on first
/// use) while it exists; dropping it unregisters the directory.
struct TempDbGuard;

impl TempDbGuard {
    fn register(dir: &Path) -> EngineResult<TempDbGuard> {
        static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
        INSTALLED
            .get_or_init(|| ctrlc::set_handler(on_interrupt).map_err(|e| e.to_string()))
            .clone()
            .map_err(|e| {
                format!("installing the handler that removes the temporary database on Ctrl-C: {e}")
            })?;
        *TEMP_DB.lock().unwrap_or_else(PoisonError::into_inner) = Some(dir.to_path_buf());
        Ok(TempDbGuard)
    }
}

impl Drop for TempDbGuard {
    fn drop(&mut self) {
        *TEMP_DB.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Ctrl-C, SIGTERM or SIGHUP: removes the temporary database directory (with the PM pool in
/// it) and exits with status 130. The lock is kept to the end, so that no database is opened
/// in the directory meanwhile; the benchmark threads may still write into it, so the removal is
/// tried again while anything is left.
fn on_interrupt() {
    let held = TEMP_DB.lock().unwrap_or_else(PoisonError::into_inner);
    for pool in TEMP_POOLS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        remove_pool_files(pool);
    }
    if let Some(dir) = held.as_ref() {
        let mut result = Ok(());
        for _ in 0..50 {
            result = std::fs::remove_dir_all(dir);
            if !dir.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        match result {
            Err(e) if dir.exists() => eprintln!(
                "interrupted: could not remove the temporary database {}: {e}",
                dir.display()
            ),
            _ => eprintln!(
                "interrupted: removed the temporary database {}",
                dir.display()
            ),
        }
    } else {
        eprintln!("interrupted");
    }
    std::process::exit(130);
}

/// Runs the benchmarks of `config` on one engine: header, benchmarks, figures, close.
pub fn run_design(
    engine: Box<dyn KvEngine>,
    config: &BenchConfig,
    design: &str,
    options: serde_json::Value,
    out: &mut dyn Write,
) -> EngineResult<DesignRun> {
    write!(
        out,
        "{}",
        report::format_header(engine.name(), design, config, &options)
    )?;
    let results = match runner::run_benchmarks(engine.as_ref(), config, out, true) {
        Ok(r) => r,
        Err(e) => {
            // Close cleanly (background work stops) but report the benchmark's error.
            let _ = engine.close();
            return Err(format!("design {design}: {e}").into());
        }
    };
    let stats = runner::final_stats(engine.as_ref())?;
    if let Some(s) = &stats {
        writeln!(out, "{}", "-".repeat(72))?;
        write!(out, "{}", report::format_stats(s))?;
    }
    let name = engine.name().to_string();
    engine.close()?;
    Ok(DesignRun::new(design, &name, options, results, stats))
}

/// After every design ran: the side-by-side table (several designs), the JSON report
/// (`--json`) and the charts (`--plot`).
pub fn write_reports(
    config: &BenchConfig,
    runs: &[DesignRun],
    out: &mut dyn Write,
) -> EngineResult<()> {
    if runs.len() > 1 {
        let designs: Vec<String> = runs.iter().map(|r| r.design.clone()).collect();
        writeln!(out, "** Designs side by side (ratio to {}) **", designs[0])?;
        write!(
            out,
            "{}",
            report::format_comparison(&designs, &report::compare(runs))
        )?;
        write!(out, "{}", report::AMPLIFICATION_LEGEND)?;
        for note in report::comparison_notes(runs) {
            writeln!(out, "Note: {note}")?;
        }
    }
    if let Some(path) = &config.json {
        JsonReport::new(config, runs.to_vec()).write_to(path)?;
        writeln!(out, "JSON report written to {}", path.display())?;
    }
    if let Some(dir) = &config.plot {
        let files = plot::write_all(dir, runs)?;
        writeln!(out, "{} charts written to {}", files.len(), dir.display())?;
    }
    Ok(())
}

/// The body of [`bench()`] over one given engine (named after the first `--design`): header,
/// benchmarks, figures, JSON, plots, close.
pub fn bench_with(
    engine: Box<dyn KvEngine>,
    config: &BenchConfig,
    options: &Options,
    out: &mut dyn Write,
) -> EngineResult<Vec<BenchResult>> {
    let design = config
        .design
        .first()
        .map_or("leveled", |d| d.label.as_str());
    let options = serde_json::to_value(options).unwrap_or(serde_json::Value::Null);
    let run = run_design(engine, config, design, options, out)?;
    let runs = vec![run];
    write_reports(config, &runs, out)?;
    Ok(runs
        .into_iter()
        .next()
        .map(|r| r.benchmarks)
        .unwrap_or_default())
}

/// Every design of the registry with its one-line summary, one per line (`tierkv designs`, and
/// the `--design` help of `tierkv bench`).
pub fn design_list() -> String {
    use std::fmt::Write as _;
    let width = Design::ALL
        .iter()
        .map(|d| d.name().len())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    for d in Design::ALL {
        let _ = writeln!(s, "  {:<width$}  {}", d.name(), d.summary());
    }
    let _ = writeln!(
        s,
        "  {:<width$}  RocksDB through the rust-rocksdb crate (built with the `rocksdb` cargo \
         feature)",
        "rocksdb"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::parse;

    #[test]
    fn bench_with_writes_the_json_report() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("out.json");
        let c = parse(&[
            "--benchmarks=fillrandom,readrandom",
            "--num=100",
            &format!("--json={}", json.display()),
        ])
        .unwrap();
        let mut out = Vec::new();
        let results =
            bench_with(Box::new(NullEngine::default()), &c, &c.options(), &mut out).unwrap();
        assert_eq!(results.len(), 2);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Engine:     null"), "{text}");
        assert!(text.contains("fillrandom             :"), "{text}");
        assert!(text.contains("readrandom             :"), "{text}");
        assert!(text.contains("(0 of 100 found)"), "{text}");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let run = &v["runs"][0];
        assert_eq!(run["engine"], "null");
        assert_eq!(run["design"], "leveled");
        assert_eq!(run["benchmarks"][0]["name"], "fillrandom");
        assert_eq!(run["benchmarks"][0]["ops"], 100);
        assert_eq!(run["benchmarks"][1]["found"], 0);
        assert!(run["final_stats"].is_null());
        assert!(run["options"]["write_buffer_size"].is_u64());
    }

    #[test]
    fn bench_rejects_invalid_flags_before_opening() {
        let mut c = parse(&["--num=10"]).unwrap();
        c.threads = 0;
        let err = bench(&c, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("--threads"), "{err}");
    }
}
