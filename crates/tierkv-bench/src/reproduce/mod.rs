//! `tierkv reproduce EXPERIMENT`: runs a scaled-down version of a paper's experiment (from the
//! registry in [`crate::experiments`]) and writes a markdown report with its SVG charts.
//!
//! `--rounds N` runs the whole experiment (every phase) N times; each check is judged on the
//! median over the rounds with their spread ([`crate::verdict`]). The output directory
//! (`--out DIR`, default `./reproduce-out/<name>/`) holds:
//!
//! * `report.md`: the paper, its figure, the designs, the workload and how it was scaled, the
//!   paper's claim; per check: the claim, the paper's number, the measured median and spread,
//!   the band and the verdict; per phase the side-by-side figures (medians over the rounds),
//!   the command that runs it and its charts;
//! * `report.json`: the first phase's first round as `tierkv bench --json` writes it, with the
//!   checks and their verdicts in its `reproduce` field (`docs/REPORT_SCHEMA.md`);
//! * per phase (in `DIR`, or `DIR/<phase>/` when there are several): `round-<r>.json`, every
//!   figure of round r, and the charts of `--plot` for round 1.
//!
//! `--rejudge` judges the checks again on the rounds already in the output directory (after a
//! band changed, say) and rewrites the reports without running anything.

use crate::commands;
use crate::config::{parse_entry_syntax, BenchConfig, DesignChoice, DesignEntry, DesignList};
use crate::engine::EngineResult;
use crate::experiments::{Check, Compare, Experiment, Phase, EXPERIMENTS, SELF_TEST_EXPERIMENTS};
use crate::report::{self, compare, ComparisonRow, DesignRun, JsonReport};
use crate::verdict::{judge, judge_increasing, median, paired_ratios, Band, Spread, Verdict};
use clap::Parser;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

mod judge;
mod markdown;
mod run;
#[cfg(test)]
mod tests;

pub use judge::*;
pub use markdown::*;
pub use run::*;

/// Most rounds `--rounds` accepts.
pub const MAX_ROUNDS: usize = 1000;

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
    /// Override the --num of every phase (for a quicker, smaller run).
    #[arg(long)]
    pub num: Option<u64>,
    /// Override the --reads / --ops of every phase.
    #[arg(long, alias = "ops")]
    pub reads: Option<i64>,
    /// Run the whole experiment N times and judge each check on the median over the rounds,
    /// with their spread (min..max): a check whose spread crosses its bar is inconclusive.
    /// Default: the experiment's own (see --list), else 1.
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Judge the checks again on the rounds already measured in the output directory (its
    /// round-<r>.json files) and rewrite report.md and report.json, without running anything.
    #[arg(long)]
    pub rejudge: bool,
    /// Also run this design entry (`rocksdb`, `label=design+option=value...`, as `tierkv bench
    /// --design` takes them) in every phase, after the experiment's own designs: it appears in
    /// each phase's side-by-side table (ratios to the experiment's first design), not in the
    /// checks. Repeatable. E.g. `--with-design=rocksdb` with a `rocksdb` feature build.
    #[arg(long = "with-design", value_name = "ENTRY")]
    pub with_design: Vec<String>,
    /// Directory for the PM pools (e.g. /dev/shm, a RAM file system, as a benchmark of PM
    /// should use): each phase's pools are `DIR/<experiment>-<phase>[-<design>]`, removed
    /// when the phase (or, for a phase others start from, the experiment) is done. Default:
    /// each pool in its database directory under --out.
    #[arg(long = "pm_path", value_name = "DIR")]
    pub pm_path: Option<PathBuf>,
    /// Write the results page from these finished experiment directories (each a `tierkv
    /// reproduce` --out, with its report.json) into --out (default docs/RESULTS.md), and run
    /// nothing. Repeatable.
    #[arg(long, value_name = "DIR")]
    pub summary: Vec<PathBuf>,
    /// With --summary: `tierkv bench --json` reports of the common workload (one per thread
    /// count) for the page's opening table of every design. Repeatable.
    #[arg(long, value_name = "REPORT", requires = "summary")]
    pub survey: Vec<PathBuf>,
    /// Also find the harness's self-test experiments (for its tests).
    #[arg(long = "self-test", hide = true)]
    pub self_test: bool,
}

#[derive(Parser)]
struct BenchFlags {
    #[command(flatten)]
    config: BenchConfig,
}

/// The experiment named `name` (among the self-test ones too with `self_test`).
pub fn find(name: &str, self_test: bool) -> Result<&'static Experiment, String> {
    let extra: &[Experiment] = if self_test {
        SELF_TEST_EXPERIMENTS
    } else {
        &[]
    };
    EXPERIMENTS
        .iter()
        .chain(extra)
        .find(|e| e.name == name)
        .ok_or_else(|| {
            let known: Vec<_> = EXPERIMENTS.iter().map(|e| e.name).collect();
            format!(
                "unknown experiment {name:?}; known experiments: {}",
                known.join(", ")
            )
        })
}

/// The design entries of `phase`, resolved against this build; the error names the missing
/// design.
pub fn resolve_designs(exp: &Experiment, phase: &Phase) -> Result<DesignList, String> {
    let entries = exp.phase_designs(phase);
    entries
        .iter()
        .map(|text| resolve_entry(exp, entries, text))
        .collect::<Result<Vec<_>, String>>()
        .map(DesignList)
}

/// One design entry `text` of `exp` (whose phase compares `entries`), resolved against this
/// build.
fn resolve_entry(exp: &Experiment, entries: &[&str], text: &str) -> Result<DesignEntry, String> {
    let syntax = parse_entry_syntax(text).map_err(|e| format!("experiment {}: {e}", exp.name))?;
    let design = DesignChoice::from_str(&syntax.design).map_err(|e| {
        format!(
            "experiment {} compares designs {}, but design {:?} is missing from this build ({e})",
            exp.name,
            entries.join(", "),
            syntax.design
        )
    })?;
    Ok(DesignEntry {
        label: syntax.label,
        design,
        overrides: syntax.overrides,
    })
}

/// The `tierkv bench` configuration of one phase of `exp` (designs resolved, `--num` and
/// `--reads` overrides applied; no reports yet).
pub fn config_for(
    exp: &Experiment,
    phase: &Phase,
    args: &ReproduceArgs,
) -> Result<BenchConfig, String> {
    let flags = std::iter::once("bench").chain(phase.bench_args.iter().copied());
    let mut config = BenchFlags::try_parse_from(flags)
        .map_err(|e| {
            format!(
                "experiment {}, phase {}: bad bench flags: {e}",
                exp.name, phase.name
            )
        })?
        .config;
    config.design = resolve_designs(exp, phase)?;
    for text in &args.with_design {
        let entries = exp.phase_designs(phase);
        let entry = resolve_entry(exp, entries, text)?;
        if config.design.iter().any(|e| e.label == entry.label) {
            return Err(format!(
                "--with-design={text}: experiment {} already runs a design labelled {:?}",
                exp.name, entry.label
            ));
        }
        config.design.0.push(entry);
    }
    // A phase's YCSB properties (`-p`) set the workload `ycsb-run` runs (as `tierkv bench`
    // reads them); `--num` and `--reads` still override what they set.
    config
        .resolve()
        .map_err(|e| format!("experiment {}, phase {}: {e}", exp.name, phase.name))?;
    if let Some(dir) = &args.pm_path {
        if !dir.is_dir() {
            return Err(format!("--pm_path {}: not a directory", dir.display()));
        }
        config.pm_path = Some(dir.join(format!("{}-{}", exp.name, phase.name)));
    }
    if let Some(n) = args.num {
        config.num = n;
    }
    if let Some(r) = args.reads {
        config.reads = r;
    }
    config
        .validate()
        .map_err(|e| format!("experiment {}, phase {}: {e}", exp.name, phase.name))?;
    Ok(config)
}

/// `tierkv reproduce --list`.
pub fn list(out: &mut dyn Write) -> EngineResult<()> {
    for e in EXPERIMENTS {
        writeln!(out, "{}", e.name)?;
        writeln!(out, "    paper:   {}", e.paper)?;
        writeln!(out, "    figure:  {}", e.figure)?;
        writeln!(out, "    designs: {}", e.all_designs().join(", "))?;
        for p in e.phases {
            let benchmarks = p
                .bench_args
                .iter()
                .find_map(|a| a.strip_prefix("--benchmarks="))
                .unwrap_or(crate::config::DEFAULT_BENCHMARKS);
            writeln!(out, "    phase {}: {benchmarks}", p.name)?;
        }
        writeln!(out, "    claim:   {}", e.claim)?;
        for c in e.checks {
            writeln!(out, "    check:   {} (paper: {})", c.claim, c.paper)?;
        }
        writeln!(out, "    rounds:  {}", e.rounds.max(1))?;
        writeln!(out, "    size:    {}", run_size(e))?;
    }
    Ok(())
}

/// How much an experiment runs, for `--list`: per round, each phase's designs x its keys and
/// operations; then the `tierkv bench` runs in all (a reader's measure of its run time, which
/// depends on the machine: `results/README.md` records each experiment's measured one).
fn run_size(e: &Experiment) -> String {
    let flag = |p: &Phase, name: &str| {
        p.bench_args
            .iter()
            .find_map(|a| a.strip_prefix(name))
            .map(str::to_string)
    };
    let phases: Vec<String> = e
        .phases
        .iter()
        .map(|p| {
            let num = flag(p, "--num=").unwrap_or_else(|| "1000000".into());
            let reads = flag(p, "--reads=").map_or(String::new(), |r| format!(", {r} ops"));
            format!("{} x {num} keys{reads}", e.phase_designs(p).len())
        })
        .collect();
    let runs: usize = e.phases.iter().map(|p| e.phase_designs(p).len()).sum();
    format!(
        "{} per round; {} bench runs over {} rounds",
        phases.join(" + "),
        runs * e.rounds.max(1),
        e.rounds.max(1)
    )
}

/// `tierkv reproduce`: lists, or runs (or re-judges) one experiment and writes its report;
/// returns the path of `report.md` (None for `--list`).
pub fn reproduce(args: &ReproduceArgs, out: &mut dyn Write) -> EngineResult<Option<PathBuf>> {
    if args.list {
        list(out)?;
        return Ok(None);
    }
    if !args.summary.is_empty() {
        let page = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("docs/RESULTS.md"));
        crate::results::write_page(&args.summary, &args.survey, &page)?;
        writeln!(
            out,
            "Results page of {} experiment(s) written to {}",
            args.summary.len(),
            page.display()
        )?;
        return Ok(Some(page));
    }
    let Some(name) = &args.experiment else {
        return Err("name an experiment (tierkv reproduce --list shows them)".into());
    };
    let exp = find(name, args.self_test)?;
    if args.rejudge {
        rejudge(exp, args, out).map(Some)
    } else {
        run(exp, args, out).map(Some)
    }
}
