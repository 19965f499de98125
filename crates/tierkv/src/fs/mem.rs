//! An in-memory [`FileSystem`] for tests: crash images, crash points and fault injection.
//!
//! Purpose: crash tests and fault-injection tests of the engine run against [`MemFs`] instead of
//! the real disk. A test keeps a (cheap, `Clone`) handle to the same file system the database
//! holds as `Arc<dyn FileSystem>`, and can at any instant compute what a crash would leave behind
//! ([`MemFs::crash`]), stop the "process" at the n-th mutating operation
//! ([`MemFs::freeze_after`]), make chosen operations fail ([`MemFs::inject`]), or damage files
//! ([`MemFs::corrupt_byte`], [`MemFs::truncate`], [`MemFs::set_file_data`]).
//!
//! Semantics follow POSIX where the engine can observe them: paths are full paths compared by
//! component (`/db/x` and `/db//x` are the same path); a file's parent directory must exist
//! (see [`FileSystem::create_dir_all`]; the root `/` and the empty path, parent of a relative
//! name, always exist); `create` makes a new
//! inode under the name (replacing an old one); `rename` replaces its target atomically; a
//! [`RandomAccessFile`] or [`WritableFile`] keeps using its inode after the name is removed or
//! renamed, like an open file descriptor; `lock` is exclusive within one `MemFs` until the guard
//! drops.
//!
//! Crash model (inode based):
//! * Appends go straight to the inode's data; there is no user-space buffer, so `flush` does
//!   nothing (beyond counting and fault injection) and a *process* crash loses nothing appended.
//! * Each inode has a synced length; `sync` makes everything appended so far durable.
//! * Every directory keeps its durable entry map plus an ordered log of the metadata operations
//!   (create, remove, rename) made since its last `sync_dir`; `sync_dir` makes them durable. A
//!   rename between two directories appears in both logs; whenever one half becomes durable (or
//!   is kept by a crash image) so does the other, together with the operations logged before it,
//!   so a rename is never half applied.
//! * Directories themselves are durable as soon as `create_dir_all` returns, and are never
//!   removed.
//! * [`MemFs::crash`] builds a new, independent `MemFs` from the state at the crash instant, per
//!   [`CrashMode`]. Everything in the new file system counts as synced and durable.
//!
//! Thread-safety: all state sits behind one mutex (plus one per inode for its bytes, always taken
//! after the state mutex or alone), so a `MemFs` and its files may be used from any thread.
//! Mutating operations are serialised, which gives crash points a well-defined order.

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::{Error, Result};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A kind of file-system operation, for fault injection ([`FaultSpec::op`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FsOp {
    /// [`FileSystem::create`].
    Create,
    /// [`WritableFile::append`].
    Append,
    /// [`WritableFile::flush`].
    Flush,
    /// [`WritableFile::sync`].
    Sync,
    /// [`RandomAccessFile::read_exact_at`] (and so [`FileSystem::read_all`]).
    Read,
    /// [`FileSystem::open_readable`] (and so [`FileSystem::read_all`]).
    Open,
    /// [`FileSystem::remove`].
    Remove,
    /// [`FileSystem::rename`]; the path filter matches the source or the target.
    Rename,
    /// [`FileSystem::sync_dir`].
    SyncDir,
    /// [`FileSystem::list`].
    List,
    /// [`FileSystem::lock`].
    Lock,
}

impl FsOp {
    /// The operation name used in [`Error::Io`].
    fn name(self) -> &'static str {
        match self {
            FsOp::Create => "create",
            FsOp::Append => "append",
            FsOp::Flush => "flush",
            FsOp::Sync => "sync",
            FsOp::Read => "read",
            FsOp::Open => "open",
            FsOp::Remove => "remove",
            FsOp::Rename => "rename",
            FsOp::SyncDir => "sync dir",
            FsOp::List => "list",
            FsOp::Lock => "lock",
        }
    }
}

/// Which operations an injected fault hits: of the operations of kind `op` whose path contains
/// `path_contains` (if given), the first `skip` succeed, then the next `count` fail (`None`:
/// every later one fails).
///
/// A failing operation returns `Error::Io` with kind [`ErrorKind::Other`] and message
/// `"injected fault"`, and is not applied (a failed append appends nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    /// The kind of operation to fail.
    pub op: FsOp,
    /// Only operations whose path (as displayed) contains this string match.
    pub path_contains: Option<String>,
    /// How many matching operations succeed before the first failure.
    pub skip: u64,
    /// How many matching operations fail after the skipped ones; `None` means all of them.
    pub count: Option<u64>,
}

impl FaultSpec {
    /// A fault failing every operation of kind `op`, on any path, from now on.
    pub fn new(op: FsOp) -> Self {
        FaultSpec {
            op,
            path_contains: None,
            skip: 0,
            count: None,
        }
    }
}

/// What survives a simulated crash ([`MemFs::crash`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Power failure, worst case: only directory entries made durable by `sync_dir`, each file
    /// holding only its synced prefix.
    SyncedOnly,
    /// Process crash: every directory entry and every appended byte survives.
    ProcessCrash,
    /// Power failure, somewhere in between, deterministic from the seed: each directory keeps a
    /// random prefix of its pending metadata operations, each file its synced prefix plus a
    /// random prefix of its unsynced tail.
    Random(u64),
}

// ---------------------------------------------------------------------------------------------
// State.

/// A file's contents, shared by its directory entries and open handles.
struct Inode {
    id: u64,
    data: Mutex<InodeData>,
}

struct InodeData {
    bytes: Vec<u8>,
    /// Length of the durable prefix of `bytes`.
    synced: usize,
}

type InodeRef = Arc<Inode>;

fn new_inode(id: u64, bytes: Vec<u8>, synced: usize) -> InodeRef {
    Arc::new(Inode {
        id,
        data: Mutex::new(InodeData { bytes, synced }),
    })
}

/// A pending (not yet `sync_dir`ed) metadata operation of one directory.
#[derive(Clone)]
enum MetaOp {
    /// `name` now refers to `inode` (create, or the target half of a cross-directory rename).
    Link {
        name: String,
        inode: InodeRef,
        /// For a cross-directory rename: the other directory and the rename's sequence number.
        partner: Option<(PathBuf, u64)>,
    },
    /// `name` is gone (remove, or the source half of a cross-directory rename).
    Unlink {
        name: String,
        partner: Option<(PathBuf, u64)>,
    },
    /// Same-directory rename of `from` (holding `inode`) to `to`.
    Rename {
        from: String,
        to: String,
        inode: InodeRef,
    },
}

impl MetaOp {
    fn apply(&self, entries: &mut BTreeMap<String, InodeRef>) {
        match self {
            MetaOp::Link { name, inode, .. } => {
                entries.insert(name.clone(), inode.clone());
            }
            MetaOp::Unlink { name, .. } => {
                entries.remove(name);
            }
            MetaOp::Rename { from, to, inode } => {
                entries.remove(from);
                entries.insert(to.clone(), inode.clone());
            }
        }
    }

    fn partner(&self) -> Option<&(PathBuf, u64)> {
        match self {
            MetaOp::Link { partner, .. } | MetaOp::Unlink { partner, .. } => partner.as_ref(),
            MetaOp::Rename { .. } => None,
        }
    }

    /// True if this is a half of the cross-directory rename `seq`.
    fn is_half_of(&self, seq: u64) -> bool {
        matches!(self.partner(), Some((_, s)) if *s == seq)
    }

    fn map_inodes(&self, map: &mut impl FnMut(&InodeRef) -> InodeRef) -> MetaOp {
        match self {
            MetaOp::Link {
                name,
                inode,
                partner,
            } => MetaOp::Link {
                name: name.clone(),
                inode: map(inode),
                partner: partner.clone(),
            },
            MetaOp::Unlink { .. } => self.clone(),
            MetaOp::Rename { from, to, inode } => MetaOp::Rename {
                from: from.clone(),
                to: to.clone(),
                inode: map(inode),
            },
        }
    }
}

#[derive(Default)]
struct Dir {
    /// The entries visible now.
    entries: BTreeMap<String, InodeRef>,
    /// The entries as of the last `sync_dir`.
    durable: BTreeMap<String, InodeRef>,
    /// Metadata operations since the last `sync_dir`, oldest first.
    pending: Vec<MetaOp>,
}

/// The contents of a file system: its directories (by full path) and, through them, its files.
#[derive(Default)]
struct Tree {
    dirs: BTreeMap<PathBuf, Dir>,
}

impl Tree {
    fn with_roots() -> Tree {
        let mut tree = Tree::default();
        tree.dirs.insert(PathBuf::from("/"), Dir::default());
        tree.dirs.insert(PathBuf::new(), Dir::default());
        tree
    }

    /// The visible inode at `path`.
    fn file(&self, path: &Path) -> Option<&InodeRef> {
        let (dir, name) = split(path)?;
        self.dirs.get(dir)?.entries.get(name)
    }

    /// A deep copy: new inodes with the same ids, shared exactly as in `self`.
    fn deep_clone(&self) -> Tree {
        let mut copies: BTreeMap<u64, InodeRef> = BTreeMap::new();
        let mut map = |inode: &InodeRef| -> InodeRef {
            copies
                .entry(inode.id)
                .or_insert_with(|| {
                    let d = inode.data.lock();
                    new_inode(inode.id, d.bytes.clone(), d.synced)
                })
                .clone()
        };
        let mut dirs = BTreeMap::new();
        for (path, dir) in &self.dirs {
            let mut copy = |m: &BTreeMap<String, InodeRef>| -> BTreeMap<String, InodeRef> {
                m.iter().map(|(n, i)| (n.clone(), map(i))).collect()
            };
            let entries = copy(&dir.entries);
            let durable = copy(&dir.durable);
            let pending = dir
                .pending
                .iter()
                .map(|op| op.map_inodes(&mut map))
                .collect();
            dirs.insert(
                path.clone(),
                Dir {
                    entries,
                    durable,
                    pending,
                },
            );
        }
        Tree { dirs }
    }

    /// Index of the half of cross-directory rename `seq` in `dir`'s pending log.
    fn find_half(&self, dir: &Path, seq: u64) -> Option<usize> {
        self.dirs
            .get(dir)?
            .pending
            .iter()
            .position(|op| op.is_half_of(seq))
    }

    /// Makes the first `upto` pending operations of `dir` durable, together with the other half
    /// of every cross-directory rename among them (and what precedes that half in its log).
    fn commit(&mut self, dir: &Path, upto: usize) {
        let Some(d) = self.dirs.get_mut(dir) else {
            return;
        };
        let upto = upto.min(d.pending.len());
        let ops: Vec<MetaOp> = d.pending.drain(..upto).collect();
        for op in &ops {
            op.apply(&mut d.durable);
        }
        for op in &ops {
            if let Some((other, seq)) = op.partner() {
                if let Some(j) = self.find_half(other, *seq) {
                    self.commit(other, j + 1);
                }
            }
        }
    }

    /// Extends the per-directory prefix lengths `keep` so that no cross-directory rename is
    /// half kept.
    fn close_prefixes(&self, keep: &mut BTreeMap<PathBuf, usize>) {
        let mut work: Vec<PathBuf> = keep.keys().cloned().collect();
        let mut scanned: BTreeMap<PathBuf, usize> = BTreeMap::new();
        while let Some(dir) = work.pop() {
            let n = keep[&dir];
            let from = scanned.get(&dir).copied().unwrap_or(0);
            if from >= n {
                continue;
            }
            scanned.insert(dir.clone(), n);
            for op in &self.dirs[&dir].pending[from..n] {
                if let Some((other, seq)) = op.partner() {
                    if let Some(j) = self.find_half(other, *seq) {
                        let k = keep.get_mut(other).expect("partner directory exists");
                        if *k < j + 1 {
                            *k = j + 1;
                            work.push(other.clone());
                        }
                    }
                }
            }
        }
    }

    /// The tree a crash at this instant leaves behind.
    fn crash_image(&self, mode: CrashMode) -> Tree {
        let mut rng = match mode {
            CrashMode::Random(seed) => Some(SmallRng::seed_from_u64(seed)),
            _ => None,
        };
        // Which directory entries survive.
        let mut keep: BTreeMap<PathBuf, usize> = BTreeMap::new();
        for (path, dir) in &self.dirs {
            let n = match (mode, rng.as_mut()) {
                (CrashMode::SyncedOnly, _) => 0,
                (CrashMode::ProcessCrash, _) => dir.pending.len(),
                (CrashMode::Random(_), Some(rng)) => rng.gen_range(0..=dir.pending.len()),
                (CrashMode::Random(_), None) => unreachable!("random mode has an rng"),
            };
            keep.insert(path.clone(), n);
        }
        self.close_prefixes(&mut keep);
        let mut image_entries: BTreeMap<PathBuf, BTreeMap<String, InodeRef>> = BTreeMap::new();
        for (path, dir) in &self.dirs {
            let mut entries = dir.durable.clone();
            for op in &dir.pending[..keep[path]] {
                op.apply(&mut entries);
            }
            if mode == CrashMode::ProcessCrash {
                debug_assert!(
                    entries.len() == dir.entries.len()
                        && entries
                            .iter()
                            .zip(&dir.entries)
                            .all(|((a, x), (b, y))| a == b && x.id == y.id),
                    "replaying the pending log of {} must give its visible entries",
                    path.display()
                );
            }
            image_entries.insert(path.clone(), entries);
        }
        // Which bytes of each surviving file survive.
        let mut inodes: BTreeMap<u64, InodeRef> = BTreeMap::new();
        for entries in image_entries.values() {
            for inode in entries.values() {
                inodes.insert(inode.id, inode.clone());
            }
        }
        let mut copies: BTreeMap<u64, InodeRef> = BTreeMap::new();
        for (id, inode) in inodes {
            let d = inode.data.lock();
            let len = match (mode, rng.as_mut()) {
                (CrashMode::SyncedOnly, _) => d.synced,
                (CrashMode::ProcessCrash, _) => d.bytes.len(),
                (CrashMode::Random(_), Some(rng)) => rng.gen_range(d.synced..=d.bytes.len()),
                (CrashMode::Random(_), None) => unreachable!("random mode has an rng"),
            };
            copies.insert(id, new_inode(id, d.bytes[..len].to_vec(), len));
        }
        let dirs = image_entries
            .into_iter()
            .map(|(path, entries)| {
                let entries: BTreeMap<String, InodeRef> = entries
                    .into_iter()
                    .map(|(n, i)| (n, copies[&i.id].clone()))
                    .collect();
                let dir = Dir {
                    durable: entries.clone(),
                    entries,
                    pending: Vec::new(),
                };
                (path, dir)
            })
            .collect();
        Tree { dirs }
    }

    fn max_inode_id(&self) -> u64 {
        let mut max = 0;
        for dir in self.dirs.values() {
            for inode in dir.entries.values().chain(dir.durable.values()) {
                max = max.max(inode.id);
            }
            for op in &dir.pending {
                if let MetaOp::Link { inode, .. } | MetaOp::Rename { inode, .. } = op {
                    max = max.max(inode.id);
                }
            }
        }
        max
    }
}

/// A fault being injected, with the number of matching operations seen so far.
struct ActiveFault {
    spec: FaultSpec,
    seen: u64,
    /// What the failure says: `Other` ("injected fault"), or `StorageFull` (a full disk).
    kind: io::ErrorKind,
}

struct State {
    tree: Tree,
    /// The tree captured when a crash point was reached.
    frozen: Option<Tree>,
    /// `mutating_ops` value at which the next mutating operation freezes the file system.
    freeze_at: Option<u64>,
    /// Called once, at the instant the file system freezes (see [`MemFs::on_freeze`]).
    freeze_hook: Option<Box<dyn FnOnce() + Send>>,
    mutating_ops: u64,
    next_inode: u64,
    next_seq: u64,
    faults: Vec<ActiveFault>,
    locks: HashSet<PathBuf>,
}

impl State {
    fn from_tree(tree: Tree) -> State {
        let next_inode = tree.max_inode_id() + 1;
        State {
            tree,
            frozen: None,
            freeze_at: None,
            freeze_hook: None,
            mutating_ops: 0,
            next_inode,
            next_seq: 1,
            faults: Vec::new(),
            locks: HashSet::new(),
        }
    }

    fn alloc_inode(&mut self, bytes: Vec<u8>, synced: usize) -> InodeRef {
        let id = self.next_inode;
        self.next_inode += 1;
        new_inode(id, bytes, synced)
    }

    /// Fails if an injected fault hits this operation (counting it against every matching spec).
    fn check_fault(&mut self, op: FsOp, paths: &[&Path]) -> Result<()> {
        let mut fail = None;
        for fault in &mut self.faults {
            if fault.spec.op != op {
                continue;
            }
            if let Some(sub) = &fault.spec.path_contains {
                if !paths
                    .iter()
                    .any(|p| p.to_string_lossy().contains(sub.as_str()))
                {
                    continue;
                }
            }
            let n = fault.seen;
            fault.seen += 1;
            if n >= fault.spec.skip && fault.spec.count.is_none_or(|c| n - fault.spec.skip < c) {
                fail = fail.or(Some(fault.kind));
            }
        }
        match fail {
            None => Ok(()),
            Some(io::ErrorKind::StorageFull) => Err(Error::io(
                op.name(),
                paths[0],
                io::Error::from(io::ErrorKind::StorageFull),
            )),
            Some(_) => Err(Error::io(
                op.name(),
                paths[0],
                io::Error::other("injected fault"),
            )),
        }
    }

    /// Fails if the file system is frozen; otherwise counts the operation (freezing instead if it
    /// is the crash point).
    fn check_alive(&mut self, op: &'static str, path: &Path) -> Result<()> {
        if self.frozen.is_none() && self.freeze_at == Some(self.mutating_ops) {
            self.frozen = Some(self.tree.deep_clone());
            self.freeze_at = None;
            if let Some(hook) = self.freeze_hook.take() {
                hook();
            }
        }
        if self.frozen.is_some() {
            return Err(frozen_error(op, path));
        }
        self.mutating_ops += 1;
        Ok(())
    }

    /// The checks before a counted mutating operation.
    fn begin_mutation(&mut self, op: FsOp, paths: &[&Path]) -> Result<()> {
        self.check_alive(op.name(), paths[0])?;
        self.check_fault(op, paths)
    }

    fn dir_mut(&mut self, op: &'static str, dir: &Path) -> Result<&mut Dir> {
        self.tree
            .dirs
            .get_mut(dir)
            .ok_or_else(|| not_found(op, dir, "no such directory"))
    }

    /// Links a fresh empty inode at `path` (replacing any file there).
    fn create_file(&mut self, op: &'static str, path: &Path) -> Result<InodeRef> {
        let (dir, name) = split(path).ok_or_else(|| invalid(op, path, "not a file path"))?;
        if self.tree.dirs.contains_key(path) {
            return Err(Error::io(
                op,
                path,
                io::Error::new(ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        self.dir_mut(op, dir)?;
        let inode = self.alloc_inode(Vec::new(), 0);
        let d = self.dir_mut(op, dir)?;
        let link = MetaOp::Link {
            name: name.to_string(),
            inode: inode.clone(),
            partner: None,
        };
        link.apply(&mut d.entries);
        d.pending.push(link);
        Ok(inode)
    }
}

fn split(path: &Path) -> Option<(&Path, &str)> {
    Some((path.parent()?, path.file_name()?.to_str()?))
}

fn not_found(op: &'static str, path: &Path, msg: &str) -> Error {
    Error::io(
        op,
        path,
        io::Error::new(ErrorKind::NotFound, msg.to_string()),
    )
}

fn invalid(op: &'static str, path: &Path, msg: &str) -> Error {
    Error::io(
        op,
        path,
        io::Error::new(ErrorKind::InvalidInput, msg.to_string()),
    )
}

fn frozen_error(op: &'static str, path: &Path) -> Error {
    Error::io(
        op,
        path,
        io::Error::other("simulated crash: the file system is frozen at a crash point"),
    )
}

// ---------------------------------------------------------------------------------------------
// The public handle.

/// A thread-safe in-memory file system simulating crashes and injecting faults.
///
/// Cloning is cheap and yields a handle to the same file system, so a test keeps one while the
/// database holds another as `Arc<dyn FileSystem>`.
///
/// Crash model: appends reach the inode at once (`flush` is a no-op), so a process crash loses
/// nothing; `sync` makes a file's data appended so far survive a power failure; a directory's
/// creations, removals and renames survive one only after `sync_dir` on that directory (a
/// journaling file system: a crash keeps a prefix of each directory's pending operations, and a
/// rename is never half applied). [`MemFs::crash`] computes what a crash leaves behind.
///
/// The test helpers ([`file_data`](Self::file_data), [`set_file_data`](Self::set_file_data),
/// [`corrupt_byte`](Self::corrupt_byte), [`truncate`](Self::truncate),
/// [`file_names`](Self::file_names)) act on the live state; they are not counted as mutating
/// operations and ignore injected faults and crash points.
#[derive(Clone)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
}

impl Default for MemFs {
    fn default() -> Self {
        MemFs::new()
    }
}

impl fmt::Debug for MemFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("MemFs")
            .field("dirs", &s.tree.dirs.len())
            .field(
                "files",
                &s.tree.dirs.values().map(|d| d.entries.len()).sum::<usize>(),
            )
            .field("mutating_ops", &s.mutating_ops)
            .field("frozen", &s.frozen.is_some())
            .finish()
    }
}

/// A directory's visible files: names and bytes, by name.
type Listing = Vec<(String, Vec<u8>)>;

impl MemFs {
    /// An empty file system holding only the root directories: `/` and the empty path (the parent
    /// of relative names).
    pub fn new() -> Self {
        MemFs::from_tree(Tree::with_roots())
    }

    fn from_tree(tree: Tree) -> Self {
        MemFs {
            state: Arc::new(Mutex::new(State::from_tree(tree))),
        }
    }

    /// A new, independent file system holding what a crash at this instant leaves behind (or,
    /// once frozen by [`freeze_after`](Self::freeze_after), at the crash point). Everything in
    /// it counts as synced and durable; it has no faults, locks or crash point.
    pub fn crash(&self, mode: CrashMode) -> MemFs {
        let s = self.state.lock();
        let tree = s.frozen.as_ref().unwrap_or(&s.tree);
        let mut image = tree.crash_image(mode);
        for root in [PathBuf::from("/"), PathBuf::new()] {
            image.dirs.entry(root).or_default();
        }
        MemFs::from_tree(image)
    }

    /// True if `other` shows the same directories and, under the same names, files with the
    /// same bytes (the visible state; what is durable is not compared). Two crash images that
    /// compare equal are the same input to a recovery, so a crash test may recover one of them.
    pub fn same_files(&self, other: &MemFs) -> bool {
        if Arc::ptr_eq(&self.state, &other.state) {
            return true;
        }
        // One file system's state lock at a time: its listing is taken, then released.
        let mine = self.listing();
        mine == other.listing()
    }

    /// Every directory with its visible files' names and bytes.
    fn listing(&self) -> Vec<(PathBuf, Listing)> {
        let s = self.state.lock();
        s.tree
            .dirs
            .iter()
            .map(|(path, dir)| {
                let files = dir
                    .entries
                    .iter()
                    .map(|(name, inode)| (name.clone(), inode.data.lock().bytes.clone()))
                    .collect();
                (path.clone(), files)
            })
            .collect()
    }

    /// Shorthand for `crash(CrashMode::SyncedOnly)`.
    pub fn crash_synced_only(&self) -> MemFs {
        self.crash(CrashMode::SyncedOnly)
    }

    /// Shorthand for `crash(CrashMode::Random(seed))`.
    pub fn crash_random(&self, seed: u64) -> MemFs {
        self.crash(CrashMode::Random(seed))
    }

    /// Sets a crash point: the next `mutating_ops` mutating operations (create, append, flush,
    /// sync, remove, rename, sync_dir) run normally; the one after captures the state (without
    /// being applied) and fails, and from then on every mutating operation (and
    /// `create_dir_all` and `lock`) fails with an I/O error of kind `Other` whose message contains
    /// "simulated crash". Replaces an earlier crash point not yet reached; has no effect once
    /// frozen (a frozen file system stays frozen).
    pub fn freeze_after(&self, mutating_ops: u64) {
        let mut s = self.state.lock();
        if s.frozen.is_none() {
            s.freeze_at = Some(s.mutating_ops + mutating_ops);
        }
    }

    /// Calls `hook` at the instant the crash point is reached (inside the operation that
    /// reaches it, before anything else can happen to this file system), e.g. to take a PM
    /// pool's crash images at the same instant. The hook must not use this file system.
    pub fn on_freeze(&self, hook: Box<dyn FnOnce() + Send>) {
        self.state.lock().freeze_hook = Some(hook);
    }

    /// True once a crash point set by [`freeze_after`](Self::freeze_after) was reached.
    pub fn is_frozen(&self) -> bool {
        self.state.lock().frozen.is_some()
    }

    /// The number of mutating operations performed since creation (including those failed by
    /// injected faults; excluding the one that hit the crash point and every one after it).
    pub fn mutating_op_count(&self) -> u64 {
        self.state.lock().mutating_ops
    }

    /// Starts injecting a fault.
    pub fn inject(&self, spec: FaultSpec) {
        self.state.lock().faults.push(ActiveFault {
            spec,
            seen: 0,
            kind: io::ErrorKind::Other,
        });
    }

    /// As [`MemFs::inject`], but the operations fail as on a full disk (`ENOSPC`: an
    /// [`io::ErrorKind::StorageFull`] error).
    pub fn inject_full(&self, spec: FaultSpec) {
        self.state.lock().faults.push(ActiveFault {
            spec,
            seen: 0,
            kind: io::ErrorKind::StorageFull,
        });
    }

    /// Stops injecting every fault.
    pub fn clear_faults(&self) {
        self.state.lock().faults.clear();
    }

    /// The current contents of the file at `path`, if there is one.
    pub fn file_data(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.state.lock();
        let inode = s.tree.file(path)?;
        let bytes = inode.data.lock().bytes.clone();
        Some(bytes)
    }

    /// Replaces the contents of the file at `path`, durably (creating it, durably, if missing,
    /// together with its parent directories). Not counted, not subject to faults or freezing.
    pub fn set_file_data(&self, path: &Path, data: Vec<u8>) {
        let mut s = self.state.lock();
        if let Some(inode) = s.tree.file(path) {
            let mut d = inode.data.lock();
            d.synced = data.len();
            d.bytes = data;
            return;
        }
        let (dir, name) = split(path).expect("set_file_data needs a file path");
        assert!(
            !s.tree.dirs.contains_key(path),
            "set_file_data: {} is a directory",
            path.display()
        );
        for ancestor in dir.ancestors() {
            s.tree.dirs.entry(ancestor.to_path_buf()).or_default();
        }
        let len = data.len();
        let inode = s.alloc_inode(data, len);
        let d = s.tree.dirs.get_mut(dir).expect("parent was just created");
        d.entries.insert(name.to_string(), inode.clone());
        d.durable.insert(name.to_string(), inode);
    }

    /// XORs the byte at `offset` of the file at `path` with `xor`, durably.
    ///
    /// # Panics
    /// If there is no such file or `offset` is past its end.
    pub fn corrupt_byte(&self, path: &Path, offset: u64, xor: u8) {
        let s = self.state.lock();
        let inode = s
            .tree
            .file(path)
            .unwrap_or_else(|| panic!("corrupt_byte: no file {}", path.display()));
        let mut d = inode.data.lock();
        let len = d.bytes.len();
        let byte = d
            .bytes
            .get_mut(offset as usize)
            .unwrap_or_else(|| panic!("corrupt_byte: offset {offset} past the end ({len})"));
        *byte ^= xor;
    }

    /// Sets the length of the file at `path` to `len` (cutting its tail, or extending it with
    /// zeros), durably.
    ///
    /// # Panics
    /// If there is no such file.
    pub fn truncate(&self, path: &Path, len: u64) {
        let s = self.state.lock();
        let inode = s
            .tree
            .file(path)
            .unwrap_or_else(|| panic!("truncate: no file {}", path.display()));
        let mut d = inode.data.lock();
        d.bytes.resize(len as usize, 0);
        d.synced = d.bytes.len();
    }

    /// The full paths of every file visible now, sorted.
    pub fn file_names(&self) -> Vec<PathBuf> {
        let s = self.state.lock();
        let mut names: Vec<PathBuf> = s
            .tree
            .dirs
            .iter()
            .flat_map(|(dir, d)| d.entries.keys().map(move |n| dir.join(n)))
            .collect();
        names.sort();
        names
    }
}

// ---------------------------------------------------------------------------------------------
// Files.

struct MemWritable {
    state: Arc<Mutex<State>>,
    inode: InodeRef,
    path: PathBuf,
    size: u64,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut s = self.state.lock();
        s.begin_mutation(FsOp::Append, &[&self.path])?;
        self.inode.data.lock().bytes.extend_from_slice(data);
        self.size += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.state.lock().begin_mutation(FsOp::Flush, &[&self.path])
    }

    fn sync(&mut self) -> Result<()> {
        let mut s = self.state.lock();
        s.begin_mutation(FsOp::Sync, &[&self.path])?;
        let mut d = self.inode.data.lock();
        d.synced = d.bytes.len();
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }
}

struct MemReadable {
    state: Arc<Mutex<State>>,
    inode: InodeRef,
    path: PathBuf,
    size: u64,
}

impl RandomAccessFile for MemReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.state.lock().check_fault(FsOp::Read, &[&self.path])?;
        if buf.is_empty() {
            return Ok(());
        }
        let d = self.inode.data.lock();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start
            .checked_add(buf.len())
            .and_then(|end| d.bytes.get(start..end))
        {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(Error::io(
                "read",
                &self.path,
                io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!(
                        "read of {} bytes at {offset} past the end ({})",
                        buf.len(),
                        d.bytes.len()
                    ),
                ),
            )),
        }
    }

    fn size(&self) -> u64 {
        self.size
    }
}

struct MemLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

// ---------------------------------------------------------------------------------------------
// The FileSystem implementation.

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut s = self.state.lock();
        s.begin_mutation(FsOp::Create, &[path])?;
        let inode = s.create_file("create", path)?;
        Ok(Box::new(MemWritable {
            state: self.state.clone(),
            inode,
            path: path.to_path_buf(),
            size: 0,
        }))
    }

    fn open_readable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let mut s = self.state.lock();
        s.check_fault(FsOp::Open, &[path])?;
        let inode = s
            .tree
            .file(path)
            .cloned()
            .ok_or_else(|| not_found("open", path, "no such file"))?;
        let size = inode.data.lock().bytes.len() as u64;
        Ok(Arc::new(MemReadable {
            state: self.state.clone(),
            inode,
            path: path.to_path_buf(),
            size,
        }))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut s = self.state.lock();
        s.begin_mutation(FsOp::Remove, &[path])?;
        if s.tree.file(path).is_none() {
            return Err(not_found("remove", path, "no such file"));
        }
        let (dir, name) = split(path).expect("a file has a parent and a name");
        let d = s.dir_mut("remove", dir)?;
        let unlink = MetaOp::Unlink {
            name: name.to_string(),
            partner: None,
        };
        unlink.apply(&mut d.entries);
        d.pending.push(unlink);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut s = self.state.lock();
        s.begin_mutation(FsOp::Rename, &[from, to])?;
        let inode = s
            .tree
            .file(from)
            .cloned()
            .ok_or_else(|| not_found("rename", from, "no such file"))?;
        if s.tree.dirs.contains_key(to) {
            return Err(Error::io(
                "rename",
                to,
                io::Error::new(ErrorKind::IsADirectory, "target is a directory"),
            ));
        }
        let (from_dir, from_name) = split(from).expect("a file has a parent and a name");
        let (to_dir, to_name) = split(to).ok_or_else(|| invalid("rename", to, "bad target"))?;
        s.dir_mut("rename", to_dir)?;
        if from == to {
            return Ok(());
        }
        if from_dir == to_dir {
            let d = s.dir_mut("rename", from_dir)?;
            let op = MetaOp::Rename {
                from: from_name.to_string(),
                to: to_name.to_string(),
                inode,
            };
            op.apply(&mut d.entries);
            d.pending.push(op);
        } else {
            let seq = s.next_seq;
            s.next_seq += 1;
            let unlink = MetaOp::Unlink {
                name: from_name.to_string(),
                partner: Some((to_dir.to_path_buf(), seq)),
            };
            let link = MetaOp::Link {
                name: to_name.to_string(),
                inode,
                partner: Some((from_dir.to_path_buf(), seq)),
            };
            let d = s.dir_mut("rename", from_dir)?;
            unlink.apply(&mut d.entries);
            d.pending.push(unlink);
            let d = s.dir_mut("rename", to_dir)?;
            link.apply(&mut d.entries);
            d.pending.push(link);
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let s = self.state.lock();
        s.tree.dirs.contains_key(path) || s.tree.file(path).is_some()
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut s = self.state.lock();
        s.check_fault(FsOp::List, &[dir])?;
        let d = s
            .tree
            .dirs
            .get(dir)
            .ok_or_else(|| not_found("list", dir, "no such directory"))?;
        let mut names: Vec<String> = d.entries.keys().cloned().collect();
        for sub in s.tree.dirs.keys() {
            if sub.parent() == Some(dir) {
                if let Some(name) = sub.file_name() {
                    names.push(name.to_string_lossy().into_owned());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut s = self.state.lock();
        if s.frozen.is_some() {
            return Err(frozen_error("mkdir", dir));
        }
        for ancestor in dir.ancestors() {
            if s.tree.file(ancestor).is_some() {
                return Err(Error::io(
                    "mkdir",
                    ancestor,
                    io::Error::new(ErrorKind::NotADirectory, "a file is in the way"),
                ));
            }
        }
        for ancestor in dir.ancestors() {
            s.tree.dirs.entry(ancestor.to_path_buf()).or_default();
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut s = self.state.lock();
        s.begin_mutation(FsOp::SyncDir, &[dir])?;
        let n = s.dir_mut("sync dir", dir)?.pending.len();
        s.tree.commit(dir, n);
        Ok(())
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let s = self.state.lock();
        let inode = s
            .tree
            .file(path)
            .ok_or_else(|| not_found("stat", path, "no such file"))?;
        let len = inode.data.lock().bytes.len() as u64;
        Ok(len)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut s = self.state.lock();
        if s.frozen.is_some() {
            return Err(frozen_error("lock", path));
        }
        s.check_fault(FsOp::Lock, &[path])?;
        if s.tree.file(path).is_none() {
            s.create_file("lock", path)?;
        }
        if !s.locks.insert(path.to_path_buf()) {
            return Err(Error::InvalidArgument(format!(
                "database lock {} is held by another handle",
                path.display()
            )));
        }
        Ok(Box::new(MemLock {
            state: self.state.clone(),
            path: path.to_path_buf(),
        }))
    }

    /// Refuses while the lock is held exclusively; a shared holder is not tracked (it does
    /// not keep a later writer out, which no test here needs).
    fn lock_shared(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        let s = self.state.lock();
        if s.locks.contains(path) {
            return Err(Error::InvalidArgument(format!(
                "database lock {} is held by a writer; a read-only open needs the writer closed",
                path.display()
            )));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    /// A file system with `/db` created.
    fn fs_with_db() -> MemFs {
        let fs = MemFs::new();
        fs.create_dir_all(&p("/db")).unwrap();
        fs
    }

    fn write(fs: &MemFs, path: &str, data: &[u8], sync: bool) {
        let mut w = fs.create(&p(path)).unwrap();
        w.append(data).unwrap();
        if sync {
            w.sync().unwrap();
        }
    }

    fn io_kind(e: &Error) -> ErrorKind {
        match e {
            Error::Io { source, .. } => source.kind(),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }

    #[test]
    fn same_files_compares_names_and_bytes() {
        let fs = fs_with_db();
        write(&fs, "/db/a", b"synced", true);
        write(&fs, "/db/b", b"unsynced", false);
        assert!(fs.same_files(&fs));
        // Every crash image of a file system whose files are all durable is the same one.
        let mut w = fs.create(&p("/db/b")).unwrap();
        w.append(b"unsynced").unwrap();
        w.sync().unwrap();
        fs.sync_dir(&p("/db")).unwrap();
        let synced = fs.crash(CrashMode::SyncedOnly);
        let process = fs.crash(CrashMode::ProcessCrash);
        assert!(synced.same_files(&process) && process.same_files(&synced));
        assert!(synced.same_files(&fs.crash(CrashMode::Random(7))));
        // An unsynced append, a missing name, other bytes, another directory: all differ.
        w.append(b"!").unwrap();
        let process = fs.crash(CrashMode::ProcessCrash);
        assert!(!synced.same_files(&process));
        assert!(!process.same_files(&synced));
        let other = synced.crash(CrashMode::SyncedOnly);
        other.remove(&p("/db/a")).unwrap();
        assert!(!other.same_files(&synced));
        let other = synced.crash(CrashMode::SyncedOnly);
        write(&other, "/db/a", b"SYNCED", true);
        assert!(!other.same_files(&synced));
        let other = synced.crash(CrashMode::SyncedOnly);
        other.create_dir_all(&p("/db/sub")).unwrap();
        assert!(!other.same_files(&synced));
        assert!(synced.same_files(&synced.crash(CrashMode::SyncedOnly)));
    }

    #[test]
    fn write_read_list_rename_remove() {
        let fs = fs_with_db();
        let a = Path::new("/db").join("000001.log");
        let mut w = fs.create(&a).unwrap();
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        w.flush().unwrap();
        assert_eq!(w.size(), 11);
        drop(w);
        assert!(fs.exists(&a));
        assert_eq!(fs.file_size(&a).unwrap(), 11);
        assert_eq!(fs.read_all(&a).unwrap(), b"hello world");
        let r = fs.open_readable(&a).unwrap();
        assert_eq!(r.size(), 11);
        let mut buf = [0u8; 5];
        r.read_exact_at(6, &mut buf).unwrap();
        assert_eq!(&buf, b"world");
        let e = r.read_exact_at(7, &mut buf).unwrap_err();
        assert_eq!(io_kind(&e), ErrorKind::UnexpectedEof);
        assert_eq!(
            io_kind(&r.read_exact_at(u64::MAX, &mut buf).unwrap_err()),
            ErrorKind::UnexpectedEof
        );

        // Sub-directories are listed; list is sorted; paths compare by component.
        fs.create_dir_all(&p("/db/sub/deeper")).unwrap();
        write(&fs, "/db//CURRENT.tmp", b"x", false);
        assert_eq!(
            fs.list(&p("/db/")).unwrap(),
            vec!["000001.log", "CURRENT.tmp", "sub"]
        );
        assert_eq!(fs.list(&p("/")).unwrap(), vec!["db"]);
        assert_eq!(fs.list(&p("/db/sub")).unwrap(), vec!["deeper"]);
        assert_eq!(
            io_kind(&fs.list(&p("/nope")).unwrap_err()),
            ErrorKind::NotFound
        );

        // Rename replaces its target atomically.
        write(&fs, "/db/CURRENT", b"old", false);
        fs.rename(&p("/db/CURRENT.tmp"), &p("/db/CURRENT")).unwrap();
        assert_eq!(fs.read_all(&p("/db/CURRENT")).unwrap(), b"x");
        assert!(!fs.exists(&p("/db/CURRENT.tmp")));
        assert_eq!(
            io_kind(&fs.rename(&p("/db/missing"), &p("/db/x")).unwrap_err()),
            ErrorKind::NotFound
        );

        // Create truncates.
        write(&fs, "/db/CURRENT", b"", false);
        assert_eq!(fs.file_size(&p("/db/CURRENT")).unwrap(), 0);

        // Remove; removing or opening a missing file is NotFound.
        fs.remove(&a).unwrap();
        assert!(!fs.exists(&a));
        assert_eq!(io_kind(&fs.remove(&a).unwrap_err()), ErrorKind::NotFound);
        assert_eq!(
            io_kind(&fs.open_readable(&a).err().unwrap()),
            ErrorKind::NotFound
        );
        assert_eq!(io_kind(&fs.file_size(&a).unwrap_err()), ErrorKind::NotFound);
        assert_eq!(fs.file_names(), vec![p("/db/CURRENT")]);

        // A file needs an existing parent directory.
        assert_eq!(
            io_kind(&fs.create(&p("/other/x")).err().unwrap()),
            ErrorKind::NotFound
        );
        // Directories and files do not mix.
        assert!(fs.create(&p("/db/sub")).is_err());
        assert!(fs.create_dir_all(&p("/db/CURRENT/x")).is_err());
    }

    #[test]
    fn open_handles_survive_unlink_and_rename() {
        let fs = fs_with_db();
        write(&fs, "/db/a", b"first", true);
        let r = fs.open_readable(&p("/db/a")).unwrap();
        fs.rename(&p("/db/a"), &p("/db/b")).unwrap();
        fs.remove(&p("/db/b")).unwrap();
        // A new file under the old name is a different inode.
        write(&fs, "/db/a", b"second", true);
        let mut buf = [0u8; 5];
        r.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"first");

        // A writer keeps appending to its inode after a rename.
        let mut w = fs.create(&p("/db/w")).unwrap();
        w.append(b"ab").unwrap();
        fs.rename(&p("/db/w"), &p("/db/w2")).unwrap();
        w.append(b"cd").unwrap();
        assert_eq!(fs.file_data(&p("/db/w2")).unwrap(), b"abcd");
    }

    #[test]
    fn synced_only_crash_keeps_synced_data_and_synced_entries() {
        let fs = fs_with_db();
        let db = p("/db");
        // Durable entry, partly synced data.
        let mut w = fs.create(&p("/db/log")).unwrap();
        w.append(b"synced").unwrap();
        w.sync().unwrap();
        fs.sync_dir(&db).unwrap();
        w.append(b" unsynced").unwrap();
        w.flush().unwrap();
        // Durable CURRENT, then a rename over it without sync_dir.
        write(&fs, "/db/CURRENT", b"v1", true);
        fs.sync_dir(&db).unwrap();
        // A durable file removed without sync_dir comes back.
        write(&fs, "/db/old", b"old", true);
        fs.sync_dir(&db).unwrap();
        fs.remove(&p("/db/old")).unwrap();
        write(&fs, "/db/CURRENT.tmp", b"v2", true);
        fs.rename(&p("/db/CURRENT.tmp"), &p("/db/CURRENT")).unwrap();
        // Synced data, entry never made durable.
        write(&fs, "/db/orphan", b"data", true);

        let c = fs.crash(CrashMode::SyncedOnly);
        assert_eq!(
            c.file_names(),
            vec![p("/db/CURRENT"), p("/db/log"), p("/db/old")]
        );
        assert_eq!(c.file_data(&p("/db/log")).unwrap(), b"synced");
        assert_eq!(c.file_data(&p("/db/CURRENT")).unwrap(), b"v1");
        assert_eq!(c.file_data(&p("/db/old")).unwrap(), b"old");
        assert!(c.exists(&db));
        // The image is independent and fully durable.
        write(&fs, "/db/later", b"", false);
        assert!(!c.exists(&p("/db/later")));
        assert_eq!(c.crash_synced_only().file_names(), c.file_names());
        assert_eq!(
            c.crash_synced_only().file_data(&p("/db/log")).unwrap(),
            b"synced"
        );

        // After sync_dir, the rename and the removal are durable.
        fs.sync_dir(&db).unwrap();
        let c = fs.crash(CrashMode::SyncedOnly);
        assert_eq!(
            c.file_names(),
            vec![
                p("/db/CURRENT"),
                p("/db/later"),
                p("/db/log"),
                p("/db/orphan")
            ]
        );
        assert_eq!(c.file_data(&p("/db/CURRENT")).unwrap(), b"v2");
        assert_eq!(c.file_data(&p("/db/later")).unwrap(), b"");
    }

    #[test]
    fn process_crash_keeps_everything() {
        let fs = fs_with_db();
        write(&fs, "/db/a", b"unsynced", false);
        write(&fs, "/db/b", b"tmp", false);
        fs.rename(&p("/db/b"), &p("/db/c")).unwrap();
        fs.sync_dir(&p("/db")).unwrap();
        write(&fs, "/db/d", b"dd", false);
        fs.remove(&p("/db/a")).unwrap();
        let c = fs.crash(CrashMode::ProcessCrash);
        assert_eq!(c.file_names(), fs.file_names());
        for name in fs.file_names() {
            assert_eq!(c.file_data(&name), fs.file_data(&name));
        }
        // Everything in the image is durable.
        let again = c.crash(CrashMode::SyncedOnly);
        assert_eq!(again.file_names(), vec![p("/db/c"), p("/db/d")]);
        assert_eq!(again.file_data(&p("/db/d")).unwrap(), b"dd");
    }

    /// A workload with many pending metadata operations and unsynced tails.
    fn random_workload() -> MemFs {
        let fs = fs_with_db();
        fs.create_dir_all(&p("/db/archive")).unwrap();
        for i in 0..8u8 {
            let path = format!("/db/{i:06}.sst");
            let mut w = fs.create(&p(&path)).unwrap();
            w.append(&[i; 100]).unwrap();
            if i % 2 == 0 {
                w.sync().unwrap();
            }
            w.append(&[i + 100; 50]).unwrap();
            if i == 3 {
                fs.sync_dir(&p("/db")).unwrap();
            }
        }
        for round in 0..4u8 {
            write(&fs, "/db/CURRENT.tmp", &[round; 10], true);
            fs.rename(&p("/db/CURRENT.tmp"), &p("/db/CURRENT")).unwrap();
        }
        fs.remove(&p("/db/000001.sst")).unwrap();
        fs.rename(&p("/db/000002.sst"), &p("/db/archive/000002.sst"))
            .unwrap();
        fs.rename(&p("/db/000005.sst"), &p("/db/archive/000005.sst"))
            .unwrap();
        write(&fs, "/db/archive/note", b"n", false);
        fs
    }

    fn snapshot(fs: &MemFs) -> Vec<(PathBuf, Vec<u8>)> {
        fs.file_names()
            .into_iter()
            .map(|n| {
                let d = fs.file_data(&n).unwrap();
                (n, d)
            })
            .collect()
    }

    #[test]
    fn random_crash_is_deterministic_and_keeps_prefixes() {
        let fs = random_workload();
        let full = snapshot(&fs);
        let full_of = |name: &Path| full.iter().find(|(n, _)| n == name).map(|(_, d)| d);
        let mut distinct = HashSet::new();
        let mut current_versions = HashSet::new();
        // Per table: the lengths its images had (each written 100 bytes, then 50 unsynced).
        let mut lengths: BTreeMap<PathBuf, std::collections::BTreeSet<usize>> = BTreeMap::new();
        for seed in 0..200u64 {
            let a = snapshot(&fs.crash(CrashMode::Random(seed)));
            let b = snapshot(&fs.crash_random(seed));
            assert_eq!(a, b, "seed {seed} must give the same image");
            let names: Vec<&PathBuf> = a.iter().map(|(n, _)| n).collect();
            for (name, data) in &a {
                // Every sst holds its synced prefix (100 bytes if synced) plus a prefix of the
                // unsynced tail, so a prefix of what was written.
                if name.extension().is_some_and(|e| e == "sst") {
                    let i = name
                        .file_stem()
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .parse::<u8>()
                        .unwrap();
                    let mut written = vec![i; 100];
                    written.extend_from_slice(&[i + 100; 50]);
                    assert!(
                        written.starts_with(data),
                        "seed {seed}: {name:?} not a prefix"
                    );
                    if i % 2 == 0 {
                        assert!(data.len() >= 100, "seed {seed}: {name:?} lost synced data");
                    }
                    lengths
                        .entry(name.file_name().unwrap().into())
                        .or_default()
                        .insert(data.len());
                }
                if name == &p("/db/CURRENT") {
                    // Synced before its rename: whole.
                    assert_eq!(data.len(), 10);
                    current_versions.insert(data[0]);
                }
                // Files other than CURRENT* (whose names move between inodes) hold a prefix of
                // their current data.
                let moved = name.to_string_lossy().contains("CURRENT");
                if let Some(f) = full_of(name).filter(|_| !moved) {
                    assert!(f.starts_with(data));
                }
            }
            // Metadata: the ops before the first sync_dir of /db are durable.
            for i in [0u8, 1, 2, 3] {
                let here = p(&format!("/db/{i:06}.sst"));
                let there = p(&format!("/db/archive/{i:06}.sst"));
                let count = names
                    .iter()
                    .filter(|n| ***n == here || ***n == there)
                    .count();
                if i == 1 {
                    assert!(count <= 1);
                } else {
                    assert_eq!(count, 1, "seed {seed}: {i} must have exactly one name");
                }
            }
            // A rename is never half applied: exactly one of the two names of 000005.
            let five = names
                .iter()
                .filter(|n| n.file_name().unwrap() == "000005.sst")
                .count();
            let five_created = names.iter().any(|n| n.ends_with("000005.sst"));
            assert!(five <= 1);
            // Prefix order in /db: if the 000002 rename (late in the log) survived, so did every
            // earlier op in /db: the last CURRENT rename and the removal of 000001.
            if names.contains(&&p("/db/archive/000002.sst")) {
                assert!(!names.contains(&&p("/db/000001.sst")));
                assert_eq!(full_of(&p("/db/CURRENT")).unwrap()[0], 3);
                let cur = a.iter().find(|(n, _)| n == &p("/db/CURRENT")).unwrap();
                assert_eq!(cur.1[0], 3, "seed {seed}: earlier rename missing");
                assert!(five_created);
            }
            // Same-directory renames are atomic: CURRENT.tmp and CURRENT never both hold one
            // round's data.
            if let Some((_, tmp)) = a.iter().find(|(n, _)| n == &p("/db/CURRENT.tmp")) {
                let cur = a.iter().find(|(n, _)| n == &p("/db/CURRENT"));
                if let (Some(t), Some((_, c))) = (tmp.first(), cur) {
                    assert_ne!(Some(t), c.first());
                }
            }
            distinct.insert(a);
        }
        // Different seeds give different images, covering several CURRENT versions.
        assert!(
            distinct.len() > 20,
            "only {} distinct images",
            distinct.len()
        );
        assert!(current_versions.len() >= 3, "{current_versions:?}");
        // An unsynced tail is cut anywhere, not only kept whole or dropped whole: every table
        // shows many lengths between its synced and its full length.
        for (name, seen) in &lengths {
            let Ok(i) = name.to_string_lossy()[..6].parse::<u8>() else {
                continue;
            };
            let synced = if i.is_multiple_of(2) { 100 } else { 0 };
            let between = seen.iter().filter(|&&l| l > synced && l < 150).count();
            assert!(
                between >= 5,
                "{name:?}: only {between} cut points in {seen:?}"
            );
        }
    }

    #[test]
    fn cross_directory_rename_is_never_half_applied() {
        let fs = fs_with_db();
        fs.create_dir_all(&p("/other")).unwrap();
        write(&fs, "/db/f", b"data", true);
        fs.sync_dir(&p("/db")).unwrap();
        write(&fs, "/other/before", b"", false);
        fs.rename(&p("/db/f"), &p("/other/f")).unwrap();
        for seed in 0..100 {
            let c = fs.crash(CrashMode::Random(seed));
            let names = c.file_names();
            let n = names
                .iter()
                .filter(|n| n.file_name().unwrap() == "f")
                .count();
            assert_eq!(n, 1, "seed {seed}: {names:?}");
            if names.contains(&p("/other/f")) {
                // The target directory's earlier op came along.
                assert!(names.contains(&p("/other/before")), "seed {seed}");
            }
        }
        // Syncing only the source directory makes the whole rename durable.
        fs.sync_dir(&p("/db")).unwrap();
        let c = fs.crash(CrashMode::SyncedOnly);
        assert_eq!(c.file_names(), vec![p("/other/before"), p("/other/f")]);
        assert_eq!(c.file_data(&p("/other/f")).unwrap(), b"data");
    }

    #[test]
    fn freeze_after_fails_later_ops_and_crash_uses_frozen_state() {
        let fs = fs_with_db();
        let base = fs.mutating_op_count();
        assert_eq!(base, 0);
        let mut w = fs.create(&p("/db/log")).unwrap(); // 1
        w.append(b"one").unwrap(); // 2
        w.sync().unwrap(); // 3
        fs.sync_dir(&p("/db")).unwrap(); // 4
        let _ = fs.list(&p("/db")).unwrap(); // not counted
        let _ = fs.read_all(&p("/db/log")).unwrap(); // not counted
        assert!(fs.exists(&p("/db/log"))); // not counted
        assert_eq!(fs.mutating_op_count(), 4);

        fs.freeze_after(2);
        w.append(b" two").unwrap(); // 5
        w.flush().unwrap(); // 6
        assert!(!fs.is_frozen());
        let e = w.append(b" three").unwrap_err(); // would be 7: crash point
        assert!(fs.is_frozen());
        assert_eq!(io_kind(&e), ErrorKind::Other);
        assert!(e.to_string().contains("simulated crash"), "{e}");
        assert_eq!(fs.mutating_op_count(), 6);
        // Every later mutating operation fails too, and changes nothing.
        assert!(w
            .sync()
            .unwrap_err()
            .to_string()
            .contains("simulated crash"));
        assert!(w.flush().is_err());
        assert!(fs.create(&p("/db/new")).is_err());
        assert!(fs.remove(&p("/db/log")).is_err());
        assert!(fs.rename(&p("/db/log"), &p("/db/x")).is_err());
        assert!(fs.sync_dir(&p("/db")).is_err());
        assert!(fs.create_dir_all(&p("/db/d")).is_err());
        assert_eq!(fs.mutating_op_count(), 6);
        assert_eq!(fs.file_data(&p("/db/log")).unwrap(), b"one two");
        // Reads still work.
        assert_eq!(fs.read_all(&p("/db/log")).unwrap(), b"one two");

        // Mutate the live state behind the freeze: crash images ignore it.
        fs.set_file_data(&p("/db/log"), b"changed".to_vec());
        let c = fs.crash(CrashMode::ProcessCrash);
        assert_eq!(c.file_data(&p("/db/log")).unwrap(), b"one two");
        let c = fs.crash(CrashMode::SyncedOnly);
        assert_eq!(c.file_data(&p("/db/log")).unwrap(), b"one");
        assert!(!c.is_frozen());
        let mut w2 = c.create(&p("/db/log2")).unwrap();
        w2.append(b"ok").unwrap();
    }

    #[test]
    fn freeze_after_enumerates_crash_points() {
        let workload = |fs: &MemFs| -> Result<()> {
            fs.create_dir_all(&p("/db"))?;
            let mut w = fs.create(&p("/db/a"))?;
            w.append(b"12345")?;
            w.sync()?;
            fs.sync_dir(&p("/db"))?;
            fs.rename(&p("/db/a"), &p("/db/b"))?;
            fs.sync_dir(&p("/db"))
        };
        let probe = MemFs::new();
        workload(&probe).unwrap();
        let count = probe.mutating_op_count();
        assert_eq!(count, 6);
        let mut images = Vec::new();
        for k in 0..count {
            let fs = MemFs::new();
            fs.freeze_after(k);
            assert!(workload(&fs).is_err(), "k = {k}");
            assert!(fs.is_frozen());
            assert_eq!(fs.mutating_op_count(), k);
            images.push(snapshot(&fs.crash(CrashMode::SyncedOnly)));
        }
        let a = |d: &[u8]| vec![(p("/db/a"), d.to_vec())];
        assert_eq!(images[0], vec![]);
        assert_eq!(images[1], vec![]);
        assert_eq!(images[2], vec![]);
        assert_eq!(images[3], vec![]);
        assert_eq!(images[4], a(b"12345"));
        assert_eq!(images[5], a(b"12345"));
        // k = count: no crash point is reached.
        let fs = MemFs::new();
        fs.freeze_after(count);
        workload(&fs).unwrap();
        assert!(!fs.is_frozen());
    }

    #[test]
    fn fault_injection_with_skip_count_and_path_filter() {
        let fs = fs_with_db();
        fs.inject(FaultSpec {
            op: FsOp::Append,
            path_contains: Some(".log".into()),
            skip: 2,
            count: Some(2),
        });
        let mut log = fs.create(&p("/db/000001.log")).unwrap();
        let mut sst = fs.create(&p("/db/000002.sst")).unwrap();
        let mut results = Vec::new();
        for i in 0..6u8 {
            sst.append(&[i]).unwrap();
            results.push(log.append(&[i]).is_ok());
        }
        assert_eq!(results, [true, true, false, false, true, true]);
        // Failed appends appended nothing.
        assert_eq!(fs.file_data(&p("/db/000001.log")).unwrap(), [0, 1, 4, 5]);
        assert_eq!(
            fs.file_data(&p("/db/000002.sst")).unwrap(),
            [0, 1, 2, 3, 4, 5]
        );

        // An injected error says what and where.
        fs.inject(FaultSpec::new(FsOp::Sync));
        let e = log.sync().unwrap_err();
        match &e {
            Error::Io { op, path, source } => {
                assert_eq!(*op, "sync");
                assert_eq!(path, &p("/db/000001.log"));
                assert_eq!(source.kind(), ErrorKind::Other);
                assert_eq!(source.to_string(), "injected fault");
            }
            other => panic!("{other:?}"),
        }
        assert!(sst.sync().is_err());
        assert_eq!(
            fs.crash(CrashMode::SyncedOnly)
                .file_data(&p("/db/000001.log")),
            None
        );

        // Faults on reads, opens, renames (either path), removes, creates, lists, locks.
        fs.clear_faults();
        log.sync().unwrap();
        fs.inject(FaultSpec {
            count: Some(1),
            ..FaultSpec::new(FsOp::Read)
        });
        let r = fs.open_readable(&p("/db/000001.log")).unwrap();
        let mut buf = [0u8; 4];
        assert!(r.read_exact_at(0, &mut buf).is_err());
        r.read_exact_at(0, &mut buf).unwrap();
        fs.inject(FaultSpec {
            path_contains: Some("CURRENT".into()),
            ..FaultSpec::new(FsOp::Rename)
        });
        assert!(fs.rename(&p("/db/000002.sst"), &p("/db/CURRENT")).is_err());
        assert!(fs.exists(&p("/db/000002.sst")));
        fs.rename(&p("/db/000002.sst"), &p("/db/000003.sst"))
            .unwrap();
        for op in [
            FsOp::Open,
            FsOp::Remove,
            FsOp::Create,
            FsOp::List,
            FsOp::Lock,
            FsOp::SyncDir,
            FsOp::Flush,
        ] {
            fs.inject(FaultSpec::new(op));
        }
        assert!(fs.open_readable(&p("/db/000003.sst")).is_err());
        assert!(fs.read_all(&p("/db/000003.sst")).is_err());
        assert!(fs.remove(&p("/db/000003.sst")).is_err());
        assert!(fs.exists(&p("/db/000003.sst")));
        assert!(fs.create(&p("/db/x")).is_err());
        assert!(!fs.exists(&p("/db/x")));
        assert!(fs.list(&p("/db")).is_err());
        assert!(fs.lock(&p("/db/LOCK")).is_err());
        assert!(fs.sync_dir(&p("/db")).is_err());
        assert!(log.flush().is_err());
        fs.clear_faults();
        fs.sync_dir(&p("/db")).unwrap();
        assert_eq!(
            fs.list(&p("/db")).unwrap(),
            vec!["000001.log", "000003.sst"]
        );
    }

    #[test]
    fn lock_is_exclusive_until_dropped() {
        let fs = fs_with_db();
        let other_handle = fs.clone();
        let l1 = fs.lock(&p("/db/LOCK")).unwrap();
        assert!(fs.exists(&p("/db/LOCK")));
        assert!(matches!(
            other_handle.lock(&p("/db/LOCK")).err().unwrap(),
            Error::InvalidArgument(_)
        ));
        let l2 = fs.lock(&p("/db/OTHER")).unwrap();
        drop(l1);
        let l3 = other_handle.lock(&p("/db/LOCK")).unwrap();
        drop((l2, l3));
        // A crash image starts with no locks held.
        let _held = fs.lock(&p("/db/LOCK")).unwrap();
        assert!(fs
            .crash(CrashMode::ProcessCrash)
            .lock(&p("/db/LOCK"))
            .is_ok());
    }

    #[test]
    fn corruption_helpers() {
        let fs = fs_with_db();
        write(&fs, "/db/t.sst", b"abcdef", false);
        fs.corrupt_byte(&p("/db/t.sst"), 1, 0xff);
        assert_eq!(
            fs.file_data(&p("/db/t.sst")).unwrap(),
            [b'a', !b'b', b'c', b'd', b'e', b'f']
        );
        fs.truncate(&p("/db/t.sst"), 3);
        assert_eq!(fs.file_size(&p("/db/t.sst")).unwrap(), 3);
        fs.set_file_data(&p("/db/t.sst"), b"new".to_vec());
        fs.set_file_data(&p("/fresh/dir/f"), b"f".to_vec());
        assert_eq!(fs.file_data(&p("/db/missing")), None);
        // The helpers' results are durable; t.sst's name is not (never sync_dir'ed).
        let c = fs.crash(CrashMode::SyncedOnly);
        assert_eq!(c.file_names(), vec![p("/fresh/dir/f")]);
        let c = fs.crash(CrashMode::Random(7));
        if let Some(d) = c.file_data(&p("/db/t.sst")) {
            assert_eq!(d, b"new");
        }
        assert_eq!(c.file_data(&p("/fresh/dir/f")).unwrap(), b"f");
    }

    #[test]
    fn concurrent_use_from_threads() {
        let fs = fs_with_db();
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let fs: Arc<dyn FileSystem> = Arc::new(fs.clone());
                std::thread::spawn(move || {
                    let path = PathBuf::from(format!("/db/{t}.log"));
                    let mut w = fs.create(&path).unwrap();
                    for i in 0..100u32 {
                        w.append(&i.to_le_bytes()).unwrap();
                    }
                    w.sync().unwrap();
                    fs.read_all(&path).unwrap().len()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 400);
        }
        assert_eq!(fs.mutating_op_count(), 4 * 102);
    }
}
