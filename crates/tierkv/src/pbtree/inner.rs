//! The tree's inner nodes: which leaf holds a key. Two kinds ([`InnerKind`]):
//!
//! * **DRAM** (LAB-DB's L0): an ordered map from each leaf's separator to the leaf, rebuilt
//!   from the leaf chain at open.
//! * **PM** (SLM-DB's global index, "a B+ tree entirely in PM"): immutable inner nodes in the
//!   tree's slab, updated by **copy on write**. A change (a separator added by a leaf split or
//!   removed by an unlink) writes new copies of the nodes on the path from the changed level-1
//!   node up to the root, persists them with one fence, and publishes them by ONE checked
//!   8-byte store: the head leaf's inner-root word. The old path is freed after. A crash leaves
//!   the old root or the new one, each a complete tree; nodes written for a root that was
//!   never published are referenced by nothing and free at the next open.
//!
//! The leaf chain stays the source of truth: the inner nodes are derived from it. Every leaf
//! change is published *before* the inner root that matches it (a split links the new leaf,
//!   then publishes the root that names it; an unlink unlinks, then publishes the root without
//! it), and the new nodes are written *before* the leaf change (so a full pool refuses the
//! change while nothing has changed). A crash between the leaf store and the root store
//! leaves inner nodes that name one leaf more or fewer than the chain: open compares the two
//! and, when they differ, builds the inner nodes again from the chain and publishes them (a
//! read-only open builds a DRAM map instead and writes nothing). Damaged inner nodes (a failed
//! checksum, a wrong level, keys out of order) are corruption, not repaired silently.
//!
//! A PM inner node (`docs/FORMATS.md`, "Persistent B+ tree"), in a slab slot of its own size
//! class:
//!
//! ```text
//! magic "TKVBINNR" u64 | own offset u64 | level u16 (1: children are leaves) | count u16 |
//! body length u32 | masked crc32c(bytes 8..24, body) u32 | zero u32 |
//! body: count x { child offset u64 | key length u32 | key }
//! ```
//!
//! Entry 0's key is the node's lower bound (the empty key along the left edge); keys rise
//! strictly; a child's entry 0 key equals its parent entry's key. A lookup takes, at each
//! level, the last entry whose key is at or below the searched key.

use super::slab::{class_of, slot_bytes, Slab};
use super::{u32_at, u64_at, Pm};
use crate::fs::decode_checked;
use crate::util::crc::{crc32c_two, mask, unmask};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::ops::Bound;

/// Where a tree keeps its inner nodes (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InnerKind {
    /// A DRAM map rebuilt at open.
    Dram,
    /// Copy-on-write nodes in PM, published by the head leaf's inner-root word.
    Pm,
}

const NODE_MAGIC: u64 = u64::from_le_bytes(*b"TKVBINNR");
const NODE_HEADER: usize = 32;
/// A node grows past this many bytes only to hold one entry.
const NODE_MAX: usize = 4096;
/// The first read of a node (the rest is read only when the node is longer).
const NODE_READ: usize = 1024;
/// Children per PM inner node (the default; tests use small ones to grow tall trees).
pub(crate) const FANOUT: usize = 32;
/// Where the head leaf keeps its inner-root word (in the header's unused bytes).
pub(crate) const ROOT_WORD: u64 = 56;

/// A separator and the leaf (or inner node) it leads to.
pub(crate) type Sep = (Vec<u8>, u64);

/// An inner node as read from PM, checked.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) at: u64,
    pub(crate) level: u16,
    pub(crate) entries: Vec<Sep>,
}

fn body_len(entries: &[Sep]) -> usize {
    entries.iter().map(|(k, _)| 12 + k.len()).sum()
}

/// The image of a node at `at`.
fn node_image(at: u64, level: u16, entries: &[Sep]) -> Vec<u8> {
    let body = body_len(entries);
    let mut b = Vec::with_capacity(NODE_HEADER + body);
    b.extend_from_slice(&NODE_MAGIC.to_le_bytes());
    b.extend_from_slice(&at.to_le_bytes());
    b.extend_from_slice(&level.to_le_bytes());
    b.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    b.extend_from_slice(&(body as u32).to_le_bytes());
    b.extend_from_slice(&[0u8; 8]);
    for (k, child) in entries {
        b.extend_from_slice(&child.to_le_bytes());
        b.extend_from_slice(&(k.len() as u32).to_le_bytes());
        b.extend_from_slice(k);
    }
    let crc = mask(node_crc(&b));
    b[24..28].copy_from_slice(&crc.to_le_bytes());
    b
}

fn node_crc(b: &[u8]) -> u32 {
    crc32c_two(&b[8..24], &b[NODE_HEADER..])
}

/// An entry of a node read by [`Pm::load_node`]: its key's offset and length in the node's
/// bytes, and its child.
type RawEntry = (usize, usize, u64);

impl Pm {
    /// Reads the inner node at `at` into `b` and checks it (header, crc, every entry's bounds,
    /// keys rising); fills `ents` with each entry's key range in `b` and child. Returns the
    /// level. Allocates nothing once `b` and `ents` have grown (the lookup path).
    fn load_node(&self, at: u64, b: &mut Vec<u8>, ents: &mut Vec<RawEntry>) -> Result<u16> {
        let size = self.pool.size();
        let bad = |why: &str| self.bad(format!("PM tree inner node at {at}: {why}"));
        if at == 0 || at.checked_add(NODE_HEADER as u64).is_none_or(|e| e > size) {
            return Err(bad("pointer outside the pool"));
        }
        let first = (NODE_READ as u64).min(size - at) as usize;
        b.clear();
        b.resize(first, 0);
        self.pool.read(at, b)?;
        if u64_at(b, 0) != NODE_MAGIC || u64_at(b, 8) != at || u32_at(b, 28) != 0 {
            return Err(bad("bad header"));
        }
        let level = u16::from_le_bytes([b[16], b[17]]);
        let count = usize::from(u16::from_le_bytes([b[18], b[19]]));
        let body = u32_at(b, 20) as usize;
        let total = NODE_HEADER + body;
        if level == 0 || count == 0 || at + total as u64 > size || total > self.max_node() {
            return Err(bad("bad header"));
        }
        if total > first {
            b.resize(total, 0);
            self.pool.read(at + first as u64, &mut b[first..])?;
        }
        b.truncate(total);
        if unmask(u32_at(b, 24)) != crc32c_two(&b[8..24], &b[NODE_HEADER..]) {
            return Err(bad("checksum mismatch"));
        }
        ents.clear();
        let mut o = NODE_HEADER;
        for _ in 0..count {
            if o + 12 > total {
                return Err(bad("entries overrun the node"));
            }
            let child = u64_at(b, o);
            let len = u32_at(b, o + 8) as usize;
            o += 12;
            if o + len > total || child == 0 || child >= size {
                return Err(bad("bad entry"));
            }
            if ents
                .last()
                .is_some_and(|&(ko, kl, _)| b[ko..ko + kl] >= b[o..o + len])
            {
                return Err(bad("keys out of order"));
            }
            ents.push((o, len, child));
            o += len;
        }
        if o != total {
            return Err(bad("entries do not fill the body"));
        }
        Ok(level)
    }

    /// Reads and checks the inner node at `at`.
    pub(crate) fn read_node(&self, at: u64) -> Result<Node> {
        let (mut b, mut ents) = (Vec::new(), Vec::new());
        let level = self.load_node(at, &mut b, &mut ents)?;
        let entries = ents
            .iter()
            .map(|&(o, len, child)| (b[o..o + len].to_vec(), child))
            .collect();
        Ok(Node { at, level, entries })
    }

    /// The largest inner node this pool can hold (one slab slot).
    fn max_node(&self) -> usize {
        let chunk = self.pool.chunk_size();
        slot_bytes(class_of(chunk)).min(chunk) as usize
    }

    /// The published inner root in the head leaf at `head` (`None`: none published).
    pub(crate) fn inner_root(&self, head: u64) -> Result<Option<u64>> {
        let at = head + ROOT_WORD;
        let mut w = [0u8; 8];
        self.pool.read(at, &mut w)?;
        let word = u64::from_le_bytes(w);
        if word == 0 {
            return Ok(None);
        }
        match decode_checked(at, word) {
            Some(root) if root != 0 => Ok(Some(root)),
            _ => Err(self.bad(format!(
                "PM tree head leaf at {head}: inner-root word fails its check"
            ))),
        }
    }
}

/// The PM inner nodes of a tree: the published root and the fanout.
pub(crate) struct PmInner {
    head: u64,
    root: u64,
    fanout: usize,
    /// Nodes reachable from the root, and the bytes of their slab slots.
    nodes: u64,
    bytes: u64,
}

/// A copy-on-write change prepared (written and persisted, not published): the new root, and
/// the nodes written and replaced with their slot bytes.
pub(crate) struct Plan {
    root: u64,
    fresh: Vec<(u64, u64)>,
    stale: Vec<(u64, u64)>,
    /// The PM ranges written, to persist before the root is published.
    ranges: Vec<(u64, u64)>,
}

impl Plan {
    fn new() -> Plan {
        Plan {
            root: 0,
            fresh: Vec::new(),
            stale: Vec::new(),
            ranges: Vec::new(),
        }
    }
}

/// What a walk of the inner nodes finds: the level-1 separators in key order, and every node
/// with the bytes of its slab slot.
pub(crate) type Walked = (Vec<Sep>, Vec<(u64, u64)>);

/// A tree's inner nodes (module docs).
pub(crate) enum Inner {
    Dram(BTreeMap<Vec<u8>, u64>),
    Pm(PmInner),
}

/// Cuts `entries` into nodes of at most `fanout` entries and [`NODE_MAX`] bytes (a node of one
/// entry may be larger), of about equal counts.
fn pieces(entries: Vec<Sep>, fanout: usize) -> Vec<Vec<Sep>> {
    if entries.len() <= 1
        || (entries.len() <= fanout && NODE_HEADER + body_len(&entries) <= NODE_MAX)
    {
        return vec![entries];
    }
    let mut left = entries;
    let right = left.split_off(left.len() / 2);
    let mut out = pieces(left, fanout);
    out.extend(pieces(right, fanout));
    out
}

impl PmInner {
    /// The leaf whose range holds `key`: a descent that reads and checks each node on the way
    /// (as [`PmInner::path`] does) into reused buffers, without copying keys.
    fn leaf_of(&self, pm: &Pm, key: &[u8]) -> Result<u64> {
        let (mut b, mut ents) = (Vec::with_capacity(NODE_READ), Vec::with_capacity(FANOUT));
        let mut low: Vec<u8> = Vec::new();
        let mut parent_level: Option<u16> = None;
        let mut at = self.root;
        for _ in 0..64 {
            let level = pm.load_node(at, &mut b, &mut ents)?;
            let (o, len, _) = ents[0];
            if parent_level.is_some_and(|p| p != level + 1) || b[o..o + len] != low[..] {
                return Err(pm.bad(format!(
                    "PM tree inner node at {at} does not match its parent"
                )));
            }
            let n = ents.partition_point(|&(o, len, _)| &b[o..o + len] <= key);
            let Some(i) = n.checked_sub(1) else {
                return Err(pm.bad(format!(
                    "PM tree inner node at {at}: no entry for the key searched"
                )));
            };
            let (o, len, child) = ents[i];
            if level == 1 {
                return Ok(child);
            }
            low.clear();
            low.extend_from_slice(&b[o..o + len]);
            parent_level = Some(level);
            at = child;
        }
        Err(pm.bad("PM tree inner nodes form a cycle".to_string()))
    }

    /// Descends to level 1: the path (node, index taken) from the root down. `strict`: the
    /// last entry whose key is below `key` (the leaf before a separator), else at or below.
    fn path(&self, pm: &Pm, key: &[u8], strict: bool) -> Result<Vec<(Node, usize)>> {
        let mut path: Vec<(Node, usize)> = Vec::new();
        let mut at = self.root;
        loop {
            let node = pm.read_node(at)?;
            if let Some((parent, i)) = path.last() {
                if node.level + 1 != parent.level || node.entries[0].0 != parent.entries[*i].0 {
                    return Err(pm.bad(format!(
                        "PM tree inner node at {at} does not match its parent at {}",
                        parent.at
                    )));
                }
            } else if !node.entries[0].0.is_empty() {
                return Err(pm.bad(format!("PM tree inner root at {at}: bad lower bound")));
            }
            let n = node.entries.partition_point(|(k, _)| {
                if strict {
                    k.as_slice() < key
                } else {
                    k.as_slice() <= key
                }
            });
            let Some(i) = n.checked_sub(1) else {
                return Err(pm.bad(format!(
                    "PM tree inner node at {at}: no entry for the key searched"
                )));
            };
            let level = node.level;
            at = node.entries[i].1;
            path.push((node, i));
            if level == 1 {
                return Ok(path);
            }
            if path.len() > 64 {
                return Err(pm.bad("PM tree inner nodes form a cycle".to_string()));
            }
        }
    }

    /// Writes `entries` of `level` as new nodes (not persisted); returns their separators.
    fn write_level(
        pm: &Pm,
        slab: &mut Slab,
        plan: &mut Plan,
        level: u16,
        entries: Vec<Sep>,
        fanout: usize,
    ) -> Result<Vec<Sep>> {
        let mut out = Vec::new();
        for piece in pieces(entries, fanout) {
            let len = NODE_HEADER + body_len(&piece);
            if len > pm.max_node() {
                return Err(Error::InvalidArgument(format!(
                    "{}: a PM tree separator of {} bytes does not fit one PM chunk",
                    pm.location,
                    piece[0].0.len()
                )));
            }
            let at = slab.allocate(class_of(len as u64))?;
            plan.fresh.push((at, slot_bytes(class_of(len as u64))));
            pm.pool.write(at, &node_image(at, level, &piece))?;
            plan.ranges.push((at, len as u64));
            out.push((piece[0].0.clone(), at));
        }
        Ok(out)
    }

    /// Writes the path above a level-1 node whose entries became `entries` (a separator added
    /// or removed), up to a new root; persisted, not published.
    fn rewrite(
        &self,
        pm: &Pm,
        slab: &mut Slab,
        path: Vec<(Node, usize)>,
        entries: Vec<Sep>,
    ) -> Result<Plan> {
        let mut plan = Plan::new();
        let r = self.rewrite_into(pm, slab, path, entries, &mut plan);
        let r = r.and_then(|()| pm.persist(&plan.ranges));
        if let Err(e) = r {
            abort(slab, plan);
            return Err(e);
        }
        Ok(plan)
    }

    fn rewrite_into(
        &self,
        pm: &Pm,
        slab: &mut Slab,
        mut path: Vec<(Node, usize)>,
        mut entries: Vec<Sep>,
        plan: &mut Plan,
    ) -> Result<()> {
        while let Some((node, _)) = path.pop() {
            let len = (NODE_HEADER + body_len(&node.entries)) as u64;
            plan.stale.push((node.at, slot_bytes(class_of(len))));
            if path.is_empty() && node.level > 1 && entries.len() == 1 {
                // The root lost all but one child: that child is the root now, and so on down
                // while the new root has one child.
                let mut root = entries[0].1;
                loop {
                    let n = pm.read_node(root)?;
                    if n.level == 1 || n.entries.len() > 1 {
                        break;
                    }
                    let bytes = slot_bytes(class_of((NODE_HEADER + body_len(&n.entries)) as u64));
                    if let Some(i) = plan.fresh.iter().position(|&(at, _)| at == root) {
                        // Written by this plan and never to be published.
                        plan.fresh.swap_remove(i);
                        slab.free(root);
                    } else {
                        plan.stale.push((root, bytes));
                    }
                    root = n.entries[0].1;
                }
                plan.root = root;
                return Ok(());
            }
            let written = if entries.is_empty() {
                Vec::new()
            } else {
                PmInner::write_level(pm, slab, plan, node.level, entries, self.fanout)?
            };
            let Some((parent, i)) = path.last() else {
                // The root split: new roots one level up until one node holds them all.
                let (mut level, mut top) = (node.level, written);
                while top.len() > 1 {
                    level += 1;
                    top = PmInner::write_level(pm, slab, plan, level, top, self.fanout)?;
                }
                plan.root = top[0].1;
                return Ok(());
            };
            let mut up = parent.entries.clone();
            up.splice(*i..=*i, written);
            entries = up;
        }
        unreachable!("a path ends at the root")
    }

    /// Publishes `plan`'s root (one persisted store) and frees the nodes it replaced.
    fn commit(&mut self, pm: &Pm, slab: &mut Slab, plan: Plan) -> Result<()> {
        if let Err(e) = pm.store_persist(self.head + ROOT_WORD, plan.root) {
            abort(slab, plan);
            return Err(e);
        }
        self.root = plan.root;
        for (at, bytes) in plan.stale {
            slab.free(at);
            self.nodes -= 1;
            self.bytes -= bytes;
        }
        for (_, bytes) in plan.fresh {
            self.nodes += 1;
            self.bytes += bytes;
        }
        Ok(())
    }

    /// Writes inner nodes over `leaves` (separator, leaf; in key order, the head first with
    /// the empty key), persisted, and publishes them; returns the nodes written.
    pub(crate) fn build(
        pm: &Pm,
        slab: &mut Slab,
        head: u64,
        fanout: usize,
        leaves: Vec<Sep>,
    ) -> Result<PmInner> {
        let mut inner = PmInner {
            head,
            root: 0,
            fanout,
            nodes: 0,
            bytes: 0,
        };
        let mut plan = Plan::new();
        // Three quarters full, so the next splits do not split every node at once.
        let fill = (fanout * 3 / 4).max(2);
        let mut level = 1;
        let mut seps = leaves;
        let r = loop {
            match PmInner::write_level(pm, slab, &mut plan, level, seps, fill) {
                Ok(written) if written.len() == 1 => {
                    plan.root = written[0].1;
                    break pm.persist(&plan.ranges);
                }
                Ok(written) => seps = written,
                Err(e) => break Err(e),
            }
            level += 1;
        };
        if let Err(e) = r {
            abort(slab, plan);
            return Err(e);
        }
        inner.commit(pm, slab, plan)?;
        Ok(inner)
    }

    /// Walks every node from `root`: the level-1 separators in key order, and every node with
    /// the bytes of its slab slot. A node whose level, lower bound or upper bound does not
    /// match its parent's entry is corruption.
    pub(crate) fn walk(pm: &Pm, root: u64, max_nodes: u64) -> Result<Walked> {
        let mut leaves = Vec::new();
        let mut nodes = Vec::new();
        // (node, its parent's key for it, the next key of the parent's (upper bound), its level)
        type Todo = (u64, Vec<u8>, Option<Vec<u8>>, Option<u16>);
        let mut stack: Vec<Todo> = vec![(root, Vec::new(), None, None)];
        while let Some((at, low, high, level)) = stack.pop() {
            if nodes.len() as u64 > max_nodes {
                return Err(pm.bad("PM tree inner nodes form a cycle".to_string()));
            }
            let node = pm.read_node(at)?;
            let last = &node.entries[node.entries.len() - 1].0;
            if level.is_some_and(|l| l != node.level)
                || node.entries[0].0 != low
                || high.as_ref().is_some_and(|h| last >= h)
            {
                return Err(pm.bad(format!(
                    "PM tree inner node at {at} does not match its parent"
                )));
            }
            let len = (NODE_HEADER + body_len(&node.entries)) as u64;
            nodes.push((at, slot_bytes(class_of(len))));
            if node.level == 1 {
                leaves.extend(node.entries);
            } else {
                let mut high = high;
                for (k, child) in node.entries.into_iter().rev() {
                    stack.push((child, k.clone(), high, Some(node.level - 1)));
                    high = Some(k);
                }
            }
        }
        Ok((leaves, nodes))
    }

    /// The inner nodes a walk at open found under `root`, adopted as the tree's.
    pub(crate) fn adopt(head: u64, root: u64, fanout: usize, nodes: &[(u64, u64)]) -> PmInner {
        PmInner {
            head,
            root,
            fanout,
            nodes: nodes.len() as u64,
            bytes: nodes.iter().map(|&(_, b)| b).sum(),
        }
    }
}

/// Frees what an unpublished plan wrote.
fn abort(slab: &mut Slab, plan: Plan) {
    for (at, _) in plan.fresh {
        slab.free(at);
    }
}

/// The DRAM map's last separator within `upto` (there always is one: the head's, the empty key,
/// is below every other key).
fn floor<'a>(map: &'a BTreeMap<Vec<u8>, u64>, upto: Bound<&[u8]>) -> (&'a Vec<u8>, u64) {
    let (k, &leaf) = map
        .range::<[u8], _>((Bound::Unbounded, upto))
        .next_back()
        .expect("the head leaf's separator, the empty key, is below every other");
    (k, leaf)
}

impl Inner {
    /// The leaf whose range holds `key`.
    pub(crate) fn leaf_of(&self, pm: &Pm, key: &[u8]) -> Result<u64> {
        match self {
            Inner::Dram(map) => Ok(floor(map, Bound::Included(key)).1),
            Inner::Pm(p) => p.leaf_of(pm, key),
        }
    }

    /// The separator and leaf whose range holds `key`.
    pub(crate) fn sep_of(&self, pm: &Pm, key: &[u8]) -> Result<Sep> {
        match self {
            Inner::Dram(map) => {
                let (k, leaf) = floor(map, Bound::Included(key));
                Ok((k.clone(), leaf))
            }
            Inner::Pm(p) => {
                let mut path = p.path(pm, key, false)?;
                let (node, i) = path.pop().expect("a path has a node");
                Ok(node.entries[i].clone())
            }
        }
    }

    /// The leaf before the one whose separator is `sep` (not the empty key).
    pub(crate) fn leaf_before(&self, pm: &Pm, sep: &[u8]) -> Result<u64> {
        match self {
            Inner::Dram(map) => Ok(floor(map, Bound::Excluded(sep)).1),
            Inner::Pm(p) => {
                let path = p.path(pm, sep, true)?;
                let (node, i) = path.last().expect("a path has a node");
                Ok(node.entries[*i].1)
            }
        }
    }

    /// Prepares adding separator `sep` for the new leaf `leaf` (PM: the new path written and
    /// persisted; DRAM: nothing yet).
    pub(crate) fn plan_insert(
        &self,
        pm: &Pm,
        slab: &mut Slab,
        sep: &[u8],
        leaf: u64,
    ) -> Result<Option<Plan>> {
        let Inner::Pm(p) = self else { return Ok(None) };
        let path = p.path(pm, sep, false)?;
        let (node, i) = path.last().expect("a path has a node");
        if node.entries[*i].0 == sep {
            return Err(pm.bad(format!(
                "PM tree inner node at {} already holds the separator of a new leaf",
                node.at
            )));
        }
        let mut entries = node.entries.clone();
        entries.insert(i + 1, (sep.to_vec(), leaf));
        p.rewrite(pm, slab, path, entries).map(Some)
    }

    /// Prepares removing separator `sep` (of a leaf being unlinked).
    pub(crate) fn plan_remove(&self, pm: &Pm, slab: &mut Slab, sep: &[u8]) -> Result<Option<Plan>> {
        let Inner::Pm(p) = self else { return Ok(None) };
        let path = p.path(pm, sep, false)?;
        let (node, i) = path.last().expect("a path has a node");
        if node.entries[*i].0 != sep {
            return Err(pm.bad(format!(
                "PM tree inner node at {} lacks the separator of a linked leaf",
                node.at
            )));
        }
        let mut entries = node.entries.clone();
        entries.remove(*i);
        p.rewrite(pm, slab, path, entries).map(Some)
    }

    /// Publishes a prepared insert of `sep` -> `leaf` (after the leaf change is published).
    pub(crate) fn commit_insert(
        &mut self,
        pm: &Pm,
        slab: &mut Slab,
        plan: Option<Plan>,
        sep: Vec<u8>,
        leaf: u64,
    ) -> Result<()> {
        match (self, plan) {
            (Inner::Dram(map), _) => {
                map.insert(sep, leaf);
                Ok(())
            }
            (Inner::Pm(p), Some(plan)) => p.commit(pm, slab, plan),
            (Inner::Pm(_), None) => unreachable!("a PM change is planned first"),
        }
    }

    /// Publishes a prepared removal of `sep` (after the unlink is published).
    pub(crate) fn commit_remove(
        &mut self,
        pm: &Pm,
        slab: &mut Slab,
        plan: Option<Plan>,
        sep: &[u8],
    ) -> Result<()> {
        match (self, plan) {
            (Inner::Dram(map), _) => {
                map.remove(sep);
                Ok(())
            }
            (Inner::Pm(p), Some(plan)) => p.commit(pm, slab, plan),
            (Inner::Pm(_), None) => unreachable!("a PM change is planned first"),
        }
    }

    /// Gives back what an unpublished plan wrote.
    pub(crate) fn abort(slab: &mut Slab, plan: Option<Plan>) {
        if let Some(plan) = plan {
            abort(slab, plan);
        }
    }

    /// The separators in key order (PM: read from the nodes, every node checked), and the PM
    /// bytes of the nodes' slab slots.
    pub(crate) fn separators(&self, pm: &Pm, max_nodes: u64) -> Result<(Vec<Sep>, u64)> {
        match self {
            Inner::Dram(map) => Ok((map.iter().map(|(k, &v)| (k.clone(), v)).collect(), 0)),
            Inner::Pm(p) => {
                let (seps, nodes) = PmInner::walk(pm, p.root, max_nodes)?;
                let bytes: u64 = nodes.iter().map(|&(_, b)| b).sum();
                if nodes.len() as u64 != p.nodes || bytes != p.bytes {
                    return Err(pm.bad(format!(
                        "PM tree inner nodes: {} nodes of {bytes} bytes reachable, {} of {} counted",
                        nodes.len(),
                        p.nodes,
                        p.bytes
                    )));
                }
                Ok((seps, bytes))
            }
        }
    }

    /// PM inner nodes and the bytes of their slab slots (none for DRAM).
    pub(crate) fn pm_nodes(&self) -> (u64, u64) {
        match self {
            Inner::Dram(_) => (0, 0),
            Inner::Pm(p) => (p.nodes, p.bytes),
        }
    }

    /// DRAM bytes the inner nodes take (PM: none beyond the cached root offset).
    pub(crate) fn dram_bytes(&self) -> u64 {
        match self {
            Inner::Dram(map) => map.keys().map(|k| k.len() as u64 + 32).sum(),
            Inner::Pm(_) => 8,
        }
    }

    /// Which kind these are.
    #[cfg(test)]
    pub(crate) fn kind(&self) -> InnerKind {
        match self {
            Inner::Dram(_) => InnerKind::Dram,
            Inner::Pm(_) => InnerKind::Pm,
        }
    }
}
