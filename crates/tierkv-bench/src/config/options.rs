//! The engine options the flags select: per design, and per `--design` entry (the variant's
//! overrides applied after `--set`); the PM pool file of each entry; the write options.

use super::*;

impl BenchConfig {
    /// The TierKV designs among `--design` (a design once per entry that runs it).
    pub fn tierkv_designs(&self) -> impl Iterator<Item = Design> + '_ {
        self.design.iter().filter_map(|d| match d.design {
            DesignChoice::Tierkv(d) => Some(d),
            DesignChoice::Rocksdb => None,
        })
    }

    /// The engine options of the first TierKV entry of `--design` (leveled when there is
    /// none), with every override.
    pub fn options(&self) -> Options {
        let first = self
            .design
            .iter()
            .find(|e| matches!(e.design, DesignChoice::Tierkv(_)));
        match first {
            Some(e) => self
                .entry_options(e)
                .unwrap_or_else(|_| self.base_options(self.tierkv_design_of(e), &e.label)),
            None => self.options_for(Design::LEVELED),
        }
    }

    /// The YCSB request distribution of a workload: `--distribution`, else the workload's own.
    pub fn distribution_for(&self, mix: &YcsbMix) -> RequestDistribution {
        self.distribution.unwrap_or(mix.distribution)
    }

    /// The TierKV design whose options an entry runs with (RocksDB takes leveled's).
    fn tierkv_design_of(&self, entry: &DesignEntry) -> Design {
        match entry.design {
            DesignChoice::Tierkv(d) => d,
            DesignChoice::Rocksdb => Design::LEVELED,
        }
    }

    /// The options the flags select for `design` and its defaults, before any override; the
    /// pool file is the one of the entry labelled `label`.
    fn base_options(&self, design: Design, label: &str) -> Options {
        let mut o = Options {
            design,
            create_if_missing: !self.use_existing_db,
            error_if_exists: !self.use_existing_db,
            write_buffer_size: usize::try_from(self.write_buffer_size).unwrap_or(usize::MAX),
            block_cache_bytes: usize::try_from(self.cache_size).unwrap_or(usize::MAX),
            ..Options::default()
        };
        o.table.bloom_bits_per_key = usize::try_from(self.bloom_bits).unwrap_or(usize::MAX);
        o.pm.path = self.pm_path_for(label);
        o.pm.size_bytes = self.pm_size;
        o.pm.mode = self.pm_mode;
        o.pm.latency = self.pm_latency;
        o.pm.wal_on_pm = self.wal_on_pm;
        o.ssd.write_bytes_per_sec = self.ssd_write_mbps * MB;
        o.ssd.read_bytes_per_sec = self.ssd_read_mbps * MB;
        o.ssd.direct_reads = self.use_direct_reads;
        // Benchmark keys and values must be accepted whatever their configured sizes.
        o.max_key_size = o.max_key_size.max(self.key_size);
        o.max_value_size = o.max_value_size.max(self.value_size);
        let mut o = design.options(o);
        self.apply_shape_flags(&mut o);
        o
    }

    /// The db_bench LSM-shape flags given, over the design's defaults.
    fn apply_shape_flags(&self, o: &mut Options) {
        let c = &mut o.compaction;
        if let Some(jobs) = self.max_background_jobs {
            c.background_compactions = jobs.saturating_sub(1).max(1);
        }
        let set = |to: &mut u64, from: Option<u64>| *to = from.unwrap_or(*to);
        set(&mut c.target_file_size, self.target_file_size_base);
        set(
            &mut c.max_bytes_for_level_base,
            self.max_bytes_for_level_base,
        );
        set(
            &mut c.level_size_multiplier,
            self.max_bytes_for_level_multiplier,
        );
        let set = |to: &mut usize, from: Option<usize>| *to = from.unwrap_or(*to);
        set(
            &mut c.level0_compaction_trigger,
            self.level0_file_num_compaction_trigger,
        );
        set(
            &mut c.level0_slowdown_trigger,
            self.level0_slowdown_writes_trigger,
        );
        set(&mut c.level0_stop_trigger, self.level0_stop_writes_trigger);
        set(&mut c.num_levels, self.num_levels);
        set(&mut o.table.block_size, self.block_size);
        set(&mut o.max_write_buffer_number, self.max_write_buffer_number);
        if self.disable_auto_compactions {
            o.compaction.disable_auto_compactions = true;
        }
    }

    /// The engine options these flags select for `design`: the flags, the design's defaults,
    /// then `--set` (everything else at its default). [`validate`](Self::validate) refuses
    /// overrides that do not apply; unchecked, they are left out here.
    pub fn options_for(&self, design: Design) -> Options {
        let base = self.base_options(design, design.name());
        apply_overrides(&base, &self.set).unwrap_or(base)
    }

    /// The engine options of one `--design` entry: the flags, the design's defaults, `--set`,
    /// then the variant's own overrides. For a rocksdb entry: the leveled options RocksDB's
    /// are taken from. The error names the override that does not apply.
    pub fn entry_options(&self, entry: &DesignEntry) -> Result<Options, String> {
        let base = self.base_options(self.tierkv_design_of(entry), &entry.label);
        let o = apply_overrides(&base, &self.set).map_err(|e| format!("--set {e}"))?;
        let mut o = apply_overrides(&o, &entry.overrides)
            .map_err(|e| format!("design {}: override {e}", entry.label))?;
        // A design that keeps nothing in PM under these options is not given a pool path: it
        // would never open it, and the header would show a flag with no effect.
        if !o.design.uses_pm(&o) {
            o.pm.path = None;
        }
        Ok(o)
    }

    /// The flags of one entry run alone, for engines configured from the flags (RocksDB): its
    /// overrides are appended to `--set`.
    pub fn entry_config(&self, entry: &DesignEntry) -> BenchConfig {
        let mut c = self.clone();
        c.set.extend(entry.overrides.iter().cloned());
        c
    }

    /// The pool file of the entry labelled `label`: `--pm_path`, suffixed with the label when
    /// several designs run.
    pub fn pm_path_for(&self, label: &str) -> Option<PathBuf> {
        let p = self.pm_path.as_ref()?;
        if self.design.len() > 1 {
            let mut name = p.file_name().unwrap_or_default().to_os_string();
            name.push(format!("-{label}"));
            Some(p.with_file_name(name))
        } else {
            Some(p.clone())
        }
    }

    /// The write options these flags select.
    pub fn write_options(&self) -> WriteOptions {
        WriteOptions {
            sync: self.sync,
            disable_wal: self.disable_wal,
        }
    }
}
