//! The block cache: data blocks of every open table, and the pages of LAB-DB's value arrays
//! that reads went to, keyed by `(file number, offset)` and charged by bytes (one budget:
//! `Options::block_cache_bytes`).
//!
//! Thread-safety: [`BlockCache`] is `Send + Sync` and shared as `Arc<BlockCache>`; it is a
//! sharded `quick_cache::sync::Cache` (S3-FIFO eviction), so lookups on different shards never
//! contend.
//!
//! Invariants: a cached block is immutable and its checksum was verified before insertion; file
//! numbers are never reused, so an entry can never describe another file's bytes.

use super::block::Block;
use quick_cache::sync::Cache;
use quick_cache::Weighter;
use std::sync::Arc;

/// What the cache holds under one key.
#[derive(Clone)]
enum Cached {
    /// A table's data block.
    Block(Arc<Block>),
    /// Raw bytes of a file (a value array's page).
    Bytes(Arc<[u8]>),
}

#[derive(Clone, Debug)]
struct BlockWeighter;

impl Weighter<(u64, u64), Cached> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), val: &Cached) -> u64 {
        match val {
            Cached::Block(b) => b.size().max(1) as u64,
            Cached::Bytes(b) => b.len().max(1) as u64,
        }
    }
}

/// A concurrent cache of data blocks, charged by block bytes.
pub struct BlockCache {
    cache: Cache<(u64, u64), Cached, BlockWeighter>,
    capacity: u64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage_bytes())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding about `capacity_bytes` of block contents (0 caches nothing).
    pub fn new(capacity_bytes: usize) -> Arc<BlockCache> {
        let items = (capacity_bytes / 4096).max(16);
        Arc::new(BlockCache {
            cache: Cache::with_weighter(items, capacity_bytes as u64, BlockWeighter),
            capacity: capacity_bytes as u64,
        })
    }

    /// Bytes of blocks currently cached.
    pub fn usage_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// The cached block at `offset` of table `file_number`, if any.
    #[inline]
    pub fn get(&self, file_number: u64, offset: u64) -> Option<Arc<Block>> {
        match self.cache.get(&(file_number, offset))? {
            Cached::Block(b) => Some(b),
            Cached::Bytes(_) => None,
        }
    }

    /// Caches a block.
    pub fn insert(&self, file_number: u64, offset: u64, block: Arc<Block>) {
        if self.capacity > 0 {
            self.cache
                .insert((file_number, offset), Cached::Block(block));
        }
    }

    /// The cached bytes at `offset` of file `file_number` (a value array's page), if any.
    #[inline]
    pub fn get_bytes(&self, file_number: u64, offset: u64) -> Option<Arc<[u8]>> {
        match self.cache.get(&(file_number, offset))? {
            Cached::Bytes(b) => Some(b),
            Cached::Block(_) => None,
        }
    }

    /// Caches bytes read at `offset` of file `file_number`. The file's bytes there must never
    /// change (append-only files; file numbers are never reused).
    pub fn insert_bytes(&self, file_number: u64, offset: u64, bytes: Arc<[u8]>) {
        if self.capacity > 0 {
            self.cache
                .insert((file_number, offset), Cached::Bytes(bytes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_bytes_and_evicts() {
        let c = BlockCache::new(64 << 10);
        let blk = |n: usize| {
            let mut v = vec![0u8; n];
            v[n - 4..].copy_from_slice(&1u32.to_le_bytes());
            Arc::new(Block::new(v).unwrap())
        };
        c.insert(1, 0, blk(4096));
        assert_eq!(c.usage_bytes(), 4096);
        assert!(c.get(1, 0).is_some());
        assert!(c.get(1, 4096).is_none());
        assert!(c.get(2, 0).is_none());
        for i in 0..100 {
            c.insert(3, i * 4096, blk(4096));
        }
        assert!(c.usage_bytes() <= 64 << 10, "usage {}", c.usage_bytes());
        let z = BlockCache::new(0);
        z.insert(1, 0, blk(100));
        assert_eq!(z.usage_bytes(), 0);
        assert!(z.get(1, 0).is_none());
    }
}
