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
/// depends on the machine: `docs/BENCHMARKS.md` records measured ones).
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

/// One design's figure over the rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DesignValues {
    /// The design's label.
    pub design: String,
    /// Its figure per round (`null`: not measured in that round).
    pub rounds: Vec<Option<f64>>,
    /// Over the rounds that measured it.
    pub spread: Option<Spread>,
}

/// One step of an ordering: `higher`'s figure / `lower`'s, which must be above 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderStep {
    /// The design that should have the lower figure.
    pub lower: String,
    /// The design that should have the higher figure.
    pub higher: String,
    /// The ratio higher / lower over the rounds.
    pub ratio: Option<Spread>,
    /// This step's verdict.
    pub verdict: Verdict,
}

/// A check's measured figures and verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// The claim in words.
    pub claim: String,
    /// The paper's number.
    pub paper: String,
    /// The phase its figures come from.
    pub phase: String,
    /// The figure, in words.
    pub metric: String,
    /// What is compared, e.g. `WA w/o log(nvlsm) / WA w/o log(nvlsm-leveled)`, or
    /// `leveled < nvlsm < nvlsm-fragmented`.
    pub compared: String,
    /// The bar, e.g. `<= 0.5`, `in [0.8, 1.25]`, `each step > 1`.
    pub band: String,
    /// The quantity judged (the design's figure, or the ratio a / b of each round) over the
    /// rounds; absent for an ordering (see `steps`) or when nothing was measured.
    pub measured: Option<Spread>,
    /// Each compared design's figure over the rounds.
    pub designs: Vec<DesignValues>,
    /// For an ordering: each step.
    #[serde(default)]
    pub steps: Vec<OrderStep>,
    /// Rounds run.
    pub rounds: usize,
    /// The verdict: the size's for a check judged by the rule, the band's for a band set by
    /// hand, the direction's for an ordering.
    pub verdict: Verdict,
    /// Whether the effect has the paper's sign beyond the rounds' spread (the rule); for a
    /// band set by hand, its verdict.
    #[serde(default = "not_applicable")]
    pub direction: Verdict,
    /// Whether the effect reaches the geometric midpoint between none and the paper's (the
    /// rule); for a band set by hand, its verdict; n/a for an ordering.
    #[serde(default = "not_applicable")]
    pub size: Verdict,
    /// How the band was set: "the rule" or "by hand".
    #[serde(default)]
    pub rule: String,
}

fn not_applicable() -> Verdict {
    Verdict::NotApplicable
}

/// Sets `outcome`'s verdicts on its measured spread against `band`: by the rule for a paper
/// effect, else the hand-set band's verdict for both.
fn judge_band(outcome: &mut CheckOutcome, band: Band) {
    let measured = outcome.measured.as_ref();
    outcome.band = band.to_string();
    outcome.size = judge(measured, band.size());
    match band.direction() {
        Some(direction) => {
            outcome.direction = judge(measured, direction);
            outcome.rule = "the rule".into();
        }
        None => {
            outcome.direction = outcome.size;
            outcome.rule = "by hand".into();
        }
    }
    outcome.verdict = outcome.size;
}

/// Judges `check` on `rounds` (each round: the runs of the check's phase).
pub fn evaluate(check: &Check, rounds: &[Vec<DesignRun>]) -> CheckOutcome {
    let values = |design: &str| -> Vec<Option<f64>> {
        rounds
            .iter()
            .map(|runs| {
                runs.iter()
                    .find(|r| r.design == design)
                    .and_then(|r| check.metric.value(r))
            })
            .collect()
    };
    let designs: Vec<DesignValues> = check
        .compare
        .designs()
        .into_iter()
        .map(|d| {
            let v = values(d);
            DesignValues {
                design: d.to_string(),
                spread: Spread::of_rounds(&v),
                rounds: v,
            }
        })
        .collect();
    let short = check.metric.short();
    let mut outcome = CheckOutcome {
        claim: check.claim.to_string(),
        paper: check.paper.to_string(),
        phase: check.phase.to_string(),
        metric: check.metric.describe(),
        compared: String::new(),
        band: String::new(),
        measured: None,
        designs: Vec::new(),
        steps: Vec::new(),
        rounds: rounds.len(),
        verdict: Verdict::NotMeasured,
        direction: Verdict::NotMeasured,
        size: Verdict::NotApplicable,
        rule: String::new(),
    };
    match check.compare {
        Compare::Value { design, band } => {
            outcome.compared = format!("{short}({design})");
            outcome.measured = designs[0].spread.clone();
            judge_band(&mut outcome, band);
        }
        Compare::Ratio { a, b, band } => {
            outcome.compared = format!("{short}({a}) / {short}({b})");
            outcome.measured = Spread::of(&paired_ratios(&designs[0].rounds, &designs[1].rounds));
            judge_band(&mut outcome, band);
        }
        Compare::Increasing(order) => {
            outcome.compared = format!("{short}: {}", order.join(" < "));
            outcome.band = "each step > 1".into();
            let per: Vec<Vec<Option<f64>>> = designs.iter().map(|d| d.rounds.clone()).collect();
            let (steps, verdict) = judge_increasing(&per);
            outcome.steps = steps
                .into_iter()
                .enumerate()
                .map(|(i, (ratio, verdict))| OrderStep {
                    lower: order[i].to_string(),
                    higher: order[i + 1].to_string(),
                    ratio,
                    verdict,
                })
                .collect();
            outcome.verdict = verdict;
            outcome.direction = verdict;
            outcome.rule = "an ordering: direction only".into();
        }
    }
    outcome.designs = designs;
    outcome
}

/// What a phase ran, in the JSON report's `reproduce`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// The phase.
    pub name: String,
    /// Its design entries, as written.
    pub designs: Vec<String>,
    /// The `tierkv bench` command line that runs one round of it.
    pub command: String,
    /// Each round's full report, relative to the output directory.
    pub reports: Vec<String>,
    /// The designs side by side: each figure's median over the rounds, and the median of its
    /// per-round ratios to the first design.
    pub comparison: Vec<ComparisonRow>,
}

/// The `reproduce` field of a `tierkv reproduce` report.json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReproduceSummary {
    /// The experiment's name.
    pub experiment: String,
    /// The paper.
    pub paper: String,
    /// The paper's figure or table.
    pub figure: String,
    /// The paper's claim.
    pub claim: String,
    /// How the workload was scaled.
    pub scaling: String,
    /// Rounds run.
    pub rounds: usize,
    /// The phases, in order.
    pub phases: Vec<PhaseSummary>,
    /// Every check, with its verdict.
    pub checks: Vec<CheckOutcome>,
    /// The `tierkv reproduce` command line that measured the rounds.
    #[serde(default)]
    pub command: String,
}

/// The directory of `phase`'s round reports and charts: the output directory, or a
/// subdirectory named after the phase when the experiment has several.
pub fn phase_dir(exp: &Experiment, phase: &Phase, out: &Path) -> PathBuf {
    if exp.phases.len() == 1 {
        out.to_path_buf()
    } else {
        out.join(phase.name)
    }
}

fn round_file(r: usize) -> String {
    format!("round-{r}.json")
}

/// The `tierkv bench` command line of a phase, as run.
pub fn command_line(config: &BenchConfig, phase: &Phase) -> String {
    let mut args: Vec<String> = phase
        .bench_args
        .iter()
        .filter(|a| !a.starts_with("--num=") && !a.starts_with("--reads="))
        .map(|s| s.to_string())
        .collect();
    args.insert(0, format!("--num={}", config.num));
    args.insert(1, format!("--reads={}", config.reads));
    let designs: Vec<String> = config.design.iter().map(|e| e.to_string()).collect();
    let designs = designs.join(",");
    let safe = designs
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-,=+/".contains(c));
    let designs = if safe {
        designs
    } else {
        format!("'{}'", designs.replace('\'', "'\\''"))
    };
    let command = format!("tierkv bench --design={designs} {}", args.join(" "));
    match phase.from {
        Some(from) => format!(
            "{command} --use_existing_db  # on copies of phase {from}'s databases and pools"
        ),
        None => command,
    }
}

/// The side-by-side figures of several rounds: each cell the median over the rounds, each
/// ratio the median of the per-round ratios.
pub fn median_comparison(rounds: &[Vec<DesignRun>]) -> Vec<ComparisonRow> {
    let tables: Vec<Vec<ComparisonRow>> = rounds.iter().map(|r| compare(r)).collect();
    let Some(first) = tables.first() else {
        return Vec::new();
    };
    first
        .iter()
        .map(|row| {
            let same: Vec<&ComparisonRow> = tables
                .iter()
                .filter_map(|t| t.iter().find(|r| r.figure == row.figure))
                .collect();
            let cells = |pick: &dyn Fn(&ComparisonRow, usize) -> Option<f64>| {
                (0..row.values.len())
                    .map(|i| {
                        let v: Vec<f64> = same.iter().filter_map(|r| pick(r, i)).collect();
                        median(&v)
                    })
                    .collect::<Vec<_>>()
            };
            ComparisonRow {
                figure: row.figure.clone(),
                values: cells(&|r, i| r.values.get(i).copied().flatten()),
                ratios: cells(&|r, i| r.ratios.get(i).copied().flatten()),
            }
        })
        .collect()
}

/// A figure for the report: three significant-ish digits.
fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// `median (min..max)`, or the value alone for one round.
fn spread_text(s: Option<&Spread>) -> String {
    match s {
        None => "n/a".into(),
        Some(s) if s.values.len() == 1 || s.min == s.max => num(s.median),
        Some(s) => format!("{} ({}..{})", num(s.median), num(s.min), num(s.max)),
    }
}

/// The measured cell of a check: the judged quantity, or an ordering's designs and steps.
fn measured_text(c: &CheckOutcome) -> String {
    if c.steps.is_empty() {
        return spread_text(c.measured.as_ref());
    }
    let mut s = String::new();
    for (i, d) in c.designs.iter().enumerate() {
        if i > 0 {
            let step = &c.steps[i - 1];
            let _ = write!(s, " < [{}x] ", spread_text(step.ratio.as_ref()));
        }
        let _ = write!(s, "{} {}", d.design, spread_text(d.spread.as_ref()));
    }
    s
}

/// How the checks' bands are set and judged, as the reports say it.
pub const RULE_TEXT: &str = "Bands follow one rule from the paper's number (its effect, as the \
    ratio measured; for a range, the end nearest 1): **direction** holds when every round has \
    the paper's sign (above 1 for an effect above 1, below 1 for one below); **size** holds \
    when every round reaches the geometric midpoint between no effect and the paper's \
    (sqrt(effect): 4.9x -> 2.21x, 0.33 -> 0.57). A spread that straddles a bar is \
    inconclusive; one round gives no verdict. A band set by hand (a claim with no effect to \
    scale) says why in the paper column, and its one verdict is shown in both columns; an \
    ordering has a direction only.";

/// "direction holds, size does not hold", or the one verdict of a band set by hand or an
/// ordering.
pub fn verdicts_text(c: &CheckOutcome) -> String {
    if c.size == Verdict::NotApplicable || c.rule == "by hand" {
        c.verdict.to_string()
    } else {
        format!("direction {}, size {}", c.direction, c.size)
    }
}

/// The markdown report of a finished experiment from its summary; `charts` holds each phase's
/// chart files (relative to the output directory).
pub fn markdown(exp: &Experiment, summary: &ReproduceSummary, charts: &[Vec<String>]) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "# {}\n", exp.name);
    let _ = writeln!(m, "* **Paper:** {}", exp.paper);
    let _ = writeln!(m, "* **Figure / table:** {}", exp.figure);
    let _ = writeln!(
        m,
        "* **Designs compared:** {}",
        exp.all_designs().join(", ")
    );
    let _ = writeln!(m, "* **Paper's claim:** {}", exp.claim);
    let _ = writeln!(
        m,
        "* **Rounds:** {} (each check is judged on the median over the rounds; min..max is \
         the spread)\n",
        summary.rounds
    );
    let _ = writeln!(m, "## Workload, scaled to this machine\n");
    let _ = writeln!(m, "{}\n", exp.scaling);
    let _ = writeln!(m, "## Checks\n");
    let count = |v: Verdict| summary.checks.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        m,
        "**Result:** {} of {} checks hold, {} do not hold, {} inconclusive{}{}.\n",
        count(Verdict::Holds),
        summary.checks.len(),
        count(Verdict::DoesNotHold),
        count(Verdict::Inconclusive),
        match count(Verdict::NotMeasured) {
            0 => String::new(),
            n => format!(", {n} not measured"),
        },
        match count(Verdict::OneRound) {
            0 => String::new(),
            n => format!(", {n} with one round: no verdict"),
        }
    );
    let _ = writeln!(m, "{}\n", RULE_TEXT);
    let _ = writeln!(
        m,
        "| # | claim | compared (phase) | paper | measured: median (min..max) | band | \
         direction | size |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|");
    let cell = |s: &str| s.replace('|', "\\|");
    for (i, c) in summary.checks.iter().enumerate() {
        let _ = writeln!(
            m,
            "| {} | {} | {} ({}) | {} | {} | {} ({}) | {} | **{}** |",
            i + 1,
            cell(&c.claim),
            cell(&c.compared),
            c.phase,
            cell(&c.paper),
            cell(&measured_text(c)),
            cell(&c.band),
            c.rule,
            c.direction,
            c.size
        );
    }
    let _ = writeln!(m);
    for (i, c) in summary.checks.iter().enumerate() {
        let values: Vec<String> = c
            .designs
            .iter()
            .map(|d| {
                let per: Vec<String> = d
                    .rounds
                    .iter()
                    .map(|v| v.map_or("n/a".into(), num))
                    .collect();
                format!("{} [{}]", d.design, per.join(", "))
            })
            .collect();
        let _ = writeln!(
            m,
            "{}. {} per round: {}",
            i + 1,
            c.metric,
            values.join("; ")
        );
    }
    for (p, phase) in summary.phases.iter().enumerate() {
        let _ = writeln!(m, "\n## Phase {}\n", phase.name);
        let _ = writeln!(m, "Run as: `{}`\n", phase.command);
        let designs: Vec<&str> = phase
            .designs
            .iter()
            .map(|d| d.split_once('=').map_or(d.as_str(), |(l, _)| l))
            .collect();
        let _ = writeln!(
            m,
            "Medians over {} round(s); ratios are medians of each round's ratio.\n",
            summary.rounds
        );
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
        for row in &phase.comparison {
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
        let _ = writeln!(m, "\nEvery figure of each round: {}.\n", {
            let r: Vec<String> = phase.reports.iter().map(|r| format!("`{r}`")).collect();
            r.join(", ")
        });
        for c in charts.get(p).into_iter().flatten() {
            let _ = writeln!(m, "![{c}]({c})\n");
        }
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
    let _ = writeln!(
        m,
        "* Checks and verdicts: `report.json` (`reproduce`); charts: round 1."
    );
    m
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

fn out_dir(exp: &Experiment, args: &ReproduceArgs) -> PathBuf {
    args.out
        .clone()
        .unwrap_or_else(|| Path::new("reproduce-out").join(exp.name))
}

/// Runs `exp` (every phase, `--rounds` times) and writes its report; returns the path of
/// `report.md`.
pub fn run(exp: &Experiment, args: &ReproduceArgs, out: &mut dyn Write) -> EngineResult<PathBuf> {
    let dir = out_dir(exp, args);
    let rounds = args.rounds.unwrap_or(exp.rounds).max(1);
    if args.rounds == Some(0) || rounds > MAX_ROUNDS {
        return Err(format!("--rounds must be in 1..={MAX_ROUNDS}").into());
    }
    // Resolve everything before creating anything.
    let configs = exp
        .phases
        .iter()
        .map(|p| config_for(exp, p, args))
        .collect::<Result<Vec<_>, String>>()?;
    for p in exp.phases {
        let d = phase_dir(exp, p, &dir);
        std::fs::create_dir_all(&d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    }
    check_sources(exp, &configs)?;
    writeln!(out, "Reproducing {}: {}", exp.name, exp.claim)?;
    let measured = run_rounds(exp, &configs, rounds, &dir, out);
    remove_saved_databases(exp, &configs, &dir);
    let command = reproduce_command(exp, args, rounds);
    finish(exp, &configs, &measured?, &dir, &command, out)
}

/// Runs every phase of `exp` `rounds` times; returns per phase, per round, the runs.
fn run_rounds(
    exp: &Experiment,
    configs: &[BenchConfig],
    rounds: usize,
    dir: &Path,
    out: &mut dyn Write,
) -> EngineResult<Vec<Vec<Vec<DesignRun>>>> {
    let mut measured: Vec<Vec<Vec<DesignRun>>> = vec![Vec::new(); exp.phases.len()];
    for r in 1..=rounds {
        for (i, phase) in exp.phases.iter().enumerate() {
            let d = phase_dir(exp, phase, dir);
            let mut config = configs[i].clone();
            config.json = Some(d.join(round_file(r)));
            config.plot = (r == 1).then_some(d);
            let source = is_source(exp, phase);
            if source || phase.from.is_some() {
                let root = db_root(exp, phase, dir);
                remove_dir_if_present(&root)?;
                config.db = Some(root);
            }
            writeln!(out, "== Round {r} of {rounds}, phase {} ==", phase.name)?;
            if let Some(from) = phase.from {
                let (j, src) = exp
                    .phases
                    .iter()
                    .enumerate()
                    .find(|(_, p)| p.name == from)
                    .ok_or_else(|| format!("phase {} starts from no phase {from}", phase.name))?;
                restore(&configs[j], &saved_db_root(exp, src, dir), src, &config)?;
                writeln!(
                    out,
                    "Databases:  copies of phase {from}'s (fill benchmarks skipped)"
                )?;
                config.use_existing_db = true;
            }
            measured[i].push(commands::bench(&config, out)?);
            if source {
                save(&config, &saved_db_root(exp, phase, dir), phase)?;
            } else if let Some(root) = &config.db {
                remove_dir_if_present(root)?;
                remove_pools(&config);
            }
        }
    }
    Ok(measured)
}

/// Whether a later phase of `exp` starts from `phase`'s databases.
fn is_source(exp: &Experiment, phase: &Phase) -> bool {
    exp.phases.iter().any(|p| p.from == Some(phase.name))
}

/// Checks every phase's `from`: it names an earlier phase, and each of the phase's designs is
/// one of that phase's (by label, with the same entry).
fn check_sources(exp: &Experiment, configs: &[BenchConfig]) -> Result<(), String> {
    for (i, phase) in exp.phases.iter().enumerate() {
        let Some(from) = phase.from else { continue };
        let Some(j) = exp.phases[..i].iter().position(|p| p.name == from) else {
            return Err(format!(
                "experiment {}: phase {} starts from {from}, which is not an earlier phase",
                exp.name, phase.name
            ));
        };
        for entry in configs[i].design.iter() {
            if !configs[j].design.iter().any(|e| e == entry) {
                return Err(format!(
                    "experiment {}: phase {} starts from {from}, which has no design {entry}",
                    exp.name, phase.name
                ));
            }
        }
    }
    Ok(())
}

/// Where `phase` keeps its databases while it runs (those of a phase that starts from another
/// are copies, removed after it).
fn db_root(exp: &Experiment, phase: &Phase, dir: &Path) -> PathBuf {
    phase_dir(exp, phase, dir).join("db")
}

/// Where a phase that others start from keeps its databases between rounds' phases.
fn saved_db_root(exp: &Experiment, phase: &Phase, dir: &Path) -> PathBuf {
    phase_dir(exp, phase, dir).join("db-saved")
}

/// Where a phase that others start from keeps the pool of an entry whose pool is `pool`.
fn saved_pool(pool: &Path, phase: &Phase) -> PathBuf {
    let mut name = pool.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".saved-{}", phase.name));
    pool.with_file_name(name)
}

fn remove_dir_if_present(dir: &Path) -> EngineResult<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("removing {}: {e}", dir.display()).into())
        }
        _ => Ok(()),
    }
}

/// Moves the databases `config` (a phase others start from) just ran, and their pools, aside
/// (renames: nothing is copied).
fn save(config: &BenchConfig, saved_root: &Path, phase: &Phase) -> EngineResult<()> {
    let root = config
        .db
        .as_ref()
        .ok_or("a phase others start from keeps its databases")?;
    remove_dir_if_present(saved_root)?;
    std::fs::rename(root, saved_root)
        .map_err(|e| format!("moving {} aside: {e}", root.display()))?;
    for entry in config.design.iter() {
        if let Some(pool) = config.pm_path_for(&entry.label).filter(|p| p.exists()) {
            let saved = saved_pool(&pool, phase);
            std::fs::rename(&pool, &saved)
                .map_err(|e| format!("moving {} aside: {e}", pool.display()))?;
        }
    }
    Ok(())
}

/// Copies, for each design of `config`, the database and pool `source` (the configuration of
/// `src`, the phase it starts from) saved, to where `config` opens them.
fn restore(
    source: &BenchConfig,
    saved_root: &Path,
    src: &Phase,
    config: &BenchConfig,
) -> EngineResult<()> {
    let root = config
        .db
        .as_ref()
        .ok_or("a phase that starts from another has a root")?;
    for entry in config.design.iter() {
        let from = commands::design_path(source, saved_root, entry);
        let to = commands::design_path(config, root, entry);
        crate::snapshot::copy_tree(&from, &to).map_err(|e| {
            format!(
                "copying the database of {} from phase {} ({}): {e}",
                entry.label,
                src.name,
                from.display()
            )
        })?;
        if let (Some(pool), Some(target)) = (
            source.pm_path_for(&entry.label),
            config.pm_path_for(&entry.label),
        ) {
            let saved = saved_pool(&pool, src);
            if !saved.exists() {
                // A design without a pool (RocksDB, an SSD-only design).
                continue;
            }
            crate::snapshot::copy_sparse(&saved, &target).map_err(|e| {
                format!(
                    "copying the pool of {} from phase {} ({}): {e}",
                    entry.label,
                    src.name,
                    saved.display()
                )
            })?;
        }
    }
    Ok(())
}

/// Removes what the phases others start from saved (best effort: the run's result matters
/// more than a leftover file, which the next run replaces).
/// Removes the pools `config`'s designs had outside their database directories (`--pm_path`),
/// with their lock files.
fn remove_pools(config: &BenchConfig) {
    for entry in config.design.iter() {
        if let Some(pool) = config.pm_path_for(&entry.label) {
            let _ = std::fs::remove_file(&pool);
            let _ = std::fs::remove_file(tierkv::pool_lock_path(&pool));
        }
    }
}

fn remove_saved_databases(exp: &Experiment, configs: &[BenchConfig], dir: &Path) {
    for (i, phase) in exp.phases.iter().enumerate() {
        if !is_source(exp, phase) {
            continue;
        }
        let _ = std::fs::remove_dir_all(saved_db_root(exp, phase, dir));
        for entry in configs[i].design.iter() {
            if let Some(pool) = configs[i].pm_path_for(&entry.label) {
                let _ = std::fs::remove_file(saved_pool(&pool, phase));
                let _ = std::fs::remove_file(tierkv::pool_lock_path(&pool));
            }
        }
    }
}

/// Re-judges `exp` on the rounds in its output directory and rewrites its reports; returns the
/// path of `report.md`.
pub fn rejudge(
    exp: &Experiment,
    args: &ReproduceArgs,
    out: &mut dyn Write,
) -> EngineResult<PathBuf> {
    let dir = out_dir(exp, args);
    let mut configs = Vec::new();
    let mut measured = Vec::new();
    for phase in exp.phases {
        let d = phase_dir(exp, phase, &dir);
        let mut rounds = Vec::new();
        let mut config = None;
        while let Ok(text) = std::fs::read_to_string(d.join(round_file(rounds.len() + 1))) {
            let path = d.join(round_file(rounds.len() + 1));
            let report: JsonReport = serde_json::from_str(&text)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            config.get_or_insert(report.flags);
            rounds.push(report.runs);
        }
        let Some(config) = config else {
            return Err(format!(
                "no measured rounds of phase {} in {} ({} is missing): run the experiment first",
                phase.name,
                d.display(),
                round_file(1)
            )
            .into());
        };
        if let Some(first) = measured.first().map(|m: &Vec<Vec<DesignRun>>| m.len()) {
            if first != rounds.len() {
                return Err(format!(
                    "phase {} has {} rounds in {}, the first phase {first}",
                    phase.name,
                    rounds.len(),
                    d.display()
                )
                .into());
            }
        }
        configs.push(config);
        measured.push(rounds);
    }
    writeln!(
        out,
        "Re-judging {} on the {} round(s) in {}",
        exp.name,
        measured.first().map_or(0, |m| m.len()),
        dir.display()
    )?;
    // The command that measured these rounds, as the report before this one recorded it.
    let command = std::fs::read_to_string(dir.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<JsonReport>(&t).ok())
        .and_then(|r| r.reproduce)
        .map(|r| r.command)
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| reproduce_command(exp, args, measured.first().map_or(0, |m| m.len())));
    finish(exp, &configs, &measured, &dir, &command, out)
}

/// The `tierkv reproduce` command line that runs `exp` as `args` say, `rounds` times.
fn reproduce_command(exp: &Experiment, args: &ReproduceArgs, rounds: usize) -> String {
    let mut c = format!("tierkv reproduce {} --rounds {rounds}", exp.name);
    if let Some(n) = args.num {
        let _ = write!(c, " --num {n}");
    }
    if let Some(r) = args.reads {
        let _ = write!(c, " --reads {r}");
    }
    for d in &args.with_design {
        let _ = write!(c, " --with-design {d}");
    }
    if let Some(p) = &args.pm_path {
        let _ = write!(c, " --pm_path {}", p.display());
    }
    if args.self_test {
        c.push_str(" --self-test");
    }
    c
}

/// Judges the checks on `measured` (per phase, per round, the runs), writes `report.md` and
/// `report.json` into `dir` and prints the verdicts.
fn finish(
    exp: &Experiment,
    configs: &[BenchConfig],
    measured: &[Vec<Vec<DesignRun>>],
    dir: &Path,
    command: &str,
    out: &mut dyn Write,
) -> EngineResult<PathBuf> {
    let rounds = measured.first().map_or(0, |m| m.len());
    let checks: Vec<CheckOutcome> = exp
        .checks
        .iter()
        .map(|c| {
            let i = exp.phases.iter().position(|p| p.name == c.phase);
            evaluate(c, i.map_or(&[][..], |i| &measured[i]))
        })
        .collect();
    let mut phases = Vec::new();
    let mut charts = Vec::new();
    for (i, phase) in exp.phases.iter().enumerate() {
        let d = phase_dir(exp, phase, dir);
        let rel = |name: &str| {
            if exp.phases.len() == 1 {
                name.to_string()
            } else {
                format!("{}/{name}", phase.name)
            }
        };
        let mut svgs: Vec<String> = std::fs::read_dir(&d)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".svg"))
                    .collect()
            })
            .unwrap_or_default();
        svgs.sort();
        charts.push(svgs.iter().map(|s| rel(s)).collect::<Vec<_>>());
        phases.push(PhaseSummary {
            name: phase.name.to_string(),
            designs: configs[i].design.iter().map(|e| e.to_string()).collect(),
            command: command_line(&configs[i], phase),
            reports: (1..=rounds).map(|r| rel(&round_file(r))).collect(),
            comparison: median_comparison(&measured[i]),
        });
    }
    let summary = ReproduceSummary {
        experiment: exp.name.to_string(),
        paper: exp.paper.to_string(),
        figure: exp.figure.to_string(),
        claim: exp.claim.to_string(),
        scaling: exp.scaling.to_string(),
        rounds,
        phases,
        checks,
        command: command.to_string(),
    };
    let first_runs = measured
        .first()
        .and_then(|m| m.first())
        .cloned()
        .unwrap_or_default();
    let mut json = JsonReport::new(&configs[0], first_runs);
    json.reproduce = Some(summary.clone());
    json.write_to(&dir.join("report.json"))?;
    let path = dir.join("report.md");
    std::fs::write(&path, markdown(exp, &summary, &charts))
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    writeln!(out, "** Checks of {} over {rounds} round(s) **", exp.name)?;
    for (i, c) in summary.checks.iter().enumerate() {
        writeln!(
            out,
            "{}. {}: {} = {} (band {}, {}; paper {}): {}",
            i + 1,
            c.claim,
            c.compared,
            measured_text(c),
            c.band,
            c.rule,
            c.paper,
            verdicts_text(c)
        )?;
    }
    writeln!(out, "Report written to {}", path.display())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::{Bench, Metric};
    use crate::report::{BenchResult, LatencySummary};
    use crate::verdict::Band;
    use tierkv::Design;

    /// `--with-design` appends its entry to every phase, after the experiment's designs, and
    /// refuses a label the experiment already runs.
    #[test]
    fn with_design_joins_every_phase() {
        let e = SELF_TEST_EXPERIMENTS[0];
        let args = ReproduceArgs {
            with_design: vec!["big=leveled+table.block_size=8192".into()],
            ..ReproduceArgs::default()
        };
        for p in e.phases {
            let config = config_for(&e, p, &args).unwrap();
            let labels: Vec<&str> = config.design.iter().map(|d| d.label.as_str()).collect();
            let own = e.phase_designs(p).len();
            assert_eq!(labels.len(), own + 1, "{labels:?}");
            assert_eq!(labels[own], "big");
            assert_eq!(config.design.0[own].overrides.len(), 1);
        }
        let label = config_for(&e, &e.phases[0], &ReproduceArgs::default())
            .unwrap()
            .design
            .0[0]
            .label
            .clone();
        let twin = ReproduceArgs {
            with_design: vec![label],
            ..ReproduceArgs::default()
        };
        let err = config_for(&e, &e.phases[0], &twin).unwrap_err();
        assert!(err.contains("already runs"), "{err}");
        let unknown = ReproduceArgs {
            with_design: vec!["nosuchdesign".into()],
            ..ReproduceArgs::default()
        };
        assert!(config_for(&e, &e.phases[0], &unknown).is_err());
    }

    /// A phase starts only from an earlier phase, and only with designs that phase ran.
    #[test]
    fn phases_start_from_earlier_phases_with_their_designs() {
        let base = SELF_TEST_EXPERIMENTS[0];
        let configs = |e: &Experiment| -> Vec<BenchConfig> {
            e.phases
                .iter()
                .map(|p| config_for(e, p, &ReproduceArgs::default()).unwrap())
                .collect()
        };
        check_sources(&base, &configs(&base)).unwrap();
        let with = |fill_from: Option<&'static str>, reread: &'static [&'static str]| {
            let mut phases = base.phases.to_vec();
            phases[0].from = fill_from;
            phases[2].designs = reread;
            Experiment {
                phases: Vec::leak(phases),
                ..base
            }
        };
        // From a later phase.
        let e = with(Some("reread"), base.phases[2].designs);
        let err = check_sources(&e, &configs(&e)).unwrap_err();
        assert!(err.contains("not an earlier phase"), "{err}");
        // A design the source phase did not run (same label, other options, too).
        for designs in [
            &["leveled", "new=leveled+table.block_size=8192"][..],
            &["twin=leveled+table.block_size=8192"][..],
        ] {
            let e = with(None, designs);
            let err = check_sources(&e, &configs(&e)).unwrap_err();
            assert!(err.contains("which has no design"), "{err}");
        }
        assert!(command_line(&configs(&base)[2], &base.phases[2])
            .ends_with("--use_existing_db  # on copies of phase fill's databases and pools"));
    }

    /// A source phase's databases and pools are moved aside after it runs, and each later
    /// phase gets copies where its configuration opens them (one design: `--db` itself and
    /// `--pm_path` unsuffixed).
    #[test]
    fn saved_databases_and_pools_are_copied_where_a_phase_opens_them() {
        let dir = tempfile::tempdir().unwrap();
        let phase = SELF_TEST_EXPERIMENTS[0].phases[0];
        let parse = |args: &[&str]| {
            let flags = std::iter::once("bench").chain(args.iter().copied());
            BenchFlags::try_parse_from(flags).unwrap().config
        };
        let pool = dir.path().join("pool");
        let pm = format!("--pm_path={}", pool.display());
        let root = dir.path().join("db");
        let db = format!("--db={}", root.display());
        let source = parse(&["--design=leveled,leveled-pm", &pm, &db]);
        for label in ["leveled", "leveled-pm"] {
            std::fs::create_dir_all(root.join(label)).unwrap();
            std::fs::write(root.join(label).join("CURRENT"), label).unwrap();
        }
        let pm_pool = source.pm_path_for("leveled-pm").unwrap();
        let f = std::fs::File::create(&pm_pool).unwrap();
        f.set_len(64 << 20).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, b"pool data", 1 << 20).unwrap();
        let saved = dir.path().join("saved");
        save(&source, &saved, &phase).unwrap();
        assert!(!root.exists() && !pm_pool.exists());
        assert!(saved_pool(&pm_pool, &phase).exists());

        let target_root = dir.path().join("copy");
        let target_pool = dir.path().join("copy.pool");
        let pm = format!("--pm_path={}", target_pool.display());
        let db = format!("--db={}", target_root.display());
        let target = parse(&["--design=leveled-pm", &pm, &db]);
        restore(&source, &saved, &phase, &target).unwrap();
        assert_eq!(
            std::fs::read(target_root.join("CURRENT")).unwrap(),
            b"leveled-pm"
        );
        let copied = std::fs::read(&target_pool).unwrap();
        assert_eq!(copied.len(), 64 << 20);
        assert_eq!(&copied[1 << 20..(1 << 20) + 9], b"pool data");
        // A design without a saved pool (here: leveled, an SSD-only design) copies only its
        // database.
        let target = parse(&["--design=leveled", &pm, &db]);
        std::fs::remove_file(&target_pool).unwrap();
        restore(&source, &saved, &phase, &target).unwrap();
        assert_eq!(
            std::fs::read(target_root.join("CURRENT")).unwrap(),
            b"leveled"
        );
        assert!(!target_pool.exists());
    }

    #[test]
    fn registry_entries_are_complete_and_parse() {
        assert!(!EXPERIMENTS.is_empty());
        let all: Vec<&Experiment> = EXPERIMENTS.iter().chain(SELF_TEST_EXPERIMENTS).collect();
        for (i, e) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|o| o.name != e.name), "{}", e.name);
            for s in [e.name, e.paper, e.figure, e.scaling, e.claim] {
                assert!(!s.trim().is_empty(), "{}", e.name);
            }
            assert!(!e.phases.is_empty() && !e.checks.is_empty(), "{}", e.name);
            for (j, p) in e.phases.iter().enumerate() {
                assert!(e.phases[..j].iter().all(|o| o.name != p.name), "{}", e.name);
                let labels: Vec<String> = e
                    .phase_designs(p)
                    .iter()
                    .map(|d| parse_entry_syntax(d).unwrap().label)
                    .collect();
                assert!(!labels.is_empty(), "{} {}", e.name, p.name);
                assert!(
                    p.bench_args.iter().all(|a| !a.starts_with("--design")),
                    "{}: designs go in `designs`",
                    e.name
                );
                let flags = std::iter::once("bench").chain(p.bench_args.iter().copied());
                BenchFlags::try_parse_from(flags).unwrap();
            }
            for c in e.checks {
                let p = e.phase(c.phase).unwrap_or_else(|| {
                    panic!("{}: check {:?} names no phase of it", e.name, c.claim)
                });
                let labels: Vec<String> = e
                    .phase_designs(p)
                    .iter()
                    .map(|d| parse_entry_syntax(d).unwrap().label)
                    .collect();
                for d in c.compare.designs() {
                    assert!(
                        labels.iter().any(|l| l == d),
                        "{}: {d} not in {}",
                        e.name,
                        p.name
                    );
                }
                if let Some(b) = c.metric.benchmark() {
                    let flags = std::iter::once("bench").chain(p.bench_args.iter().copied());
                    let config = BenchFlags::try_parse_from(flags).unwrap().config;
                    assert!(
                        config.benchmarks.iter().any(|x| x.name() == b.name),
                        "{}: {} does not run {}",
                        e.name,
                        p.name,
                        b.name
                    );
                }
                if let Compare::Increasing(d) = c.compare {
                    assert!(d.len() >= 2, "{}", e.name);
                }
            }
            // Every phase whose designs this build has resolves (its YCSB properties
            // included) and validates; any other failure is the phase's own.
            for p in e.phases {
                match config_for(e, p, &ReproduceArgs::default()) {
                    Ok(c) => c.validate().unwrap(),
                    Err(m) if m.contains("is missing from this build") => {}
                    Err(m) => panic!("{}: phase {}: {m}", e.name, p.name),
                }
            }
            let configs: Result<Vec<_>, _> = e
                .phases
                .iter()
                .map(|p| config_for(e, p, &ReproduceArgs::default()))
                .collect();
            if let Ok(configs) = configs {
                check_sources(e, &configs).unwrap();
            }
        }
        let mut out = Vec::new();
        list(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("leveled-vs-leveled-pm"), "{text}");
        assert!(
            text.contains("check:   leveled-pm does random writes"),
            "{text}"
        );
        assert!(!text.contains("self-test"), "hidden: {text}");
        assert!(find("nope", false)
            .unwrap_err()
            .contains("leveled-vs-leveled-pm"));
        assert!(find("self-test", false).is_err());
        assert!(find("self-test", true).is_ok());
    }

    #[test]
    fn every_band_follows_the_rule_or_says_why_not() {
        for exp in EXPERIMENTS {
            for c in exp.checks {
                let band = match c.compare {
                    Compare::Value { band, .. } | Compare::Ratio { band, .. } => band,
                    Compare::Increasing(_) => continue,
                };
                match band {
                    Band::Paper(effect) => assert!(
                        effect > 0.0 && effect != 1.0,
                        "{}: {}: the paper's effect {effect} is no effect",
                        exp.name,
                        c.claim
                    ),
                    _ => assert!(
                        c.paper.contains("band by hand: "),
                        "{}: {}: a band set by hand ({band}) without its reason",
                        exp.name,
                        c.claim
                    ),
                }
            }
        }
    }

    #[test]
    fn missing_designs_are_named() {
        let exp = find("leveled-vs-leveled-pm", false).unwrap();
        match resolve_designs(exp, &exp.phases[0]) {
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
            designs: &["leveled", "V=no-such-design+nvlsm.max_floors=2"],
            ..*exp
        };
        let dir = tempfile::tempdir().unwrap();
        let args = ReproduceArgs {
            out: Some(dir.path().join("out")),
            ..ReproduceArgs::default()
        };
        let err = run(&fake, &args, &mut Vec::new()).unwrap_err().to_string();
        assert!(
            err.contains("design \"no-such-design\" is missing"),
            "{err}"
        );
        assert!(!dir.path().join("out").exists(), "nothing is created");
        // A variant's override must name an option of this build.
        let fake = Experiment {
            designs: &["leveled", "V=leveled+nvlsm.max_floors=2"],
            ..*exp
        };
        let err = run(&fake, &args, &mut Vec::new()).unwrap_err().to_string();
        assert!(
            err.contains("design V: override nvlsm.max_floors=2"),
            "{err}"
        );
        assert!(err.contains("no field \"max_floors\""), "{err}");
        assert!(!dir.path().join("out").exists(), "nothing is created");
    }

    /// A run of `design` whose fillrandom did `ops_per_sec`, with figures (WA) when given.
    fn run_of(design: &str, ops_per_sec: f64, wa: Option<f64>) -> DesignRun {
        let mut r = BenchResult::new(
            "fillrandom",
            1000,
            1000.0 / ops_per_sec,
            1.0,
            0,
            LatencySummary::default(),
            None,
            None,
        );
        r.latency.avg_us = 1e6 / ops_per_sec;
        let mut run = DesignRun::new(design, "tierkv", serde_json::Value::Null, vec![r], None);
        run.figures = wa.map(|w| {
            let mut f = crate::figures::RunFigures::default();
            f.database.amplification.write_excluding_log = Some(w);
            f
        });
        run
    }

    /// The stable share of a fill counts the operations of the one-second windows before the
    /// first whose rate is under 70% of the first window's; a fill that never slows scores 1,
    /// one without a whole first window is not measured.
    #[test]
    fn ops_before_the_first_slowdown_count_the_windows_before_it() {
        // Half-second samples: windows of two.
        let sample = |ops: u64| crate::report::Sample {
            t_sec: 0.0,
            interval_sec: 0.5,
            ops,
            ops_per_sec: ops as f64 * 2.0,
            stall_micros: 0,
            dram_bytes: None,
        };
        let metric = Metric::OpsBeforeSlowdown(Bench::all("fillrandom"));
        let mut run = run_of("A", 100.0, None);
        assert_eq!(metric.value(&run), None, "no samples: not measured");
        run.benchmarks[0].samples = vec![sample(100)];
        assert_eq!(metric.value(&run), None, "no whole window: not measured");
        // Windows of 200, 150 (75%: not slowed), 130 (65%: slowed), 200; 1000 in all.
        run.benchmarks[0].samples = [100, 100, 50, 100, 65, 65, 100, 100]
            .into_iter()
            .map(sample)
            .collect();
        run.benchmarks[0].samples.push(sample(320));
        assert_eq!(metric.value(&run), Some(0.35));
        // A short last window is judged by its rate: 20 ops in 0.1 s is 200 ops/s, slow.
        run.benchmarks[0].samples = vec![sample(500), sample(480)];
        run.benchmarks[0].samples.push(crate::report::Sample {
            interval_sec: 0.1,
            ..sample(20)
        });
        assert_eq!(metric.value(&run), Some(0.98));
        // Never slowed.
        run.benchmarks[0].samples = vec![sample(250); 4];
        assert_eq!(metric.value(&run), Some(1.0));
        assert_eq!(metric.short(), "stable share fillrandom");
    }

    #[test]
    fn checks_are_judged_on_medians_and_spreads() {
        let rounds = vec![
            vec![run_of("A", 100.0, Some(1.0)), run_of("B", 300.0, Some(3.0))],
            vec![run_of("A", 120.0, Some(1.2)), run_of("B", 200.0, Some(3.0))],
            vec![run_of("A", 90.0, Some(1.1)), run_of("B", 310.0, Some(2.0))],
        ];
        let check = |metric, compare| Check {
            claim: "c",
            paper: "p",
            phase: "main",
            metric,
            compare,
        };
        // WA(A) / WA(B): 0.333, 0.4, 0.55 -> median 0.4.
        let wa = |band| {
            evaluate(
                &check(
                    Metric::WriteAmpExcludingLog,
                    Compare::Ratio {
                        a: "A",
                        b: "B",
                        band,
                    },
                ),
                &rounds,
            )
        };
        let o = wa(Band::AtMost(0.6));
        assert_eq!(o.verdict, Verdict::Holds);
        let m = o.measured.as_ref().unwrap();
        assert!((m.median - 0.4).abs() < 1e-9 && (m.max - 0.55).abs() < 1e-9);
        assert_eq!(o.compared, "WA w/o log(A) / WA w/o log(B)");
        assert_eq!(o.band, "<= 0.6");
        assert_eq!(o.rounds, 3);
        assert_eq!(o.designs[1].rounds, vec![Some(3.0), Some(3.0), Some(2.0)]);
        assert_eq!(wa(Band::AtMost(0.5)).verdict, Verdict::Inconclusive);
        assert_eq!(wa(Band::AtMost(0.3)).verdict, Verdict::DoesNotHold);
        // By the rule: the paper's 0.2 -> direction < 1 holds; size <= 0.447 straddled.
        let o = wa(Band::Paper(0.2));
        assert_eq!(
            (o.direction, o.size),
            (Verdict::Holds, Verdict::Inconclusive)
        );
        assert_eq!(
            (o.verdict, o.rule.as_str()),
            (Verdict::Inconclusive, "the rule")
        );
        assert_eq!(verdicts_text(&o), "direction holds, size inconclusive");
        // The paper's 0.1 -> size <= 0.316: no round reaches it.
        assert_eq!(wa(Band::Paper(0.1)).size, Verdict::DoesNotHold);
        // One round: no verdict either way.
        let one = evaluate(
            &check(
                Metric::WriteAmpExcludingLog,
                Compare::Ratio {
                    a: "A",
                    b: "B",
                    band: Band::Paper(0.33),
                },
            ),
            &rounds[..1],
        );
        assert_eq!(
            (one.direction, one.size),
            (Verdict::OneRound, Verdict::OneRound)
        );
        // One design against a band.
        let v = evaluate(
            &check(
                Metric::OpsPerSec(Bench::all("fillrandom")),
                Compare::Value {
                    design: "B",
                    band: Band::AtLeast(150.0),
                },
            ),
            &rounds,
        );
        assert_eq!(v.verdict, Verdict::Holds);
        assert!((v.measured.unwrap().median - 300.0).abs() < 1e-6);
        // Orderings: latency A > B in every round, so B < A holds and A < B does not.
        let order = |o| {
            evaluate(
                &check(
                    Metric::AvgLatency(Bench::all("fillrandom")),
                    Compare::Increasing(o),
                ),
                &rounds,
            )
        };
        let o = order(&["B", "A"]);
        assert_eq!(o.verdict, Verdict::Holds);
        assert_eq!(o.steps.len(), 1);
        assert_eq!(
            (o.steps[0].lower.as_str(), o.steps[0].higher.as_str()),
            ("B", "A")
        );
        assert!(measured_text(&o).starts_with("B "), "{}", measured_text(&o));
        assert_eq!(order(&["A", "B"]).verdict, Verdict::DoesNotHold);
        // Missing designs, benchmarks, operation types and figures are not measured.
        assert_eq!(order(&["A", "C"]).verdict, Verdict::NotMeasured);
        let missing = |metric| {
            evaluate(
                &check(
                    metric,
                    Compare::Value {
                        design: "A",
                        band: Band::AtLeast(0.0),
                    },
                ),
                &rounds,
            )
            .verdict
        };
        assert_eq!(
            missing(Metric::OpsPerSec(Bench::all("readrandom"))),
            Verdict::NotMeasured
        );
        assert_eq!(
            missing(Metric::P99Latency(Bench::op("fillrandom", "get"))),
            Verdict::NotMeasured
        );
        assert_eq!(missing(Metric::SpaceAmp), Verdict::NotMeasured);
        assert_eq!(missing(Metric::StallSeconds), Verdict::Holds);
        assert_eq!(
            evaluate(
                &check(
                    Metric::WriteAmp,
                    Compare::Value {
                        design: "A",
                        band: Band::AtLeast(0.0)
                    }
                ),
                &[]
            )
            .verdict,
            Verdict::NotMeasured
        );
        // Medians of the side-by-side table.
        let rows = median_comparison(&rounds);
        let ops = rows
            .iter()
            .find(|r| r.figure == "fillrandom ops/s")
            .unwrap();
        assert_eq!(ops.values[0], Some(100.0));
        assert!((ops.values[1].unwrap() - 300.0).abs() < 1e-6);
        // Per-round ratios 3.0, 1.67, 3.44: their median, not the ratio of the medians.
        assert!(
            (ops.ratios[1].unwrap() - 3.0).abs() < 1e-6,
            "{:?}",
            ops.ratios
        );
    }

    /// `--pm_path DIR`: the pools of every phase live in DIR while they run (a phase that starts
    /// from another opens copies of its pools) and none is left when the experiment is done.
    #[test]
    fn pools_go_to_the_pm_path_and_are_removed() {
        const EXP: Experiment = Experiment {
            name: "test-pools",
            paper: "test paper",
            figure: "Figure 0",
            designs: &["leveled-pm", "nvlsm"],
            phases: &[
                Phase {
                    name: "fill",
                    bench_args: &[
                        "--benchmarks=fillrandom,readrandom",
                        "--num=1500",
                        "--write_buffer_size=65536",
                        "--pm_size=67108864",
                    ],
                    designs: &[],
                    from: None,
                },
                Phase {
                    name: "reread",
                    bench_args: &[
                        "--benchmarks=fillrandom,readrandom",
                        "--num=1500",
                        "--write_buffer_size=65536",
                        "--pm_size=67108864",
                    ],
                    designs: &[],
                    from: Some("fill"),
                },
                Phase {
                    name: "alone",
                    bench_args: &[
                        "--benchmarks=fillrandom",
                        "--num=1500",
                        "--pm_size=67108864",
                    ],
                    designs: &[],
                    from: None,
                },
            ],
            scaling: "tiny",
            claim: "nothing",
            checks: &[],
            rounds: 1,
        };
        let dir = tempfile::tempdir().unwrap();
        let pm = dir.path().join("pm");
        let args = ReproduceArgs {
            out: Some(dir.path().join("out")),
            pm_path: Some(pm.clone()),
            ..ReproduceArgs::default()
        };
        let err = run(&EXP, &args, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
        std::fs::create_dir(&pm).unwrap();
        let mut out = Vec::new();
        run(&EXP, &args, &mut out).unwrap();
        let text = String::from_utf8_lossy(&out);
        // The reread phase found the keys the fill's reads found, in the copies of its pools.
        let report = |phase: &str| -> JsonReport {
            let path = dir.path().join(format!("out/{phase}/round-1.json"));
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
        };
        let (fill, reread) = (report("fill"), report("reread"));
        for (f, r) in fill.runs.iter().zip(&reread.runs) {
            let found = f.benchmarks[1].found.unwrap();
            assert!(found > 500, "{}: {text}", f.design);
            assert_eq!(r.benchmarks[0].found, Some(found), "{}: {text}", r.design);
        }
        let left: Vec<_> = std::fs::read_dir(&pm).unwrap().collect();
        assert!(left.is_empty(), "pools left in --pm_path: {left:?}");
    }

    #[test]
    fn a_small_experiment_writes_its_report() {
        // A registry entry over the one design every build has and a variant of it, on a
        // tiny workload.
        const EXP: Experiment = Experiment {
            name: "test-small",
            paper: "test paper",
            figure: "Figure 0",
            designs: &[
                "leveled",
                "l0-8=leveled+compaction.level0_compaction_trigger=8",
            ],
            phases: &[Phase {
                name: "main",
                bench_args: &[
                    "--benchmarks=fillrandom,readrandom,ycsb-load,ycsb-a",
                    "--num=2000",
                    "--reads=2000",
                    "--write_buffer_size=65536",
                    "--sample_interval_ms=100",
                ],
                designs: &[],
                from: None,
            }],
            scaling: "tiny",
            claim: "nothing",
            checks: &[Check {
                claim: "fillrandom of a design against itself",
                paper: "1",
                phase: "main",
                metric: Metric::OpsPerSec(Bench::all("fillrandom")),
                compare: Compare::Ratio {
                    a: "leveled",
                    b: "leveled",
                    band: Band::Above(1.0),
                },
            }],
            rounds: 1,
        };
        let exp = EXP;
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
            "**Designs compared:** leveled, l0-8=leveled+compaction.level0_compaction_trigger=8",
            "--num=1500",
            "--design=leveled,l0-8=leveled+compaction.level0_compaction_trigger=8",
            "| fillrandom ops/s |",
            "| write amplification |",
            "l0-8 (ratio to leveled)",
            "ops/s fillrandom(leveled) / ops/s fillrandom(leveled) (main) | 1 | 1.000 | > 1 \
             (by hand) | one round: no verdict | **one round: no verdict** |",
            "**Result:** 0 of 1 checks hold, 0 do not hold, 0 inconclusive, 1 with one round: \
             no verdict.",
            "![amplification.svg](amplification.svg)",
            "`round-1.json`",
        ] {
            assert!(md.contains(part), "{part:?} missing from\n{md}");
        }
        let out = dir.path().join("out");
        let svg = std::fs::read_to_string(out.join("throughput-ycsb-a.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("</svg>"));
        let report: JsonReport =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        assert_eq!(report.runs[1].design, "l0-8");
        assert_eq!(report.runs[1].base_design.as_deref(), Some("leveled"));
        let summary = report.reproduce.unwrap();
        // One round: no spread, so no verdict.
        assert_eq!(summary.checks[0].verdict, Verdict::OneRound);
        assert_eq!(summary.phases[0].reports, vec!["round-1.json"]);
        assert!(out.join("round-1.json").exists());
        // Re-judged from the files: the same verdicts.
        let again = ReproduceArgs {
            rejudge: true,
            ..args.clone()
        };
        rejudge(&exp, &again, &mut Vec::new()).unwrap();
        let back: JsonReport =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        assert_eq!(back.reproduce.unwrap().checks, summary.checks);
        let err = rejudge(
            &exp,
            &ReproduceArgs {
                out: Some(dir.path().join("empty")),
                ..again
            },
            &mut Vec::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no measured rounds of phase main"), "{err}");
    }
}
