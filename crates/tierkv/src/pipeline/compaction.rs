//! A stage's part in a compaction of its runs ([`CompactionRule`]): the engine's executor
//! merges the task's input runs, drops what the snapshot rules say, cuts the output and
//! installs it; the stage that owns the inputs says what it reads besides them, how it reads
//! an input it does not read whole, which entries survive where it decides, and what it
//! records around the install (a global index's pointers, a tree chunk's removal).
//!
//! The engine asks the stage for a rule once per task ([`crate::pipeline::Stage::compaction_rule`])
//! before the merge; a task of a stage with nothing of its own gets [`PlainRule`].

use crate::iterator::InternalIterator;
use crate::runs::TableCache;
use crate::sst::format::BlockHandle;
use crate::stats::{Counters, Part};
use crate::version::{FileMetaData, Version};
use crate::Result;
use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Weak};

/// What a rule is given of the engine while the merge runs.
pub(crate) struct RuleContext<'a> {
    /// Opens the input runs.
    pub tables: &'a Arc<TableCache>,
    /// The database's counters (compaction bytes are charged to `part`).
    pub counters: &'a Arc<Counters>,
    /// The compacted stage, for the counters.
    pub part: Part,
}

/// An output's entries with their data blocks ([`CompactionRule::output_finished`]): each
/// entry's internal key with the ordinal of its data block, and the blocks' handles.
pub(crate) type OutputBlocks<'a> = (Vec<(Vec<u8>, usize)>, &'a [BlockHandle]);

/// A stage's part in one compaction (module docs). Every method has the plain merge's answer
/// as its default.
pub(crate) trait CompactionRule: Send + Sync {
    /// True when the merge is the engine's plain one, which it may then split into key-range
    /// partitions, copy separated values of as stored, and keep untouched runs of in place.
    /// False for a rule that reads more than the runs, reads a run partly, or decides what
    /// survives.
    fn plain(&self) -> bool {
        true
    }

    /// Inputs the stage adds to the task's runs, read before them (their versions are newer).
    fn extra_inputs(&self, cx: &RuleContext<'_>) -> Result<Vec<Box<dyn InternalIterator>>> {
        let _ = cx;
        Ok(Vec::new())
    }

    /// The iterator the merge reads input run `run` through, when the stage reads it otherwise
    /// than whole (a row: only its live entries in the task's range); `None`: the run whole.
    fn input(
        &self,
        cx: &RuleContext<'_>,
        run: &Arc<FileMetaData>,
    ) -> Result<Option<Box<dyn InternalIterator>>> {
        let _ = (cx, run);
        Ok(None)
    }

    /// Whether the version `(user_key, sequence)` read from input run `run` survives, when the
    /// stage decides it (SLM-DB's selective compaction keeps exactly what its global index
    /// points at); `None`: the engine's snapshot rules decide.
    fn survives(&self, run: u64, user_key: &[u8], sequence: u64) -> Result<Option<bool>> {
        let _ = (run, user_key, sequence);
        Ok(None)
    }

    /// True if the merge records each output entry's data block for
    /// [`CompactionRule::output_finished`]; such outputs keep their values inline (no value
    /// separation: what points into a data block must find the value there).
    fn records_blocks(&self) -> bool {
        false
    }

    /// An output run is finished (written and synced, its directory not yet): its metadata,
    /// its file's path, and, when [`CompactionRule::records_blocks`], each entry's internal
    /// key with the ordinal of its data block and the blocks' handles.
    fn output_finished(
        &self,
        meta: &FileMetaData,
        path: &Path,
        blocks: Option<OutputBlocks<'_>>,
    ) -> Result<()> {
        let _ = (meta, path, blocks);
        Ok(())
    }

    /// The outputs finished so far are discarded: the job runs again.
    fn discard_outputs(&self) {}

    /// After every output is durable and before the manifest record that installs them, given
    /// the task's input run numbers: what the stage records of the outputs first (a global
    /// index moves its pointers to them; from then on the outputs are never removed on a
    /// failure, which poisons the database instead). Returns the bytes it wrote, counted as
    /// the compaction's.
    fn before_install(&self, cx: &RuleContext<'_>, inputs: &HashSet<u64>) -> Result<u64> {
        let _ = (cx, inputs);
        Ok(0)
    }

    /// Under the state lock, once the manifest record is written and its version current:
    /// `gone`, the input runs the version no longer names, and `live`, the versions a reader
    /// may still hold (those from before the record).
    fn installed(&self, gone: &[u64], live: &[Weak<Version>]) {
        let _ = (gone, live);
    }
}

/// The rule of a stage with nothing of its own in a compaction: every default.
pub(crate) struct PlainRule;

impl CompactionRule for PlainRule {}
