//! The experiment's summary (`report.json`'s `reproduce`) and its markdown report.

use super::*;

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
pub(crate) fn num(v: f64) -> String {
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
pub(crate) fn spread_text(s: Option<&Spread>) -> String {
    match s {
        None => "n/a".into(),
        Some(s) if s.values.len() == 1 || s.min == s.max => num(s.median),
        Some(s) => format!("{} ({}..{})", num(s.median), num(s.min), num(s.max)),
    }
}

/// The measured cell of a check: the judged quantity, or an ordering's designs and steps.
pub(crate) fn measured_text(c: &CheckOutcome) -> String {
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
