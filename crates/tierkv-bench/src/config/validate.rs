//! What the flags mean together: derived counts (reads per thread, read percentage), the YCSB
//! workload of `-P` / `-p` applied over the flags ([`BenchConfig::resolve`]), the YCSB mix and
//! record shape a benchmark runs with, and the check of all flags together
//! ([`BenchConfig::validate`]).

use super::*;

impl BenchConfig {
    /// Reads per thread: `--reads`, or `--num` when it is negative.
    pub fn reads_per_thread(&self) -> u64 {
        u64::try_from(self.reads).unwrap_or(self.num)
    }

    /// The percentage of readrandomwriterandom's operations that are gets: 100 - --put_ratio,
    /// else --readwritepercent.
    pub fn read_percent(&self) -> u32 {
        match self.put_ratio {
            Some(p) => 100u32.saturating_sub(p),
            None => self.readwritepercent,
        }
    }

    /// Reads the YCSB workload of `-P` / `-p` (when given) and applies its record count,
    /// operation count, value size (fieldcount x fieldlength), thread count and target rate
    /// over the flags', as YCSB's command line does with its property file. Idempotent.
    pub fn resolve(&mut self) -> Result<(), String> {
        if self.workload.is_none() && self.property.is_empty() {
            return Ok(());
        }
        let w = crate::ycsb_workload::YcsbWorkload::load(self.workload.as_deref(), &self.property)?;
        if let Some(n) = w.record_count {
            self.num = n;
        }
        if let Some(n) = w.operation_count {
            self.reads =
                i64::try_from(n).map_err(|_| format!("operationcount={n} is too large"))?;
        }
        if let Some(t) = w.threads {
            self.threads = t;
        }
        if let Some(t) = w.target {
            self.ops_per_sec = t;
        }
        self.value_size = w.value_size;
        self.ycsb = Some(w);
        Ok(())
    }

    /// The operation mix `bench` runs: a core workload's, or the `-P` workload's for
    /// `ycsb-run` (None for other benchmarks, and for `ycsb-run` before [`resolve`](Self::resolve)).
    pub fn mix_for(&self, bench: Benchmark) -> Option<YcsbMix> {
        match bench {
            Benchmark::YcsbRun => self.ycsb.as_ref().map(|w| w.mix),
            b => b.ycsb_mix(),
        }
    }

    /// The fields of a YCSB record and whether an update writes them all: the `-P`
    /// workload's `fieldcount` and `writeallfields`, else YCSB's defaults (10, false).
    pub fn ycsb_fields(&self) -> (u64, bool) {
        self.ycsb
            .as_ref()
            .map_or((crate::ycsb::FIELD_COUNT, false), |w| {
                (w.field_count, w.write_all_fields)
            })
    }

    /// Whether `ycsb-load` inserts records in key order (`-P` workload with
    /// `insertorder=ordered`) rather than in a seeded random order.
    pub fn ordered_inserts(&self) -> bool {
        self.ycsb
            .as_ref()
            .is_some_and(|w| w.insert_order == crate::ycsb_workload::InsertOrder::Ordered)
    }

    /// Checks the flags together; the error says which flag is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.benchmarks.contains(&Benchmark::YcsbRun) && self.ycsb.is_none() {
            return Err(
                "benchmark ycsb-run runs the workload of a YCSB property file: give -P FILE \
                 (e.g. -P workloads/workloada) or -p NAME=VALUE properties"
                    .into(),
            );
        }
        if self.sync && self.disable_wal {
            return Err(
                "--sync and --disable_wal together: a write that skips the WAL has no log to \
                 sync"
                    .into(),
            );
        }
        if self.disable_auto_compactions {
            for d in self.tierkv_designs() {
                if let Some(why) = d.needs_auto_compactions() {
                    return Err(format!(
                        "--disable_auto_compactions is refused for design {d}: {why}"
                    ));
                }
            }
        }
        if self.batch_size == 0 || self.batch_size > 1_000_000 {
            return Err(format!(
                "--batch_size={} must be in 1..=1000000",
                self.batch_size
            ));
        }
        if self.multiread_batch_size == 0 || self.multiread_batch_size > 1_000_000 {
            return Err(format!(
                "--multiread_batch_size={} must be in 1..=1000000",
                self.multiread_batch_size
            ));
        }
        if self.report_interval_seconds > 0 {
            if let Some(parent) = self
                .report_file
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
            {
                if !parent.is_dir() {
                    return Err(format!(
                        "--report_file={}: directory {} does not exist",
                        self.report_file.display(),
                        parent.display()
                    ));
                }
            }
        }
        if self.benchmarks.is_empty() {
            return Err("--benchmarks is empty".into());
        }
        if self.num == 0 {
            return Err("--num must be at least 1".into());
        }
        if self.streams == 0 || !self.num.is_multiple_of(self.streams) {
            return Err(format!(
                "--streams={} must be at least 1 and divide --num={}",
                self.streams, self.num
            ));
        }
        if self.reads < -1 {
            return Err(format!(
                "--reads={} must be -1 (= --num) or >= 0",
                self.reads
            ));
        }
        if self.key_size == 0 || self.key_size > (1 << 24) {
            return Err(format!(
                "--key_size={} must be in 1..=16777216",
                self.key_size
            ));
        }
        if self.key_size < 8 {
            // Keys are the key number's low `key_size` bytes: fewer distinct keys than --num
            // would silently overwrite instead of filling.
            let space = 1u64 << (8 * self.key_size);
            if self.num > space {
                return Err(format!(
                    "--key_size={} makes at most {space} distinct keys, fewer than --num={}: \
                     use --key_size=8 or more (keys are the key number's big-endian bytes)",
                    self.key_size, self.num
                ));
            }
        }
        if !matches!(
            self.compression_type.as_str(),
            "none" | "kNoCompression" | "no"
        ) {
            return Err(format!(
                "--compression_type={}: TierKV writes blocks uncompressed and has no codec \
                 built in; use --compression_type=none (the setting of every paper's evaluation)",
                self.compression_type
            ));
        }
        if self.value_size > (1 << 30) {
            return Err(format!(
                "--value_size={} must be at most 1 GiB",
                self.value_size
            ));
        }
        if self.threads == 0 || self.threads > 1024 {
            return Err(format!("--threads={} must be in 1..=1024", self.threads));
        }
        if self.use_existing_db && self.db.is_none() {
            return Err("--use_existing_db needs --db=DIR".into());
        }
        if self.readwritepercent > 100 {
            return Err(format!(
                "--readwritepercent={} must be in 0..=100",
                self.readwritepercent
            ));
        }
        if let Some(p) = self.put_ratio.filter(|&p| p > 100) {
            return Err(format!("--put_ratio={p} must be in 0..=100"));
        }
        if self.design.is_empty() {
            return Err("--design is empty".into());
        }
        for (i, d) in self.design.iter().enumerate() {
            if self.design[..i].iter().any(|o| o.label == d.label) {
                return Err(format!("--design names {} twice", d.label));
            }
        }
        if self
            .design
            .iter()
            .any(|d| d.design == DesignChoice::Rocksdb)
            && !ROCKSDB_ENABLED
            && self.engine == EngineKind::Tierkv
        {
            return Err(
                "--design=rocksdb needs a build with the `rocksdb` cargo feature \
                        (cargo build --release -p tierkv-bench --features rocksdb)"
                    .into(),
            );
        }
        if !(100..=60_000).contains(&self.sample_interval_ms) {
            return Err(format!(
                "--sample_interval_ms={} must be in 100..=60000",
                self.sample_interval_ms
            ));
        }
        for (flag, mbps) in [
            ("--ssd_write_mbps", self.ssd_write_mbps),
            ("--ssd_read_mbps", self.ssd_read_mbps),
        ] {
            if mbps > MAX_SSD_MBPS {
                return Err(format!(
                    "{flag}={mbps} must be 0 (off) or 1..={MAX_SSD_MBPS} MB/s"
                ));
            }
        }
        for entry in self.design.iter() {
            let o = self.entry_options(entry)?;
            o.validate().map_err(|e| {
                if entry.is_variant() {
                    format!("design {}: {e}", entry.label)
                } else {
                    e.to_string()
                }
            })?;
        }
        Ok(())
    }
}
