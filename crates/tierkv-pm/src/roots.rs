//! The root directory: named roots and the pool's owner identity, in chunk 0.
//!
//! **Purpose.** Every structure kept in a pool (a file system, a tree, a log) is found through
//! a *named root*: a short ASCII name mapped to an 8-byte root (normally the offset of the
//! structure's first chunk). The directory also records the *identity* of the database the
//! pool belongs to (128 bits, or none for a pool that was never bound). It lives in chunk 0,
//! right after the header's root slots: chunk 0 is never allocated, so the directory needs no
//! allocation (it exists before any owner opens, and the allocator is rebuilt only once the
//! owners reported their chunks), is found without following any pointer, and costs no chunk.
//! Chunks are at least 4 KiB and the directory needs 2,304 bytes.
//!
//! Layout (pool offsets; little-endian; `crc` is CRC-32C, unmasked):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 192 | 64 | directory header: magic `"TKVROOTS"` u64, capacity u32 (32), copy bytes u32 (1088), `crc(bytes 0..16)` u32, 44 reserved |
//! | 256 | 64 | selector line: the **selector** word at 256 (low 32 bits: generation `g`; high 32 bits: `crc(256 u64 ++ g u32)`), 56 reserved |
//! | 320 | 1088 | copy 0 |
//! | 1408 | 1088 | copy 1 |
//!
//! The current directory is copy `g & 1`. A **copy** (at offset `c`):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | `crc(c u64 ++ bytes 4..1088 of the copy)`: covers every other byte of the copy |
//! | 4 | 4 | generation: must equal the selector's `g` |
//! | 8 | 4 | flags: bit 0 = bound (the identity is set); bit 1 = owned (the owner stamp is set); bit 2 = epoch pending (an open raised the epoch and its manifest may not record it yet); other bits 0 |
//! | 12 | 4 | number of named roots `n` (at most 32) |
//! | 16 | 16 | identity (u128; 0 when not bound) |
//! | 32 | 32 x 32 | entries `0..n`: name (24 bytes: 1 to 24 printable ASCII bytes `0x21..=0x7e`, zero padded), root u64; entries `n..` all zero; sorted by name, names distinct |
//! | 1056 | 8 | owner stamp (u64; 0 when not owned): names the database directory the pool is bound to (the engine's hash of the directory's path), so that a copy of the directory is told from the original |
//! | 1064 | 8 | epoch (u64; 0 when never set): raised by every writable open of the database, which records it in its manifest too, so that a copy of the pool older than the manifest (or a manifest older than the pool) is told apart |
//! | 1072 | 16 | zero |
//!
//! Every field is covered by a checksum: the header by its crc, the selector by the crc in its
//! high half, the copy by its crc (which also binds it to its offset), and the copy to the
//! selector by the generation. A flipped bit anywhere in them is `Corruption` naming the root
//! directory and the part; never another table, identity or root.
//!
//! **Updates are shadow copies published by one 8-byte store.** Persist points of
//! [`PmPool::update_root_table`] and the invariant at each:
//! 1. The new table is encoded with generation `g + 1` and written over the *inactive* copy
//!    (`(g + 1) & 1`), which is written back and fenced (and msynced in `msync` mode). Before
//!    this fence completes, and after it, the selector still holds `g` and copy `g & 1` is
//!    untouched: the durable directory is the old one, whatever subset of the new copy's 8-byte
//!    words reached PM in whatever order (the inactive copy is never read).
//! 2. The selector word `g + 1` (with its crc) is stored with one aligned 8-byte atomic store,
//!    written back and fenced. Before the fence completes the selector is durably `g` or
//!    `g + 1`, never torn, and both copies are complete: the directory is the old or the new
//!    one. After it, it is the new one. The in-DRAM table changes only then.
//!
//! An update that changes nothing writes nothing. The directory is created with the pool
//! (generation 0, copy 0: not bound, no roots), durable before `create` returns.
//!
//! **Thread safety.** Updates are serialised by a mutex held across both persist points;
//! readers use a validated in-DRAM copy of the table (loaded from PM, under the same mutex, on
//! first use), so a reader never reads the directory while an update writes it. A fence hook
//! may read the table (it sees the old one during an update) but must not update it.
//!
//! **Durability.** The directory is durable when `create` returns; an update is durable when
//! [`PmPool::update_root_table`] (or [`PmPool::set_named_root`]) returns.

use crate::header::{HEADER_LEN, ROOT_DIRECTORY_OFFSET};
use crate::options::{PmError, PmResult};
use crate::pool::PmPool;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;

/// The most bytes of a root name.
pub const ROOT_NAME_MAX: usize = 24;
/// The most named roots a pool holds.
pub const ROOT_CAPACITY: usize = 32;
/// Offset of the selector word.
pub const ROOT_SELECTOR_OFFSET: u64 = ROOT_DIRECTORY_OFFSET + 64;
/// Bytes of one copy of the directory.
pub const ROOT_COPY_BYTES: u64 = 1088;
/// Offsets of the two copies (the current one is the selector's generation `& 1`).
pub const ROOT_COPY_OFFSETS: [u64; 2] = [
    ROOT_SELECTOR_OFFSET + 64,
    ROOT_SELECTOR_OFFSET + 64 + ROOT_COPY_BYTES,
];
/// Bytes of the whole directory (header line, selector line, two copies).
pub(crate) const ROOT_DIRECTORY_LEN: u64 = 64 + 64 + 2 * ROOT_COPY_BYTES;

const DIR_MAGIC: u64 = u64::from_le_bytes(*b"TKVROOTS");
const ENTRY_BYTES: usize = 32;
const COPY_HEADER: usize = 32;
const COPY: usize = ROOT_COPY_BYTES as usize;
const FLAG_BOUND: u32 = 1;
const FLAG_OWNED: u32 = 2;
const FLAG_EPOCH_PENDING: u32 = 4;
/// Offset of the owner stamp in a copy.
const OWNER_AT: usize = COPY_HEADER + ROOT_CAPACITY * ENTRY_BYTES;
/// Offset of the epoch in a copy.
const EPOCH_AT: usize = OWNER_AT + 8;

const _: () = assert!(COPY_HEADER + ROOT_CAPACITY * ENTRY_BYTES <= COPY);
const _: () = assert!(COPY.is_multiple_of(64));
const _: () = assert!(ROOT_COPY_OFFSETS[1] + ROOT_COPY_BYTES == HEADER_LEN);

/// The content of the root directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RootTable {
    /// The identity of the database the pool belongs to; `None` for a pool never bound.
    pub identity: Option<u128>,
    /// Named roots: name -> root (normally the offset of the structure's first chunk).
    pub roots: BTreeMap<String, u64>,
    /// A stamp of the directory the pool serves (the database's choice of hash of its path);
    /// `None` for a pool written before stamps existed or never opened by a directory. It lets
    /// the database tell a copy of its directory, which must not write through this pool, from
    /// the original.
    pub owner: Option<u64>,
    /// The database's open epoch as the pool knows it (0: never set; the database's choice of
    /// protocol, see the engine's `db/owner.rs`).
    pub epoch: u64,
    /// The epoch was raised and the database may not have recorded it yet.
    pub epoch_pending: bool,
}

/// The validated directory as it is durable: its generation and table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RootState {
    generation: u32,
    table: RootTable,
}

/// The pool's root-directory state: the update lock and the in-DRAM table.
#[derive(Default)]
pub(crate) struct Roots {
    update: Mutex<()>,
    cache: RwLock<Option<RootState>>,
}

/// Checks a root name: 1 to [`ROOT_NAME_MAX`] printable ASCII bytes (`0x21..=0x7e`).
pub fn check_root_name(name: &str) -> PmResult<()> {
    let ok = !name.is_empty()
        && name.len() <= ROOT_NAME_MAX
        && name.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(PmError::InvalidArgument(format!(
            "root name {name:?} is not 1 to {ROOT_NAME_MAX} printable ASCII bytes"
        )))
    }
}

fn selector_word(generation: u32) -> u64 {
    let mut b = [0u8; 12];
    b[..8].copy_from_slice(&ROOT_SELECTOR_OFFSET.to_le_bytes());
    b[8..].copy_from_slice(&generation.to_le_bytes());
    u64::from(crc32c::crc32c(&b)) << 32 | u64::from(generation)
}

fn copy_crc(at: u64, copy: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&at.to_le_bytes()), &copy[4..])
}

/// The directory header line written at create.
fn header_line() -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0..8].copy_from_slice(&DIR_MAGIC.to_le_bytes());
    b[8..12].copy_from_slice(&(ROOT_CAPACITY as u32).to_le_bytes());
    b[12..16].copy_from_slice(&(COPY as u32).to_le_bytes());
    let crc = crc32c::crc32c(&b[..16]);
    b[16..20].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Encodes `table` as the copy of generation `generation` (the table was validated).
fn encode_copy(table: &RootTable, generation: u32) -> Vec<u8> {
    let at = ROOT_COPY_OFFSETS[(generation & 1) as usize];
    let mut b = vec![0u8; COPY];
    b[4..8].copy_from_slice(&generation.to_le_bytes());
    let mut flags = if table.identity.is_some() {
        FLAG_BOUND
    } else {
        0
    };
    if table.owner.is_some() {
        flags |= FLAG_OWNED;
    }
    if table.epoch_pending {
        flags |= FLAG_EPOCH_PENDING;
    }
    b[8..12].copy_from_slice(&flags.to_le_bytes());
    b[12..16].copy_from_slice(&(table.roots.len() as u32).to_le_bytes());
    b[16..32].copy_from_slice(&table.identity.unwrap_or(0).to_le_bytes());
    for (i, (name, root)) in table.roots.iter().enumerate() {
        let e = COPY_HEADER + i * ENTRY_BYTES;
        b[e..e + name.len()].copy_from_slice(name.as_bytes());
        b[e + ROOT_NAME_MAX..e + ENTRY_BYTES].copy_from_slice(&root.to_le_bytes());
    }
    b[OWNER_AT..OWNER_AT + 8].copy_from_slice(&table.owner.unwrap_or(0).to_le_bytes());
    b[EPOCH_AT..EPOCH_AT + 8].copy_from_slice(&table.epoch.to_le_bytes());
    let crc = copy_crc(at, &b);
    b[0..4].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The bytes of a new pool's directory, `[ROOT_DIRECTORY_OFFSET, HEADER_LEN)`: generation 0,
/// copy 0 holding an empty, unbound table.
pub(crate) fn initial_directory() -> Vec<u8> {
    let mut b = vec![0u8; ROOT_DIRECTORY_LEN as usize];
    b[..64].copy_from_slice(&header_line());
    b[64..72].copy_from_slice(&selector_word(0).to_le_bytes());
    let c0 = (ROOT_COPY_OFFSETS[0] - ROOT_DIRECTORY_OFFSET) as usize;
    b[c0..c0 + COPY].copy_from_slice(&encode_copy(&RootTable::default(), 0));
    b
}

/// Checks a table about to be written.
fn check_table(table: &RootTable) -> PmResult<()> {
    for name in table.roots.keys() {
        check_root_name(name)?;
    }
    if table.epoch_pending && table.epoch == 0 {
        return Err(PmError::InvalidArgument(
            "a pending epoch must be above 0".into(),
        ));
    }
    if table.roots.len() > ROOT_CAPACITY {
        return Err(PmError::NoSpace(format!(
            "the root directory holds at most {ROOT_CAPACITY} named roots ({} asked)",
            table.roots.len()
        )));
    }
    Ok(())
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// Decodes and validates the directory bytes `[ROOT_DIRECTORY_OFFSET, HEADER_LEN)`; damage
/// is `Corruption` at `location` (which names the directory), the reason naming the part.
pub(crate) fn decode(dir: &[u8], location: &str) -> PmResult<RootState> {
    let bad = |reason: String| PmError::Corruption {
        location: location.to_string(),
        reason,
    };
    debug_assert_eq!(dir.len() as u64, ROOT_DIRECTORY_LEN);
    let magic = u64_at(dir, 0);
    if magic != DIR_MAGIC {
        return Err(bad(format!(
            "root directory header at offset {ROOT_DIRECTORY_OFFSET}: bad magic {magic:#018x} \
             (expected {DIR_MAGIC:#018x})"
        )));
    }
    if u32_at(dir, 16) != crc32c::crc32c(&dir[..16]) {
        return Err(bad(format!(
            "root directory header at offset {ROOT_DIRECTORY_OFFSET} fails its checksum"
        )));
    }
    let (capacity, copy_bytes) = (u32_at(dir, 8), u32_at(dir, 12));
    if capacity as usize != ROOT_CAPACITY || copy_bytes as usize != COPY {
        return Err(bad(format!(
            "root directory header at offset {ROOT_DIRECTORY_OFFSET} records {capacity} roots \
             in copies of {copy_bytes} bytes (this build reads {ROOT_CAPACITY} in {COPY})"
        )));
    }
    let sel_at = (ROOT_SELECTOR_OFFSET - ROOT_DIRECTORY_OFFSET) as usize;
    let sel = u64_at(dir, sel_at);
    let generation = sel as u32;
    if sel != selector_word(generation) {
        return Err(bad(format!(
            "root selector at offset {ROOT_SELECTOR_OFFSET} ({sel:#018x}) fails its checksum"
        )));
    }
    let k = (generation & 1) as usize;
    let at = ROOT_COPY_OFFSETS[k];
    let c = (at - ROOT_DIRECTORY_OFFSET) as usize;
    let copy = &dir[c..c + COPY];
    let part = format!("root directory copy {k} at offset {at}");
    if u32_at(copy, 0) != copy_crc(at, copy) {
        return Err(bad(format!("{part} fails its checksum")));
    }
    let found = u32_at(copy, 4);
    if found != generation {
        return Err(bad(format!(
            "{part} holds generation {found}, the selector names {generation}"
        )));
    }
    let (flags, count) = (u32_at(copy, 8), u32_at(copy, 12) as usize);
    let identity = u128::from_le_bytes(copy[16..32].try_into().expect("16 bytes"));
    let owner = u64_at(copy, OWNER_AT);
    let epoch = u64_at(copy, EPOCH_AT);
    if flags & !(FLAG_BOUND | FLAG_OWNED | FLAG_EPOCH_PENDING) != 0
        || (flags & FLAG_BOUND == 0 && identity != 0)
        || (flags & FLAG_OWNED == 0 && owner != 0)
        || (flags & FLAG_EPOCH_PENDING != 0 && epoch == 0)
    {
        return Err(bad(format!("{part}: bad flags {flags:#x}")));
    }
    if count > ROOT_CAPACITY {
        return Err(bad(format!(
            "{part}: {count} roots (at most {ROOT_CAPACITY})"
        )));
    }
    let mut roots = BTreeMap::new();
    for i in 0..ROOT_CAPACITY {
        let e = &copy[COPY_HEADER + i * ENTRY_BYTES..COPY_HEADER + (i + 1) * ENTRY_BYTES];
        if i >= count {
            if e.iter().any(|&b| b != 0) {
                return Err(bad(format!("{part}: unused entry {i} is not zero")));
            }
            continue;
        }
        let raw = &e[..ROOT_NAME_MAX];
        let len = raw.iter().position(|&b| b == 0).unwrap_or(ROOT_NAME_MAX);
        let name = std::str::from_utf8(&raw[..len])
            .ok()
            .filter(|n| check_root_name(n).is_ok() && raw[len..].iter().all(|&b| b == 0))
            .ok_or_else(|| bad(format!("{part}: entry {i} has a bad name")))?;
        if roots
            .insert(name.to_string(), u64_at(e, ROOT_NAME_MAX))
            .is_some()
        {
            return Err(bad(format!("{part}: entry {i} repeats the name {name:?}")));
        }
    }
    if copy[EPOCH_AT + 8..].iter().any(|&b| b != 0) {
        return Err(bad(format!("{part}: padding is not zero")));
    }
    Ok(RootState {
        generation,
        table: RootTable {
            identity: (flags & FLAG_BOUND != 0).then_some(identity),
            roots,
            owner: (flags & FLAG_OWNED != 0).then_some(owner),
            epoch,
            epoch_pending: flags & FLAG_EPOCH_PENDING != 0,
        },
    })
}

impl PmPool {
    /// Where root-directory damage is reported.
    fn root_directory_location(&self) -> String {
        format!(
            "{} (root directory at offset {ROOT_DIRECTORY_OFFSET})",
            self.location()
        )
    }

    /// The durable state, loaded from PM and validated on first use; the update lock is held.
    fn root_state_locked(&self) -> PmResult<RootState> {
        if let Some(s) = &*self.roots().cache.read() {
            return Ok(s.clone());
        }
        let mut dir = vec![0u8; ROOT_DIRECTORY_LEN as usize];
        self.read(ROOT_DIRECTORY_OFFSET, &mut dir)?;
        let state = decode(&dir, &self.root_directory_location())?;
        *self.roots().cache.write() = Some(state.clone());
        Ok(state)
    }

    /// The root directory's table (identity and named roots), validated.
    ///
    /// Damage is `Corruption` naming the root directory and the damaged part.
    pub fn root_table(&self) -> PmResult<RootTable> {
        if let Some(s) = &*self.roots().cache.read() {
            return Ok(s.table.clone());
        }
        let _update = self.roots().update.lock();
        Ok(self.root_state_locked()?.table)
    }

    /// The root recorded under `name`, if any.
    pub fn named_root(&self, name: &str) -> PmResult<Option<u64>> {
        Ok(self.root_table()?.roots.get(name).copied())
    }

    /// Records `root` under `name` (added or replaced): one failure-atomic update, durable when
    /// this returns.
    pub fn set_named_root(&self, name: &str, root: u64) -> PmResult<()> {
        check_root_name(name)?;
        self.update_root_table(|t| {
            t.roots.insert(name.to_string(), root);
        })
    }

    /// Applies `change` to the root table as ONE failure-atomic update (see the module docs):
    /// after a crash the directory is the table before or after it, never a mix. Durable when
    /// this returns; nothing is written if `change` leaves the table as it was.
    ///
    /// A name that is not 1 to [`ROOT_NAME_MAX`] printable ASCII bytes is `InvalidArgument`,
    /// more than [`ROOT_CAPACITY`] roots `NoSpace` (the directory is then unchanged).
    pub fn update_root_table(&self, change: impl FnOnce(&mut RootTable)) -> PmResult<()> {
        let _update = self.roots().update.lock();
        let old = self.root_state_locked()?;
        let mut table = old.table.clone();
        change(&mut table);
        if table == old.table {
            return Ok(());
        }
        check_table(&table)?;
        let generation = old.generation.wrapping_add(1);
        let at = ROOT_COPY_OFFSETS[(generation & 1) as usize];
        // Persist point 1: the inactive copy holds the new table; the selector still names
        // the old one.
        self.write_reserved(at, &encode_copy(&table, generation))?;
        self.persist_reserved(at, ROOT_COPY_BYTES)?;
        // Persist point 2: one 8-byte store publishes the new copy.
        self.store_reserved_u64_persist(ROOT_SELECTOR_OFFSET, selector_word(generation))?;
        *self.roots().cache.write() = Some(RootState { generation, table });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> RootTable {
        let mut t = RootTable {
            identity: Some(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210),
            roots: BTreeMap::new(),
            owner: Some(0x0bad_cafe_0000_0001),
            epoch: 7,
            epoch_pending: true,
        };
        t.roots.insert("pmfs".into(), 1 << 20);
        t.roots.insert("x".repeat(ROOT_NAME_MAX), u64::MAX);
        t.roots.insert("btree".into(), 3 << 20);
        t
    }

    /// The directory bytes with `table` published as generation `g`, and copy `g + 1` left
    /// holding an older table (as after updates).
    fn directory(t: &RootTable, g: u32) -> Vec<u8> {
        let mut d = initial_directory();
        let older = encode_copy(&RootTable::default(), g.wrapping_sub(1));
        let new = encode_copy(t, g);
        for (copy, gen) in [(older, g.wrapping_sub(1)), (new, g)] {
            let c = (ROOT_COPY_OFFSETS[(gen & 1) as usize] - ROOT_DIRECTORY_OFFSET) as usize;
            d[c..c + COPY].copy_from_slice(&copy);
        }
        let s = (ROOT_SELECTOR_OFFSET - ROOT_DIRECTORY_OFFSET) as usize;
        d[s..s + 8].copy_from_slice(&selector_word(g).to_le_bytes());
        d
    }

    #[test]
    fn round_trip_in_both_copies_and_across_the_generation_wrap() {
        for g in [0, 1, 2, 7, u32::MAX] {
            let got = decode(&directory(&table(), g), "x").unwrap();
            assert_eq!((got.generation, got.table), (g, table()));
        }
        let empty = decode(&initial_directory(), "x").unwrap();
        assert_eq!((empty.generation, empty.table), (0, RootTable::default()));
    }

    /// A flipped bit in the header's checksummed bytes, the selector word or the current copy
    /// is corruption naming the part; a flipped bit in the other copy changes nothing.
    #[test]
    fn every_bit_flip_of_the_current_directory_is_corruption() {
        for g in [4u32, 5] {
            let good = directory(&table(), g);
            let cur = (ROOT_COPY_OFFSETS[(g & 1) as usize] - ROOT_DIRECTORY_OFFSET) as usize;
            let other = (ROOT_COPY_OFFSETS[(!g & 1) as usize] - ROOT_DIRECTORY_OFFSET) as usize;
            let sel = (ROOT_SELECTOR_OFFSET - ROOT_DIRECTORY_OFFSET) as usize;
            let checked = (0..20).chain(sel..sel + 8).chain(cur..cur + COPY);
            for byte in checked {
                for bit in 0..8 {
                    let mut d = good.clone();
                    d[byte] ^= 1 << bit;
                    match decode(&d, "pool (root directory at offset 192)") {
                        Err(PmError::Corruption { location, reason }) => {
                            assert!(location.contains("root directory"), "{location}");
                            assert!(reason.contains("root"), "{reason}");
                        }
                        other => panic!("byte {byte} bit {bit}: {other:?}"),
                    }
                }
            }
            for byte in other..other + COPY {
                let mut d = good.clone();
                d[byte] ^= 0x41;
                assert_eq!(decode(&d, "x").unwrap().table, table(), "byte {byte}");
            }
        }
    }

    #[test]
    fn names_and_capacity_are_checked() {
        for bad in [
            "",
            "with space",
            "é",
            "nul\0",
            &"y".repeat(ROOT_NAME_MAX + 1),
        ] {
            assert!(
                matches!(check_root_name(bad), Err(PmError::InvalidArgument(_))),
                "{bad:?}"
            );
        }
        let mut t = RootTable::default();
        for i in 0..=ROOT_CAPACITY {
            t.roots.insert(format!("r{i}"), i as u64);
        }
        assert!(matches!(check_table(&t), Err(PmError::NoSpace(_))));
        t.roots.pop_first();
        check_table(&t).unwrap();
        let d = directory(&t, 9);
        assert_eq!(decode(&d, "x").unwrap().table, t);
    }
}
