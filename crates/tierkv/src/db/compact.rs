//! The compaction executor: merges a plan's input tables into new tables of the output level.
//!
//! Rules for dropping entries (LevelDB's): an entry is dropped when a newer entry of the same
//! user key exists that every live snapshot can see (it is shadowed for every reader), and a
//! tombstone is dropped when every snapshot can see it and no deeper level may hold the key
//! (nothing is left for it to hide). Output files are cut at `target_file_size`, only between
//! different user keys, so each user key lives in one file per level.

use super::DbInner;
use crate::compaction::CompactionPlan;
use crate::format::{parse_internal_key, ValueType};
use crate::iterator::InternalIterator;
use crate::sst::TableBuilder;
use crate::stats::IoPurpose;
use crate::tier::Tier;
use crate::version::{table_file_name, FileMetaData, Version};
use crate::{Error, Result};
use std::sync::Arc;

impl DbInner {
    /// Merges the inputs of `plan`, appending each finished output's metadata to `outputs`
    /// (whose numbers are registered as pending outputs).
    pub(crate) fn merge_inputs(
        &self,
        plan: &CompactionPlan,
        outputs: &mut Vec<FileMetaData>,
    ) -> Result<()> {
        let version = self.state.lock().versions.current();
        let smallest_snapshot = self.smallest_snapshot();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for f in plan.inputs.iter().chain(plan.next_inputs.iter()) {
            let t = self.table_cache.get(f, crate::stats::Part::Stage(0))?;
            children.push(Box::new(t.iter(IoPurpose::Compaction, false)));
        }
        let mut input = super::MergingIterator::new(children);
        input.seek_to_first();
        let mut builder: Option<(TableBuilder, u64)> = None;
        let mut current_key: Option<Vec<u8>> = None;
        let mut last_seq_for_key = u64::MAX;
        let target = self.options.compaction.target_file_size;
        while input.valid() {
            let ikey = input.key();
            let p = parse_internal_key(ikey)
                .ok_or_else(|| Error::corruption("compaction input", "malformed internal key"))?;
            let new_user_key = current_key.as_deref() != Some(p.user_key);
            if new_user_key {
                current_key = Some(p.user_key.to_vec());
                last_seq_for_key = u64::MAX;
            }
            let drop = if last_seq_for_key <= smallest_snapshot {
                true
            } else {
                p.value_type == ValueType::Deletion
                    && p.sequence <= smallest_snapshot
                    && is_base_level_for_key(&version, plan.output_level(), p.user_key)
            };
            last_seq_for_key = p.sequence;
            if !drop {
                if new_user_key {
                    if let Some((b, _)) = &builder {
                        if b.file_size_estimate() >= target {
                            let (b, number) = builder.take().expect("open builder");
                            outputs.push(finish(b, number)?);
                        }
                    }
                }
                if builder.is_none() {
                    let number = {
                        let mut state = self.state.lock();
                        let n = state.versions.new_file_number();
                        state.pending_outputs.insert(n);
                        n
                    };
                    let path = table_file_name(&self.dir, number);
                    let file = self.fs.create(&path).inspect_err(|_| {
                        self.state.lock().pending_outputs.remove(&number);
                    })?;
                    builder = Some((TableBuilder::new(&self.options.table, file, path), number));
                }
                let (b, _) = builder.as_mut().expect("open builder");
                b.add(ikey, input.value())?;
            }
            input.next();
        }
        input.status()?;
        if let Some((b, number)) = builder.take() {
            outputs.push(finish(b, number)?);
        }
        self.fs.sync_dir(&self.dir)?;
        Ok(())
    }
}

fn finish(builder: TableBuilder, number: u64) -> Result<FileMetaData> {
    let s = builder.finish()?;
    Ok(FileMetaData {
        number,
        file_size: s.file_size,
        num_entries: s.num_entries,
        smallest: s.smallest,
        largest: s.largest,
        tier: Tier::Ssd,
    })
}

/// True if no level deeper than `output_level` may contain `user_key`.
fn is_base_level_for_key(version: &Arc<Version>, output_level: usize, user_key: &[u8]) -> bool {
    (output_level + 1..version.levels.len()).all(|l| version.file_for_key(l, user_key).is_none())
}
