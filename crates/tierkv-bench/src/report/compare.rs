//! The designs side by side: one row per figure, each design's value and its ratio to the
//! first design, with the legend that defines every row.

use super::*;

/// One row of the designs-side-by-side table: a figure's value per design and its ratio to the
/// first design's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// The figure ("fillrandom ops/s", "write amplification", ...).
    pub figure: String,
    /// Its value for each design, in `--design` order (None: not measured).
    pub values: Vec<Option<f64>>,
    /// value / first design's value (None when either is missing or the first is 0).
    pub ratios: Vec<Option<f64>>,
}

/// The side-by-side figures of `runs`: per benchmark ops/s and p99 (for a benchmark of several
/// operation types also the average latency, and each type's average and p99), then write,
/// read and space amplification, stall time, DRAM and, for runs with a PM pool, the pool's
/// allocated bytes.
pub fn compare(runs: &[DesignRun]) -> Vec<ComparisonRow> {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for b in &r.benchmarks {
            if !names.contains(&b.name.as_str()) {
                names.push(&b.name);
            }
        }
    }
    let mut rows = Vec::new();
    let mut row = |figure: String, f: &dyn Fn(&DesignRun) -> Option<f64>| {
        let values: Vec<Option<f64>> = runs.iter().map(f).collect();
        let first = values.first().copied().flatten();
        let ratios = values
            .iter()
            .map(|v| match (v, first) {
                (Some(v), Some(f)) if f != 0.0 => Some(v / f),
                _ => None,
            })
            .collect();
        rows.push(ComparisonRow {
            figure,
            values,
            ratios,
        });
    };
    for name in &names {
        let bench = |r: &DesignRun| r.benchmarks.iter().find(|b| b.name == *name).cloned();
        row(format!("{name} ops/s"), &|r| {
            bench(r).map(|b| b.ops_per_sec)
        });
        row(format!("{name} p99 us"), &|r| {
            bench(r).map(|b| b.latency.p99_us)
        });
        // Benchmarks of several operation types (readrandomwriterandom, YCSB): the average
        // latency, and each type's average and p99.
        let mut ops: Vec<String> = Vec::new();
        for r in runs {
            if let Some(b) = bench(r).filter(|b| b.ops_by_type.len() > 1) {
                for o in &b.ops_by_type {
                    if !ops.contains(&o.op) {
                        ops.push(o.op.clone());
                    }
                }
            }
        }
        if !ops.is_empty() {
            row(format!("{name} avg us"), &|r| {
                bench(r).map(|b| b.latency.avg_us)
            });
        }
        for op in &ops {
            row(format!("{name} {op} avg us"), &|r| {
                bench(r).and_then(|b| b.op(op).map(|o| o.latency.avg_us))
            });
            row(format!("{name} {op} p99 us"), &|r| {
                bench(r).and_then(|b| b.op(op).map(|o| o.latency.p99_us))
            });
        }
    }
    let stats = |r: &DesignRun| r.final_stats.clone();
    // Amplification of the whole database (every tier's bytes added up: what a design costs
    // in all), then each tier's own when a design has PM. An engine without per-tier figures
    // (RocksDB) has one tier, the SSD.
    let figures = |r: &DesignRun| r.figures.clone();
    let total =
        |r: &DesignRun, f: &dyn Fn(&crate::figures::Amplification) -> Option<f64>| match figures(r)
        {
            Some(fig) => f(&fig.database.amplification),
            None => None,
        };
    row("write amplification".into(), &|r| {
        total(r, &|a| a.write).or_else(|| stats(r).map(|s| s.write_amplification))
    });
    row("read amplification".into(), &|r| {
        total(r, &|a| a.read).or_else(|| stats(r).map(|s| s.read_amplification))
    });
    row("space amplification".into(), &|r| {
        total(r, &|a| a.space).or_else(|| stats(r).and_then(|s| s.space_amplification))
    });
    if runs.iter().any(|r| r.tiers.iter().any(|t| t.tier == "PM")) {
        // Each tier's share of the rows above, by the same definitions (the engine's bytes to
        // that tier), so that the tiers add up to the total; the PM device's own count (cache
        // lines written back x 64) is its own row.
        for tier in ["SSD", "PM"] {
            let part = |r: &DesignRun| {
                let name = tier.to_lowercase();
                figures(r).and_then(|f| f.tiers.into_iter().find(|t| t.part == name))
            };
            // An engine without per-tier figures (RocksDB) has its SSD figures only.
            let fallback = |r: &DesignRun| {
                (tier == "SSD")
                    .then(|| r.tiers.iter().find(|t| t.tier == "SSD").cloned())
                    .flatten()
            };
            row(
                format!("  {tier} write amplification"),
                &|r| match part(r) {
                    Some(p) => p.amplification.write,
                    None => fallback(r).map(|t| t.write),
                },
            );
            row(format!("  {tier} read amplification"), &|r| match part(r) {
                Some(p) => p.amplification.read,
                None => fallback(r).map(|t| t.read),
            });
            row(
                format!("  {tier} space amplification"),
                &|r| match part(r) {
                    Some(p) => p.amplification.space,
                    None => fallback(r).and_then(|t| t.space),
                },
            );
        }
        row("PM device write amplification".into(), &|r| {
            figures(r)
                .and_then(|f| f.tiers.into_iter().find(|t| t.part == "pm"))
                .and_then(|p| p.device_write_amplification)
        });
    }
    row("stall time s".into(), &|r| {
        stats(r).map(|s| s.stall_micros as f64 / 1e6)
    });
    row("DRAM MiB peak".into(), &|r| {
        dram_over_run(r).map(|(peak, _)| peak / 1_048_576.0)
    });
    row("DRAM MiB mean".into(), &|r| {
        dram_over_run(r).map(|(_, mean)| mean / 1_048_576.0)
    });
    // The pool's chunks in use (a file takes whole chunks), where space amplification counts
    // the files' bytes.
    if runs
        .iter()
        .any(|r| stats(r).is_some_and(|s| s.stats.pm.is_some()))
    {
        row("PM allocated MiB".into(), &|r| {
            stats(r)
                .and_then(|s| s.stats.pm)
                .map(|p| p.bytes_allocated as f64 / 1_048_576.0)
        });
    }
    rows
}

/// The engine's DRAM over a run: the peak and the time-weighted mean of its benchmarks'
/// samples and the end-of-run figure (the only one for a run too short to sample). `None` for
/// an engine without TierKV's figures.
pub fn dram_over_run(r: &DesignRun) -> Option<(f64, f64)> {
    let end = r.final_stats.as_ref()?.stats.dram.total() as f64;
    let samples: Vec<(f64, f64)> = r
        .benchmarks
        .iter()
        .flat_map(|b| &b.samples)
        .filter_map(|s| s.dram_bytes.map(|d| (d as f64, s.interval_sec)))
        .collect();
    let peak = samples.iter().map(|s| s.0).fold(end, f64::max);
    let secs: f64 = samples.iter().map(|s| s.1).sum();
    let mean = if secs > 0.0 {
        samples.iter().map(|(d, t)| d * t).sum::<f64>() / secs
    } else {
        end
    };
    Some((peak, mean))
}

/// Decimals a figure is shown with, the same for every design (and for zero) so that a column
/// reads at a glance: rates as integers, latencies and MiB with one decimal, amplifications and
/// seconds with three.
pub(crate) fn figure_decimals(figure: &str) -> usize {
    if figure.ends_with("ops/s") {
        0
    } else if figure.ends_with(" us") || figure.ends_with("MiB") {
        1
    } else {
        3
    }
}

pub(crate) fn format_figure(figure: &str, v: f64) -> String {
    format!("{v:.*}", figure_decimals(figure))
}

/// What the amplification rows of the side-by-side table count.
pub const AMPLIFICATION_LEGEND: &str = "\
write amplification: bytes written to SSD and PM (log, flushes, compactions, manifest) / key+value bytes of user writes
read amplification:  bytes read from SSD and PM to answer gets and scans (blocks, indexes, filters; not the block cache) / key+value bytes returned
space amplification: live bytes on SSD and PM (tables, logs) / key+value bytes of the live data (when measured)
(indented rows: the same, counting only one tier's bytes, so the tiers add up to the row above; \"n/a\": not measured or nothing to divide by)
PM device write amplification: cache lines the PM device wrote back x 64 / key+value bytes of user writes (a small store costs a whole line)
DRAM MiB peak / mean: the engine's DRAM (memtables, filters, indexes, block cache, DRAM index nodes) over the run's samples, at most and on average
";

/// Notes under the side-by-side table: designs whose figures cannot be compared yet because
/// the run never moved data out of the memtable.
pub fn comparison_notes(runs: &[DesignRun]) -> Vec<String> {
    runs.iter()
        .filter_map(|r| {
            let s = r.final_stats.as_ref()?;
            (s.engine == "tierkv" && s.stats.flushes == 0 && s.stats.compactions == 0).then(|| {
                format!(
                    "{}: all data still in the memtable (no flush or compaction ran): amplification not yet meaningful",
                    r.design
                )
            })
        })
        .collect()
}

/// The side-by-side table: one column per design, each figure with its ratio to the first
/// design's (`1.23x`).
pub fn format_comparison(designs: &[String], rows: &[ComparisonRow]) -> String {
    let mut cells: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["figure".to_string()];
    for (i, d) in designs.iter().enumerate() {
        header.push(if i == 0 {
            d.clone()
        } else {
            format!("{d} (vs {})", designs[0])
        });
    }
    cells.push(header);
    for r in rows {
        let mut line = vec![r.figure.clone()];
        for (i, v) in r.values.iter().enumerate() {
            line.push(match (v, r.ratios.get(i).copied().flatten()) {
                (None, _) => "n/a".into(),
                (Some(v), _) if i == 0 => format_figure(&r.figure, *v),
                (Some(v), Some(ratio)) => {
                    format!("{} ({ratio:.2}x)", format_figure(&r.figure, *v))
                }
                (Some(v), None) => format_figure(&r.figure, *v),
            });
        }
        cells.push(line);
    }
    let cols = cells[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| cells.iter().map(|l| l[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (n, line) in cells.iter().enumerate() {
        for (c, cell) in line.iter().enumerate() {
            if c == 0 {
                let _ = write!(out, "{cell:<w$}", w = widths[c]);
            } else {
                let _ = write!(out, "  {cell:>w$}", w = widths[c]);
            }
        }
        out.push('\n');
        if n == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (cols - 1)));
            out.push('\n');
        }
    }
    out
}
