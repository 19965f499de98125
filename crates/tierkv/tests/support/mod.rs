//! What the engine's integration tests share: running every design of the registry over an
//! in-memory SSD (`MemFs`) and, for a design that keeps data in PM, a crash-simulation pool, and
//! taking crash images of both at the same instant.
//!
//! A design is covered by these tests by being registered in `Design::ALL`.

#![allow(dead_code)] // each test binary uses a part of it

use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tierkv::fs::{CrashMode, MemFs};
use tierkv::pm::{CrashImage, PmPool, PoolOptions};
use tierkv::{Design, Options};

/// The pool of a test database of `design`: 32 chunks of 64 KiB (2 MiB, held in DRAM; every
/// crash image copies it), 128 (8 MiB) for a design whose whole database lives in the pool
/// (every run of the tests' tiny write buffers takes a chunk).
pub fn pool_options(design: Design) -> PoolOptions {
    PoolOptions {
        size: if design.data_on_pm() {
            8 << 20
        } else {
            2 << 20
        },
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    }
}

/// `options` for `design` over `ssd`, with `pool` as its PM pool when the design uses one.
pub fn design_options(
    mut options: Options,
    design: Design,
    ssd: &MemFs,
    pool: Option<&Arc<PmPool>>,
) -> Options {
    options.design = design;
    options.fs = Arc::new(ssd.clone());
    options.pm.chunk_bytes = pool_options(design).chunk_size;
    options.pm.size_bytes = pool_options(design).size;
    options.pm.pool = pool.cloned();
    options
}

/// Writes acknowledged so far, shared by a workload and the crash-point hook.
#[derive(Debug, Default)]
pub struct Progress {
    /// Writes acknowledged.
    pub acked: AtomicUsize,
    /// Writes up to and including the last one acknowledged with sync.
    pub synced: AtomicUsize,
}

impl Progress {
    /// Counts one acknowledged write.
    pub fn ack(&self, sync: bool) {
        let n = self.acked.fetch_add(1, Ordering::SeqCst) + 1;
        if sync {
            self.synced.store(n, Ordering::SeqCst);
        }
    }

    fn load(&self) -> (usize, usize) {
        (
            self.acked.load(Ordering::SeqCst),
            self.synced.load(Ordering::SeqCst),
        )
    }
}

/// What was captured at a crash point: the pool's images and the counts at that instant.
struct Frozen {
    strict: Option<Vec<u8>>,
    all_pending: Option<Vec<u8>>,
    acked: usize,
    synced: usize,
}

/// What a crash leaves behind: the SSD's files and the pool's durable image.
#[derive(Clone)]
pub struct Image {
    pub ssd: MemFs,
    pub pool: Option<Vec<u8>>,
}

impl Image {
    /// True if both images hold the same SSD files and the same pool bytes: the same input to
    /// a recovery.
    pub fn same(&self, other: &Image) -> bool {
        self.pool == other.pool && self.ssd.same_files(&other.ssd)
    }
}

/// The distinct crash images of one crash instant a walk has recovered. Recovery of a given
/// image is deterministic, so a walk recovers each distinct image once; the images of one
/// instant often coincide (a synced-only image equals the process-crash one once everything
/// is synced, a random one equals either), and recovering a copy again would check nothing
/// new. A walk whose images carry bounds of different strictness offers the strictest first.
#[derive(Default)]
pub struct Distinct {
    seen: Vec<Image>,
    /// Images offered that equalled one seen before.
    pub repeats: usize,
}

impl Distinct {
    /// True, remembering `img`, if no image offered before equals it.
    pub fn is_new(&mut self, img: &Image) -> bool {
        if self.seen.iter().any(|s| s.same(img)) {
            self.repeats += 1;
            return false;
        }
        self.seen.push(Image {
            ssd: img.ssd.clone(),
            pool: img.pool.clone(),
        });
        true
    }
}

/// A design's live store: an in-memory SSD and, if the design uses PM, a crash-simulation
/// pool.
pub struct Env {
    pub design: Design,
    pub ssd: MemFs,
    pub pool: Option<Arc<PmPool>>,
    pub progress: Arc<Progress>,
    frozen: Arc<Mutex<Option<Frozen>>>,
}

fn uses_pm(design: Design) -> bool {
    design.uses_pm(&Options {
        design,
        ..Options::default()
    })
}

impl Env {
    /// An empty store for `design`.
    pub fn new(design: Design) -> Env {
        let pool = uses_pm(design)
            .then(|| PmPool::create_crash_sim(&pool_options(design), false).unwrap());
        Env::with(design, MemFs::new(), pool)
    }

    fn with(design: Design, ssd: MemFs, pool: Option<Arc<PmPool>>) -> Env {
        Env {
            design,
            ssd,
            pool,
            progress: Arc::default(),
            frozen: Arc::default(),
        }
    }

    /// A live store over an independent copy of `img`.
    pub fn from_image(design: Design, img: &Image) -> Env {
        let pool = img
            .pool
            .clone()
            .map(|bytes| PmPool::open_crash_image(bytes, &pool_options(design)).unwrap());
        Env::with(design, img.ssd.crash(CrashMode::ProcessCrash), pool)
    }

    /// `options` for this store.
    pub fn options(&self, options: Options) -> Options {
        design_options(options, self.design, &self.ssd, self.pool.as_ref())
    }

    /// Sets a crash point after `k` more mutating SSD operations: at that instant the SSD
    /// freezes and the pool's images and the acknowledged counts are taken.
    pub fn freeze_after(&self, k: u64) {
        let (pool, progress, frozen) = (
            self.pool.clone(),
            Arc::clone(&self.progress),
            Arc::clone(&self.frozen),
        );
        self.ssd.on_freeze(Box::new(move || {
            let (acked, synced) = progress.load();
            let image = |kind| pool.as_ref().map(|p| p.crash_image(kind).unwrap());
            *frozen.lock() = Some(Frozen {
                strict: image(CrashImage::Strict),
                all_pending: image(CrashImage::AllPending),
                acked,
                synced,
            });
        }));
        self.ssd.freeze_after(k);
    }

    /// The writes acknowledged (and synced) at the crash point, or now if none was reached.
    pub fn counts_at_crash(&self) -> (usize, usize) {
        match &*self.frozen.lock() {
            Some(f) => (f.acked, f.synced),
            None => self.progress.load(),
        }
    }

    /// What a crash in `mode` at the crash point (or now) leaves: the SSD's image, and the
    /// pool's durable image (everything stored for a process crash, only what was persisted
    /// otherwise).
    pub fn crash(&self, mode: CrashMode) -> Image {
        let process = mode == CrashMode::ProcessCrash;
        let pool = match &*self.frozen.lock() {
            Some(f) => {
                if process {
                    f.all_pending.clone()
                } else {
                    f.strict.clone()
                }
            }
            None => self.pool.as_ref().map(|p| {
                let kind = if process {
                    CrashImage::AllPending
                } else {
                    CrashImage::Strict
                };
                p.crash_image(kind).unwrap()
            }),
        };
        Image {
            ssd: self.ssd.crash(mode),
            pool,
        }
    }
}

/// Every design of the registry, or, when `TIERKV_TEST_DESIGNS` is set, those it names
/// (comma-separated): a filter for working on one design; CI sets nothing and runs them all.
pub fn designs() -> Vec<Design> {
    let all = Design::ALL.iter().copied();
    match std::env::var("TIERKV_TEST_DESIGNS") {
        Ok(names) => {
            let wanted: Vec<&str> = names.split(',').map(str::trim).collect();
            all.filter(|d| wanted.contains(&d.name())).collect()
        }
        Err(_) => all.collect(),
    }
}

/// The tiny options the crash walks use (4 KiB memtables and tables, 1 KiB blocks, an L0
/// trigger of 2, four levels 8 KiB x 4), so a few hundred writes flush, compact and reach the
/// last level; for `env`'s design and store.
#[allow(dead_code)]
pub fn tiny_options(env: &Env) -> Options {
    let mut o = Options {
        write_buffer_size: 4096,
        max_open_files: 16,
        block_cache_bytes: 64 << 10,
        ..Options::default()
    };
    o.table.block_size = 1024;
    o.compaction.level0_compaction_trigger = 2;
    o.compaction.target_file_size = 4096;
    o.compaction.max_bytes_for_level_base = 8 << 10;
    o.compaction.level_size_multiplier = 4;
    o.compaction.num_levels = 4;
    // LAB-DB's L0 trees: a region of 8 leaves, so a few hundred writes switch trees and
    // compact chunks (other designs ignore these).
    o.labdb.leaf_region_bytes = 8 << 10;
    o.labdb.chunk_bytes = 2 << 10;
    // Its log: a WAL buffer of two 4 KiB halves, so a few dozen writes drain a half.
    o.labdb.wal_buffer_bytes = 8 << 10;
    // Its hot-key buffer: 32 slots of two 256-byte halves, a key hot from its second flush.
    o.labdb.hot_buffer_bytes = 16 << 10;
    o.labdb.hot_slot_bytes = 512;
    o.labdb.hot_threshold = 2;
    env.options(o)
}
