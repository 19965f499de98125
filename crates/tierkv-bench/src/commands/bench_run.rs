//! `tierkv bench`: each `--design` entry's database path, options and engine, the run of the
//! benchmarks on each ([`run_design`]), the check that the reports can be written, the reports
//! after every design ran ([`write_reports`]), and the list of designs ([`design_list`]).

use super::*;

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
