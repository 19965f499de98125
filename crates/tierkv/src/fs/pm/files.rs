//! Files on PM: the writable (appends, in place or non-temporal), the readable (reads in
//! place) and word access for structures that live in a file.

use super::*;

pub(crate) struct PmWritable {
    pub(super) fs: PmFs,
    pub(super) file: Arc<PmFile>,
    pub(super) path: PathBuf,
    /// The class of the file's later chunks (`Log` or `Table`).
    pub(super) class: ChunkClass,
    /// Chunks of the file, and the offset of the last one (only this writer adds chunks).
    pub(super) chunk_count: u64,
    pub(super) last_chunk: u64,
    /// The chunk that receives the next appended byte: (index in the file, offset).
    pub(super) write_chunk: (u64, u64),
    pub(super) written: u64,
    pub(super) persisted: u64,
    pub(super) msynced: u64,
    /// Pool ranges stored with ordinary stores since the last `flush` (to write back).
    pub(super) to_write_back: Vec<(u64, u64)>,
}

impl PmWritable {
    /// `msync`s the data persisted since the last msync, and the file's entry.
    pub(super) fn msync_persisted(&mut self) -> Result<()> {
        if self.msynced == self.persisted {
            return Ok(());
        }
        let pool = Arc::clone(&self.fs.pool);
        let from = self.msynced;
        self.pieces(from, self.persisted, |at, _, n| Ok(pool.msync(at, n)?))?;
        pool.msync(self.file.entry, ENTRY_BYTES)?;
        self.msynced = self.persisted;
        Ok(())
    }

    /// Calls `f(pool offset, file offset, len)` for each chunk piece of `[from, to)`.
    pub(super) fn pieces(
        &self,
        from: u64,
        to: u64,
        mut f: impl FnMut(u64, u64, u64) -> Result<()>,
    ) -> Result<()> {
        let chunks = self.file.chunks.read();
        let dpc = self.fs.data_per_chunk;
        let mut pos = from;
        while pos < to {
            let (idx, within) = (pos / dpc, pos % dpc);
            let n = (to - pos).min(dpc - within);
            f(chunks[idx as usize] + CHUNK_HEADER_BYTES + within, pos, n)?;
            pos += n;
        }
        Ok(())
    }

    /// Links one more chunk at the end of the file.
    pub(super) fn add_chunk(&mut self) -> Result<()> {
        let c = self.fs.new_chunk(self.class)?;
        let linked = self
            .fs
            .pool
            .store_u64_persist(self.last_chunk, encode_link(self.last_chunk, c));
        if let Err(e) = linked {
            self.fs.release_chunk(c, self.class);
            return Err(with_path(e.into(), "append", &self.path));
        }
        self.file.chunks.write().push(c);
        self.chunk_count += 1;
        self.last_chunk = c;
        Ok(())
    }
}

impl WritableFile for PmWritable {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        let dpc = self.fs.data_per_chunk;
        if self.written + data.len() as u64 > SIZE_MAX {
            return Err(Error::InvalidArgument(format!(
                "{}: a PM file is limited to {SIZE_MAX} bytes",
                self.path.display()
            )));
        }
        while !data.is_empty() {
            let (idx, within) = (self.written / dpc, self.written % dpc);
            if idx == self.chunk_count {
                self.add_chunk()?;
            }
            if self.write_chunk.0 != idx {
                // Chunks linked ahead by `reserve` are looked up once each.
                self.write_chunk = (idx, self.file.chunks.read()[idx as usize]);
            }
            let n = (data.len() as u64).min(dpc - within) as usize;
            let at = self.write_chunk.1 + CHUNK_HEADER_BYTES + within;
            if n >= NT_MIN_BYTES {
                self.fs.pool.write_nt(at, &data[..n])?;
            } else {
                self.fs.pool.write(at, &data[..n])?;
                match self.to_write_back.last_mut() {
                    Some((start, len)) if *start + *len == at => *len += n as u64,
                    _ => self.to_write_back.push((at, n as u64)),
                }
            }
            data = &data[n..];
            self.written += n as u64;
        }
        Ok(())
    }

    fn reserve(&mut self, additional: u64) -> Result<()> {
        let need = (self.written + additional).div_ceil(self.fs.data_per_chunk);
        while self.chunk_count < need {
            self.add_chunk()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.written == self.persisted {
            return Ok(());
        }
        let pool = &self.fs.pool;
        // One fence covers the data lines and the new size: a crash before it completes may
        // leave the size covering a torn tail (see the module docs). All lines are written back
        // by one call, so no counter update stalls between the write-backs.
        let entry = self.file.entry;
        pool.store_u64(entry + 8, encode_checked(entry, self.written))?;
        self.to_write_back.push((entry + 8, 8));
        let flushed = pool.flush_ranges(&self.to_write_back);
        self.to_write_back.clear();
        flushed.map_err(|e| with_path(e.into(), "flush", &self.path))?;
        pool.fence();
        self.persisted = self.written;
        self.file.size.store(self.written, Ordering::Release);
        if pool.msync_on_persist() {
            self.msync_persisted()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.msync_persisted()
    }

    fn size(&self) -> u64 {
        self.written
    }
}

pub(crate) fn with_path(e: Error, op: &'static str, path: &Path) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::io(op, path, std::io::Error::other(m)),
        other => other,
    }
}

pub(crate) struct PmReadable {
    pub(super) fs: PmFs,
    pub(super) file: Arc<PmFile>,
    pub(super) path: PathBuf,
    pub(super) size: u64,
}

/// Reads `buf.len()` bytes at `offset` of `file`, whose content is its first `size` bytes.
pub(super) fn read_file(
    fs: &PmFs,
    file: &PmFile,
    path: &Path,
    size: u64,
    offset: u64,
    buf: &mut [u8],
) -> Result<()> {
    let end = offset.checked_add(buf.len() as u64);
    if end.is_none_or(|e| e > size) {
        return Err(Error::io(
            "read",
            path,
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "read past the end of a PM file",
            ),
        ));
    }
    let chunks = file.chunks.read();
    let dpc = fs.data_per_chunk;
    let mut pos = offset;
    let mut out = &mut buf[..];
    while !out.is_empty() {
        let (idx, within) = (pos / dpc, pos % dpc);
        let n = (out.len() as u64).min(dpc - within) as usize;
        let at = chunk_at(&chunks, idx, path, pos)? + CHUNK_HEADER_BYTES + within;
        fs.pool.read(at, &mut out[..n])?;
        out = &mut out[n..];
        pos += n as u64;
    }
    Ok(())
}

/// Chunk `idx` of a file (`Corruption` naming `path` and file offset `pos` for a hole).
pub(crate) fn chunk_at(chunks: &[u64], idx: u64, path: &Path, pos: u64) -> Result<u64> {
    match chunks.get(idx as usize) {
        Some(&c) if c != 0 => Ok(c),
        _ => Err(Error::corruption(
            format!("{} at offset {pos}", path.display()),
            "read of a range whose chunks were freed",
        )),
    }
}

impl RandomAccessFile for PmReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        read_file(&self.fs, &self.file, &self.path, self.size, offset, buf)
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// A handle on a PM file for a structure linked inside it (the persistent skiplist memtable):
/// reads up to the file's current persisted size, and 8-byte loads and persisted stores at
/// 8-aligned offsets inside it. The file's appends still go through its [`WritableFile`];
/// a store here changes bytes the file already holds, in place.
pub(crate) struct PmWords {
    pub(super) fs: PmFs,
    pub(super) file: Arc<PmFile>,
    pub(super) path: PathBuf,
}

impl PmWords {
    /// The file's persisted size.
    pub(crate) fn size(&self) -> u64 {
        self.file.size.load(Ordering::Acquire)
    }

    /// Reads `buf.len()` bytes at `offset` (inside the persisted size).
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        read_file(&self.fs, &self.file, &self.path, self.size(), offset, buf)
    }

    /// The pool offset of the word at file offset `offset`.
    pub(super) fn word(&self, offset: u64) -> Result<u64> {
        if !offset.is_multiple_of(8) || offset + 8 > self.size() {
            return Err(Error::InvalidArgument(format!(
                "{}: word offset {offset} not 8-aligned inside the file",
                self.path.display()
            )));
        }
        let dpc = self.fs.data_per_chunk;
        let chunks = self.file.chunks.read();
        Ok(
            chunk_at(&chunks, offset / dpc, &self.path, offset)?
                + CHUNK_HEADER_BYTES
                + offset % dpc,
        )
    }

    /// The 8-byte word at `offset` (atomic, Acquire).
    pub(crate) fn load_u64(&self, offset: u64) -> Result<u64> {
        Ok(self.fs.pool.load_u64(self.word(offset)?)?)
    }

    /// Stores the 8-byte word at `offset` (atomic, Release) and persists it.
    pub(crate) fn store_u64_persist(&self, offset: u64, value: u64) -> Result<()> {
        Ok(self.fs.pool.store_u64_persist(self.word(offset)?, value)?)
    }

    /// Writes `data` at `offset` (inside the persisted size) in place and persists it: every
    /// line written back, then one fence per chunk the range touches (`msync` too in the
    /// pool's `Msync` mode). A crash before it returns leaves any mix of old and new bytes.
    pub(crate) fn write_persist(&self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset.checked_add(data.len() as u64);
        if end.is_none_or(|e| e > self.size()) {
            return Err(Error::InvalidArgument(format!(
                "{}: write of {} bytes at {offset} past the file's {} bytes",
                self.path.display(),
                data.len(),
                self.size()
            )));
        }
        let dpc = self.fs.data_per_chunk;
        let chunks = self.file.chunks.read();
        let mut pos = 0usize;
        while pos < data.len() {
            let at = offset + pos as u64;
            let (idx, within) = (at / dpc, at % dpc);
            let n = ((data.len() - pos) as u64).min(dpc - within) as usize;
            let pool_at = chunk_at(&chunks, idx, &self.path, at)? + CHUNK_HEADER_BYTES + within;
            self.fs.pool.write(pool_at, &data[pos..pos + n])?;
            self.fs.pool.persist(pool_at, n as u64)?;
            pos += n;
        }
        Ok(())
    }

    /// `msync`s the range `[offset, offset + len)` of the file (a sync write), whatever the
    /// pool's mode.
    pub(crate) fn msync(&self, offset: u64, len: u64) -> Result<()> {
        let dpc = self.fs.data_per_chunk;
        let chunks = self.file.chunks.read();
        let (mut pos, end) = (offset, (offset + len).min(self.size()));
        while pos < end {
            let (idx, within) = (pos / dpc, pos % dpc);
            let n = (end - pos).min(dpc - within);
            let c = chunk_at(&chunks, idx, &self.path, pos)?;
            self.fs.pool.msync(c + CHUNK_HEADER_BYTES + within, n)?;
            pos += n;
        }
        Ok(())
    }
}
