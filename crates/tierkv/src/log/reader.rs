//! Reads records back from a whole log file held in memory, distinguishing a torn tail (tolerated)
//! from corruption in the middle (an error). Not thread-safe.

use super::{RecordType, BLOCK_SIZE, HEADER_SIZE};
use crate::util::crc;
use crate::{Error, Result};

/// How the log ended, known once [`LogReader::next_record`] returned `Ok(None)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TailStatus {
    /// Offset just past the last complete record.
    pub valid_end: u64,
    /// Bytes after `valid_end` that did not form a complete valid record (a torn or zeroed tail).
    pub dropped_bytes: u64,
}

/// Reads logical records from the contents of a log file.
pub struct LogReader {
    data: Vec<u8>,
    location: String,
    pos: usize,
    tail: TailStatus,
}

enum Physical {
    Record {
        t: RecordType,
        start: usize,
        len: usize,
    },
    Bad {
        why: &'static str,
    },
    Eof,
}

impl LogReader {
    /// Wraps the contents of a log file; `location` (the path) names it in errors.
    pub fn new(data: Vec<u8>, location: impl Into<String>) -> Self {
        LogReader {
            data,
            location: location.into(),
            pos: 0,
            tail: TailStatus::default(),
        }
    }

    /// The next logical record, `Ok(None)` at the end of the valid log (after a torn tail, see
    /// [`LogReader::tail`]), or `Err(Corruption)` when a damaged record is followed by valid ones.
    pub fn next_record(&mut self) -> Result<Option<Vec<u8>>> {
        let record_start = self.pos;
        let mut assembled: Option<Vec<u8>> = None;
        loop {
            let phys_start = self.pos;
            match self.read_physical() {
                Physical::Eof => return self.end_at(record_start, None, "eof"),
                Physical::Bad { why } => {
                    let bad_at = self.pos;
                    return self.end_at(record_start, Some(bad_at), why);
                }
                Physical::Record { t, start, len } => {
                    let frag = &self.data[start..start + len];
                    match (t, assembled.as_mut()) {
                        (RecordType::Full, None) => {
                            self.tail.valid_end = self.pos as u64;
                            return Ok(Some(frag.to_vec()));
                        }
                        (RecordType::First, None) => assembled = Some(frag.to_vec()),
                        (RecordType::Middle, Some(buf)) => buf.extend_from_slice(frag),
                        (RecordType::Last, Some(buf)) => {
                            buf.extend_from_slice(frag);
                            self.tail.valid_end = self.pos as u64;
                            return Ok(assembled);
                        }
                        _ => {
                            return self.end_at(
                                record_start,
                                Some(phys_start),
                                "fragment out of order",
                            );
                        }
                    }
                }
            }
        }
    }

    /// How the log ended. Meaningful after `next_record` returned `Ok(None)`.
    pub fn tail(&self) -> TailStatus {
        self.tail
    }

    /// Ends reading at `record_start`: a clean end, a torn tail, or corruption if a valid record
    /// exists after the damaged physical record at `bad_at`.
    fn end_at(
        &mut self,
        record_start: usize,
        bad_at: Option<usize>,
        why: &str,
    ) -> Result<Option<Vec<u8>>> {
        if let Some(bad_at) = bad_at {
            if let Some(at) = find_valid_record(&self.data, bad_at + 1) {
                return Err(Error::corruption(
                    format!("{} at offset {record_start}", self.location),
                    format!("damaged log record ({why}) followed by a valid record at offset {at}"),
                ));
            }
        }
        self.tail.valid_end = record_start as u64;
        self.tail.dropped_bytes = (self.data.len() - record_start.min(self.data.len())) as u64;
        self.pos = self.data.len();
        Ok(None)
    }

    fn read_physical(&mut self) -> Physical {
        loop {
            let in_block = self.pos % BLOCK_SIZE;
            let left_in_block = BLOCK_SIZE - in_block;
            if left_in_block < HEADER_SIZE {
                // Block trailer padding; must be zeros.
                let end = (self.pos + left_in_block).min(self.data.len());
                if self.data[self.pos.min(end)..end].iter().any(|&b| b != 0) {
                    return Physical::Bad {
                        why: "non-zero block padding",
                    };
                }
                self.pos = end;
                if self.pos >= self.data.len() {
                    return Physical::Eof;
                }
                continue;
            }
            if self.pos >= self.data.len() {
                return Physical::Eof;
            }
            if self.data.len() - self.pos < HEADER_SIZE {
                return Physical::Bad {
                    why: "truncated header",
                };
            }
            return match parse_at(&self.data, self.pos) {
                Ok((t, len)) => {
                    let start = self.pos + HEADER_SIZE;
                    self.pos = start + len;
                    Physical::Record { t, start, len }
                }
                Err(why) => Physical::Bad { why },
            };
        }
    }
}

/// Parses and verifies the physical record at `pos`.
fn parse_at(data: &[u8], pos: usize) -> std::result::Result<(RecordType, usize), &'static str> {
    let h = data.get(pos..pos + HEADER_SIZE).ok_or("truncated header")?;
    let stored = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let len = u16::from_le_bytes([h[4], h[5]]) as usize;
    let type_byte = h[6];
    if type_byte == 0 && len == 0 && stored == 0 {
        return Err("zeroed record");
    }
    let t = RecordType::from_u8(type_byte).ok_or("unknown record type")?;
    if pos % BLOCK_SIZE + HEADER_SIZE + len > BLOCK_SIZE {
        return Err("record crosses a block boundary");
    }
    let payload = data
        .get(pos + HEADER_SIZE..pos + HEADER_SIZE + len)
        .ok_or("truncated record")?;
    if crc::unmask(stored) != crc::crc32c_two(&[type_byte], payload) {
        return Err("checksum mismatch");
    }
    Ok((t, len))
}

/// The first offset `>= from` holding a complete, checksum-valid physical record that starts a
/// logical record (FULL or FIRST), if any.
///
/// A MIDDLE or LAST fragment after damage does not count: it belongs to the damaged logical
/// record itself, whose fragments an interrupted append may have left durable in any order
/// (a PM log persists one append with one fence, so its lines land in any order). Only a
/// logical record that starts after the damage proves the damage is not a torn tail.
fn find_valid_record(data: &[u8], from: usize) -> Option<usize> {
    (from..data.len().saturating_sub(HEADER_SIZE - 1)).find(|&p| {
        BLOCK_SIZE - p % BLOCK_SIZE >= HEADER_SIZE
            && matches!(
                parse_at(data, p),
                Ok((RecordType::Full | RecordType::First, _))
            )
    })
}
