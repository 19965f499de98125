//! `--verify`: an engine wrapper that checks every read against the last write.
//!
//! [`VerifyingEngine`] keeps, for every key written through it, a 64-bit hash of the last value
//! written. Writes and point reads of one key are serialised by a striped lock (the engine call
//! happens under the key's stripe lock), so "the last value written" is exact even with many
//! client threads: a get must return exactly the value of the last put of that key, or "not
//! found" for a key never written (or deleted). Scans cannot take the stripe locks of every key
//! they cross, so a scanned entry is checked against its key instead: under `--verify` the
//! runner stamps every value with the first bytes of its key and a per-thread version number
//! ([`stamp_len`]), and a scanned value must carry its key's stamp.
//!
//! The wrapper only makes sense on a database created empty by the same run (it does not know
//! what was there before). It costs a hash-map update per write and a lookup per read.

use crate::engine::{EngineError, EngineResult, KvCursor, KvEngine};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use tierkv::DbStats;

const STRIPES: usize = 64;

/// One stripe of the model: key -> hash of its last value.
type Model = HashMap<Vec<u8>, u64>;

/// Bytes of the key stamped at the start of a value under `--verify`: the key's first 8 bytes
/// (db_bench keys start with the 8-byte key number), fewer when the key or value is shorter.
pub fn stamp_len(key_len: usize, value_len: usize) -> usize {
    key_len.min(value_len).min(8)
}

fn hash(bytes: &[u8]) -> u64 {
    // FNV-1a 64, then a length mix so that prefixes differ.
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01B3);
    }
    h ^ (bytes.len() as u64).rotate_left(32)
}

fn show(b: &[u8]) -> String {
    crate::text::display_bytes(b)
}

/// An engine wrapper that fails any read that does not return the last value written.
pub struct VerifyingEngine {
    inner: Box<dyn KvEngine>,
    stripes: Vec<Mutex<HashMap<Vec<u8>, u64>>>,
    /// Gets checked.
    pub gets_checked: AtomicU64,
    /// Scanned entries checked.
    pub entries_checked: AtomicU64,
}

impl VerifyingEngine {
    /// Wraps `inner`, which must hold no data yet.
    pub fn new(inner: Box<dyn KvEngine>) -> Self {
        VerifyingEngine {
            inner,
            stripes: (0..STRIPES).map(|_| Mutex::new(HashMap::new())).collect(),
            gets_checked: AtomicU64::new(0),
            entries_checked: AtomicU64::new(0),
        }
    }

    fn stripe(&self, key: &[u8]) -> MutexGuard<'_, HashMap<Vec<u8>, u64>> {
        let i = (hash(key) % STRIPES as u64) as usize;
        self.stripes[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of distinct keys written and not deleted.
    pub fn keys(&self) -> usize {
        self.stripes
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }
}

impl KvEngine for VerifyingEngine {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()> {
        let mut model = self.stripe(key);
        self.inner.put(key, value)?;
        model.insert(key.to_vec(), hash(value));
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> EngineResult<()> {
        let mut model = self.stripe(key);
        self.inner.delete(key)?;
        model.remove(key);
        Ok(())
    }

    fn write_batch(&self, batch: &crate::engine::KvBatch) -> EngineResult<()> {
        // Every stripe the batch touches, locked in index order (no deadlock with another
        // batch), held across the engine's write so the model changes with it.
        let mut idx: Vec<usize> = batch
            .iter()
            .map(|(k, _)| (hash(k) % STRIPES as u64) as usize)
            .collect();
        idx.sort_unstable();
        idx.dedup();
        let mut guards: Vec<(usize, MutexGuard<'_, Model>)> = idx
            .into_iter()
            .map(|i| (i, self.stripes[i].lock().unwrap_or_else(|e| e.into_inner())))
            .collect();
        self.inner.write_batch(batch)?;
        for (key, value) in batch.iter() {
            let i = (hash(key) % STRIPES as u64) as usize;
            let model = &mut guards
                .iter_mut()
                .find(|(j, _)| *j == i)
                .expect("stripe locked above")
                .1;
            match value {
                Some(v) => model.insert(key.to_vec(), hash(v)),
                None => model.remove(key),
            };
        }
        Ok(())
    }

    fn compact(&self) -> EngineResult<()> {
        self.inner.compact()
    }

    fn get(&self, key: &[u8], value: &mut Vec<u8>) -> EngineResult<bool> {
        let model = self.stripe(key);
        let found = self.inner.get(key, value)?;
        self.gets_checked.fetch_add(1, Relaxed);
        match (found, model.get(key)) {
            (true, Some(&h)) if h == hash(value) => Ok(true),
            (false, None) => Ok(false),
            (true, Some(_)) => Err(EngineError::from(format!(
                "verification failed: get({}) returned {} bytes that are not the last value \
                 written",
                show(key),
                value.len()
            ))),
            (true, None) => Err(EngineError::from(format!(
                "verification failed: get({}) found a key that was never written",
                show(key)
            ))),
            (false, Some(_)) => Err(EngineError::from(format!(
                "verification failed: get({}) did not find a written key",
                show(key)
            ))),
        }
    }

    fn cursor(&self) -> EngineResult<Box<dyn KvCursor + '_>> {
        Ok(Box::new(VerifyingCursor {
            inner: self.inner.cursor()?,
            engine: self,
            error: None,
        }))
    }

    fn flush(&self) -> EngineResult<()> {
        self.inner.flush()
    }

    fn wait_for_compaction(&self) -> EngineResult<()> {
        self.inner.wait_for_compaction()
    }

    fn stats(&self) -> Option<DbStats> {
        self.inner.stats()
    }

    fn logical_size(&self) -> EngineResult<Option<u64>> {
        self.inner.logical_size()
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        self.inner.close()
    }
}

struct VerifyingCursor<'a> {
    inner: Box<dyn KvCursor + 'a>,
    engine: &'a VerifyingEngine,
    error: Option<String>,
}

impl VerifyingCursor<'_> {
    fn check(&mut self) {
        if self.error.is_some() || !self.inner.valid() {
            return;
        }
        let (k, v) = (self.inner.key(), self.inner.value());
        self.engine.entries_checked.fetch_add(1, Relaxed);
        let n = stamp_len(k.len(), v.len());
        if k[..n] != v[..n] {
            self.error = Some(format!(
                "verification failed: the cursor returned key {} with a value stamped for key \
                 prefix {}",
                show(k),
                show(&v[..n])
            ));
        }
    }
}

impl KvCursor for VerifyingCursor<'_> {
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.check();
    }
    fn seek(&mut self, key: &[u8]) {
        self.inner.seek(key);
        self.check();
    }
    fn valid(&self) -> bool {
        self.error.is_none() && self.inner.valid()
    }
    fn next(&mut self) {
        self.inner.next();
        self.check();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> EngineResult<()> {
        match &self.error {
            Some(e) => Err(EngineError::from(e.clone())),
            None => self.inner.status(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::MemEngine;

    /// An engine that returns stale or foreign data, to see the verifier catch it.
    struct Liar(MemEngine);
    impl KvEngine for Liar {
        fn name(&self) -> &str {
            "liar"
        }
        fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()> {
            // Drops every write to key "stale" after the first.
            let mut v = Vec::new();
            if key == b"stale" && self.0.get(key, &mut v)? {
                return Ok(());
            }
            self.0.put(key, value)
        }
        fn delete(&self, key: &[u8]) -> EngineResult<()> {
            self.0.delete(key)
        }
        fn get(&self, key: &[u8], value: &mut Vec<u8>) -> EngineResult<bool> {
            self.0.get(key, value)
        }
        fn cursor(&self) -> EngineResult<Box<dyn KvCursor + '_>> {
            self.0.cursor()
        }
    }

    #[test]
    fn verifier_accepts_the_truth_and_catches_lies() {
        let e = VerifyingEngine::new(Box::new(MemEngine::default()));
        let mut v = Vec::new();
        e.put(b"key1", b"key1-v1").unwrap();
        e.put(b"key1", b"key1-v2").unwrap();
        assert!(e.get(b"key1", &mut v).unwrap());
        assert_eq!(v, b"key1-v2");
        assert!(!e.get(b"nope", &mut v).unwrap());
        e.delete(b"key1").unwrap();
        assert!(!e.get(b"key1", &mut v).unwrap());
        e.put(b"abcd", b"abcdxx").unwrap();
        let mut c = e.cursor().unwrap();
        c.seek_to_first();
        assert!(c.valid());
        c.next();
        assert!(!c.valid());
        c.status().unwrap();
        drop(c);
        assert_eq!(e.keys(), 1);

        let liar = VerifyingEngine::new(Box::new(Liar(MemEngine::default())));
        liar.put(b"stale", b"stale-1").unwrap();
        liar.put(b"stale", b"stale-2").unwrap();
        let err = liar.get(b"stale", &mut v).unwrap_err().to_string();
        assert!(err.contains("not the last value written"), "{err}");
        // A scanned value stamped for another key.
        liar.put(b"zzzz", b"yyyy-value").unwrap();
        let mut c = liar.cursor().unwrap();
        c.seek(b"zzzz");
        assert!(!c.valid());
        let err = c.status().unwrap_err().to_string();
        assert!(err.contains("stamped for key prefix"), "{err}");
    }
}
