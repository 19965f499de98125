//! RocksDB behind the [`KvEngine`] seam (`--design rocksdb`), so that TierKV and RocksDB run the
//! same workload code in one harness, on one machine.
//!
//! The engine exists only with the `rocksdb` cargo feature, which builds RocksDB from source
//! through the `rocksdb` crate (it needs `libclang-dev` and a C++ compiler, and takes about 20
//! minutes on 2 cores); it is off by default and in CI. Without it, [`open`] returns an error
//! that says how to build it.
//!
//! Options are set to match TierKV's for the same flags ([`options_json`] lists them, and the
//! JSON report records them): no compression; full-key 10-bit Bloom filters (`--bloom_bits`,
//! full filters rather than block-based ones); `--write_buffer_size` memtables and two of them;
//! a `--cache_size` LRU block cache; 4 KiB blocks; the L0 triggers, level sizes and file size
//! of TierKV's compaction options; two background jobs (TierKV has a flush thread and one
//! compaction thread); the WAL on, with `--sync` passed to every write.
//!
//! The SSD model flags map to RocksDB's own mechanisms, which differ from TierKV's model (the
//! header and the report say so, [`ssd_model_note`]): `--use_direct_reads` is
//! `use_direct_reads`; `--ssd_write_mbps` is a generic rate limiter (100 ms refill, fairness
//! 10), which caps flush and compaction writes but not the WAL; `--ssd_read_mbps` has no
//! counterpart.
//!
//! Engine figures come from RocksDB's statistics tickers: WAL, flush and compaction bytes
//! written; compaction bytes read; `rocksdb.stall.micros` as stop time; block cache and Bloom
//! filter counters. User bytes read from SSD are approximated by the bytes inserted into the
//! block cache (every data block a user read misses is read from a file and inserted). Level
//! sizes come from the live files; DRAM from the memtable, table-reader and block-cache usage
//! properties.

use crate::config::BenchConfig;
#[cfg(feature = "rocksdb")]
use crate::engine::KvCursor;
use crate::engine::{EngineResult, KvEngine};
use std::path::Path;

/// The RocksDB options `config` selects, as JSON (for the header and the report).
pub fn options_json(config: &BenchConfig) -> serde_json::Value {
    let t = config.options_for(tierkv::Design::LEVELED);
    let c = &t.compaction;
    serde_json::json!({
        "engine": "rocksdb",
        "compression": "none",
        "bloom_bits_per_key": config.bloom_bits,
        "bloom_filter": "full (not block-based)",
        "write_buffer_size": config.write_buffer_size,
        "max_write_buffer_number": t.max_write_buffer_number,
        "block_cache_bytes": config.cache_size,
        "block_size": t.table.block_size,
        "num_levels": c.num_levels,
        "level0_file_num_compaction_trigger": c.level0_compaction_trigger,
        "level0_slowdown_writes_trigger": c.level0_slowdown_trigger,
        "level0_stop_writes_trigger": c.level0_stop_trigger,
        "max_bytes_for_level_base": c.max_bytes_for_level_base,
        "max_bytes_for_level_multiplier": c.level_size_multiplier,
        "target_file_size_base": c.target_file_size,
        "max_background_jobs": 1 + c.background_compactions,
        "max_open_files": t.max_open_files,
        "wal": !config.disable_wal,
        "disable_auto_compactions": c.disable_auto_compactions,
        "sync": config.sync,
        "statistics": true,
        "use_direct_reads": config.use_direct_reads,
        "rate_limiter_bytes_per_sec": rate_limiter_bytes_per_sec(config),
        "ssd_model_note": ssd_model_note(config),
    })
}

/// The rate of RocksDB's rate limiter under `--ssd_write_mbps` (0: none).
pub fn rate_limiter_bytes_per_sec(config: &BenchConfig) -> u64 {
    config.ssd_write_mbps * crate::config::MB
}

/// How RocksDB's run differs from TierKV's SSD model under the SSD model flags (`None` when
/// none is set): RocksDB's rate limiter caps flush and compaction writes, not the WAL, and
/// nothing caps its reads.
pub fn ssd_model_note(config: &BenchConfig) -> Option<String> {
    let mut parts = Vec::new();
    if config.ssd_write_mbps > 0 {
        parts.push(format!(
            "--ssd_write_mbps={} is RocksDB's rate limiter, which caps flush and compaction \
             writes but not WAL writes (TierKV's model caps every SSD write, WAL included)",
            config.ssd_write_mbps
        ));
    }
    if config.ssd_read_mbps > 0 {
        parts.push(format!(
            "--ssd_read_mbps={} is not applied to RocksDB (its reads are uncapped)",
            config.ssd_read_mbps
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "RocksDB is not under exactly TierKV's SSD model: {}",
            parts.join("; ")
        )
    })
}

/// Opens RocksDB in `path` with the options of `config`.
#[cfg(not(feature = "rocksdb"))]
pub fn open(_config: &BenchConfig, _path: &Path) -> EngineResult<Box<dyn KvEngine>> {
    Err(
        "--design=rocksdb needs a build with the `rocksdb` cargo feature \
         (cargo build --release -p tierkv-bench --features rocksdb)"
            .into(),
    )
}

/// Opens RocksDB in `path` with the options of `config`.
#[cfg(feature = "rocksdb")]
pub fn open(config: &BenchConfig, path: &Path) -> EngineResult<Box<dyn KvEngine>> {
    Ok(Box::new(RocksEngine::open(config, path)?))
}

/// [`KvEngine`] over RocksDB.
#[cfg(feature = "rocksdb")]
pub struct RocksEngine {
    db: rocksdb::DB,
    options: rocksdb::Options,
    write_options: rocksdb::WriteOptions,
    cache: rocksdb::Cache,
}

#[cfg(feature = "rocksdb")]
impl RocksEngine {
    /// Opens (or creates) the database in `path`.
    pub fn open(config: &BenchConfig, path: &Path) -> EngineResult<Self> {
        use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, WriteOptions, DB};
        let t = config.options_for(tierkv::Design::LEVELED);
        let c = &t.compaction;
        let int = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
        let mut o = Options::default();
        o.create_if_missing(!config.use_existing_db);
        o.set_error_if_exists(!config.use_existing_db);
        o.set_compression_type(DBCompressionType::None);
        o.set_bottommost_compression_type(DBCompressionType::None);
        o.set_write_buffer_size(t.write_buffer_size);
        o.set_max_write_buffer_number(int(t.max_write_buffer_number));
        o.set_num_levels(int(c.num_levels));
        o.set_level_zero_file_num_compaction_trigger(int(c.level0_compaction_trigger));
        o.set_level_zero_slowdown_writes_trigger(int(c.level0_slowdown_trigger));
        o.set_level_zero_stop_writes_trigger(int(c.level0_stop_trigger));
        o.set_max_bytes_for_level_base(c.max_bytes_for_level_base);
        o.set_max_bytes_for_level_multiplier(c.level_size_multiplier as f64);
        o.set_target_file_size_base(c.target_file_size);
        o.set_disable_auto_compactions(c.disable_auto_compactions);
        o.set_max_background_jobs(int(1 + c.background_compactions));
        o.set_max_open_files(int(t.max_open_files));
        o.enable_statistics();
        o.set_use_direct_reads(config.use_direct_reads);
        let rate = rate_limiter_bytes_per_sec(config);
        if rate > 0 {
            // RocksDB's defaults: refill every 100 ms, fairness 10.
            o.set_ratelimiter(i64::try_from(rate).unwrap_or(i64::MAX), 100_000, 10);
        }
        let cache = Cache::new_lru_cache(t.block_cache_bytes);
        let mut b = BlockBasedOptions::default();
        b.set_block_cache(&cache);
        b.set_block_size(t.table.block_size);
        if config.bloom_bits > 0 {
            b.set_bloom_filter(config.bloom_bits as f64, false);
        }
        o.set_block_based_table_factory(&b);
        let db = DB::open(&o, path)
            .map_err(|e| format!("opening RocksDB in {}: {e}", path.display()))?;
        let mut write_options = WriteOptions::default();
        write_options.set_sync(config.sync);
        write_options.disable_wal(config.disable_wal);
        Ok(RocksEngine {
            db,
            options: o,
            write_options,
            cache,
        })
    }
}

#[cfg(feature = "rocksdb")]
impl KvEngine for RocksEngine {
    fn name(&self) -> &str {
        "rocksdb"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()> {
        Ok(self.db.put_opt(key, value, &self.write_options)?)
    }

    fn delete(&self, key: &[u8]) -> EngineResult<()> {
        Ok(self.db.delete_opt(key, &self.write_options)?)
    }

    fn get(&self, key: &[u8], value: &mut Vec<u8>) -> EngineResult<bool> {
        match self.db.get_pinned(key)? {
            Some(v) => {
                value.clear();
                value.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn cursor(&self) -> EngineResult<Box<dyn KvCursor + '_>> {
        Ok(Box::new(RocksCursor(self.db.raw_iterator())))
    }

    fn write_batch(&self, batch: &crate::engine::KvBatch) -> EngineResult<()> {
        let mut b = rocksdb::WriteBatch::default();
        for (key, value) in batch.iter() {
            match value {
                Some(v) => b.put(key, v),
                None => b.delete(key),
            }
        }
        Ok(self.db.write_opt(b, &self.write_options)?)
    }

    fn multi_get(&self, keys: &[&[u8]], values: &mut Vec<Option<Vec<u8>>>) -> EngineResult<()> {
        values.clear();
        for v in self.db.multi_get(keys.iter().copied()) {
            values.push(v?);
        }
        Ok(())
    }

    fn compact(&self) -> EngineResult<()> {
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn flush(&self) -> EngineResult<()> {
        Ok(self.db.flush()?)
    }

    fn wait_for_compaction(&self) -> EngineResult<()> {
        let prop = |name: &str| self.db.property_int_value(name).ok().flatten().unwrap_or(0);
        while prop("rocksdb.num-immutable-mem-table") > 0
            || prop("rocksdb.compaction-pending") > 0
            || prop("rocksdb.num-running-compactions") > 0
            || prop("rocksdb.num-running-flushes") > 0
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(())
    }

    fn stats(&self) -> Option<tierkv::DbStats> {
        use rocksdb::statistics::Ticker;
        use tierkv::stats::{DramFootprint, LevelStats};
        let t = |k: Ticker| self.options.get_ticker_count(k);
        let prop = |name: &str| self.db.property_int_value(name).ok().flatten().unwrap_or(0);
        let mut levels: Vec<LevelStats> = Vec::new();
        if let Ok(files) = self.db.live_files() {
            for f in files {
                let l = usize::try_from(f.level).unwrap_or(0);
                if levels.len() <= l {
                    levels.resize(l + 1, LevelStats::default());
                }
                levels[l].files += 1;
                levels[l].bytes += f.size as u64;
            }
        }
        Some(tierkv::DbStats {
            design: "rocksdb".into(),
            user_bytes_written: t(Ticker::BytesWritten),
            user_bytes_read: t(Ticker::BytesRead) + t(Ticker::IterBytesRead),
            user_writes: t(Ticker::NumberKeysWritten),
            user_gets: t(Ticker::NumberKeysRead),
            ssd_written_wal: t(Ticker::WalFileBytes),
            ssd_written_flush: t(Ticker::FlushWriteBytes),
            ssd_written_compaction: t(Ticker::CompactWriteBytes),
            ssd_read_compaction: t(Ticker::CompactReadBytes),
            ssd_read_user: t(Ticker::BlockCacheBytesWrite),
            block_cache_hits: t(Ticker::BlockCacheHit),
            block_cache_misses: t(Ticker::BlockCacheMiss),
            bloom_useful: t(Ticker::BloomFilterUseful),
            stall_stop_micros: t(Ticker::StallMicros),
            levels,
            dram: DramFootprint {
                memtable_bytes: prop("rocksdb.cur-size-all-mem-tables"),
                index_bytes: prop("rocksdb.estimate-table-readers-mem"),
                block_cache_bytes: self.cache.get_usage() as u64,
                filter_bytes: 0,
                memtable_kept_bytes: 0,
                global_index_bytes: 0,
                l0_tree_bytes: 0,
                list_tower_bytes: 0,
            },
            ..tierkv::DbStats::default()
        })
    }

    fn logical_size(&self) -> EngineResult<Option<u64>> {
        let mut it = self.db.raw_iterator();
        it.seek_to_first();
        let mut n = 0u64;
        while it.valid() {
            n += (it.key().map_or(0, <[u8]>::len) + it.value().map_or(0, <[u8]>::len)) as u64;
            it.next();
        }
        it.status()?;
        Ok(Some(n))
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        self.db.flush_wal(true)?;
        drop(self);
        Ok(())
    }
}

#[cfg(feature = "rocksdb")]
struct RocksCursor<'a>(rocksdb::DBRawIteratorWithThreadMode<'a, rocksdb::DB>);

#[cfg(feature = "rocksdb")]
impl KvCursor for RocksCursor<'_> {
    fn seek_to_first(&mut self) {
        self.0.seek_to_first();
    }
    fn seek(&mut self, key: &[u8]) {
        self.0.seek(key);
    }
    fn valid(&self) -> bool {
        self.0.valid()
    }
    fn next(&mut self) {
        self.0.next();
    }
    fn key(&self) -> &[u8] {
        self.0.key().unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.0.value().unwrap_or(&[])
    }
    fn status(&self) -> EngineResult<()> {
        Ok(self.0.status()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocksdb_options_match_the_flags() {
        let c = crate::config::tests::parse(&[
            "--write_buffer_size=1048576",
            "--cache_size=2097152",
            "--sync",
        ])
        .unwrap();
        let o = options_json(&c);
        assert_eq!(o["compression"], "none");
        assert_eq!(o["bloom_bits_per_key"], 10);
        assert_eq!(o["write_buffer_size"], 1_048_576);
        assert_eq!(o["block_cache_bytes"], 2_097_152);
        assert_eq!(o["wal"], true);
        assert_eq!(o["sync"], true);
        assert_eq!(o["use_direct_reads"], false);
        assert_eq!(o["rate_limiter_bytes_per_sec"], 0);
        assert_eq!(o["ssd_model_note"], serde_json::Value::Null);
        let m = crate::config::tests::parse(&[
            "--ssd_write_mbps=50",
            "--ssd_read_mbps=100",
            "--use_direct_reads",
        ])
        .unwrap();
        let o = options_json(&m);
        assert_eq!(o["use_direct_reads"], true);
        assert_eq!(o["rate_limiter_bytes_per_sec"], 50_000_000);
        let note = o["ssd_model_note"].as_str().unwrap();
        assert!(note.contains("not WAL writes"), "{note}");
        assert!(
            note.contains("--ssd_read_mbps=100 is not applied"),
            "{note}"
        );
        #[cfg(not(feature = "rocksdb"))]
        assert!(open(&c, Path::new("/nonexistent"))
            .err()
            .unwrap()
            .to_string()
            .contains("`rocksdb` cargo feature"));
    }
}
