//! `tierkv scaling`: the scaling curve of benchmarks run at several client thread counts.
//!
//! It reads the `--json` reports of `tierkv bench` runs that differ in `--threads` (one report
//! per thread count, each with any number of designs), and writes, for every benchmark, a
//! chart of throughput against threads with one line per design (`scaling-<benchmark>.svg`)
//! and one markdown table of every figure (`scaling.md`), which it also prints.
//! `scripts/thread_logs_scaling.sh` runs the benchmarks and then this.

use crate::plot::{scaling_chart, ScalingSeries};
use crate::EngineResult;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Throughput by benchmark, then design, then thread count.
pub type Points = BTreeMap<String, BTreeMap<String, BTreeMap<usize, f64>>>;

/// Adds the figures of one `--json` report (its `flags.threads`, and each run's design and
/// benchmarks' `ops_per_sec`) to `points`; `what` names the report in errors.
pub fn add_report(
    points: &mut Points,
    report: &serde_json::Value,
    what: &str,
) -> Result<(), String> {
    let threads = report["flags"]["threads"]
        .as_u64()
        .filter(|&t| t > 0)
        .ok_or_else(|| format!("{what}: no flags.threads (not a tierkv bench --json report?)"))?
        as usize;
    let runs = report["runs"]
        .as_array()
        .ok_or_else(|| format!("{what}: no runs"))?;
    for run in runs {
        let design = run["design"]
            .as_str()
            .ok_or_else(|| format!("{what}: a run without a design"))?;
        for b in run["benchmarks"].as_array().into_iter().flatten() {
            let (Some(name), Some(ops)) = (b["name"].as_str(), b["ops_per_sec"].as_f64()) else {
                return Err(format!(
                    "{what}: a benchmark of {design} without name or ops/s"
                ));
            };
            let by_threads = points
                .entry(name.to_string())
                .or_default()
                .entry(design.to_string())
                .or_default();
            if by_threads.insert(threads, ops).is_some() {
                return Err(format!(
                    "{what}: {design} ran {name} at {threads} threads in two reports"
                ));
            }
        }
    }
    Ok(())
}

/// The markdown table of `points`: a row per benchmark and design, a column per thread count.
pub fn table(points: &Points) -> String {
    let counts: Vec<usize> = {
        let mut c: Vec<usize> = points
            .values()
            .flat_map(|d| d.values().flat_map(|t| t.keys().copied()))
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    let mut s = String::from("| benchmark | design |");
    for c in &counts {
        s.push_str(&format!(" {c} thread{} |", if *c == 1 { "" } else { "s" }));
    }
    s.push_str("\n|---|---|");
    s.push_str(&"---|".repeat(counts.len()));
    s.push('\n');
    for (bench, designs) in points {
        for (design, by_threads) in designs {
            s.push_str(&format!("| {bench} | {design} |"));
            for c in &counts {
                match by_threads.get(c) {
                    Some(v) => s.push_str(&format!(" {:.0} |", v)),
                    None => s.push_str(" - |"),
                }
            }
            s.push('\n');
        }
    }
    s
}

/// Reads `reports`, writes the charts and `scaling.md` into `out` (created if needed), and
/// prints the table to `w`.
pub fn scaling(reports: &[PathBuf], out: &Path, w: &mut dyn Write) -> EngineResult<()> {
    if reports.is_empty() {
        return Err("name at least one tierkv bench --json report".into());
    }
    let mut points = Points::new();
    for path in reports {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let report: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        add_report(&mut points, &report, &path.display().to_string())?;
    }
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let mut md = String::from("# Throughput against client threads\n\n");
    md.push_str(&table(&points));
    md.push('\n');
    for (bench, designs) in &points {
        let series: Vec<ScalingSeries> = designs
            .iter()
            .map(|(d, t)| (d.clone(), t.iter().map(|(&c, &v)| (c, v)).collect()))
            .collect();
        let file = format!("scaling-{bench}.svg");
        scaling_chart(&out.join(&file), bench, &series)?;
        md.push_str(&format!("![{bench}]({file})\n\n"));
    }
    let path = out.join("scaling.md");
    std::fs::write(&path, &md).map_err(|e| format!("writing {}: {e}", path.display()))?;
    write!(w, "{}", table(&points))?;
    writeln!(w, "Charts and table: {}", out.display())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(threads: u64, runs: &[(&str, f64)]) -> serde_json::Value {
        serde_json::json!({
            "flags": { "threads": threads },
            "runs": runs.iter().map(|(d, ops)| serde_json::json!({
                "design": d,
                "benchmarks": [{ "name": "fillrandom", "ops_per_sec": ops }],
            })).collect::<Vec<_>>(),
        })
    }

    #[test]
    fn reports_at_several_thread_counts_make_one_curve_per_design() {
        let mut p = Points::new();
        add_report(&mut p, &report(1, &[("a", 100.0), ("b", 50.0)]), "r1").unwrap();
        add_report(&mut p, &report(2, &[("a", 180.0), ("b", 40.0)]), "r2").unwrap();
        let a: Vec<(usize, f64)> = p["fillrandom"]["a"].iter().map(|(&t, &v)| (t, v)).collect();
        assert_eq!(a, [(1, 100.0), (2, 180.0)]);
        let t = table(&p);
        assert!(t.contains("| fillrandom | a | 100 | 180 |"), "{t}");
        assert!(t.contains("| fillrandom | b | 50 | 40 |"), "{t}");
        // The same design and thread count twice is an error, as is a report without threads.
        assert!(add_report(&mut p, &report(2, &[("a", 1.0)]), "r3").is_err());
        assert!(add_report(&mut p, &serde_json::json!({"runs": []}), "r4").is_err());
    }

    #[test]
    fn scaling_writes_a_chart_per_benchmark_and_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (t, ops) in [(1u64, 100.0), (2, 150.0), (4, 170.0)] {
            let p = dir.path().join(format!("t{t}.json"));
            std::fs::write(&p, report(t, &[("x", ops)]).to_string()).unwrap();
            paths.push(p);
        }
        let out = dir.path().join("out");
        let mut printed = Vec::new();
        scaling(&paths, &out, &mut printed).unwrap();
        let svg = std::fs::read_to_string(out.join("scaling-fillrandom.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("client threads"));
        let md = std::fs::read_to_string(out.join("scaling.md")).unwrap();
        assert!(md.contains("| fillrandom | x | 100 | 150 | 170 |"), "{md}");
        assert!(String::from_utf8(printed)
            .unwrap()
            .contains("| fillrandom | x |"));
        assert!(scaling(&[], &out, &mut Vec::new()).is_err());
    }
}
