//! The body of one thread of a YCSB benchmark: `ycsb-load`'s inserts, then the core workloads'
//! (or a `-P` file's) mix of reads, updates, inserts, scans and read-modify-writes, with YCSB's
//! update semantics.

use super::*;

/// The body of one thread of a YCSB benchmark. `--reads` (`--ops`) is the operation count of
/// all threads together and `--num` the record count, as in YCSB.
pub(super) fn ycsb_worker(
    sh: &Shared<'_>,
    thread: usize,
    seed: u64,
    slot: &AtomicU64,
) -> EngineResult<ThreadOut> {
    let (engine, plan, inserts) = (sh.engine, sh.plan, &sh.state.inserts);
    let mut key = vec![0u8; plan.key_size];
    let mut values = Values::new(seed, &plan, thread);
    let mut value_buf = Vec::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    let write_bytes = (plan.key_size + plan.value_size) as u64;
    let (mut bytes, mut found, mut lookups, mut failed) = (0u64, 0u64, 0u64, 0u64);
    let Some(mix) = plan.mix else {
        // ycsb-load: this thread's share of a seeded permutation of the records (or of the
        // records in key order, for a workload with insertorder=ordered).
        let order = LoadOrder::new(plan.num, plan.seed);
        let range = thread_range(plan.num, plan.threads, thread);
        sh.barrier.wait();
        let mut t = OpTimer::start(slot, &plan);
        for i in range {
            if !t.more() {
                break;
            }
            let record = if plan.ordered_inserts { i } else { order.at(i) };
            encode_key(record, &mut key);
            engine.put(&key, values.next(&key))?;
            bytes += write_bytes;
            t.done(OpKind::Insert);
        }
        return Ok(t.finish(bytes, 0, 0));
    };
    let dist = plan.distribution.unwrap_or(mix.distribution);
    let ops = thread_range(plan.reads, plan.threads, thread);
    // YCSB's allowance for the keys inserted during the run (`expectednewkeys`).
    let expected_new_keys = (plan.reads as f64 * mix.insert * 2.0) as u64;
    let latest_zetan = if dist == RequestDistribution::Latest {
        sh.state.latest_zetan(plan.num)
    } else {
        0.0
    };
    let chooser = OpChooser::new(&mix);
    let mut keys = KeyChooser::new(
        dist,
        plan.num,
        expected_new_keys,
        latest_zetan,
        mix.zipfian_constant,
    );
    let ops = if plan.duration.is_some() {
        0..u64::MAX
    } else {
        ops
    };
    sh.barrier.wait();
    let mut t = OpTimer::start(slot, &plan);
    for _ in ops {
        if !t.more() {
            break;
        }
        match chooser.next(&mut rng) {
            YcsbOp::Read => {
                encode_key(keys.next(&mut rng, inserts), &mut key);
                lookups += 1;
                lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                t.done(OpKind::Read);
            }
            YcsbOp::Update => {
                encode_key(keys.next(&mut rng, inserts), &mut key);
                let new = values.next(&key);
                if update(engine, &plan, &key, new, &mut rng, &mut value_buf)? {
                    bytes += write_bytes;
                } else {
                    failed += 1;
                }
                t.done(OpKind::Update);
            }
            YcsbOp::Insert => {
                let k = inserts.reserve();
                encode_key(k, &mut key);
                engine.put(&key, values.next(&key))?;
                inserts.acknowledge(k);
                bytes += write_bytes;
                t.done(OpKind::Insert);
            }
            YcsbOp::Scan => {
                encode_key(keys.next(&mut rng, inserts), &mut key);
                let len = 1 + next_below(&mut rng, mix.max_scan_length);
                bytes += seek_and_step(engine, &key, len as usize)?.1;
                t.done(OpKind::Scan);
            }
            YcsbOp::ReadModifyWrite => {
                encode_key(keys.next(&mut rng, inserts), &mut key);
                lookups += 1;
                lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                let new = values.next(&key);
                if update(engine, &plan, &key, new, &mut rng, &mut value_buf)? {
                    bytes += write_bytes;
                } else {
                    failed += 1;
                }
                t.done(OpKind::Rmw);
            }
        }
    }
    inserts.advance();
    let mut out = t.finish(bytes, found, lookups);
    out.failed = failed;
    Ok(out)
}

/// One YCSB update of `key` as `plan.update` says (module `ycsb`): merged, it reads the record
/// into `buf`, and a missing one is a failed operation (returns false, writes nothing); then
/// `new`'s bytes replace one field chosen uniformly (every field under writeallfields) and the
/// record is put back. Blind, it puts `new`. Returns true when it wrote.
fn update(
    engine: &dyn KvEngine,
    plan: &Plan,
    key: &[u8],
    new: &[u8],
    rng: &mut SmallRng,
    buf: &mut Vec<u8>,
) -> EngineResult<bool> {
    if plan.update == UpdateMode::Blind {
        engine.put(key, new)?;
        return Ok(true);
    }
    if !engine.get(key, buf)? {
        return Ok(false);
    }
    let (fields, all) = plan.fields;
    let field = next_below(rng, fields.max(1));
    merge_update(buf, new, fields, field, all);
    engine.put(key, buf)?;
    Ok(true)
}
