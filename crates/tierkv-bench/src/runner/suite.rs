//! A run's benchmark list on one engine ([`run_benchmarks`]): each result printed as it
//! completes, the report benchmarks (`stats`, `levelstats`, `sstables`), and the engine's final
//! figures ([`final_stats`]).

use super::*;

/// Runs every benchmark of `config` in order on `engine`, printing each result to `out` as it
/// completes, with the line of what it made the engine do (and, under `--statistics`, the
/// engine's complete figures); `stats`, `levelstats` and `sstables` print the engine's state
/// instead. Fill benchmarks are skipped under `--use_existing_db`, as db_bench does. Stops at
/// the first failing benchmark.
pub fn run_benchmarks(
    engine: &dyn KvEngine,
    config: &BenchConfig,
    out: &mut dyn Write,
    show_progress: bool,
) -> EngineResult<Vec<BenchResult>> {
    let mut results = Vec::with_capacity(config.benchmarks.len());
    let state = RunState::new(config.num);
    let mut reporter = match config.report_interval_seconds {
        0 => None,
        secs => Some(IntervalReporter::create(
            &config.report_file,
            Duration::from_secs(secs),
        )?),
    };
    for (i, &bench) in config.benchmarks.iter().enumerate() {
        if config.use_existing_db && bench.is_fill() {
            writeln!(
                out,
                "{:<w$} : skipped (--use_existing_db is true)",
                bench.name(),
                w = report::NAME_WIDTH
            )?;
            continue;
        }
        if bench.is_report() {
            write!(out, "{}", report_benchmark(engine, bench)?)?;
            out.flush()?;
            continue;
        }
        let before = engine.stats();
        let mut result = run_benchmark(
            engine,
            config,
            &state,
            bench,
            i,
            show_progress,
            reporter.as_mut(),
        )
        .map_err(|e| EngineError::from(format!("benchmark {}: {e}", bench.name())))?;
        let after = engine.stats();
        if let (Some(b), Some(a)) = (&before, &after) {
            result.engine = Some(report::EngineDelta::between(b, a));
        }
        write!(out, "{}", report::format_result(&result))?;
        if config.statistics {
            if let Some(a) = after {
                let summary = StatsSummary::new(engine.name(), a, None);
                write!(out, "{}", report::format_stats(&summary))?;
            }
        }
        out.flush()?;
        results.push(result);
    }
    if let Some(r) = reporter {
        r.finish()?;
    }
    Ok(results)
}

/// The text of a report benchmark (`stats`, `levelstats`, `sstables`).
fn report_benchmark(engine: &dyn KvEngine, bench: Benchmark) -> EngineResult<String> {
    let Some(stats) = engine.stats() else {
        return Ok(format!(
            "{:<w$} : {} has no TierKV figures to print\n",
            bench.name(),
            engine.name(),
            w = report::NAME_WIDTH
        ));
    };
    Ok(match bench {
        Benchmark::Stats => report::format_stats(&StatsSummary::new(engine.name(), stats, None)),
        Benchmark::Levelstats => report::format_level_stats(&stats),
        Benchmark::Sstables => report::format_sstables(&engine.live_tables()?),
        _ => unreachable!("only report benchmarks"),
    })
}

/// The engine's final figures, when it has them.
pub fn final_stats(engine: &dyn KvEngine) -> EngineResult<Option<StatsSummary>> {
    let Some(stats) = engine.stats() else {
        return Ok(None);
    };
    let logical = engine.logical_size()?;
    Ok(Some(StatsSummary::new(engine.name(), stats, logical)))
}
