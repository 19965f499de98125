//! Appends records to a log file. Not thread-safe: the database's write leader owns it.

use super::{RecordType, BLOCK_SIZE, HEADER_SIZE};
use crate::fs::WritableFile;
use crate::util::crc;
use crate::Result;

/// Writes records in the record-log format to a [`WritableFile`].
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    block_offset: usize,
    scratch: Vec<u8>,
}

impl LogWriter {
    /// Starts a log at the beginning of an empty file.
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        LogWriter {
            file,
            block_offset: 0,
            scratch: Vec::new(),
        }
    }

    /// Appends one logical record and hands it to the OS (it survives a process crash when this
    /// returns Ok). Returns the bytes appended to the file (headers and padding included).
    pub fn add_record(&mut self, payload: &[u8]) -> Result<u64> {
        self.scratch.clear();
        let mut left = payload;
        let mut begin = true;
        loop {
            let leftover = BLOCK_SIZE - self.block_offset;
            if leftover < HEADER_SIZE {
                self.scratch
                    .extend_from_slice(&[0u8; HEADER_SIZE][..leftover]);
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let n = left.len().min(avail);
            let end = n == left.len();
            let t = match (begin, end) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, true) => RecordType::Last,
                (false, false) => RecordType::Middle,
            };
            self.emit(t, &left[..n]);
            left = &left[n..];
            begin = false;
            if end {
                break;
            }
        }
        self.file.append(&self.scratch)?;
        self.file.flush()?;
        Ok(self.scratch.len() as u64)
    }

    fn emit(&mut self, t: RecordType, fragment: &[u8]) {
        let crc = crc::mask(crc::crc32c_two(&[t as u8], fragment));
        self.scratch.extend_from_slice(&crc.to_le_bytes());
        self.scratch
            .extend_from_slice(&(fragment.len() as u16).to_le_bytes());
        self.scratch.push(t as u8);
        self.scratch.extend_from_slice(fragment);
        self.block_offset += HEADER_SIZE + fragment.len();
    }

    /// Bytes a record of `payload_len` bytes takes in the file when appended next (fragment
    /// headers and block padding included).
    pub fn physical_len(&self, payload_len: usize) -> u64 {
        let (mut offset, mut left, mut total) = (self.block_offset, payload_len, 0);
        loop {
            let leftover = BLOCK_SIZE - offset;
            if leftover < HEADER_SIZE {
                total += leftover;
                offset = 0;
            }
            let n = left.min(BLOCK_SIZE - offset - HEADER_SIZE);
            total += HEADER_SIZE + n;
            offset += HEADER_SIZE + n;
            left -= n;
            if left == 0 {
                return total as u64;
            }
        }
    }

    /// Takes the file space for the next record of `payload_len` bytes now (see
    /// [`WritableFile::reserve`]): out of space is reported here, before anything is appended.
    pub fn reserve_record(&mut self, payload_len: usize) -> Result<()> {
        let n = self.physical_len(payload_len);
        self.file.reserve(n)
    }

    /// Makes everything appended durable (fdatasync).
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Bytes in the file so far.
    pub fn size(&self) -> u64 {
        self.file.size()
    }
}
