//! The text a run prints: db_bench-style result lines, the run header, the engine-figures
//! block, level and compaction statistics, the table listing.

use super::*;

/// The histogram as db_bench prints it: `[ low, high ) count percent cumulative% ###`.
pub fn format_histogram(buckets: &[HistogramBucket]) -> String {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    let mut s = String::new();
    if total == 0 {
        return s;
    }
    let mut cum = 0u64;
    let _ = writeln!(
        s,
        "{:<w$}   latency histogram (micros): [low, high)  count  percent  cumulative",
        "",
        w = NAME_WIDTH
    );
    for b in buckets {
        cum += b.count;
        let pct = b.count as f64 * 100.0 / total as f64;
        let marks = "#".repeat((pct / 5.0).round() as usize);
        let _ = writeln!(
            s,
            "{:<w$}   [ {:>10.1}, {:>10.1} ) {:>9} {:>7.3}% {:>7.3}% {marks}",
            "",
            b.low_us,
            b.high_us,
            b.count,
            pct,
            cum as f64 * 100.0 / total as f64,
            w = NAME_WIDTH
        );
    }
    s
}

/// The one-line engine summary printed under a benchmark's result.
pub fn format_engine_delta(d: &EngineDelta) -> String {
    let mib = |b: u64| b as f64 / 1_048_576.0;
    let amp = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    format!(
        "{:<w$}   engine: wrote {:.1} MiB SSD + {:.1} MiB PM (WA {}), read {:.1} MiB for users (RA {}) + {:.1} MiB in background, {} flushes, {} compactions, stalled {:.3} s\n",
        "",
        mib(d.ssd_bytes_written),
        mib(d.pm_bytes_written),
        amp(d.write_amplification()),
        mib(d.user_read_io_bytes),
        amp(d.read_amplification()),
        mib(d.background_read_bytes),
        d.flushes,
        d.compactions,
        d.stall_micros as f64 / 1e6,
        w = NAME_WIDTH
    )
}

/// The width of the benchmark-name column of result lines: the longest name
/// (`seekrandomwhilewriting`), so every line of a run lines up.
pub const NAME_WIDTH: usize = 22;

/// The db_bench-style lines of one result (each ends with a newline).
pub fn format_result(r: &BenchResult) -> String {
    if matches!(r.name.as_str(), "flush" | "waitforcompaction" | "compact") {
        // One maintenance operation, not a stream of them: its time, no rate.
        let what = match r.name.as_str() {
            "flush" => "the write buffers written into the first stage",
            "compact" => "the whole key range compacted",
            _ => "until no flush or compaction was left",
        };
        let mut s = format!(
            "{:<w$} : {:>11.3} ms ({what})\n",
            r.name,
            r.seconds * 1e3,
            w = NAME_WIDTH
        );
        if let Some(d) = &r.engine {
            s.push_str(&format_engine_delta(d));
        }
        return s;
    }
    let mut s = format!(
        "{:<w$} : {:>11.3} micros/op {:.0} ops/sec; {:>6.1} MB/s",
        r.name,
        r.micros_per_op,
        r.ops_per_sec,
        r.mb_per_sec,
        w = NAME_WIDTH
    );
    if let Some(found) = r.found {
        let _ = write!(s, " ({found} of {} found)", r.lookups.unwrap_or(r.ops));
    }
    if let Some(w) = r.writer_ops {
        let _ = write!(s, " [writer: {w} puts]");
    }
    if let Some(f) = r.failed.filter(|&f| f > 0) {
        let _ = write!(s, " [{f} updates of missing records failed]");
    }
    if let Some(st) = r.stall_micros.filter(|&s| s > 0) {
        let _ = write!(s, " [stalled {:.3} s]", st as f64 / 1e6);
    }
    let l = &r.latency;
    let _ = writeln!(
        s,
        "\n{:<w$}   latency (micros): avg {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  p99.99 {:.2}  max {:.2}",
        "", l.avg_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.p9999_us, l.max_us, w = NAME_WIDTH
    );
    if r.ops_by_type.len() > 1 {
        for o in &r.ops_by_type {
            let l = &o.latency;
            let _ = writeln!(
                s,
                "{:<w$}   {:<6} {:>9} ops: avg {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  p99.99 {:.2}  max {:.2}",
                "", o.op, o.count, l.avg_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.p9999_us, l.max_us, w = NAME_WIDTH
            );
        }
    }
    s.push_str(&format_histogram(&r.histogram));
    if let Some(d) = &r.engine {
        s.push_str(&format_engine_delta(d));
    }
    s
}

/// The run's header: what is being measured, and the options in force.
pub fn format_header(
    engine: &str,
    design: &str,
    config: &BenchConfig,
    options: &serde_json::Value,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Engine:     {engine}");
    let _ = writeln!(s, "Design:     {design}");
    let _ = writeln!(s, "Keys:       {} bytes each", config.key_size);
    let _ = writeln!(s, "Values:     {} bytes each", config.value_size);
    let _ = writeln!(s, "Entries:    {}", config.num);
    let _ = writeln!(s, "Reads:      {}", config.reads_per_thread());
    let _ = writeln!(s, "Threads:    {}", config.threads);
    if config.ops_per_sec > 0 {
        let _ = writeln!(
            s,
            "Rate:       {} ops/s in all, open loop (latency from when each operation was due)",
            config.ops_per_sec
        );
    }
    let _ = writeln!(s, "Sync:       {}", config.sync);
    let cap = |mbps: u64| match mbps {
        0 => "uncapped".to_string(),
        n => format!("{n} MB/s"),
    };
    let _ = writeln!(
        s,
        "SSD model:  writes {}, reads {}, direct reads {}",
        cap(config.ssd_write_mbps),
        cap(config.ssd_read_mbps),
        if config.use_direct_reads { "on" } else { "off" }
    );
    if options.get("engine").and_then(|e| e.as_str()) == Some("rocksdb") {
        if let Some(note) = crate::rocks::ssd_model_note(config) {
            let _ = writeln!(s, "Note:       {note}");
        }
    }
    let names: Vec<_> = config.benchmarks.iter().map(|b| b.name()).collect();
    let _ = writeln!(s, "Benchmarks: {}", names.join(","));
    if config
        .benchmarks
        .contains(&crate::config::Benchmark::Readrandomwriterandom)
    {
        let r = config.read_percent();
        let _ = writeln!(
            s,
            "Read/write: {r}% gets, {}% puts (readrandomwriterandom)",
            100 - r
        );
    }
    if !config.set.is_empty() {
        let set: Vec<String> = config.set.iter().map(|o| o.to_string()).collect();
        let _ = writeln!(s, "Set:        {}", set.join(" "));
    }
    if let Some(w) = &config.ycsb {
        let m = &w.mix;
        let _ = writeln!(
            s,
            "Workload:   {}: read {} update {} insert {} scan {} rmw {}, {} (zipfian constant {}), \
             scans 1..={}, insertorder={}, {}-byte records",
            w.source,
            m.read,
            m.update,
            m.insert,
            m.scan,
            m.rmw,
            m.distribution,
            m.zipfian_constant,
            m.max_scan_length,
            match w.insert_order {
                crate::ycsb_workload::InsertOrder::Hashed => "hashed",
                crate::ycsb_workload::InsertOrder::Ordered => "ordered",
            },
            w.value_size
        );
        if !w.ignored.is_empty() {
            let _ = writeln!(s, "            ignored: {}", w.ignored.join(", "));
        }
    }
    if config
        .benchmarks
        .iter()
        .any(|b| b.is_ycsb() && *b != Benchmark::YcsbLoad)
    {
        let dist = config
            .distribution
            .map_or("workload default".to_string(), |d| d.to_string());
        let _ = writeln!(
            s,
            "YCSB:       {} records, {} operations in all, distribution {dist}",
            config.num,
            config.reads_per_thread()
        );
    }
    if config.verbose {
        let _ = writeln!(
            s,
            "Options:    {}",
            serde_json::to_string_pretty(options).unwrap_or_default()
        );
    } else {
        let _ = writeln!(s, "Options:    {}", options_summary(options));
    }
    let _ = writeln!(s, "{}", "-".repeat(72));
    s
}

/// The engine options that differ from the design's defaults, as the flags spell them
/// (`--write_buffer_size=1000000`, or `--set PATH=VALUE` for options without a flag); the full
/// options are printed under `--verbose`.
pub fn options_summary(options: &serde_json::Value) -> String {
    if options.get("engine").and_then(|e| e.as_str()) == Some("rocksdb") {
        return "RocksDB's, from the flags (--verbose prints them)".to_string();
    }
    let Some(design) = options
        .get("design")
        .and_then(|d| d.as_str())
        .and_then(|d| tierkv::Design::from_str(d).ok())
    else {
        return "(--verbose prints them)".to_string();
    };
    // The defaults a run without flags gets: the engine's, with the bench's block cache size
    // (db_bench's 8 MiB).
    let defaults = serde_json::to_value(design.options(tierkv::Options {
        design,
        block_cache_bytes: crate::config::DEFAULT_CACHE_SIZE as usize,
        ..tierkv::Options::default()
    }))
    .unwrap_or_default();
    let (mut have, mut base) = (Vec::new(), Vec::new());
    flatten_json("", options, &mut have);
    flatten_json("", &defaults, &mut base);
    let mut parts = Vec::new();
    for (path, value) in &have {
        if matches!(
            path.as_str(),
            "create_if_missing" | "error_if_exists" | "read_only" | "design"
        ) {
            continue;
        }
        if base.iter().any(|(p, v)| p == path && v == value) {
            continue;
        }
        parts.push(flag_spelling(path, value));
    }
    if parts.is_empty() {
        format!("the defaults of {design} (--verbose prints them)")
    } else {
        format!(
            "the defaults of {design}, but {} (--verbose prints them all)",
            parts.join(" ")
        )
    }
}

/// Leaf `(dotted.path, value)` pairs of a JSON object, in order.
pub(crate) fn flatten_json(
    prefix: &str,
    v: &serde_json::Value,
    out: &mut Vec<(String, serde_json::Value)>,
) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, child) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_json(&path, child, out);
            }
        }
        leaf => out.push((prefix.to_string(), leaf.clone())),
    }
}

/// `--flag=value` for an option a db_bench-style flag sets, else `--set path=value`.
pub(crate) fn flag_spelling(path: &str, value: &serde_json::Value) -> String {
    let text = match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let n = value.as_u64();
    let flag = match path {
        "write_buffer_size" => "write_buffer_size",
        "block_cache_bytes" => "cache_size",
        "max_write_buffer_number" => "max_write_buffer_number",
        "table.bloom_bits_per_key" => "bloom_bits",
        "table.block_size" => "block_size",
        "compaction.target_file_size" => "target_file_size_base",
        "compaction.max_bytes_for_level_base" => "max_bytes_for_level_base",
        "compaction.level_size_multiplier" => "max_bytes_for_level_multiplier",
        "compaction.level0_compaction_trigger" => "level0_file_num_compaction_trigger",
        "compaction.level0_slowdown_trigger" => "level0_slowdown_writes_trigger",
        "compaction.level0_stop_trigger" => "level0_stop_writes_trigger",
        "compaction.num_levels" => "num_levels",
        "pm.path" => "pm_path",
        "pm.size_bytes" => "pm_size",
        "pm.wal_on_pm" => "wal_on_pm",
        "ssd.direct_reads" => "use_direct_reads",
        "compaction.disable_auto_compactions" => "disable_auto_compactions",
        "compaction.background_compactions" => {
            if let Some(n) = n {
                return format!("--max_background_jobs={}", n + 1);
            }
            ""
        }
        "ssd.write_bytes_per_sec" | "ssd.read_bytes_per_sec" => {
            if let Some(n) = n {
                let which = if path.starts_with("ssd.write") {
                    "write"
                } else {
                    "read"
                };
                return format!("--ssd_{which}_mbps={}", n / crate::config::MB);
            }
            ""
        }
        _ => "",
    };
    if flag.is_empty() {
        format!("--set {path}={text}")
    } else {
        format!("--{flag}={text}")
    }
}

/// `n` bytes as `"123456789 B (117.7 MiB)"`.
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{n} B ({v:.1} {})", UNITS[unit])
    }
}

/// The engine-figures block printed after the benchmarks (and by `tierkv stats`).
pub fn format_stats(s: &StatsSummary) -> String {
    let st = &s.stats;
    let b = format_bytes;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "** Engine figures ({}, design {}) **",
        s.engine, st.design
    );
    let _ = writeln!(
        o,
        "User writes:            {} ops, {}",
        st.user_writes,
        b(st.user_bytes_written)
    );
    let _ = writeln!(
        o,
        "User reads:             {} gets; {} returned by gets and scans",
        st.user_gets,
        b(st.user_bytes_read)
    );
    let _ = writeln!(o, "SSD bytes written:      {}", b(st.ssd_bytes_written()));
    let _ = writeln!(o, "  WAL:                  {}", b(st.ssd_written_wal));
    let _ = writeln!(o, "  flush:                {}", b(st.ssd_written_flush));
    let _ = writeln!(
        o,
        "  compaction:           {}",
        b(st.ssd_written_compaction)
    );
    let _ = writeln!(o, "  manifest:             {}", b(st.ssd_written_manifest));
    let _ = writeln!(
        o,
        "SSD bytes read:         compaction {}, user {}, recovery {}",
        b(st.ssd_read_compaction),
        b(st.ssd_read_user),
        b(st.ssd_read_recovery)
    );
    // Every tier together first (what the design costs in all), then the SSD's own.
    let all = crate::figures::RunFigures::new(st, s.logical_bytes)
        .database
        .amplification;
    let f = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.3}"));
    let _ = writeln!(
        o,
        "Amplification:          write {}, read {}, space {} (every tier: SSD and PM bytes / \
         user bytes; write without the log {})",
        f(all.write),
        f(all.read),
        f(all.space),
        f(all.write_excluding_log)
    );
    let _ = writeln!(
        o,
        "SSD write amplification: {:.3} (SSD bytes written / user bytes written; tables only \
         {:.3})",
        s.write_amplification, s.write_amplification_tables
    );
    let _ = writeln!(
        o,
        "SSD read amplification: {:.3} (SSD bytes read for gets and scans / bytes they \
         returned)",
        s.read_amplification
    );
    match (s.space_amplification, s.logical_bytes) {
        (Some(sa), Some(l)) => {
            let _ = writeln!(
                o,
                "SSD space amplification: {sa:.3} (live SSD {} / logical {})",
                b(st.ssd_live_bytes()),
                b(l)
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "SSD space amplification: n/a (live SSD {})",
                b(st.ssd_live_bytes())
            );
        }
    }
    let _ = writeln!(
        o,
        "Stalls:                 {} write groups, {:.3} s (slowdown {:.3} s, stop {:.3} s)",
        st.stall_count,
        s.stall_micros as f64 / 1e6,
        st.stall_slowdown_micros as f64 / 1e6,
        st.stall_stop_micros as f64 / 1e6
    );
    let _ = writeln!(
        o,
        "Flushes / compactions:  {} / {}",
        st.flushes, st.compactions
    );
    let l0: Vec<_> = st
        .compaction_jobs
        .iter()
        .filter(|j| j.from_group == 0 && !j.trivial_move)
        .collect();
    if !l0.is_empty() {
        let n = l0.len() as u64;
        let bytes: u64 = l0.iter().map(|j| j.input_bytes).sum();
        let micros: u64 = l0.iter().map(|j| j.micros).sum();
        let _ = writeln!(
            o,
            "  from L0:              {n}{}, input avg {} max {}, time avg {:.3} s max {:.3} s",
            if st.compaction_jobs_dropped > 0 {
                " (of the job log's last compactions)"
            } else {
                ""
            },
            b(bytes / n),
            b(l0.iter().map(|j| j.input_bytes).max().unwrap_or(0)),
            micros as f64 / n as f64 / 1e6,
            l0.iter().map(|j| j.micros).max().unwrap_or(0) as f64 / 1e6,
        );
    }
    let _ = writeln!(
        o,
        "WAL:                    {} appends, {} syncs, {} live on SSD, {} on PM",
        st.wal_appends,
        st.wal_syncs,
        b(st.wal_bytes),
        b(st.pm_wal_bytes)
    );
    let lookups = st.block_cache_hits + st.block_cache_misses;
    let hit_rate = if lookups > 0 {
        st.block_cache_hits as f64 * 100.0 / lookups as f64
    } else {
        0.0
    };
    let _ = writeln!(
        o,
        "Block cache:            {} hits, {} misses ({hit_rate:.1}% hits); Bloom filters avoided {} probes",
        st.block_cache_hits, st.block_cache_misses, st.bloom_useful
    );
    if let Some(pm) = &st.pm {
        let _ = writeln!(
            o,
            "PM pool:                {} mode, {} flushes, {} of {} allocated",
            pm.mode,
            pm.flush_instruction,
            b(pm.bytes_allocated),
            b(pm.pool_bytes)
        );
        let _ = writeln!(
            o,
            "PM bytes written:       {} engine ({} WAL, {} manifest, {} flush, {} compaction); {} device ({} lines written back, {} fences)",
            b(st.pm_bytes_written()),
            b(st.pm_written_wal),
            b(st.pm_written_manifest),
            b(st.pm_written_flush),
            b(st.pm_written_compaction),
            b(st.pm_device_bytes_written()),
            pm.lines_written_back,
            pm.fences
        );
        let _ = writeln!(
            o,
            "PM bytes read:          user {}, compaction {}, recovery {}; device {}",
            b(st.pm_read_user),
            b(st.pm_read_compaction),
            b(st.pm_read_recovery),
            b(pm.bytes_read)
        );
        let _ = writeln!(
            o,
            "PM amplification:       write {:.3}, read {:.3}{}",
            st.pm_write_amplification(),
            st.pm_read_amplification(),
            s.logical_bytes
                .map(|l| format!(", space {:.3}", st.pm_space_amplification(l)))
                .unwrap_or_default()
        );
        if st.pm_flush_fallbacks > 0 {
            let _ = writeln!(
                o,
                "PM full:                {} flushes went to SSD",
                st.pm_flush_fallbacks
            );
        }
        if st.pm_compaction_fallbacks > 0 {
            let _ = writeln!(
                o,
                "PM full:                {} compactions went to SSD ({} after filling the pool)",
                st.pm_compaction_fallbacks, st.pm_compaction_retries
            );
        }
        if st.pm_manifest_fallbacks > 0 {
            let _ = writeln!(
                o,
                "PM full:                the manifest moved to the database directory"
            );
        }
    }
    if st.flush_dropped_versions > 0 {
        let _ = writeln!(
            o,
            "Flushes dropped:        {} versions no reader could see",
            st.flush_dropped_versions
        );
    }
    if st.row_pages_freed_bytes > 0 {
        let _ = writeln!(
            o,
            "Row pages freed:        {} of PM wholly in rows' dead ranges",
            b(st.row_pages_freed_bytes)
        );
    }
    if st.subcompactions > 0 {
        let _ = writeln!(
            o,
            "Subcompactions:         {} key-range partitions merged in parallel",
            st.subcompactions
        );
    }
    if st.reused_runs > 0 {
        let _ = writeln!(
            o,
            "Reused runs:            {} left in place or moved, not rewritten",
            st.reused_runs
        );
    }
    if st.reused_table_bytes > 0 {
        let _ = writeln!(
            o,
            "Reused tables:          {:.1} MiB of untouched LSTs kept inside merged runs",
            st.reused_table_bytes as f64 / (1 << 20) as f64
        );
    }
    if st.reclaimed_runs > 0 {
        let _ = writeln!(
            o,
            "Reclaimed runs:         {} merged to free files less than half in use",
            st.reclaimed_runs
        );
    }
    if st.load_trigger > 0 {
        let _ = writeln!(
            o,
            "Load detector:          trigger {} buffer trees now, {} switches, {} eager flushes",
            st.load_trigger, st.load_mode_switches, st.eager_flushes
        );
    }
    if let Some(g) = &st.global_index {
        let _ = writeln!(
            o,
            "Global index:           {} keys in {} leaves, {} in PM ({} inner nodes, {}), \
             {} of inner nodes in DRAM; {} versions held for snapshots, {} tables listed by \
             R2/R3",
            g.keys,
            g.leaves,
            b(g.pm_bytes),
            g.inner_nodes,
            b(g.inner_pm_bytes),
            b(g.dram_bytes),
            g.held_versions,
            g.listed_tables
        );
        if st.index_stale_copies > 0 || st.index_adopted_tables > 0 {
            let _ = writeln!(
                o,
                "  compaction copies a flush outdated: {}; tables adopted at open: {}",
                st.index_stale_copies, st.index_adopted_tables
            );
        }
    }
    let vl = &st.value_logs;
    if vl.files > 0 {
        let _ = writeln!(
            o,
            "Value logs:             {} files, {} on PM, {} on SSD, {} of it named by tables",
            vl.files,
            b(vl.pm_bytes),
            b(vl.ssd_bytes),
            b(vl.live_bytes)
        );
    }
    let _ = writeln!(o, "Levels:");
    for (i, l) in st.levels.iter().enumerate() {
        let pm = st.pm_levels.get(i).filter(|p| p.files > 0);
        let on_pm = pm
            .map(|p| format!("  ({} on PM)", p.files))
            .unwrap_or_default();
        let _ = writeln!(o, "  L{i}: {:>6} files  {}{on_pm}", l.files, b(l.bytes));
    }
    if !st.compaction_levels.is_empty()
        || !st.flush_targets.is_empty()
        || !st.stall_causes.is_empty()
    {
        o.push_str(&format_compaction_stats(st));
    }
    if !st.stages.is_empty() {
        o.push_str(&crate::figures::format_figures(
            &crate::figures::RunFigures::new(st, s.logical_bytes),
        ));
    }
    let d = &st.dram;
    let _ = writeln!(o, "DRAM footprint:         {}", b(d.total()));
    let _ = writeln!(o, "  memtables:            {}", b(d.memtable_bytes));
    let _ = writeln!(o, "  kept for reuse:       {}", b(d.memtable_kept_bytes));
    if d.global_index_bytes > 0 {
        let _ = writeln!(o, "  global index:         {}", b(d.global_index_bytes));
    }
    if d.list_tower_bytes > 0 {
        let _ = writeln!(o, "  list upper levels:    {}", b(d.list_tower_bytes));
    }
    if d.l0_tree_bytes > 0 {
        let _ = writeln!(o, "  L0 tree inner nodes:  {}", b(d.l0_tree_bytes));
    }
    let _ = writeln!(o, "  Bloom filters:        {}", b(d.filter_bytes));
    let _ = writeln!(o, "  index blocks:         {}", b(d.index_bytes));
    let _ = writeln!(o, "  block cache:          {}", b(d.block_cache_bytes));
    if let Some(l) = &st.labdb {
        let _ = writeln!(
            o,
            "LAB-DB L0: trees {} (mutable, {} keys) and {} (immutable, {} keys), {} PM; \
             {} inserts, {} in-place updates, {} switches, {} chunks compacted ({} by file scan); \
             {} value arrays, {} ({} live); {} WAL-buffer drains; hot-key buffer: \
             {} slots in use, {} PM, {} versions written",
            l.mutable_tree,
            l.mutable_keys,
            l.immutable_tree,
            l.immutable_keys,
            b(l.pm_bytes),
            l.inserts,
            l.in_place_updates,
            l.switches,
            l.chunks,
            l.file_scan_chunks,
            l.value_files,
            b(l.value_bytes),
            b(l.value_live_bytes),
            l.log_drains,
            l.hot_slots,
            b(l.hot_pm_bytes),
            l.hot_writes
        );
    }
    o
}

/// db_bench's `levelstats`: each stage's groups (levels) with their files and bytes, then the
/// per-level compaction statistics and the stall causes.
pub fn format_level_stats(st: &DbStats) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "** Level stats (design {}) **", st.design);
    let _ = writeln!(
        o,
        "{:<8} {:<14} {:>7} {:>14} {:>9} {:>14}",
        "Stage", "Level", "Files", "Size(MB)", "PM files", "PM size(MB)"
    );
    let mb = |b: u64| b as f64 / 1_048_576.0;
    for (i, stage) in st.stages.iter().enumerate() {
        for (g, l) in stage.groups.iter().enumerate() {
            let pm = stage.pm_groups.get(g).cloned().unwrap_or_default();
            let _ = writeln!(
                o,
                "{:<8} {:<14} {:>7} {:>14.3} {:>9} {:>14.3}",
                i,
                group_name(st, i, g),
                l.files,
                mb(l.bytes),
                pm.files,
                mb(pm.bytes)
            );
        }
    }
    o.push_str(&format_compaction_stats(st));
    o
}

/// A stage group's name in the level tables: `L3` for a design of one stage, else the stage's
/// index and name with the group (`1 levels L2`).
pub(crate) fn group_name(st: &DbStats, stage: usize, group: usize) -> String {
    if st.stages.len() <= 1 {
        format!("L{group}")
    } else {
        let name = st.stages.get(stage).map_or("", |s| s.name.as_str());
        format!("{stage} {name} L{group}")
    }
}

/// The per-level compaction statistics as RocksDB prints them (in MB rather than GB, and one
/// row per stage group): for each group the flushes into it and the compactions whose output
/// it received, with the bytes read from the input group (Rn) and from the group itself (Rnp1),
/// written and moved, the write amplification Write / Rn (a flush counts as 1), the rates over
/// the compaction time, the count, and the entries in and dropped; then the stall causes.
pub fn format_compaction_stats(st: &DbStats) -> String {
    let mut o = String::new();
    let mb = |b: u64| b as f64 / 1_048_576.0;
    let _ = writeln!(o, "** Compaction stats (cumulative since open) **");
    let _ = writeln!(
        o,
        "{:<18} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>10}",
        "Level",
        "Files",
        "Size(MB)",
        "Read(MB)",
        "Rn(MB)",
        "Rnp1(MB)",
        "Write(MB)",
        "Moved(MB)",
        "W-Amp",
        "Rd(MB/s)",
        "Wr(MB/s)",
        "Comp(sec)",
        "Comp(cnt)",
        "Avg(sec)",
        "KeyIn",
        "KeyDrop"
    );
    let mut total = tierkv::stats::LevelCompactionStats::default();
    let (mut total_files, mut total_bytes) = (0usize, 0u64);
    let line = |o: &mut String,
                name: &str,
                files: usize,
                bytes: u64,
                c: &tierkv::stats::LevelCompactionStats| {
        let secs = c.micros as f64 / 1e6;
        let rate = |b: u64| if secs > 0.0 { mb(b) / secs } else { 0.0 };
        // A flush reads nothing from a level: its write amplification is 1 (RocksDB's L0).
        let w_amp = if c.read_input_bytes > 0 {
            c.written_bytes as f64 / c.read_input_bytes as f64
        } else if c.written_bytes > 0 {
            1.0
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "{:<18} {:>6} {:>10.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>6.2} {:>9.1} {:>9.1} {:>9.3} {:>9} {:>9.3} {:>11} {:>10}",
            name,
            files,
            mb(bytes),
            mb(c.read_input_bytes + c.read_output_bytes),
            mb(c.read_input_bytes),
            mb(c.read_output_bytes),
            mb(c.written_bytes),
            mb(c.moved_bytes),
            w_amp,
            rate(c.read_input_bytes + c.read_output_bytes),
            rate(c.written_bytes),
            secs,
            c.compactions,
            if c.compactions > 0 { secs / c.compactions as f64 } else { 0.0 },
            c.input_entries,
            c.dropped_entries
        );
    };
    for (i, stage) in st.stages.iter().enumerate() {
        for (g, l) in stage.groups.iter().enumerate() {
            let mut c = tierkv::stats::LevelCompactionStats {
                stage: i,
                group: g,
                ..Default::default()
            };
            for x in st
                .compaction_levels
                .iter()
                .filter(|x| x.stage == i && x.group == g)
            {
                c.add(x);
            }
            if i == 0 {
                // Flushes write into stage 0's groups: counted as writes, as RocksDB's L0.
                for f in st.flush_targets.iter().filter(|f| f.group == g) {
                    c.written_bytes += f.written_bytes;
                    c.micros += f.micros;
                    c.compactions += f.flushes;
                }
            }
            if l.files == 0 && c.compactions == 0 {
                continue;
            }
            line(&mut o, &group_name(st, i, g), l.files, l.bytes, &c);
            total.add(&c);
            total_files += l.files;
            total_bytes += l.bytes;
        }
    }
    line(&mut o, "Sum", total_files, total_bytes, &total);
    let _ = writeln!(
        o,
        "(stage 0's rows count the flushes into them as writes and in Comp(cnt); Read = Rn + Rnp1: key and value bytes the merges read)"
    );
    if st.stall_causes.is_empty() {
        let _ = writeln!(o, "Stall causes: none");
    } else {
        let _ = writeln!(o, "Stall causes:");
        for c in &st.stall_causes {
            let _ = writeln!(
                o,
                "  {:<40} {:>8} write groups {:>12.3} s",
                c.cause,
                c.stalled_groups,
                c.micros as f64 / 1e6
            );
        }
    }
    o
}

/// db_bench's `sstables`: every live table, by stage and level.
pub fn format_sstables(tables: &Option<Vec<TableInfo>>) -> String {
    let Some(tables) = tables else {
        return "sstables: this engine does not list its tables\n".to_string();
    };
    let mut o = String::new();
    let _ = writeln!(o, "** Live tables: {} **", tables.len());
    let mut current = None;
    for t in tables {
        if current != Some((t.stage, t.group)) {
            current = Some((t.stage, t.group));
            let _ = writeln!(o, "--- stage {} level {} ---", t.stage, t.group);
        }
        let entries = t.entries.map_or(String::new(), |e| format!(" {e} entries"));
        let part = t
            .part_of
            .map_or(String::new(), |f| format!(" (part of {f})"));
        let _ = writeln!(
            o,
            " {:>8}: {} bytes on {}{entries}{part} ['{}' .. '{}']",
            t.number,
            t.bytes,
            t.tier,
            crate::text::display_bytes(&t.smallest),
            crate::text::display_bytes(&t.largest)
        );
    }
    o
}
