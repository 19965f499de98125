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
    save(&source, &saved).unwrap();
    assert!(!root.exists() && !pm_pool.exists());
    assert!(saved_pool(&saved, &pm_pool).exists());

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
            let p = e
                .phase(c.phase)
                .unwrap_or_else(|| panic!("{}: check {:?} names no phase of it", e.name, c.claim));
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
