//! The results page (`tierkv reproduce --summary DIR... [--survey REPORT.json...]`): turns
//! finished experiment directories (each a `tierkv reproduce` output with its `report.json`)
//! into one markdown page, one row per claim, generated rather than written by hand; and, from
//! `tierkv bench --json` reports of one common workload (the survey), a table of every design
//! side by side that opens the page.
//!
//! Each claim's row gives what a reader needs to trust or redo it: the paper and figure, the
//! claim, the paper's number, the measured median with its spread, the rounds, the direction
//! and size verdicts ([`crate::verdict`]), the date and commit of the measurement (from the
//! experiment's first round report: its file time and the revision it records) and the command
//! that measured it.

use crate::engine::EngineResult;
use crate::report::{DesignRun, JsonReport};
use crate::reproduce::{self, CheckOutcome, ReproduceSummary};
use crate::verdict::Verdict;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One experiment directory, read.
struct Measured {
    summary: ReproduceSummary,
    /// The date (UTC, `YYYY-MM-DD`) its first phase's last round was written.
    date: String,
    /// The revision its rounds were measured with (short).
    commit: String,
}

/// One survey report, read: its `--threads` and its runs.
struct Survey {
    threads: usize,
    command: String,
    runs: Vec<DesignRun>,
    commit: String,
    date: String,
}

/// The benchmarks of the survey's columns, in order.
pub const SURVEY_BENCHMARKS: &[&str] = &["fillrandom", "readrandom", "ycsb-a", "ycsb-c"];

fn read_json(path: &Path) -> EngineResult<JsonReport> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text).map_err(|e| format!("reading {}: {e}", path.display()))?)
}

/// The UTC date `path` was last written.
fn file_date(path: &Path) -> EngineResult<String> {
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| format!("reading the time of {}: {e}", path.display()))?;
    let stamp = humantime::format_rfc3339_seconds(modified).to_string();
    Ok(stamp.get(..10).unwrap_or(&stamp).to_string())
}

/// The date (UTC, `YYYY-MM-DD`) `report` was written: the time it records, or, for a report
/// written before reports recorded it, the time of the file `fallback`.
fn report_date(report: &JsonReport, fallback: &Path) -> EngineResult<String> {
    match &report.written {
        Some(stamp) => Ok(stamp.get(..10).unwrap_or(stamp).to_string()),
        None => file_date(fallback),
    }
}

fn short(commit: &str) -> String {
    commit.chars().take(10).collect()
}

/// Reads an experiment directory: its `report.json` alone when the report records when it was
/// written (a directory kept under version control holds only that), else the date of its
/// first phase's last round file as well.
fn read_experiment(dir: &Path) -> EngineResult<Measured> {
    let path = dir.join("report.json");
    let report = read_json(&path)?;
    let summary = report.reproduce.clone().ok_or_else(|| {
        format!(
            "{}: not a `tierkv reproduce` report (no checks)",
            path.display()
        )
    })?;
    let fallback = match report.written {
        Some(_) => path,
        None => summary
            .phases
            .first()
            .and_then(|p| p.reports.last())
            .map(|r| dir.join(r))
            .ok_or_else(|| format!("{}: the report names no round", dir.display()))?,
    };
    Ok(Measured {
        date: report_date(&report, &fallback)?,
        commit: short(&report.git_revision),
        summary,
    })
}

fn read_survey(path: &Path) -> EngineResult<Survey> {
    let report = read_json(path)?;
    if report.reproduce.is_some() {
        return Err(format!(
            "{}: a reproduce report; --survey takes `tierkv bench --json` reports",
            path.display()
        )
        .into());
    }
    let f = &report.flags;
    let designs: Vec<String> = report.runs.iter().map(|r| r.design.clone()).collect();
    let mut command = format!(
        "tierkv bench --design={} --benchmarks={} --num={}",
        designs.join(","),
        f.benchmarks
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(","),
        f.num
    );
    if f.reads >= 0 {
        let _ = write!(command, " --reads={}", f.reads);
    }
    let _ = write!(
        command,
        " --key_size={} --value_size={} --threads={}",
        f.key_size, f.value_size, f.threads
    );
    if let Some(p) = &f.pm_path {
        let _ = write!(command, " --pm_path={}", p.display());
    }
    let date = report_date(&report, path)?;
    Ok(Survey {
        threads: f.threads,
        command,
        runs: report.runs,
        commit: short(&report.git_revision),
        date,
    })
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A check's measured cell: `median [min..max]`, the designs for an ordering.
fn measured_cell(c: &CheckOutcome) -> String {
    let spread = |s: Option<&crate::verdict::Spread>| match s {
        None => "n/a".to_string(),
        Some(s) if s.values.len() < 2 => format!("{:.3}", s.median),
        Some(s) => format!("{:.3} [{:.3}..{:.3}]", s.median, s.min, s.max),
    };
    if c.steps.is_empty() {
        return spread(c.measured.as_ref());
    }
    c.steps
        .iter()
        .map(|st| format!("{}/{} {}", st.higher, st.lower, spread(st.ratio.as_ref())))
        .collect::<Vec<_>>()
        .join("; ")
}

fn verdict_cell(v: Verdict) -> String {
    match v {
        Verdict::Holds => "**holds**".into(),
        other => other.to_string(),
    }
}

/// The survey table: a row per design, a column per benchmark and thread count (ops/s).
fn survey_table(surveys: &[Survey], m: &mut String) {
    let _ = writeln!(m, "## Which design for my hardware?\n");
    if surveys.is_empty() {
        let _ = writeln!(
            m,
            "No survey measured yet (`tierkv reproduce --summary ... --survey REPORT.json`).\n"
        );
        return;
    }
    let _ = writeln!(
        m,
        "Operations per second of every design on one common workload, each run on a fresh \
         database (the PM pool an emulated file on a RAM file system). Higher is better; \
         `-` means the design did not run that benchmark.\n"
    );
    // Reports of one thread count (a second run adding a design, say RocksDB) are one column
    // group; the first report's figure for a design wins.
    let mut threads: Vec<usize> = surveys.iter().map(|s| s.threads).collect();
    threads.dedup();
    let runs_at = |t: usize| -> Vec<&DesignRun> {
        surveys
            .iter()
            .filter(|s| s.threads == t)
            .flat_map(|s| &s.runs)
            .collect()
    };
    let mut header = String::from("| design |");
    let mut rule = String::from("|---|");
    for &t in &threads {
        for b in SURVEY_BENCHMARKS {
            let _ = write!(header, " {b}, {t} thread(s) |");
            rule.push_str("---|");
        }
    }
    let _ = writeln!(m, "{header}\n{rule}");
    let mut designs: Vec<String> = Vec::new();
    for s in surveys {
        for r in &s.runs {
            if !designs.contains(&r.design) {
                designs.push(r.design.clone());
            }
        }
    }
    for d in &designs {
        let mut row = format!("| {d} |");
        for &t in &threads {
            let run = runs_at(t).into_iter().find(|r| &r.design == d);
            for b in SURVEY_BENCHMARKS {
                let v = run
                    .and_then(|r| r.benchmarks.iter().find(|x| x.name == *b))
                    .map_or("-".to_string(), |x| format!("{:.0}", x.ops_per_sec));
                let _ = write!(row, " {v} |");
            }
        }
        let _ = writeln!(m, "{row}");
    }
    let _ = writeln!(m);
    for s in surveys {
        let _ = writeln!(
            m,
            "* {} thread(s): `{}` (commit {}, {})",
            s.threads, s.command, s.commit, s.date
        );
    }
    let _ = writeln!(m);
}

/// The claims table: one row per check of every experiment.
fn claims_table(experiments: &[Measured], m: &mut String) {
    let _ = writeln!(m, "## Claims\n");
    let _ = writeln!(m, "{}\n", reproduce::RULE_TEXT);
    let count = |v: Verdict| {
        experiments
            .iter()
            .flat_map(|e| &e.summary.checks)
            .filter(|c| c.verdict == v)
            .count()
    };
    let total: usize = experiments.iter().map(|e| e.summary.checks.len()).sum();
    let _ = writeln!(
        m,
        "{total} checks in {} experiments: {} hold, {} do not hold, {} inconclusive, {} with \
         one round (no verdict), {} not measured.\n",
        experiments.len(),
        count(Verdict::Holds),
        count(Verdict::DoesNotHold),
        count(Verdict::Inconclusive),
        count(Verdict::OneRound),
        count(Verdict::NotMeasured)
    );
    let _ = writeln!(
        m,
        "| paper | figure | claim | paper's number | measured: median [min..max] | rounds | \
         direction | size | date | commit | command |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|---|");
    for e in experiments {
        let s = &e.summary;
        for c in &s.checks {
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | `{}` |",
                cell(&s.paper),
                cell(&s.figure),
                cell(&c.claim),
                cell(&c.paper),
                cell(&measured_cell(c)),
                c.rounds,
                verdict_cell(c.direction),
                verdict_cell(c.size),
                e.date,
                e.commit,
                cell(&s.command)
            );
        }
    }
    let _ = writeln!(m);
}

/// The registry's experiments the page has no report of, with the command that measures each.
fn missing(experiments: &[Measured], m: &mut String) {
    let absent: Vec<_> = crate::experiments::EXPERIMENTS
        .iter()
        .filter(|e| !experiments.iter().any(|x| x.summary.experiment == e.name))
        .collect();
    if absent.is_empty() {
        return;
    }
    let _ = writeln!(
        m,
        "## Not on this page yet
"
    );
    let _ = writeln!(
        m,
        "These experiments of the registry have no report here; each runs with the command \
         shown (`tierkv reproduce --list` says what each runs).\n"
    );
    let _ = writeln!(m, "| experiment | paper | checks | command |");
    let _ = writeln!(m, "|---|---|---|---|");
    for e in absent {
        let _ = writeln!(
            m,
            "| {} | {} | {} | `tierkv reproduce {} --pm_path /dev/shm` |",
            e.name,
            cell(e.paper),
            e.checks.len(),
            e.name
        );
    }
    let _ = writeln!(m);
}

/// The results page of the experiment directories `dirs` and the survey reports `surveys`.
pub fn page(dirs: &[PathBuf], surveys: &[PathBuf]) -> EngineResult<String> {
    let mut experiments = dirs
        .iter()
        .map(|d| read_experiment(d))
        .collect::<EngineResult<Vec<_>>>()?;
    experiments.sort_by(|a, b| a.summary.experiment.cmp(&b.summary.experiment));
    let mut surveys = surveys
        .iter()
        .map(|p| read_survey(p))
        .collect::<EngineResult<Vec<_>>>()?;
    surveys.sort_by_key(|s| s.threads);
    let mut m = String::new();
    let _ = writeln!(m, "# Results\n");
    let _ = writeln!(
        m,
        "Generated by `tierkv reproduce --summary` from the experiments' report directories \
         (`scripts/results.sh` measures and regenerates it); do not edit by hand. The command in \
         each row writes that experiment's own `report.md` (its workload and how it was \
         scaled, its phases, every figure, charts); `docs/BENCHMARKS.md` is the lab notebook \
         behind them. Measured on a shared 2-core machine with the PM pools on `/dev/shm`.\n"
    );
    survey_table(&surveys, &mut m);
    claims_table(&experiments, &mut m);
    missing(&experiments, &mut m);
    Ok(m)
}

/// Writes [`page`] to `out`.
pub fn write_page(dirs: &[PathBuf], surveys: &[PathBuf], out: &Path) -> EngineResult<()> {
    let text = page(dirs, surveys)?;
    std::fs::write(out, text).map_err(|e| format!("writing {}: {e}", out.display()))?;
    Ok(())
}
