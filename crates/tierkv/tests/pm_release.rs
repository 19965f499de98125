//! `pm.release_freed`: on every design that keeps a pool, the pool file gives freed chunks'
//! blocks back as the database runs and at open, and nothing acknowledged is lost.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use tierkv::{Db, Design, Options};
use tierkv_pm::RELEASE_RESERVE_BYTES;

const CHUNK: u64 = 256 << 10;

fn options(design: Design, dir: &Path) -> Options {
    let mut o = design.options(Options {
        design,
        write_buffer_size: 128 << 10,
        ..Options::default()
    });
    o.pm.path = Some(dir.join("p.pool"));
    o.pm.size_bytes = 64 << 20;
    o.pm.chunk_bytes = CHUNK;
    o.pm.release_freed = true;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    vec![((i + round) % 251) as u8; 300]
}

/// Bytes the file system holds for `path`.
fn held(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn released_chunks_leave_the_pool_file_at_its_live_chunks_on_every_design() {
    const KEYS: u32 = 6_000;
    let mut released_while_running = 0;
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let o = options(design, dir.path());
        if !design.uses_pm(&o) {
            continue;
        }
        let db = Db::open(dir.path(), o.clone()).unwrap();
        // The open releases the free chunks of the new pool (never backed): not counted.
        let at_open = db.stats().pm.unwrap().bytes_released;
        // Overwrites, so that flushes and compactions free chunks.
        for round in 0..3 {
            for i in 0..KEYS {
                db.put(&key(i), &value(i, round)).unwrap();
            }
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        released_while_running += db.stats().pm.unwrap().bytes_released - at_open;
        db.close().unwrap();
        Db::check(dir.path(), o.clone()).unwrap_or_else(|e| panic!("{design}: check: {e}"));

        // At open the chunks no structure uses are released: the file holds the live chunks,
        // the header chunk, and at most the reserve of chunks the open itself freed (recovery
        // may free what it replaced).
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let pm = db.stats().pm.unwrap();
        let file = held(&o.pm.path.clone().unwrap());
        let reserve = RELEASE_RESERVE_BYTES.min(o.pm.size_bytes / 16);
        assert!(
            file <= pm.bytes_allocated + CHUNK + reserve,
            "{design}: the pool file holds {file} bytes for {} allocated",
            pm.bytes_allocated
        );
        for i in 0..KEYS {
            assert_eq!(
                db.get(&key(i)).unwrap().as_deref(),
                Some(&value(i, 2)[..]),
                "{design}: key {i}"
            );
        }
        db.close().unwrap();
    }
    // Beyond the reserve of freed chunks kept backed (a sixteenth of this pool).
    assert!(released_while_running > 0, "no design released a chunk");
}
