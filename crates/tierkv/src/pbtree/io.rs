//! The I/O half of a tree, shared by open and updates: reads and checks of leaves and objects
//! in the pool, and their durable writes.

use super::*;

/// Reads and checks the structures of one tree: the I/O half, shared by open and updates.
pub(super) struct Pm {
    pub(super) pool: Arc<PmPool>,
    pub(super) location: String,
    pub(super) layout: Layout,
    /// Bytes of cache lines written back since the last [`PbTree::take_persisted_bytes`].
    pub(super) persisted: std::sync::atomic::AtomicU64,
}

impl Pm {
    pub(super) fn bad(&self, why: String) -> Error {
        Error::corruption(self.location.clone(), why)
    }

    pub(super) fn read_leaf(&self, at: u64) -> Result<Leaf> {
        let layout = self.layout;
        let mut b = vec![0u8; layout.leaf_used()];
        if at
            .checked_add(LEAF_BYTES)
            .is_none_or(|e| e > self.pool.size())
        {
            return Err(self.bad(format!("PM tree leaf pointer {at} is outside the pool")));
        }
        self.pool.read(at, &mut b)?;
        if u64_at(&b, 16) != layout.magic()
            || u64_at(&b, 24) != at
            || unmask(u32_at(&b, 32)) != crc32c(&b[16..32])
        {
            return Err(self.bad(format!("PM tree leaf at {at}: bad header")));
        }
        let bits = decode_checked(at, u64_at(&b, 0))
            .filter(|bits| bits & !layout.all_slots() == 0)
            .ok_or_else(|| self.bad(format!("PM tree leaf at {at}: bitmap fails its check")))?;
        let next = decode_checked(at + 8, u64_at(&b, 8))
            .ok_or_else(|| self.bad(format!("PM tree leaf at {at}: next link fails its check")))?;
        let mut slots = vec![Slot::Free; layout.slots()];
        for (i, s) in slots.iter_mut().enumerate() {
            if bits & (1 << i) != 0 {
                let o = LEAF_HEADER + layout.slot_size() * i;
                let image = &b[o..o + layout.slot_size()];
                *s = self
                    .decode_slot(layout.slot_at(at, i), image)
                    .ok_or_else(|| {
                        self.bad(format!("PM tree leaf at {at}: slot {i} fails its check"))
                    })?;
            }
        }
        Ok(Leaf {
            at,
            bits,
            next,
            slots,
        })
    }

    /// The valid slot at PM offset `s` with bytes `b`, or `None` if it fails its checks.
    pub(super) fn decode_slot(&self, s: u64, b: &[u8]) -> Option<Slot> {
        let zero = |r: std::ops::Range<usize>| b[r].iter().all(|&x| x == 0);
        match self.layout {
            Layout::Objects => Some(Slot::Object {
                fp: u64_at(b, 0),
                obj: decode_checked(s + 8, u64_at(b, 8))?,
            }),
            Layout::Inline => {
                let word = u64_at(b, 0);
                let tag = b[8];
                if usize::from(tag) <= INLINE_KEY {
                    let len = usize::from(tag);
                    if !zero(9 + len..32) {
                        return None;
                    }
                    let mut key = [0u8; INLINE_KEY];
                    key[..len].copy_from_slice(&b[9..9 + len]);
                    Some(Slot::Short {
                        word,
                        len: tag,
                        key,
                    })
                } else if tag == LONG_TAG {
                    let len = u32_at(b, 16);
                    if !zero(9..12) || !zero(20..24) || (len as usize) <= INLINE_KEY {
                        return None;
                    }
                    Some(Slot::Long {
                        word,
                        fp: u64::from(u32_at(b, 12)) | u64::from(len) << 32,
                        obj: decode_checked(s + 24, u64_at(b, 24))?,
                    })
                } else {
                    None
                }
            }
        }
    }

    /// Reads the object at `at`: key, payload and its size class.
    pub(super) fn read_object(&self, at: u64) -> Result<(Vec<u8>, Vec<u8>, u32)> {
        let mut h = [0u8; OBJECT_HEADER];
        if at
            .checked_add(OBJECT_HEADER as u64)
            .is_none_or(|e| e > self.pool.size())
        {
            return Err(self.bad(format!("PM tree object pointer {at} is outside the pool")));
        }
        self.pool.read(at, &mut h)?;
        let (klen, plen) = (u64::from(u32_at(&h, 0)), u64::from(u32_at(&h, 4)));
        let total = OBJECT_HEADER as u64 + klen + plen;
        let class = class_of(total);
        if total > self.pool.chunk_size() || at + total > self.pool.size() {
            return Err(self.bad(format!("PM tree object at {at}: bad lengths")));
        }
        let mut body = vec![0u8; (klen + plen) as usize];
        self.pool.read(at + OBJECT_HEADER as u64, &mut body)?;
        if unmask(u32_at(&h, 8)) != object_crc(at, &h[..8], &body) {
            return Err(self.bad(format!("PM tree object at {at} fails its checksum")));
        }
        let payload = body.split_off(klen as usize);
        Ok((body, payload, class))
    }

    /// The key of a valid slot.
    pub(super) fn key_of(&self, slot: &Slot) -> Result<Vec<u8>> {
        Ok(self.entry_of(slot)?.0)
    }

    /// The key and payload of a valid slot. A long inline key's object must hold the key
    /// alone.
    pub(super) fn entry_of(&self, slot: &Slot) -> Result<Entry> {
        match *slot {
            Slot::Free => unreachable!("only valid slots are read"),
            Slot::Object { obj, .. } => {
                let (k, p, _) = self.read_object(obj)?;
                Ok((k, p))
            }
            Slot::Short { word, len, key } => Ok((
                key[..usize::from(len)].to_vec(),
                word.to_le_bytes().to_vec(),
            )),
            Slot::Long { word, obj, .. } => {
                let (k, p, _) = self.read_object(obj)?;
                if !p.is_empty() {
                    return Err(self.bad(format!(
                        "PM tree object at {obj}: a long key's object holds a payload"
                    )));
                }
                Ok((k, word.to_le_bytes().to_vec()))
            }
        }
    }

    /// Checks that a slot's fingerprint (Objects, long inline keys) matches its key.
    pub(super) fn check_fingerprint(
        &self,
        leaf: u64,
        i: usize,
        slot: &Slot,
        key: &[u8],
    ) -> Result<()> {
        match *slot {
            Slot::Object { fp, .. } | Slot::Long { fp, .. } if fp != fingerprint(key) => Err(self
                .bad(format!(
                    "PM tree leaf at {leaf}: slot {i}'s fingerprint does not match its key"
                ))),
            _ => Ok(()),
        }
    }

    /// Writes back and fences `ranges` (with msync where the pool's mode needs it).
    pub(super) fn persist(&self, ranges: &[(u64, u64)]) -> Result<()> {
        let lines: u64 = ranges
            .iter()
            .map(|&(at, len)| (at + len).div_ceil(64) - at / 64)
            .sum();
        self.persisted
            .fetch_add(lines * 64, std::sync::atomic::Ordering::Relaxed);
        self.pool.flush_ranges(ranges)?;
        self.pool.fence();
        if self.pool.msync_on_persist() {
            for &(at, len) in ranges {
                self.pool.msync(at, len)?;
            }
        }
        Ok(())
    }

    /// Stores the checked word of `value` at `at`, persisted.
    pub(super) fn store_persist(&self, at: u64, value: u64) -> Result<()> {
        self.store_raw_persist(at, encode_checked(at, value))
    }

    /// Stores the 64-bit `word` as it is at `at` (an inline payload word), persisted.
    pub(super) fn store_raw_persist(&self, at: u64, word: u64) -> Result<()> {
        self.persisted
            .fetch_add(64, std::sync::atomic::Ordering::Relaxed);
        self.pool.store_u64_persist(at, word)?;
        Ok(())
    }
}
