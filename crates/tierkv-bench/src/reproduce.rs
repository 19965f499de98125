//! `tierkv reproduce EXPERIMENT`: runs a scaled-down version of a paper's experiment (from the
//! registry in [`crate::experiments`]) and writes a markdown report with its SVG charts.
//!
//! The report (`--out DIR`, default `./reproduce-out/<name>/`) holds `report.md` (the paper,
//! its figure, the designs, the workload and how it was scaled, the paper's claim, the measured
//! side-by-side figures and whether the claim held at this scale), `report.json` (every figure,
//! as `tierkv bench --json` writes it) and the charts of `--plot`.

use crate::commands;
use crate::config::{BenchConfig, DesignChoice};
use crate::engine::EngineResult;
use crate::experiments::{Check, Experiment, Metric, EXPERIMENTS};
use crate::report::{self, compare, DesignRun};
use clap::Parser;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The flags of `tierkv reproduce`.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct ReproduceArgs {
    /// The experiment to run (see --list).
    pub experiment: Option<String>,
    /// List the experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// Output directory. Default: `./reproduce-out/<experiment>`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override the experiment's --num (for a quicker, smaller run).
    #[arg(long)]
    pub num: Option<u64>,
    /// Override the experiment's --reads / --ops.
    #[arg(long, alias = "ops")]
    pub reads: Option<i64>,
}

#[derive(Parser)]
struct BenchFlags {
    #[command(flatten)]
    config: BenchConfig,
}

/// The experiment named `name`.
pub fn find(name: &str) -> Result<&'static Experiment, String> {
    EXPERIMENTS.iter().find(|e| e.name == name).ok_or_else(|| {
        let known: Vec<_> = EXPERIMENTS.iter().map(|e| e.name).collect();
        format!(
            "unknown experiment {name:?}; known experiments: {}",
            known.join(", ")
        )
    })
}

/// The designs of `exp`, resolved against this build; the error names the missing design.
pub fn resolve_designs(exp: &Experiment) -> Result<Vec<DesignChoice>, String> {
    exp.designs
        .iter()
        .map(|name| {
            DesignChoice::from_str(name).map_err(|e| {
                format!(
                    "experiment {} compares designs {}, but design {name:?} is missing from \
                     this build ({e})",
                    exp.name,
                    exp.designs.join(", ")
                )
            })
        })
        .collect()
}

/// The `tierkv bench` configuration of `exp` (designs resolved, overrides applied, reports
/// into `out`).
pub fn config_for(
    exp: &Experiment,
    args: &ReproduceArgs,
    out: &Path,
) -> Result<BenchConfig, String> {
    let flags = std::iter::once("bench").chain(exp.bench_args.iter().copied());
    let mut config = BenchFlags::try_parse_from(flags)
        .map_err(|e| format!("experiment {}: bad bench flags: {e}", exp.name))?
        .config;
    config.design = resolve_designs(exp)?;
    if let Some(n) = args.num {
        config.num = n;
    }
    if let Some(r) = args.reads {
        config.reads = r;
    }
    config.json = Some(out.join("report.json"));
    config.plot = Some(out.to_path_buf());
    config.validate()?;
    Ok(config)
}

/// `tierkv reproduce --list`.
pub fn list(out: &mut dyn Write) -> EngineResult<()> {
    for e in EXPERIMENTS {
        writeln!(out, "{}", e.name)?;
        writeln!(out, "    paper:   {}", e.paper)?;
        writeln!(out, "    figure:  {}", e.figure)?;
        writeln!(out, "    designs: {}", e.designs.join(", "))?;
        writeln!(out, "    claim:   {}", e.claim)?;
    }
    Ok(())
}

/// The measured verdict on `check` from the runs, as one sentence.
pub fn verdict(check: &Check, runs: &[DesignRun]) -> String {
    let value = |design: &str| {
        runs.iter()
            .find(|r| r.design == design)
            .and_then(|r| r.benchmarks.iter().find(|b| b.name == check.benchmark))
            .map(|b| match check.metric {
                Metric::OpsPerSec => b.ops_per_sec,
                Metric::P99 => b.latency.p99_us,
            })
    };
    let (what, higher_better) = match check.metric {
        Metric::OpsPerSec => ("ops/s", true),
        Metric::P99 => ("p99 latency", false),
    };
    match (value(check.better), value(check.than)) {
        (Some(b), Some(t)) if t > 0.0 => {
            let ratio = b / t;
            let holds = if higher_better {
                ratio > 1.0
            } else {
                ratio < 1.0
            };
            format!(
                "{} {what} of {}: {b:.1} vs {t:.1} for {} ({ratio:.2}x): the claim {} at this \
                 scale.",
                check.benchmark,
                check.better,
                check.than,
                if holds { "holds" } else { "does not hold" }
            )
        }
        _ => format!(
            "{} was not measured for both {} and {}.",
            check.benchmark, check.better, check.than
        ),
    }
}

/// The markdown report of a finished experiment.
pub fn markdown(
    exp: &Experiment,
    config: &BenchConfig,
    runs: &[DesignRun],
    charts: &[String],
) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "# {}\n", exp.name);
    let _ = writeln!(m, "* **Paper:** {}", exp.paper);
    let _ = writeln!(m, "* **Figure / table:** {}", exp.figure);
    let _ = writeln!(m, "* **Designs compared:** {}", exp.designs.join(", "));
    let _ = writeln!(m, "* **Paper's claim:** {}\n", exp.claim);
    let _ = writeln!(m, "## Workload, scaled to this machine\n");
    let _ = writeln!(m, "{}\n", exp.scaling);
    let mut cmd: Vec<String> = exp.bench_args.iter().map(|s| s.to_string()).collect();
    cmd.retain(|a| !a.starts_with("--num=") && !a.starts_with("--reads="));
    cmd.insert(0, format!("--num={}", config.num));
    cmd.insert(1, format!("--reads={}", config.reads));
    let _ = writeln!(
        m,
        "Run as: `tierkv bench --design={} {}`\n",
        exp.designs.join(","),
        cmd.join(" ")
    );
    let _ = writeln!(m, "## Measured\n");
    if let Some(check) = &exp.check {
        let _ = writeln!(m, "**Result:** {}\n", verdict(check, runs));
    }
    let designs: Vec<&str> = runs.iter().map(|r| r.design.as_str()).collect();
    let _ = writeln!(
        m,
        "| figure | {} |",
        designs
            .iter()
            .enumerate()
            .map(|(i, d)| if i == 0 {
                d.to_string()
            } else {
                format!("{d} (ratio to {})", designs[0])
            })
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(m, "|---|{}", "---|".repeat(designs.len()));
    for row in compare(runs) {
        let cells: Vec<String> = row
            .values
            .iter()
            .zip(&row.ratios)
            .enumerate()
            .map(|(i, (v, r))| match (v, r) {
                (None, _) => "n/a".into(),
                (Some(v), Some(r)) if i > 0 => format!("{v:.3} ({r:.2}x)"),
                (Some(v), _) => format!("{v:.3}"),
            })
            .collect();
        let _ = writeln!(m, "| {} | {} |", row.figure, cells.join(" | "));
    }
    let _ = writeln!(m, "\n## Charts\n");
    for c in charts {
        let _ = writeln!(m, "![{c}]({c})\n");
    }
    let machine = report::MachineInfo::detect();
    let _ = writeln!(m, "## Setup\n");
    let _ = writeln!(
        m,
        "* Machine: {} ({} cores, {} MiB memory), kernel {}, {}",
        machine.cpu_model,
        machine.cores,
        machine.memory_bytes >> 20,
        machine.kernel,
        machine.os
    );
    let _ = writeln!(m, "* Harness revision: {}", report::git_revision());
    let _ = writeln!(m, "* Every figure: `report.json`.");
    m
}

/// `tierkv reproduce`: lists, or runs one experiment and writes its report; returns the path of
/// `report.md` (None for `--list`).
pub fn reproduce(args: &ReproduceArgs, out: &mut dyn Write) -> EngineResult<Option<PathBuf>> {
    if args.list {
        list(out)?;
        return Ok(None);
    }
    let Some(name) = &args.experiment else {
        return Err("name an experiment (tierkv reproduce --list shows them)".into());
    };
    let exp = find(name)?;
    run(exp, args, out).map(Some)
}

/// Runs `exp` and writes its report; returns the path of `report.md`.
pub fn run(exp: &Experiment, args: &ReproduceArgs, out: &mut dyn Write) -> EngineResult<PathBuf> {
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("reproduce-out").join(exp.name));
    // Resolve everything before creating anything.
    let config = config_for(exp, args, &dir)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    writeln!(out, "Reproducing {}: {}", exp.name, exp.claim)?;
    let runs = commands::bench(&config, out)?;
    let mut charts: Vec<String> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    charts.sort();
    let path = dir.join("report.md");
    std::fs::write(&path, markdown(exp, &config, &runs, &charts))
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    writeln!(out, "Report written to {}", path.display())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkv::Design;

    #[test]
    fn registry_entries_are_complete_and_parse() {
        assert!(!EXPERIMENTS.is_empty());
        for (i, e) in EXPERIMENTS.iter().enumerate() {
            assert!(
                EXPERIMENTS[..i].iter().all(|o| o.name != e.name),
                "{}",
                e.name
            );
            for s in [e.name, e.paper, e.figure, e.scaling, e.claim] {
                assert!(!s.trim().is_empty(), "{}", e.name);
            }
            assert!(e.designs.len() >= 2, "{}", e.name);
            let flags = std::iter::once("bench").chain(e.bench_args.iter().copied());
            let c = BenchFlags::try_parse_from(flags).unwrap().config;
            c.validate().unwrap();
            if let Some(check) = &e.check {
                assert!(e.designs.contains(&check.better) && e.designs.contains(&check.than));
                assert!(c.benchmarks.iter().any(|b| b.name() == check.benchmark));
            }
        }
        let mut out = Vec::new();
        list(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("leveled-vs-leveled-pm"), "{text}");
        assert!(find("nope").unwrap_err().contains("leveled-vs-leveled-pm"));
    }

    #[test]
    fn missing_designs_are_named() {
        let exp = find("leveled-vs-leveled-pm").unwrap();
        match resolve_designs(exp) {
            Ok(d) => assert_eq!(d.len(), 2),
            Err(e) => {
                assert!(
                    Design::ALL.iter().all(|d| d.name() != "leveled-pm"),
                    "leveled-pm exists but: {e}"
                );
                assert!(e.contains("design \"leveled-pm\" is missing"), "{e}");
            }
        }
        let fake = Experiment {
            designs: &["leveled", "no-such-design"],
            ..*exp
        };
        let dir = tempfile::tempdir().unwrap();
        let args = ReproduceArgs {
            out: Some(dir.path().join("out")),
            ..ReproduceArgs::default()
        };
        let err = run(&fake, &args, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("\"no-such-design\" is missing"), "{err}");
        assert!(!dir.path().join("out").exists(), "nothing is created");
    }

    #[test]
    fn a_small_experiment_writes_its_report() {
        // A registry entry over the one design every build has, on a tiny workload.
        let exp = Experiment {
            name: "test-small",
            paper: "test paper",
            figure: "Figure 0",
            designs: &["leveled"],
            bench_args: &[
                "--benchmarks=fillrandom,readrandom,ycsb-load,ycsb-a",
                "--num=2000",
                "--reads=2000",
                "--write_buffer_size=65536",
                "--sample_interval_ms=100",
            ],
            scaling: "tiny",
            claim: "nothing",
            check: Some(Check {
                benchmark: "fillrandom",
                metric: Metric::OpsPerSec,
                better: "leveled",
                than: "leveled",
            }),
        };
        let dir = tempfile::tempdir().unwrap();
        let args = ReproduceArgs {
            out: Some(dir.path().join("out")),
            num: Some(1500),
            ..ReproduceArgs::default()
        };
        let path = run(&exp, &args, &mut Vec::new()).unwrap();
        let md = std::fs::read_to_string(&path).unwrap();
        for part in [
            "# test-small",
            "**Paper:** test paper",
            "**Figure / table:** Figure 0",
            "**Paper's claim:** nothing",
            "--num=1500",
            "| fillrandom ops/s |",
            "| write amplification |",
            "(1.00x): the claim does not hold",
            "![amplification.svg](amplification.svg)",
        ] {
            assert!(md.contains(part), "{part:?} missing from\n{md}");
        }
        let svg = std::fs::read_to_string(dir.path().join("out/throughput-ycsb-a.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("</svg>"));
        assert!(dir.path().join("out/report.json").exists());
    }
}
