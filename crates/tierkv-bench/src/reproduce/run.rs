//! Running an experiment's phases round after round (databases and pools kept for the phases
//! that start from them), re-judging measured rounds, and writing the reports.

use super::*;

/// The directory of `phase`'s round reports and charts: the output directory, or a
/// subdirectory named after the phase when the experiment has several.
pub fn phase_dir(exp: &Experiment, phase: &Phase, out: &Path) -> PathBuf {
    if exp.phases.len() == 1 {
        out.to_path_buf()
    } else {
        out.join(phase.name)
    }
}

pub(crate) fn round_file(r: usize) -> String {
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

pub(crate) fn out_dir(exp: &Experiment, args: &ReproduceArgs) -> PathBuf {
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
pub(crate) fn run_rounds(
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
                save(&config, &saved_db_root(exp, phase, dir))?;
            } else if let Some(root) = &config.db {
                remove_dir_if_present(root)?;
                remove_pools(&config);
            }
        }
    }
    Ok(measured)
}

/// Whether a later phase of `exp` starts from `phase`'s databases.
pub(crate) fn is_source(exp: &Experiment, phase: &Phase) -> bool {
    exp.phases.iter().any(|p| p.from == Some(phase.name))
}

/// Checks every phase's `from`: it names an earlier phase, and each of the phase's designs is
/// one of that phase's (by label, with the same entry).
pub(crate) fn check_sources(exp: &Experiment, configs: &[BenchConfig]) -> Result<(), String> {
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
pub(crate) fn db_root(exp: &Experiment, phase: &Phase, dir: &Path) -> PathBuf {
    phase_dir(exp, phase, dir).join("db")
}

/// Where a phase that others start from keeps its databases between rounds' phases.
pub(crate) fn saved_db_root(exp: &Experiment, phase: &Phase, dir: &Path) -> PathBuf {
    phase_dir(exp, phase, dir).join("db-saved")
}

/// Where a phase that others start from keeps the pool of an entry whose pool is `pool`: beside
/// its saved databases (`saved_root`), on the output directory's file system, not the pools'
/// (a RAM file system holds only the pools the running phase uses: at the NVLSM experiments'
/// scale seven saved pools and seven working copies do not fit in RAM).
pub(crate) fn saved_pool(saved_root: &Path, pool: &Path) -> PathBuf {
    saved_pools_dir(saved_root).join(pool.file_name().unwrap_or_default())
}

fn saved_pools_dir(saved_root: &Path) -> PathBuf {
    saved_root.with_file_name("pools-saved")
}

/// Moves the file `from` to `to`: a rename, or across file systems a sparse copy and removal.
fn move_file(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
            crate::snapshot::copy_sparse(from, to)?;
            std::fs::remove_file(from)
        }
        r => r,
    }
}

pub(crate) fn remove_dir_if_present(dir: &Path) -> EngineResult<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("removing {}: {e}", dir.display()).into())
        }
        _ => Ok(()),
    }
}

/// Moves the databases `config` (a phase others start from) just ran, and their pools, aside
/// (renames, and sparse copies for pools on another file system).
pub(crate) fn save(config: &BenchConfig, saved_root: &Path) -> EngineResult<()> {
    let root = config
        .db
        .as_ref()
        .ok_or("a phase others start from keeps its databases")?;
    remove_dir_if_present(saved_root)?;
    std::fs::rename(root, saved_root)
        .map_err(|e| format!("moving {} aside: {e}", root.display()))?;
    let pools = saved_pools_dir(saved_root);
    remove_dir_if_present(&pools)?;
    for entry in config.design.iter() {
        if let Some(pool) = config.pm_path_for(&entry.label).filter(|p| p.exists()) {
            std::fs::create_dir_all(&pools)
                .map_err(|e| format!("creating {}: {e}", pools.display()))?;
            let saved = saved_pool(saved_root, &pool);
            move_file(&pool, &saved).map_err(|e| {
                format!(
                    "moving {} aside to {}: {e}",
                    pool.display(),
                    saved.display()
                )
            })?;
        }
    }
    Ok(())
}

/// Copies, for each design of `config`, the database and pool `source` (the configuration of
/// `src`, the phase it starts from) saved, to where `config` opens them.
pub(crate) fn restore(
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
            let saved = saved_pool(saved_root, &pool);
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
pub(crate) fn remove_pools(config: &BenchConfig) {
    for entry in config.design.iter() {
        if let Some(pool) = config.pm_path_for(&entry.label) {
            let _ = std::fs::remove_file(&pool);
            let _ = std::fs::remove_file(tierkv::pool_lock_path(&pool));
        }
    }
}

pub(crate) fn remove_saved_databases(exp: &Experiment, configs: &[BenchConfig], dir: &Path) {
    for (i, phase) in exp.phases.iter().enumerate() {
        if !is_source(exp, phase) {
            continue;
        }
        let saved_root = saved_db_root(exp, phase, dir);
        let _ = std::fs::remove_dir_all(saved_pools_dir(&saved_root));
        let _ = std::fs::remove_dir_all(saved_root);
        for entry in configs[i].design.iter() {
            if let Some(pool) = configs[i].pm_path_for(&entry.label) {
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
pub(crate) fn reproduce_command(exp: &Experiment, args: &ReproduceArgs, rounds: usize) -> String {
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
pub(crate) fn finish(
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
