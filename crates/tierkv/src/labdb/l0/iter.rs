//! Reading a tree in order: the iterator over a tree's leaves with their values read from the
//! value arrays, and what a read charged to the statistics.

use super::*;

/// Where an iterator's value-record reads are counted: the database's counters, the part and
/// the purpose (SSD bytes).
#[derive(Clone)]
pub(crate) struct Charge {
    /// The counters.
    pub counters: Arc<crate::stats::Counters>,
    /// The stage read.
    pub part: crate::stats::Part,
    /// Why.
    pub purpose: crate::stats::IoPurpose,
}

/// An iterator over one tree (optionally a key range of it): per key, the tree's version and
/// its held versions, each read from its value array, in internal-key order. One leaf is read
/// at a time, continuing after the last key returned.
pub(crate) struct TreeIter {
    pub(super) l0: Arc<LabL0>,
    pub(super) number: u64,
    pub(super) tree: Arc<PbTree>,
    pub(super) range: Option<(Vec<u8>, Vec<u8>)>,
    /// The current leaf's versions: internal key, value.
    pub(super) buf: Vec<(Vec<u8>, Vec<u8>)>,
    pub(super) pos: usize,
    /// The last user key of the leaf in `buf` (the next fill continues after it).
    pub(super) last: Option<Vec<u8>>,
    pub(super) done: bool,
    pub(super) err: Option<Error>,
    pub(super) charge: Charge,
    /// Entries the next fill gathers at least (whole leaves): a user iterator starts at one
    /// leaf after each seek and doubles per fill up to [`FILL_BATCH`] (a short scan reads
    /// little ahead); a chunk's iterator reads [`FILL_BATCH`] at a time.
    pub(super) batch: usize,
}

impl TreeIter {
    pub(super) fn new(
        l0: Arc<LabL0>,
        number: u64,
        tree: Arc<PbTree>,
        range: Option<(Vec<u8>, Vec<u8>)>,
        charge: Charge,
    ) -> Self {
        TreeIter {
            l0,
            number,
            tree,
            range,
            charge,
            buf: Vec::new(),
            pos: 0,
            last: None,
            done: true,
            err: None,
            batch: 0,
        }
    }

    /// Positions at the first entry from `from` (a seek): the read-ahead starts small again.
    pub(super) fn seek_fill(&mut self, from: Bound<Vec<u8>>) {
        self.batch = if self.range.is_some() { FILL_BATCH } else { 1 };
        self.fill(from);
    }

    /// Fills `buf` from the first leaf with keys after `from` (within the range).
    pub(super) fn fill(&mut self, from: Bound<Vec<u8>>) {
        self.buf.clear();
        self.pos = 0;
        self.done = true;
        // One read ([`Reads`]): what the tree entries and held versions name is not released
        // before the fill has read it.
        let l0 = Arc::clone(&self.l0);
        let _read = l0.begin_read();
        if let Err(e) = self.try_fill(from) {
            self.err.get_or_insert(e);
            self.buf.clear();
            self.done = true;
        }
    }

    pub(super) fn try_fill(&mut self, mut from: Bound<Vec<u8>>) -> Result<()> {
        if let (Some((lo, _)), Bound::Unbounded) = (&self.range, &from) {
            from = Bound::Included(lo.clone());
        }
        if let (Some((lo, _)), Bound::Included(k) | Bound::Excluded(k)) = (&self.range, &from) {
            if k < lo {
                from = Bound::Included(lo.clone());
            }
        }
        let values = Arc::clone(&self.l0.att()?.values);
        loop {
            // Whole leaves until `batch` entries (or the range's end): their records are read
            // as one batch, in parallel.
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let mut end_of_range = false;
            loop {
                let leaf = match &from {
                    Bound::Included(k) => self.tree.entries_after(Bound::Included(k))?,
                    Bound::Excluded(k) => self.tree.entries_after(Bound::Excluded(k))?,
                    Bound::Unbounded => self.tree.entries_after(Bound::Unbounded)?,
                };
                let Some(last) = leaf.last() else {
                    end_of_range = true;
                    break;
                };
                self.last = Some(last.0.clone());
                from = Bound::Excluded(last.0.clone());
                for (key, payload) in leaf {
                    if self.range.as_ref().is_some_and(|(_, hi)| &key > hi) {
                        end_of_range = true;
                        break;
                    }
                    entries.push((key, payload));
                }
                if end_of_range || entries.len() >= self.batch {
                    break;
                }
            }
            if entries.is_empty() {
                return Ok(());
            }
            let held = self.l0.held.lock().clone_range(
                &entries[0].0,
                &entries[entries.len() - 1].0,
                self.number,
            );
            // Per key: its tree version, then its held versions. Value records are read as
            // one batch; a hot slot yields every version of the key it holds.
            let att = self.l0.att()?;
            let mut reqs: Vec<(u64, &[u8])> = Vec::with_capacity(entries.len());
            let mut per_key: Vec<Vec<u64>> = Vec::with_capacity(entries.len());
            for (key, payload) in &entries {
                let mut words = vec![word_of(payload)?];
                words.extend(held.get(key).map_or(&[][..], Vec::as_slice));
                for &w in &words {
                    if matches!(Vaddr::decode(w, &att.location)?, Vaddr::Value { .. }) {
                        reqs.push((w, key.as_slice()));
                    }
                }
                per_key.push(words);
            }
            self.batch = (self.batch.max(16) * 2).min(FILL_BATCH);
            let records = values.read_many(&reqs)?;
            let read: u64 = records.iter().map(|v| v.device_bytes()).sum();
            self.charge
                .counters
                .add_read(Tier::Ssd, self.charge.part, self.charge.purpose, read);
            let mut records = records.into_iter();
            for ((key, _), words) in entries.iter().zip(per_key) {
                let mut versions: Vec<ValueRecord> = Vec::with_capacity(words.len());
                for w in words {
                    match Vaddr::decode(w, &att.location)? {
                        Vaddr::Value { .. } => versions.extend(records.next()),
                        Vaddr::Hot { slot, half, tag } => {
                            versions.push(att.hot()?.read(slot, half, tag, key)?)
                        }
                    }
                }
                versions.sort_by_key(|v| std::cmp::Reverse(v.seq));
                versions.dedup_by(|a, b| a.seq == b.seq);
                for v in versions {
                    self.buf
                        .push((make_internal_key(key, v.seq, v.vtype), v.value));
                }
            }
            if !self.buf.is_empty() {
                self.done = false;
                return Ok(());
            }
            if end_of_range {
                return Ok(());
            }
        }
    }
}

/// Entries a [`TreeIter`] fill gathers (whole leaves) before it reads their value records as
/// one batch.
pub(crate) const FILL_BATCH: usize = 128;

pub(crate) trait HeldRange {
    fn clone_range(&self, lo: &[u8], hi: &[u8], tree: u64) -> HashMap<Vec<u8>, Vec<u64>>;
}

impl InternalIterator for TreeIter {
    fn valid(&self) -> bool {
        !self.done && self.pos < self.buf.len()
    }

    fn seek_to_first(&mut self) {
        self.seek_fill(Bound::Unbounded);
    }

    fn seek(&mut self, target: &[u8]) {
        let Some(p) = parse_internal_key(target) else {
            self.err.get_or_insert(Error::corruption(
                "LAB-DB tree iterator",
                "malformed seek key",
            ));
            self.done = true;
            return;
        };
        self.seek_fill(Bound::Included(p.user_key.to_vec()));
        while self.valid() && crate::format::compare_internal(&self.buf[self.pos].0, target).is_lt()
        {
            self.pos += 1;
        }
        if !self.done && self.pos == self.buf.len() {
            self.advance_leaf();
        }
    }

    fn next(&mut self) {
        self.pos += 1;
        if self.pos >= self.buf.len() {
            self.advance_leaf();
        }
    }

    fn key(&self) -> &[u8] {
        &self.buf[self.pos].0
    }

    fn value(&self) -> &[u8] {
        &self.buf[self.pos].1
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}

impl TreeIter {
    pub(super) fn advance_leaf(&mut self) {
        match self.last.clone() {
            Some(last) => {
                if let Some((_, hi)) = &self.range {
                    if &last >= hi {
                        self.buf.clear();
                        self.done = true;
                        return;
                    }
                }
                self.fill(Bound::Excluded(last));
            }
            None => self.done = true,
        }
    }
}
