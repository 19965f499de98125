//! The body of one thread of a db_bench benchmark: fills, deletes, random and batched reads,
//! scans, seeks, readrandomwriterandom's mix, updaterandom and the maintenance benchmarks; with
//! the values it writes (stamped under `--verify`) and the lookups and seeks they share.

use super::*;

/// Values to write: slices of the value generator, or, under `--verify`, copies stamped with
/// the key's first bytes and a unique version, so a value read back names the key it belongs to.
pub(super) struct Values {
    gen: ValueGen,
    verify: bool,
    buf: Vec<u8>,
    version: u64,
}

impl Values {
    pub(super) fn new(seed: u64, plan: &Plan, thread: usize) -> Self {
        Values {
            gen: ValueGen::new(seed ^ 0x5555_5555_5555_5555, plan.value_size),
            verify: plan.verify,
            buf: Vec::with_capacity(plan.value_size),
            version: (thread as u64) << 40,
        }
    }

    #[inline]
    pub(super) fn next(&mut self, key: &[u8]) -> &[u8] {
        if !self.verify {
            return self.gen.next_value();
        }
        self.buf.clear();
        self.buf.extend_from_slice(self.gen.next_value());
        let kp = verify::stamp_len(key.len(), self.buf.len());
        self.buf[..kp].copy_from_slice(&key[..kp]);
        self.version += 1;
        let v = self.version.to_be_bytes();
        let room = (self.buf.len() - kp).min(8);
        self.buf[kp..kp + room].copy_from_slice(&v[..room]);
        &self.buf
    }
}

/// True when operation `i` of a readrandomwriterandom thread is a get: db_bench's pattern, in
/// each run of 100 operations the first `read_percent` are gets and the others puts.
pub fn rrwr_is_get(i: u64, read_percent: u32) -> bool {
    i % 100 < u64::from(read_percent)
}

/// The gets among the first `ops` operations of a readrandomwriterandom thread.
pub fn rrwr_gets(ops: u64, read_percent: u32) -> u64 {
    let p = u64::from(read_percent.min(100));
    ops / 100 * p + (ops % 100).min(p)
}

/// Gets `key` into `buf`; when found, counts it in `found` and its key + value bytes in
/// `bytes`.
#[inline]
pub(super) fn lookup(
    engine: &dyn KvEngine,
    key: &[u8],
    buf: &mut Vec<u8>,
    found: &mut u64,
    bytes: &mut u64,
) -> EngineResult<()> {
    if engine.get(key, buf)? {
        *found += 1;
        *bytes += (key.len() + buf.len()) as u64;
    }
    Ok(())
}

/// The key number of fillseq's `i`-th write with `streams` interleaved streams over
/// `[0, num)` (`num` a multiple of `streams`): stream `i % streams`, its `i / streams`-th key.
/// One stream is `i` itself.
pub(super) fn stream_key(i: u64, num: u64, streams: u64) -> u64 {
    if streams <= 1 {
        return i;
    }
    let per = num / streams;
    (i % streams) * per + (i / streams) % per
}

/// Writes (or deletes, `delete`) the keys `next_key(0..count)`, one at a time or in batches
/// of `plan.batch`, until `count` or the deadline; returns the key + value bytes written.
#[allow(clippy::too_many_arguments)]
fn write_loop(
    engine: &dyn KvEngine,
    plan: &Plan,
    t: &mut OpTimer<'_>,
    values: &mut Values,
    key: &mut [u8],
    count: u64,
    delete: bool,
    mut next_key: impl FnMut(u64) -> u64,
) -> EngineResult<u64> {
    let per = if delete {
        plan.key_size
    } else {
        plan.key_size + plan.value_size
    } as u64;
    let kind = if delete {
        OpKind::Delete
    } else {
        OpKind::Write
    };
    let mut batch = KvBatch::new();
    let (mut i, mut bytes) = (0u64, 0u64);
    while i < count && t.more() {
        if plan.batch <= 1 {
            encode_key(next_key(i), key);
            if delete {
                engine.delete(key)?;
            } else {
                engine.put(key, values.next(key))?;
            }
            i += 1;
            bytes += per;
            t.done(kind);
        } else {
            batch.clear();
            let n = plan.batch.min(count - i);
            for j in 0..n {
                encode_key(next_key(i + j), key);
                if delete {
                    batch.delete(key);
                } else {
                    batch.put(key, values.next(key));
                }
            }
            engine.write_batch(&batch)?;
            i += n;
            bytes += per * n;
            t.done_n(kind, n);
        }
    }
    Ok(bytes)
}

/// The body of one benchmark thread.
pub(super) fn worker(
    sh: &Shared<'_>,
    thread: usize,
    seed: u64,
    slot: &AtomicU64,
) -> EngineResult<ThreadOut> {
    if sh.bench.is_ycsb() {
        return ycsb_worker(sh, thread, seed, slot);
    }
    let (engine, plan) = (sh.engine, sh.plan);
    let mut key = vec![0u8; plan.key_size];
    let mut keys = KeyGen::new(seed, plan.num);
    let mut values = Values::new(seed, &plan, thread);
    let mut value_buf = Vec::new();
    let write_bytes = (plan.key_size + plan.value_size) as u64;
    let (mut bytes, mut found, mut lookups) = (0u64, 0u64, 0u64);
    let reads = plan.count(plan.reads);
    sh.barrier.wait();
    let mut t = OpTimer::start(slot, &plan);
    match sh.bench {
        Benchmark::Fillseq
        | Benchmark::Fillrandom
        | Benchmark::Overwrite
        | Benchmark::Deleterandom => {
            let n = plan.count(plan.num);
            let delete = sh.bench == Benchmark::Deleterandom;
            let sequential = sh.bench == Benchmark::Fillseq;
            bytes = write_loop(
                engine,
                &plan,
                &mut t,
                &mut values,
                &mut key,
                n,
                delete,
                |i| match sequential {
                    true => stream_key(i, plan.num, plan.streams),
                    false => keys.next_key(),
                },
            )?;
        }
        Benchmark::Readrandom | Benchmark::Readwhilewriting => {
            for _ in 0..reads {
                if !t.more() {
                    break;
                }
                encode_key(keys.next_key(), &mut key);
                lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                t.done(OpKind::Read);
            }
        }
        Benchmark::Multireadrandom => {
            let batch = plan.multiread_batch as usize;
            let mut batch_keys = vec![vec![0u8; plan.key_size]; batch];
            let mut got = Vec::with_capacity(batch);
            let mut done = 0u64;
            while done < reads && t.more() {
                let n = (batch as u64).min(reads - done) as usize;
                for k in &mut batch_keys[..n] {
                    encode_key(keys.next_key(), k);
                }
                let refs: Vec<&[u8]> = batch_keys[..n].iter().map(|k| k.as_slice()).collect();
                engine.multi_get(&refs, &mut got)?;
                for (k, v) in refs.iter().zip(&got) {
                    if let Some(v) = v {
                        found += 1;
                        bytes += (k.len() + v.len()) as u64;
                    }
                }
                done += n as u64;
                t.done_n(OpKind::Multiget, n as u64);
            }
        }
        Benchmark::Readseq => {
            let mut cursor = engine.cursor()?;
            cursor.seek_to_first();
            while t.ops < reads && cursor.valid() && t.more() {
                bytes += (cursor.key().len() + cursor.value().len()) as u64;
                t.done(OpKind::Next);
                cursor.next();
            }
            cursor.status()?;
        }
        Benchmark::Seekrandom | Benchmark::Seekrandomwhilewriting => {
            for _ in 0..reads {
                if !t.more() {
                    break;
                }
                encode_key(keys.next_key(), &mut key);
                // A fresh iterator per seek, as db_bench does without a tailing iterator.
                let (exact, n) = seek_and_step(engine, &key, plan.seek_nexts as usize)?;
                found += u64::from(exact);
                bytes += n;
                t.done(OpKind::Seek);
            }
        }
        Benchmark::Readrandomwriterandom => {
            for i in 0..reads {
                if !t.more() {
                    break;
                }
                encode_key(keys.next_key(), &mut key);
                if rrwr_is_get(i, plan.read_percent) {
                    lookups += 1;
                    lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                    t.done(OpKind::Get);
                } else {
                    engine.put(&key, values.next(&key))?;
                    bytes += write_bytes;
                    t.done(OpKind::Put);
                }
            }
        }
        Benchmark::Updaterandom => {
            // db_bench's updaterandom: a get, then a put of a new value, timed as one.
            for _ in 0..reads {
                if !t.more() {
                    break;
                }
                encode_key(keys.next_key(), &mut key);
                lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                engine.put(&key, values.next(&key))?;
                bytes += write_bytes;
                t.done(OpKind::Rmw);
            }
        }
        Benchmark::Flush => {
            engine.flush()?;
            t.done(OpKind::Flush);
        }
        Benchmark::WaitForCompaction => {
            engine.wait_for_compaction()?;
            t.done(OpKind::Flush);
        }
        Benchmark::Compact => {
            engine.compact()?;
            t.done(OpKind::Flush);
        }
        Benchmark::Stats | Benchmark::Levelstats | Benchmark::Sstables => {
            unreachable!("report benchmarks are printed by run_benchmarks")
        }
        Benchmark::YcsbLoad
        | Benchmark::YcsbA
        | Benchmark::YcsbB
        | Benchmark::YcsbC
        | Benchmark::YcsbD
        | Benchmark::YcsbE
        | Benchmark::YcsbF
        | Benchmark::YcsbRun => unreachable!("handled by ycsb_worker"),
    }
    Ok(t.finish(bytes, found, lookups))
}

/// Seeks a new cursor to `key` and reads up to `steps` entries from there (fewer at the end).
/// Returns whether the cursor landed exactly on `key`, and the key + value bytes read.
pub(super) fn seek_and_step(
    engine: &dyn KvEngine,
    key: &[u8],
    steps: usize,
) -> EngineResult<(bool, u64)> {
    let mut cursor = engine.cursor()?;
    cursor.seek(key);
    let exact = cursor.valid() && cursor.key() == key;
    // db_bench's count: the entry the seek lands on, then each entry a next reaches.
    let mut bytes = 0;
    if cursor.valid() {
        bytes += (cursor.key().len() + cursor.value().len()) as u64;
    }
    for _ in 0..steps {
        if !cursor.valid() {
            break;
        }
        cursor.next();
        if cursor.valid() {
            bytes += (cursor.key().len() + cursor.value().len()) as u64;
        }
    }
    cursor.status()?;
    Ok((exact, bytes))
}
