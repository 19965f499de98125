//! Tests of the flags: db_bench's defaults and spellings, the YCSB and design flags, validation,
//! and the options the flags select.

use super::*;
use clap::Parser;

#[derive(Parser, Debug)]
struct Wrapper {
    #[command(flatten)]
    config: BenchConfig,
}

/// Parses `bench` flags as the CLI would.
pub(crate) fn parse(args: &[&str]) -> Result<BenchConfig, clap::Error> {
    Wrapper::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|w| w.config)
}

#[test]
fn defaults_are_db_bench_defaults() {
    let c = parse(&[]).unwrap();
    assert_eq!(
        c.benchmarks,
        parse_benchmark_list(DEFAULT_BENCHMARKS).unwrap()
    );
    assert_eq!(c.num, 1_000_000);
    assert_eq!(c.reads, -1);
    assert_eq!(c.reads_per_thread(), 1_000_000);
    assert_eq!(
        (c.key_size, c.value_size, c.threads, c.seek_nexts),
        (16, 128, 1, 0)
    );
    assert!(!c.sync && !c.use_existing_db);
    assert_eq!(c.db, None);
    assert_eq!(c.json, None);
    assert_eq!(
        c.design,
        DesignList::of(&[DesignChoice::Tierkv(Design::LEVELED)])
    );
    assert_eq!(c.distribution, None);
    assert_eq!(c.sample_interval_ms, 1000);
    assert_eq!(c.plot, None);
    assert!(!c.verify);
    assert_eq!(c.engine, EngineKind::Tierkv);
    assert_eq!(c.cache_size, 8_388_608);
    assert_eq!(c.write_buffer_size, 67_108_864);
    assert_eq!(c.bloom_bits, 10);
    assert_eq!((c.ssd_write_mbps, c.ssd_read_mbps), (0, 0));
    assert!(!c.use_direct_reads);
    c.validate().unwrap();
    let o = c.options();
    assert!(!o.ssd.is_on());
    assert_eq!(o.block_cache_bytes, 8_388_608);
    assert_eq!(o.write_buffer_size, 67_108_864);
    assert_eq!(o.table.bloom_bits_per_key, 10);
    assert!(o.create_if_missing);
}

#[test]
fn parses_db_bench_style_flags() {
    let c = parse(&[
        "--benchmarks=fillseq,readrandom",
        "--num=1000",
        "--key_size=20",
        "--value_size=100",
        "--reads=50",
        "--threads=4",
        "--seek_nexts=10",
        "--sync",
        "--db=/tmp/x",
        "--design=leveled",
        "--json=/tmp/r.json",
        "--seed=7",
        "--cache_size=1048576",
        "--write_buffer_size=4194304",
        "--bloom_bits=0",
    ])
    .unwrap();
    assert_eq!(
        c.benchmarks,
        vec![Benchmark::Fillseq, Benchmark::Readrandom]
    );
    assert_eq!(c.num, 1000);
    assert_eq!(c.key_size, 20);
    assert_eq!(c.value_size, 100);
    assert_eq!(c.reads_per_thread(), 50);
    assert_eq!(c.threads, 4);
    assert_eq!(c.seek_nexts, 10);
    assert!(c.sync);
    assert_eq!(c.db, Some(PathBuf::from("/tmp/x")));
    assert_eq!(c.json, Some(PathBuf::from("/tmp/r.json")));
    assert_eq!(c.seed, 7);
    let o = c.options();
    assert_eq!(o.block_cache_bytes, 1 << 20);
    assert_eq!(o.write_buffer_size, 4 << 20);
    assert_eq!(o.table.bloom_bits_per_key, 0);
    assert!(c.write_options().sync);

    // Space-separated values and gflags-style booleans work too.
    let c = parse(&[
        "--num",
        "5",
        "--sync=false",
        "--use_existing_db=1",
        "--db",
        "d",
    ])
    .unwrap();
    assert_eq!(c.num, 5);
    assert!(!c.sync);
    assert!(c.use_existing_db);
    assert!(!c.options().create_if_missing);
    c.validate().unwrap();
    assert_eq!(parse(&["--engine=null"]).unwrap().engine, EngineKind::Null);
    let c = parse(&["--sync=0", "--use_existing_db"]).unwrap();
    assert!(!c.sync && c.use_existing_db);
    assert!(c.validate().unwrap_err().contains("--db"));
}

#[test]
fn parses_ycsb_and_design_flags() {
    let c = parse(&[
        "--benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
        "--ops=500",
        "--distribution=uniform",
        "--sample_interval_ms=100",
        "--design=leveled,rocksdb",
        "--plot=/tmp/p",
        "--verify",
    ])
    .unwrap();
    assert_eq!(c.benchmarks.len(), 7);
    assert!(c.benchmarks.iter().all(|b| b.is_ycsb()));
    assert_eq!(c.benchmarks[1].ycsb_mix(), Some(YcsbMix::A));
    assert_eq!(c.reads_per_thread(), 500);
    assert_eq!(c.distribution, Some(RequestDistribution::Uniform));
    assert_eq!(
        c.distribution_for(&YcsbMix::D),
        RequestDistribution::Uniform
    );
    assert_eq!(
        parse(&[]).unwrap().distribution_for(&YcsbMix::D),
        RequestDistribution::Latest
    );
    assert_eq!(c.sample_interval_ms, 100);
    assert_eq!(
        c.design,
        DesignList::of(&[DesignChoice::Tierkv(Design::LEVELED), DesignChoice::Rocksdb])
    );
    assert_eq!(c.plot, Some(PathBuf::from("/tmp/p")));
    assert!(c.verify);
    if !ROCKSDB_ENABLED {
        assert!(c
            .validate()
            .unwrap_err()
            .contains("`rocksdb` cargo feature"));
    }
    // Every design of this build parses by name, and names are checked.
    for d in Design::ALL {
        let c = parse(&[&format!("--design={}", d.name())]).unwrap();
        assert_eq!(c.design, DesignList::of(&[DesignChoice::Tierkv(*d)]));
    }
    let err = parse(&["--design=leveled,nosuch"]).unwrap_err().to_string();
    assert!(err.contains("unknown design \"nosuch\""), "{err}");
    assert!(err.contains("rocksdb"), "{err}");
    let c = parse(&["--design=leveled,leveled"]).unwrap();
    assert!(c.validate().unwrap_err().contains("twice"));
    let c = parse(&["--sample_interval_ms=50"]).unwrap();
    assert!(c.validate().unwrap_err().contains("--sample_interval_ms"));
    // Serialised with their CLI names.
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["design"], serde_json::json!(["leveled"]));
    assert_eq!(
        serde_json::to_value(Benchmark::YcsbLoad).unwrap(),
        "ycsb-load"
    );
}

#[test]
fn rejects_unknown_benchmarks_clearly() {
    let err = parse_benchmark_list("fillseq,fillrandon").unwrap_err();
    assert!(err.contains("unknown benchmark \"fillrandon\""), "{err}");
    assert!(
        err.contains("known benchmarks: fillseq, fillrandom"),
        "{err}"
    );
    assert!(parse_benchmark_list("").is_err());
    assert!(parse_benchmark_list("readseq,,readrandom").is_err());
    assert_eq!(
        parse_benchmark_list("readwhilewriting, seekrandom").unwrap(),
        vec![Benchmark::Readwhilewriting, Benchmark::Seekrandom]
    );
    // Through clap too.
    let err = parse(&["--benchmarks=fillseq,bogus"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown benchmark \"bogus\""), "{err}");
    assert!(parse(&["--design=btree"])
        .unwrap_err()
        .to_string()
        .contains("unknown design"));
    assert!(parse(&["--num=-5"]).is_err());
    assert!(parse(&["--sync=maybe"]).is_err());
}

#[test]
fn validate_rejects_bad_combinations() {
    let ok = parse(&["--num=10"]).unwrap();
    ok.validate().unwrap();
    let bad = |f: &dyn Fn(&mut BenchConfig)| {
        let mut c = ok.clone();
        f(&mut c);
        c.validate().unwrap_err()
    };
    assert!(bad(&|c| c.num = 0).contains("--num"));
    assert!(bad(&|c| c.reads = -2).contains("--reads"));
    assert!(bad(&|c| c.streams = 0).contains("--streams"));
    assert!(bad(&|c| c.streams = 3).contains("divide --num=10"));
    assert!(bad(&|c| c.key_size = 0).contains("--key_size"));
    // One byte holds 256 keys: 257 of them would silently overwrite.
    let key_space = bad(&|c| {
        c.key_size = 1;
        c.num = 257;
    });
    assert!(
        key_space.contains("at most 256 distinct keys"),
        "{key_space}"
    );
    let mut fits = ok.clone();
    (fits.key_size, fits.num) = (1, 256);
    fits.validate().unwrap();
    assert!(bad(&|c| c.compression_type = "snappy".into()).contains("--compression_type"));
    assert!(bad(&|c| c.threads = 0).contains("--threads"));
    assert!(bad(&|c| c.benchmarks.clear()).contains("--benchmarks"));
    assert!(bad(&|c| c.write_buffer_size = 10).contains("write_buffer_size"));
    assert!(bad(&|c| c.bloom_bits = 100).contains("bloom_bits_per_key"));
    assert!(bad(&|c| c.ssd_write_mbps = 2_000_000).contains("--ssd_write_mbps"));
    assert!(bad(&|c| c.ssd_read_mbps = MAX_SSD_MBPS + 1).contains("--ssd_read_mbps"));
}

/// db_bench's LSM-shape flags set the engine's options over the design's defaults.
#[test]
fn db_bench_shape_flags_set_the_options() {
    let c = parse(&[
        "--max_background_jobs=4",
        "--target_file_size_base=2097152",
        "--max_bytes_for_level_base=10485760",
        "--max_bytes_for_level_multiplier=8",
        "--level0_file_num_compaction_trigger=2",
        "--level0_slowdown_writes_trigger=6",
        "--level0_stop_writes_trigger=9",
        "--num_levels=5",
        "--block_size=8192",
        "--max_write_buffer_number=3",
    ])
    .unwrap();
    c.validate().unwrap();
    for design in [Design::LEVELED, Design::TRIANGLEKV] {
        let o = c.options_for(design);
        let k = &o.compaction;
        assert_eq!(k.background_compactions, 3, "{design}");
        assert_eq!(
            (k.target_file_size, k.max_bytes_for_level_base),
            (2 << 20, 10 << 20)
        );
        assert_eq!(k.level_size_multiplier, 8);
        assert_eq!(
            (
                k.level0_compaction_trigger,
                k.level0_slowdown_trigger,
                k.level0_stop_trigger
            ),
            (2, 6, 9)
        );
        assert_eq!((k.num_levels, o.table.block_size), (5, 8192));
        assert_eq!(o.max_write_buffer_number, 3);
    }
    // Not given: the design's default stays.
    let plain = parse(&[]).unwrap();
    assert_eq!(
        plain
            .options_for(Design::TRIANGLEKV)
            .compaction
            .target_file_size,
        Design::TRIANGLEKV
            .options(Options::default())
            .compaction
            .target_file_size
    );
    let bad = parse(&["--num_levels=0"]).unwrap();
    assert!(bad.validate().is_err());
}

#[test]
fn ssd_model_flags_set_the_options() {
    let c = parse(&[
        "--ssd_write_mbps=50",
        "--ssd_read_mbps",
        "200",
        "--use_direct_reads",
    ])
    .unwrap();
    c.validate().unwrap();
    assert_eq!((c.ssd_write_mbps, c.ssd_read_mbps), (50, 200));
    assert!(c.use_direct_reads);
    let o = c.options();
    assert_eq!(o.ssd.write_bytes_per_sec, 50_000_000);
    assert_eq!(o.ssd.read_bytes_per_sec, 200_000_000);
    assert!(o.ssd.direct_reads);
    for d in Design::ALL {
        assert_eq!(c.options_for(*d).ssd, o.ssd);
    }
    // Recorded with the options and with the flags.
    let v = serde_json::to_value(&o).unwrap();
    assert_eq!(v["ssd"]["write_bytes_per_sec"], 50_000_000);
    assert_eq!(v["ssd"]["direct_reads"], true);
    let f = serde_json::to_value(&c).unwrap();
    assert_eq!(f["ssd_write_mbps"], 50);
    assert_eq!(f["use_direct_reads"], true);
    // Flags of a report written before they existed read back as off.
    let mut old = f.clone();
    for k in ["ssd_write_mbps", "ssd_read_mbps", "use_direct_reads"] {
        old.as_object_mut().unwrap().remove(k);
    }
    let back: BenchConfig = serde_json::from_value(old).unwrap();
    assert!(!back.options().ssd.is_on());
    assert!(
        !parse(&["--use_direct_reads=false"])
            .unwrap()
            .use_direct_reads
    );
    assert!(parse(&["--ssd_write_mbps=-1"]).is_err());
}

#[test]
fn design_variants_and_set_select_the_options() {
    let c = parse(&[
        "--design=leveled,l0-8=leveled+compaction.level0_compaction_trigger=8+table.block_size=16384",
        "--set",
        "table.block_size=8192",
        "--set=compaction.level0_slowdown_trigger=30",
        "--pm_path=/dev/shm/p",
        "--write_buffer_size=1048576",
    ])
    .unwrap();
    c.validate().unwrap();
    let (plain, variant) = (&c.design[0], &c.design[1]);
    assert!(!plain.is_variant() && variant.is_variant());
    assert_eq!(variant.label, "l0-8");
    assert_eq!(variant.design, DesignChoice::Tierkv(Design::LEVELED));
    assert_eq!(variant.overrides.len(), 2);
    // --set applies to every design after the flags; a variant's own overrides after it.
    let o = c.entry_options(plain).unwrap();
    assert_eq!(o.table.block_size, 8192);
    assert_eq!(o.compaction.level0_slowdown_trigger, 30);
    assert_eq!(o.compaction.level0_compaction_trigger, 4);
    assert_eq!(o.write_buffer_size, 1 << 20);
    // leveled keeps nothing in PM: no pool path; the entry's pool would be named per label.
    assert_eq!(o.pm.path, None);
    assert_eq!(
        c.pm_path_for("leveled"),
        Some(PathBuf::from("/dev/shm/p-leveled"))
    );
    let v = c.entry_options(variant).unwrap();
    assert_eq!(v.table.block_size, 16384, "the variant's override wins");
    assert_eq!(v.compaction.level0_compaction_trigger, 8);
    assert_eq!(v.compaction.level0_slowdown_trigger, 30);
    assert_eq!(
        c.pm_path_for("l0-8"),
        Some(PathBuf::from("/dev/shm/p-l0-8"))
    );
    assert_eq!(c.options().table.block_size, 8192, "the first design's");
    assert_eq!(c.options_for(Design::LEVELED).table.block_size, 8192);
    // RocksDB takes its options from the flags: the entry's overrides join --set.
    assert_eq!(c.entry_config(variant).set.len(), 4);
    // The flags serialise the entries as written, and read back.
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(
        json["design"],
        serde_json::json!([
            "leveled",
            "l0-8=leveled+compaction.level0_compaction_trigger=8+table.block_size=16384"
        ])
    );
    assert_eq!(
        json["set"],
        serde_json::json!([
            "table.block_size=8192",
            "compaction.level0_slowdown_trigger=30"
        ])
    );
    let back: BenchConfig = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, c);
    // Flags of a report written before --set and readrandomwriterandom read back.
    let mut old = json;
    for k in ["set", "readwritepercent", "put_ratio"] {
        old.as_object_mut().unwrap().remove(k);
    }
    let back: BenchConfig = serde_json::from_value(old).unwrap();
    assert!(back.set.is_empty());
    assert_eq!(back.read_percent(), 90);
    // Values with commas and pluses stay whole inside JSON.
    let c = parse(&[
        "--design",
        "slow=leveled+pm.latency={\"read_ns\":1,\"write_ns\":2},leveled",
    ])
    .unwrap();
    assert_eq!(c.design.len(), 2);
    assert_eq!(
        c.entry_options(&c.design[0]).unwrap().pm.latency.write_ns,
        2
    );
    // Labels are unique; a bad override is named.
    assert!(parse(&["--design=a=leveled,a=leveled-pm"])
        .unwrap()
        .validate()
        .unwrap_err()
        .contains("names a twice"));
    let c = parse(&["--design=x=leveled+compaction.nosuch=1"]).unwrap();
    let e = c.validate().unwrap_err();
    assert!(
        e.starts_with("design x: override compaction.nosuch=1: unknown option path"),
        "{e}"
    );
    let c = parse(&["--set=compaction.nosuch=1"]).unwrap();
    let e = c.validate().unwrap_err();
    assert!(
        e.starts_with("--set compaction.nosuch=1: unknown option path"),
        "{e}"
    );
    for bad in ["+x=1", "a=", "=leveled", "v=leveled+x", "a b=leveled"] {
        assert!(parse(&["--design", bad]).is_err(), "{bad}");
    }
}

#[test]
fn read_write_percent_and_put_ratio() {
    assert_eq!(parse(&[]).unwrap().read_percent(), 90);
    assert_eq!(
        parse(&["--readwritepercent=25"]).unwrap().read_percent(),
        25
    );
    let c = parse(&["--put_ratio=80"]).unwrap();
    assert_eq!((c.read_percent(), c.put_ratio), (20, Some(80)));
    c.validate().unwrap();
    assert!(parse(&["--put_ratio=80", "--readwritepercent=20"]).is_err());
    let e = parse(&["--readwritepercent=101"])
        .unwrap()
        .validate()
        .unwrap_err();
    assert!(e.contains("--readwritepercent=101"), "{e}");
    assert_eq!(
        "readrandomwriterandom".parse::<Benchmark>().unwrap(),
        Benchmark::Readrandomwriterandom
    );
}
