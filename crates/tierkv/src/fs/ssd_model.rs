//! The SSD model: a [`FileSystem`] wrapper that makes the SSD tier behave like a device of a
//! given bandwidth, on machines whose "SSD" is a virtual disk absorbed by the page cache.
//!
//! [`SsdModelFs`] wraps any file system (the POSIX one, or the in-memory one of the tests) and
//! applies [`SsdModelOptions`]:
//!
//! * **Write cap.** Every byte appended to an SSD file (WAL, manifest, `CURRENT`, flushed and
//!   compacted tables) takes tokens from one write [`TokenBucket`] before it is handed to the
//!   wrapped file; a writer that finds the bucket empty sleeps until its bytes are paid for.
//!   Bytes are charged at `append`, by the thread that produced them (the write leader for the
//!   WAL, the flush and compaction threads for tables): on a real device behind the page cache,
//!   bandwidth reaches writers as dirty-page throttling inside `write`, in proportion to the
//!   bytes written, not only at `fsync` (an unsynced WAL would otherwise never pay). Every
//!   appended byte reaches the device eventually, so charging at `append` rather than at
//!   `flush` changes only the granularity, not the rate, and needs no knowledge of the wrapped
//!   file's user-space buffer.
//! * **Read cap.** Every `read_exact_at` (and so every `read_all`) of an SSD file takes tokens
//!   from one read bucket: the requested bytes, or with direct reads the aligned range the
//!   device transfers.
//! * **Direct reads.** Files are opened with [`FileSystem::open_readable_direct`] (`O_DIRECT`,
//!   see `direct.rs`): every SSD read (tables, and the WALs, manifest and `CURRENT` read at
//!   recovery) bypasses the page cache. Only [`super::PosixFs`] implements it, on a file system
//!   that accepts `O_DIRECT` and is not in RAM; anywhere else opening the database fails. The
//!   check runs when the database takes its lock (the first file an open touches), so an
//!   unsupported location fails the open, not a later read.
//!
//! The buckets are shared by every file of the wrapper: one device, one bandwidth per
//! direction. Waiting sleeps (through a [`Clock`], which tests replace so that no test depends
//! on wall-clock time). Writes and reads of the PM pool never pass here: the model wraps only
//! `Options::fs`, the SSD tier's file system.

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::{Error, Result};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The smallest non-zero bandwidth cap: 1 MB/s. Below it a 64 MiB memtable flush takes minutes.
pub const MIN_SSD_BYTES_PER_SEC: u64 = 1_000_000;

/// The smallest burst of a bucket: 1 MiB, so that one large request (a WAL group of up to
/// 1 MiB, a table's buffered output) is not split into waits at low rates.
pub const MIN_BURST_BYTES: u64 = 1 << 20;

/// A bucket's burst is `rate / BURST_DIVISOR` bytes (50 ms of bandwidth) when that exceeds
/// [`MIN_BURST_BYTES`]: the device may run ahead of its rate by at most that much.
pub const BURST_DIVISOR: u64 = 20;

const NANOS: i128 = 1_000_000_000;

/// The SSD model's options: device limits applied to the SSD tier's file system
/// ([`SsdModelFs`]), so that a disk absorbed by the page cache behaves like an SSD. Off by
/// default; the PM pool is never affected.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SsdModelOptions {
    /// Cap on the bytes written to the SSD tier per second, over all its files together (WAL,
    /// manifest, flushed and compacted tables): a writer waits (sleeping) once a token bucket
    /// with a burst of 1/20 s of bandwidth (at least 1 MiB) is empty. Foreground writes slow
    /// down through their WAL appends, flushes and compactions through their table writes,
    /// and write stalls follow when they fall behind. 0 turns the cap off; otherwise at least
    /// 1,000,000 (1 MB/s). Default 0.
    pub write_bytes_per_sec: u64,
    /// Cap on the bytes read from the SSD tier per second (user reads that miss the block
    /// cache, compaction reads, recovery reads), with a bucket like the write cap's. Without
    /// `direct_reads` the page cache may still serve the data, but every read is charged as if
    /// the device served it. 0 turns the cap off; otherwise at least 1,000,000. Default 0.
    pub read_bytes_per_sec: u64,
    /// Read every SSD file with `O_DIRECT`, bypassing the page cache (RocksDB's
    /// `use_direct_reads`). Needs the POSIX file system on a file system that supports
    /// `O_DIRECT` and is not in RAM: on tmpfs (e.g. `/dev/shm`), or with a file system that
    /// refuses `O_DIRECT`, the open fails with an [`Error::InvalidArgument`] saying so. Writes
    /// stay buffered. Default false.
    pub direct_reads: bool,
}

impl SsdModelOptions {
    /// True if any part of the model is on.
    pub fn is_on(&self) -> bool {
        self.write_bytes_per_sec > 0 || self.read_bytes_per_sec > 0 || self.direct_reads
    }

    /// Checks the fields; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        for (name, rate) in [
            ("ssd.write_bytes_per_sec", self.write_bytes_per_sec),
            ("ssd.read_bytes_per_sec", self.read_bytes_per_sec),
        ] {
            if rate != 0 && rate < MIN_SSD_BYTES_PER_SEC {
                return Err(Error::InvalidArgument(format!(
                    "{name} {rate} is below the minimum of {MIN_SSD_BYTES_PER_SEC} bytes per \
                     second (1 MB/s); 0 turns the cap off"
                )));
            }
        }
        Ok(())
    }
}

/// A token bucket over byte counts: `rate` bytes per second, holding at most `burst` bytes.
///
/// A pure structure: the caller passes the time, and [`TokenBucket::take`] returns how long
/// the caller must wait. Requests reserve their bytes at once (the bucket may go into debt),
/// so concurrent callers queue behind each other's reservations and a request larger than
/// the burst waits for the difference; by any time `t` at most `burst + rate * t` bytes have
/// been released.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: u64,
    burst: u64,
    /// Tokens in units of 10^-9 bytes (so `rate` bytes/s for `n` ns is exactly `rate * n`);
    /// negative while callers wait for reserved bytes.
    tokens: i128,
    /// When `tokens` was last brought up to date.
    last: Duration,
}

impl TokenBucket {
    /// The burst [`TokenBucket::new`] uses for `rate`: `rate / 20`, at least 1 MiB.
    pub fn burst_for(rate: u64) -> u64 {
        (rate / BURST_DIVISOR).max(MIN_BURST_BYTES)
    }

    /// A full bucket of `rate` bytes per second (`rate > 0`) with the default burst, at time
    /// `now`.
    pub fn new(rate: u64, now: Duration) -> Self {
        Self::with_burst(rate, Self::burst_for(rate), now)
    }

    /// A full bucket of `rate` bytes per second (`rate > 0`) holding at most `burst` bytes.
    pub fn with_burst(rate: u64, burst: u64, now: Duration) -> Self {
        assert!(rate > 0, "a token bucket needs a positive rate");
        TokenBucket {
            rate,
            burst,
            tokens: i128::from(burst) * NANOS,
            last: now,
        }
    }

    /// Bytes per second.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Largest number of bytes released without waiting.
    pub fn burst(&self) -> u64 {
        self.burst
    }

    /// Bytes available now (0 while callers wait), after refilling up to `now`.
    pub fn available(&mut self, now: Duration) -> u64 {
        self.refill(now);
        u64::try_from(self.tokens.max(0) / NANOS).unwrap_or(u64::MAX)
    }

    /// Takes `bytes` at time `now` and returns how long the caller must wait before using them
    /// (zero if the bucket held them). Times before the last call count as the last call.
    pub fn take(&mut self, now: Duration, bytes: u64) -> Duration {
        self.refill(now);
        self.tokens -= i128::from(bytes) * NANOS;
        if self.tokens >= 0 {
            return Duration::ZERO;
        }
        let rate = i128::from(self.rate);
        let wait_ns = (-self.tokens + rate - 1) / rate;
        Duration::from_nanos(u64::try_from(wait_ns).unwrap_or(u64::MAX))
    }

    fn refill(&mut self, now: Duration) {
        if now > self.last {
            let elapsed = (now - self.last).as_nanos() as i128;
            let full = i128::from(self.burst) * NANOS;
            self.tokens = self
                .tokens
                .saturating_add(elapsed.saturating_mul(i128::from(self.rate)))
                .min(full);
            self.last = now;
        }
    }
}

/// The time source of the SSD model: a monotonic clock and a way to wait.
pub trait Clock: Send + Sync {
    /// Time since a fixed origin; never decreases.
    fn now(&self) -> Duration;
    /// Blocks the calling thread for `d` (sleeping, not spinning).
    fn sleep(&self, d: Duration);
}

/// The real clock: [`Instant`] and [`std::thread::sleep`].
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// One direction's bucket, its clock and its counters.
struct Limiter {
    bucket: Mutex<TokenBucket>,
    clock: Arc<dyn Clock>,
    waited_ns: AtomicU64,
    waits: AtomicU64,
}

impl Limiter {
    fn new(rate: u64, clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(Limiter {
            bucket: Mutex::new(TokenBucket::new(rate, clock.now())),
            clock,
            waited_ns: AtomicU64::new(0),
            waits: AtomicU64::new(0),
        })
    }

    /// Takes `bytes`, sleeping as long as the bucket says (outside its lock). Nothing to
    /// transfer waits for nothing.
    fn acquire(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let wait = {
            let mut b = self.bucket.lock();
            b.take(self.clock.now(), bytes)
        };
        if !wait.is_zero() {
            self.waits.fetch_add(1, Relaxed);
            self.waited_ns
                .fetch_add(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX), Relaxed);
            self.clock.sleep(wait);
        }
    }
}

/// What an [`SsdModelFs`] has passed through and how long it made callers wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SsdModelStats {
    /// Bytes appended to SSD files.
    pub bytes_written: u64,
    /// Bytes requested from SSD files.
    pub bytes_read: u64,
    /// Bytes charged to the read bucket (with direct reads: the aligned ranges read).
    pub bytes_read_charged: u64,
    /// Time writers were told to wait for the write cap, and how many waits.
    pub write_wait: Duration,
    /// Number of appends that waited.
    pub write_waits: u64,
    /// Time readers were told to wait for the read cap.
    pub read_wait: Duration,
    /// Number of reads that waited.
    pub read_waits: u64,
}

#[derive(Default)]
struct Counters {
    written: AtomicU64,
    read: AtomicU64,
    read_charged: AtomicU64,
}

/// The SSD model over another file system (see the module documentation).
pub struct SsdModelFs {
    inner: Arc<dyn FileSystem>,
    write: Option<Arc<Limiter>>,
    read: Option<Arc<Limiter>>,
    direct_reads: bool,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for SsdModelFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = |l: &Option<Arc<Limiter>>| l.as_ref().map(|l| l.bucket.lock().rate());
        f.debug_struct("SsdModelFs")
            .field("write_bytes_per_sec", &rate(&self.write))
            .field("read_bytes_per_sec", &rate(&self.read))
            .field("direct_reads", &self.direct_reads)
            .finish_non_exhaustive()
    }
}

impl SsdModelFs {
    /// Wraps `inner` with the model `options` describes, on the real clock.
    pub fn new(inner: Arc<dyn FileSystem>, options: &SsdModelOptions) -> Self {
        Self::with_clock(inner, options, Arc::new(SystemClock::default()))
    }

    /// Wraps `inner` with the model `options` describes, waiting through `clock`.
    pub fn with_clock(
        inner: Arc<dyn FileSystem>,
        options: &SsdModelOptions,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let limiter = |rate: u64| (rate > 0).then(|| Limiter::new(rate, Arc::clone(&clock)));
        SsdModelFs {
            inner,
            write: limiter(options.write_bytes_per_sec),
            read: limiter(options.read_bytes_per_sec),
            direct_reads: options.direct_reads,
            counters: Arc::new(Counters::default()),
        }
    }

    /// The bytes passed through so far and the waits imposed.
    pub fn stats(&self) -> SsdModelStats {
        let waited = |l: &Option<Arc<Limiter>>| {
            l.as_ref().map_or((Duration::ZERO, 0), |l| {
                (
                    Duration::from_nanos(l.waited_ns.load(Relaxed)),
                    l.waits.load(Relaxed),
                )
            })
        };
        let (write_wait, write_waits) = waited(&self.write);
        let (read_wait, read_waits) = waited(&self.read);
        SsdModelStats {
            bytes_written: self.counters.written.load(Relaxed),
            bytes_read: self.counters.read.load(Relaxed),
            bytes_read_charged: self.counters.read_charged.load(Relaxed),
            write_wait,
            write_waits,
            read_wait,
            read_waits,
        }
    }

    fn writable(&self, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        Box::new(ModelWritable {
            inner: file,
            limiter: self.write.clone(),
            counters: Arc::clone(&self.counters),
        })
    }

    fn readable(&self, file: Arc<dyn RandomAccessFile>) -> Arc<dyn RandomAccessFile> {
        Arc::new(ModelReadable {
            inner: file,
            limiter: self.read.clone(),
            direct: self.direct_reads,
            counters: Arc::clone(&self.counters),
        })
    }
}

struct ModelWritable {
    inner: Box<dyn WritableFile>,
    limiter: Option<Arc<Limiter>>,
    counters: Arc<Counters>,
}

impl WritableFile for ModelWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if let Some(l) = &self.limiter {
            l.acquire(data.len() as u64);
        }
        self.counters.written.fetch_add(data.len() as u64, Relaxed);
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn reserve(&mut self, additional: u64) -> Result<()> {
        self.inner.reserve(additional)
    }
}

struct ModelReadable {
    inner: Arc<dyn RandomAccessFile>,
    limiter: Option<Arc<Limiter>>,
    direct: bool,
    counters: Arc<Counters>,
}

impl RandomAccessFile for ModelReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let charged = if self.direct && !buf.is_empty() {
            super::direct::aligned_span(offset, buf.len()).1 as u64
        } else {
            buf.len() as u64
        };
        if let Some(l) = &self.limiter {
            l.acquire(charged);
        }
        self.counters.read.fetch_add(buf.len() as u64, Relaxed);
        self.counters.read_charged.fetch_add(charged, Relaxed);
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl FileSystem for SsdModelFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(self.writable(self.inner.create(path)?))
    }
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(self.writable(self.inner.create_log(path)?))
    }
    fn open_readable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = if self.direct_reads {
            self.inner.open_readable_direct(path)?
        } else {
            self.inner.open_readable(path)?
        };
        Ok(self.readable(file))
    }
    fn open_readable_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(self.readable(self.inner.open_readable_direct(path)?))
    }
    fn as_ssd_model(&self) -> Option<&SsdModelFs> {
        Some(self)
    }
    // `read_all` keeps the trait's default: it reads through `open_readable` above, so whole-file
    // reads are direct and charged too.
    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    /// Takes the lock, then (with direct reads) checks that the lock file, the first file of
    /// the database directory an open touches, can be opened for direct reads: an unsupported
    /// location fails the open here rather than a read later.
    fn lock_shared(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        self.inner.lock_shared(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let lock = self.inner.lock(path)?;
        if self.direct_reads {
            self.inner.open_readable_direct(path)?;
        }
        Ok(lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;
    use std::path::PathBuf;

    const MB: u64 = 1_000_000;
    const MIB: u64 = 1 << 20;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn bucket_releases_the_burst_then_the_rate() {
        let t0 = Duration::from_secs(100);
        let mut b = TokenBucket::with_burst(10 * MB, 2 * MB, t0);
        assert_eq!((b.rate(), b.burst()), (10 * MB, 2 * MB));
        // A full bucket releases its burst without waiting ...
        assert_eq!(b.take(t0, MB), Duration::ZERO);
        assert_eq!(b.take(t0, MB), Duration::ZERO);
        assert_eq!(b.available(t0), 0);
        // ... then each request waits for its bytes at the rate: 1 MB at 10 MB/s is 100 ms.
        assert_eq!(b.take(t0, MB), secs(0.1));
        // Reservations queue: the next MB waits behind the one before it.
        assert_eq!(b.take(t0, MB), secs(0.2));
        // After the waits have passed the bucket is empty, not in debt.
        assert_eq!(b.available(t0 + secs(0.2)), 0);
        assert_eq!(b.take(t0 + secs(0.2), 500_000), secs(0.05));
        // Refill is capped at the burst.
        assert_eq!(b.available(t0 + secs(60.0)), 2 * MB);
        // A request larger than the burst waits for the difference.
        assert_eq!(b.take(t0 + secs(60.0), 5 * MB), secs(0.3));
        // Time going backwards is time standing still.
        assert_eq!(b.take(t0, 0), secs(0.3));
    }

    #[test]
    fn bucket_wait_is_rounded_up_to_the_nanosecond() {
        let t0 = Duration::ZERO;
        let mut b = TokenBucket::with_burst(3 * MB, 0, t0);
        // 1 byte at 3 MB/s is 333.33 ns: wait 334 ns, never less than the bytes need.
        assert_eq!(b.take(t0, 1), Duration::from_nanos(334));
    }

    #[test]
    fn default_burst_is_a_twentieth_of_a_second_or_one_mib() {
        assert_eq!(TokenBucket::burst_for(MB), MIB);
        assert_eq!(TokenBucket::burst_for(20 * MB), MIB);
        assert_eq!(TokenBucket::burst_for(50 * MB), 2_500_000);
        assert_eq!(TokenBucket::burst_for(2_000 * MB), 100 * MB);
        let b = TokenBucket::new(50 * MB, Duration::ZERO);
        assert_eq!(b.burst(), 2_500_000);
    }

    /// Callers that sleep exactly as told get the rate on average, whatever the request sizes.
    #[test]
    fn long_run_average_is_the_rate() {
        let rate = 50 * MB;
        let mut b = TokenBucket::new(rate, Duration::ZERO);
        let mut now = Duration::ZERO;
        let mut total = 0u64;
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let bytes = (x >> 33) % (256 << 10) + 1;
            now += b.take(now, bytes);
            total += bytes;
            // Never more than the burst plus the rate times the elapsed time.
            assert!(total <= b.burst() + (rate as f64 * now.as_secs_f64()).ceil() as u64);
        }
        let average = total as f64 / now.as_secs_f64();
        assert!(
            (average - rate as f64).abs() / (rate as f64) < 0.001,
            "average {average} B/s against {rate} B/s (burst included)"
        );
        // Idle time is not banked beyond the burst.
        now += secs(10.0);
        assert_eq!(b.available(now), b.burst());
    }

    /// A clock whose sleeps advance it, recording them: tests see the waits, never wait.
    #[derive(Default)]
    struct ManualClock {
        now: Mutex<Duration>,
        slept: Mutex<Vec<Duration>>,
    }

    impl Clock for ManualClock {
        fn now(&self) -> Duration {
            *self.now.lock()
        }
        fn sleep(&self, d: Duration) {
            *self.now.lock() += d;
            self.slept.lock().push(d);
        }
    }

    fn model(options: SsdModelOptions) -> (MemFs, SsdModelFs, Arc<ManualClock>) {
        let mem = MemFs::new();
        let clock = Arc::new(ManualClock::default());
        let fs = SsdModelFs::with_clock(Arc::new(mem.clone()), &options, clock.clone());
        fs.create_dir_all(Path::new("/db")).unwrap();
        (mem, fs, clock)
    }

    #[test]
    fn wrapper_passes_bytes_unchanged_and_counts_them() {
        let (mem, fs, clock) = model(SsdModelOptions {
            write_bytes_per_sec: 2 * MB,
            read_bytes_per_sec: 4 * MB,
            direct_reads: false,
        });
        let path = PathBuf::from("/db/000001.sst");
        let data: Vec<u8> = (0..3 * MIB as usize)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut f = fs.create(&path).unwrap();
        for chunk in data.chunks(65_536 + 7) {
            f.append(chunk).unwrap();
        }
        f.sync().unwrap();
        assert_eq!(f.size(), data.len() as u64);
        drop(f);
        assert_eq!(mem.file_data(&path).unwrap(), data);
        let mut log = fs.create_log(Path::new("/db/000002.log")).unwrap();
        log.reserve(10).unwrap();
        log.append(b"record").unwrap();
        log.flush().unwrap();
        drop(log);
        let r = fs.open_readable(&path).unwrap();
        let mut part = vec![0u8; 1000];
        r.read_exact_at(12_345, &mut part).unwrap();
        assert_eq!(part, &data[12_345..13_345]);
        assert_eq!(fs.read_all(&path).unwrap(), data);

        let s = fs.stats();
        assert_eq!(s.bytes_written, data.len() as u64 + 6);
        assert_eq!(s.bytes_read, 1000 + data.len() as u64);
        assert_eq!(s.bytes_read_charged, s.bytes_read);
        // Writes: 1 MiB of burst, the rest at 2 MB/s.
        let write_wait = (data.len() as u64 + 6 - MIB) as f64 / (2 * MB) as f64;
        assert!(
            (s.write_wait.as_secs_f64() - write_wait).abs() < 1e-6,
            "{s:?}"
        );
        assert!(s.write_waits > 0 && s.read_waits > 0);
        // Reads: the write waits left the read bucket full (1 MiB); the rest at 4 MB/s.
        let read_wait = (1000 + data.len() as u64 - MIB) as f64 / (4 * MB) as f64;
        assert!(
            (s.read_wait.as_secs_f64() - read_wait).abs() < 1e-6,
            "{s:?}"
        );
        let slept: Duration = clock.slept.lock().iter().sum();
        assert_eq!(slept, s.write_wait + s.read_wait);
        // Directory operations pass through.
        assert!(fs.exists(&path));
        fs.rename(&path, Path::new("/db/000003.sst")).unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        assert_eq!(fs.list(Path::new("/db")).unwrap().len(), 2);
        assert_eq!(
            fs.file_size(Path::new("/db/000003.sst")).unwrap(),
            data.len() as u64
        );
        fs.remove(Path::new("/db/000003.sst")).unwrap();
        assert!(!fs.exists(Path::new("/db/000003.sst")));
    }

    #[test]
    fn caps_off_pass_through_without_waiting() {
        let (_mem, fs, clock) = model(SsdModelOptions::default());
        let mut f = fs.create(Path::new("/db/a")).unwrap();
        f.append(&vec![1u8; 10 << 20]).unwrap();
        drop(f);
        assert_eq!(fs.read_all(Path::new("/db/a")).unwrap().len(), 10 << 20);
        assert!(clock.slept.lock().is_empty());
        assert_eq!(fs.stats().write_wait, Duration::ZERO);
    }

    #[test]
    fn direct_reads_need_a_file_system_that_has_them() {
        let (_mem, fs, _) = model(SsdModelOptions {
            direct_reads: true,
            ..SsdModelOptions::default()
        });
        let e = fs
            .lock(Path::new("/db/LOCK"))
            .err()
            .expect("MemFs has no O_DIRECT");
        assert!(e.to_string().contains("direct reads"), "{e}");
    }

    #[test]
    fn options_are_validated() {
        SsdModelOptions::default().validate().unwrap();
        let ok = SsdModelOptions {
            write_bytes_per_sec: MB,
            read_bytes_per_sec: 500 * MB,
            direct_reads: true,
        };
        ok.validate().unwrap();
        assert!(ok.is_on() && !SsdModelOptions::default().is_on());
        let e = SsdModelOptions {
            write_bytes_per_sec: 999_999,
            ..ok.clone()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("ssd.write_bytes_per_sec 999999 is below"), "{e}");
        let e = SsdModelOptions {
            read_bytes_per_sec: 1,
            ..ok
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("ssd.read_bytes_per_sec 1 is below"), "{e}");
    }
}
