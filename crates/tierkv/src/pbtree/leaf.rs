//! The leaf format in PM: the two layouts (objects, inline words), slots and their check
//! bits, the leaf header, and the images a leaf and an object are written from.

use super::*;

/// Slots per leaf of the [`Layout::Objects`] layout (the most of either layout).
pub(crate) const LEAF_SLOTS: usize = 48;

/// Slots per leaf of the [`Layout::Inline`] layout.
pub(crate) const INLINE_SLOTS: usize = 30;

/// The longest key an [`Layout::Inline`] slot holds in place; longer keys are objects.
pub(crate) const INLINE_KEY: usize = 23;

/// A leaf's slab slot.
pub(super) const LEAF_BYTES: u64 = 1024;

pub(super) const LEAF_HEADER: usize = 64;

pub(super) const OBJECTS_MAGIC: u64 = u64::from_le_bytes(*b"TKVBLEAF");

pub(super) const INLINE_MAGIC: u64 = u64::from_le_bytes(*b"TKVLLEAF");

/// An inline slot's tag for a key held as an object.
pub(super) const LONG_TAG: u8 = 0xFF;

pub(super) const OBJECT_HEADER: usize = 16;

pub(super) const OFFSET_MASK: u64 = (1 << 48) - 1;

/// How a tree's leaves hold keys and payloads (module docs). Chosen per tree when it is
/// opened; the existing trees (SLM-DB's global index) use [`Layout::Objects`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `TKVBLEAF`: 48 slots `{fingerprint, object word}`; each key and its payload (of any
    /// length) is one object, and an update writes a new object and swaps the pointer.
    Objects,
    /// `TKVLLEAF`: 30 slots of 32 bytes `{payload word, tag, key}`; the payload is exactly one
    /// 8-byte word, updated in place by one persisted store; keys over [`INLINE_KEY`] bytes are
    /// objects with an empty payload.
    Inline,
}

impl Layout {
    /// Slots per leaf.
    pub(crate) fn slots(self) -> usize {
        match self {
            Layout::Objects => LEAF_SLOTS,
            Layout::Inline => INLINE_SLOTS,
        }
    }

    pub(super) fn slot_size(self) -> usize {
        match self {
            Layout::Objects => 16,
            Layout::Inline => 32,
        }
    }

    pub(super) fn magic(self) -> u64 {
        match self {
            Layout::Objects => OBJECTS_MAGIC,
            Layout::Inline => INLINE_MAGIC,
        }
    }

    /// The bitmap with every slot valid.
    pub(super) fn all_slots(self) -> u64 {
        (1 << self.slots()) - 1
    }

    /// The bytes of a leaf that are read and written: header and slots.
    pub(super) fn leaf_used(self) -> usize {
        LEAF_HEADER + self.slots() * self.slot_size()
    }

    /// The PM offset of slot `i` of the leaf at `leaf`.
    pub(super) fn slot_at(self, leaf: u64, i: usize) -> u64 {
        leaf + (LEAF_HEADER + self.slot_size() * i) as u64
    }
}

/// A key's fingerprint: a first filter before the key itself is compared.
pub(super) fn fingerprint(key: &[u8]) -> u64 {
    u64::from(crc32c(key)) | (key.len() as u64) << 32
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// One valid slot as read from PM, checked. Equality is "the same entry" (the torn-split
/// rule): the address-dependent check bits are not part of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    /// An invalid slot (its bitmap bit is clear; its bytes are not read).
    Free,
    /// Objects layout: the key's fingerprint and the object holding key and payload.
    Object { fp: u64, obj: u64 },
    /// Inline layout, a key of at most [`INLINE_KEY`] bytes held in the slot.
    Short {
        word: u64,
        len: u8,
        key: [u8; INLINE_KEY],
    },
    /// Inline layout, a longer key: its fingerprint and the object holding it.
    Long { word: u64, fp: u64, obj: u64 },
}

impl Slot {
    /// The object the slot references, if any.
    pub(super) fn object(&self) -> Option<u64> {
        match *self {
            Slot::Object { obj, .. } | Slot::Long { obj, .. } => Some(obj),
            Slot::Free | Slot::Short { .. } => None,
        }
    }

    /// The slot's image at PM offset `s` (16 or 32 bytes by layout).
    pub(super) fn image(&self, s: u64) -> Vec<u8> {
        match *self {
            Slot::Free => unreachable!("a free slot is never written"),
            Slot::Object { fp, obj } => {
                let mut b = vec![0u8; 16];
                b[..8].copy_from_slice(&fp.to_le_bytes());
                b[8..].copy_from_slice(&encode_checked(s + 8, obj).to_le_bytes());
                b
            }
            Slot::Short { word, len, key } => {
                let mut b = vec![0u8; 32];
                b[..8].copy_from_slice(&word.to_le_bytes());
                b[8] = len;
                b[9..9 + usize::from(len)].copy_from_slice(&key[..usize::from(len)]);
                b
            }
            Slot::Long { word, fp, obj } => {
                let mut b = vec![0u8; 32];
                b[..8].copy_from_slice(&word.to_le_bytes());
                b[8] = LONG_TAG;
                b[12..16].copy_from_slice(&(fp as u32).to_le_bytes());
                b[16..20].copy_from_slice(&((fp >> 32) as u32).to_le_bytes());
                b[24..32].copy_from_slice(&encode_checked(s + 24, obj).to_le_bytes());
                b
            }
        }
    }
}

/// A leaf as read from PM, checked.
#[derive(Clone)]
pub(super) struct Leaf {
    pub(super) at: u64,
    pub(super) bits: u64,
    pub(super) next: u64,
    /// Per slot (the layout's count; [`Slot::Free`] where the bit is clear).
    pub(super) slots: Vec<Slot>,
}

impl Leaf {
    pub(super) fn valid(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.slots.len()).filter(|i| self.bits & (1 << i) != 0)
    }

    pub(super) fn free_slot(&self) -> Option<usize> {
        (0..self.slots.len()).find(|i| self.bits & (1 << i) == 0)
    }
}

pub(super) fn object_crc(at: u64, lens: &[u8], body: &[u8]) -> u32 {
    let mut b = Vec::with_capacity(16 + body.len());
    b.extend_from_slice(&at.to_le_bytes());
    b.extend_from_slice(lens);
    b.extend_from_slice(body);
    crc32c(&b)
}

pub(super) fn leaf_header(layout: Layout, at: u64) -> [u8; LEAF_HEADER] {
    let mut h = [0u8; LEAF_HEADER];
    h[16..24].copy_from_slice(&layout.magic().to_le_bytes());
    h[24..32].copy_from_slice(&at.to_le_bytes());
    let crc = mask(crc32c(&h[16..32]));
    h[32..36].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The leaf image of a new leaf at `at` with `slots` in slots 0.. (each encoded for its new
/// address) and next leaf `next`.
pub(super) fn leaf_image(layout: Layout, at: u64, slots: &[Slot], next: u64) -> Vec<u8> {
    let mut b = leaf_header(layout, at).to_vec();
    b.resize(layout.leaf_used(), 0);
    let bits = if slots.is_empty() {
        0
    } else {
        layout.all_slots() >> (layout.slots() - slots.len())
    };
    b[0..8].copy_from_slice(&encode_checked(at, bits).to_le_bytes());
    b[8..16].copy_from_slice(&encode_checked(at + 8, next).to_le_bytes());
    for (i, slot) in slots.iter().enumerate() {
        let o = LEAF_HEADER + layout.slot_size() * i;
        let image = slot.image(layout.slot_at(at, i));
        b[o..o + image.len()].copy_from_slice(&image);
    }
    b
}

/// The word of an inline payload (always 8 bytes: [`PbTree::upsert`] refuses others).
pub(super) fn word_of(p: &[u8]) -> u64 {
    u64::from_le_bytes(p.try_into().expect("an inline payload is 8 bytes"))
}

pub(super) fn object_image(at: u64, key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(OBJECT_HEADER + key.len() + payload.len());
    b.extend_from_slice(&(key.len() as u32).to_le_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.extend_from_slice(&[0u8; 8]);
    b.extend_from_slice(key);
    b.extend_from_slice(payload);
    let crc = mask(object_crc(at, &b[..8], &b[OBJECT_HEADER..]));
    b[8..12].copy_from_slice(&crc.to_le_bytes());
    b
}
