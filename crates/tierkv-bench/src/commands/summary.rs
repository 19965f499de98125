//! `tierkv stats`: what a database holds ([`DbSummary`]: stages, groups, tier usage, the PM
//! pool), as text ([`format_db_summary`]) or JSON.

use super::*;

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
