//! The subcommands of the `tierkv` tool: `bench` (the whole benchmark run: open, header,
//! benchmarks, engine figures, JSON, close) and the tools that act on an existing database
//! (`put`, `get`, `delete`, `scan`, `stats`, `check`).
//!
//! Keys and values are read and shown as described in [`crate::text`].

use crate::config::{BenchConfig, DesignChoice, DesignEntry, EngineKind};
use crate::engine::{EngineResult, KvEngine, MemEngine, NullEngine, TierKvEngine};
use crate::report::{self, BenchResult, DesignRun, JsonReport, StatsSummary};
use crate::text::{display_bytes, parse_bytes_arg};
use crate::verify::VerifyingEngine;
use crate::{plot, runner};
use std::io::Write;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use tierkv::{Db, Design, Options};

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
    /// The PM pool file, for designs that use PM (default: `pm.pool` in the database directory).
    #[arg(long = "pm_path")]
    pub pm_path: Option<PathBuf>,
}

impl DbArgs {
    /// Options to open the database; only `put` may create it. For an existing database the
    /// design, level count and WAL tier come from its manifest, so every database opens
    /// whatever it was created with (a `leveled` one with `--wal_on_pm`, say).
    pub fn options(&self, create_if_missing: bool) -> EngineResult<Options> {
        let mut o = Options {
            design: self.design.unwrap_or(Design::LEVELED),
            create_if_missing,
            ..Options::default()
        };
        o.pm.path = self.pm_path.clone();
        if let Ok(created) = Db::describe(&self.db, &tierkv::fs::PosixFs) {
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
            o.pm.wal_on_pm = created.wal_on_pm;
            o.compaction.num_levels = created.num_levels;
        }
        Ok(o)
    }

    fn open(&self, create_if_missing: bool) -> EngineResult<Db> {
        Db::open(&self.db, self.options(create_if_missing)?)
            .map_err(|e| format!("opening database {}: {e}", self.db.display()).into())
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

/// `tierkv stats`: prints the database's figures.
pub fn stats(args: &DbArgs, out: &mut dyn Write) -> EngineResult<()> {
    let db = args.open(false)?;
    let logical = db.logical_size()?;
    let summary = StatsSummary::new("tierkv", db.stats(), Some(logical));
    write!(out, "{}", report::format_stats(&summary))?;
    db.close()?;
    Ok(())
}

/// `tierkv check`: verifies every checksum and invariant; prints the report.
pub fn check(args: &DbArgs, out: &mut dyn Write) -> EngineResult<()> {
    let report = Db::check(&args.db, args.options(false)?)
        .map_err(|e| format!("check of {} failed: {e}", args.db.display()))?;
    writeln!(
        out,
        "OK: {} tables, {} entries verified",
        report.tables_checked, report.entries_checked
    )?;
    writeln!(out, "{report:#?}")?;
    Ok(())
}

/// `tierkv repair`: points `CURRENT` at the newest manifest from which the database opens
/// consistently; prints what it did and the manifests it passed over.
pub fn repair(args: &DbArgs, out: &mut dyn Write) -> EngineResult<()> {
    // Each candidate manifest says what the database was created with; the identity check of
    // each one guards the pool.
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
        (EngineKind::Tierkv, DesignChoice::Tierkv(_)) => {
            let options = config.entry_options(entry)?;
            if let (Some(pool), false) = (&options.pm.path, config.use_existing_db) {
                // A fresh database gets a fresh pool: the bench owns the file it was given.
                let _ = std::fs::remove_file(pool);
            }
            let engine = TierKvEngine::open(path, options, config.write_options())
                .map_err(|e| format!("opening database {}: {e}", path.display()))?;
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

/// `tierkv bench`: for each `--design`, opens a fresh database (`--db`, or a temporary
/// directory removed at the end), runs the benchmarks with the same seeds and prints the
/// engine figures; then prints the designs side by side, writes the JSON report and the plots.
pub fn bench(config: &BenchConfig, out: &mut dyn Write) -> EngineResult<Vec<DesignRun>> {
    // A YCSB workload file (-P) sets the record count, operation count and value size.
    let mut resolved = config.clone();
    resolved.resolve()?;
    let config = &resolved;
    config.validate()?;
    let temp;
    let root = match &config.db {
        Some(p) => p.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("tierkv-bench-")
                .tempdir_in(std::env::temp_dir())
                .map_err(|e| format!("creating a temporary database directory: {e}"))?;
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
        let engine = open_engine(config, entry, &path)?;
        let mut run = run_design(engine, config, &entry.label, options, out)?;
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
