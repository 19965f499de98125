//! Pool memory: a shared (or, read-only, a private) file mapping, or a 64-byte-aligned heap buffer (crash simulation).
//!
//! **Purpose.** Owns the memory behind a pool and exposes its base pointer. File pools are
//! mapped `MAP_SHARED` with memmap2 (`MmapRaw`), or, in `dax` mode, with
//! `MAP_SHARED_VALIDATE | MAP_SYNC` through `libc::mmap` (memmap2 has no `MAP_SYNC` option);
//! the kernel refuses `MAP_SYNC` on files that are not on a DAX file system.
//!
//! **Thread safety.** These types only own the memory (unmapped / deallocated on drop); all
//! accesses go through `PmPool`, which bounds-checks them. `msync` may be called concurrently.
//!
//! **Durability.** `msync` makes the page-aligned cover of a range durable in the file
//! (`MS_SYNC`). The heap buffer is never durable; the crash-simulation bookkeeping models
//! durability instead.

use crate::options::{PmError, PmResult};
use std::alloc::Layout;
use std::fs::File;
use std::ptr::NonNull;

/// A shared mapping of a whole pool file.
pub(crate) enum FileMapping {
    /// `MAP_SHARED` through memmap2.
    Shared(memmap2::MmapRaw),
    /// `MAP_PRIVATE` (copy on write) of a file opened read-only, followed by anonymous
    /// headroom: stores change this process's pages only, never the file (a read-only open of
    /// a pool).
    #[cfg(target_os = "linux")]
    Private(SyncMapping),
    /// `MAP_SHARED_VALIDATE | MAP_SYNC` through libc (DAX file systems only).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    Sync(SyncMapping),
}

/// A mapping made through libc (`MAP_SYNC`, or private with headroom), unmapped on drop.
#[cfg(target_os = "linux")]
pub(crate) struct SyncMapping {
    ptr: NonNull<u8>,
    len: usize,
}

#[cfg(target_os = "linux")]
impl Drop for SyncMapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the region returned by a successful `mmap` in
        // `FileMapping::map_sync` or `map_private`; it is unmapped once, here, and the owning `PmPool` (the
        // only user of the pointer) is being dropped, so no access can follow.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

impl FileMapping {
    /// Maps `len` bytes of `file` shared (read + write).
    pub fn map_shared(file: &File, len: u64, path: &str) -> PmResult<Self> {
        let raw = memmap2::MmapOptions::new()
            .len(len as usize)
            .map_raw(file)
            .map_err(|source| PmError::Io {
                op: "mmap",
                path: path.to_string(),
                source,
            })?;
        Ok(FileMapping::Shared(raw))
    }

    /// Maps `len` bytes of `file` private (copy on write), then `headroom` bytes of anonymous
    /// memory right after them: `file` may be open read-only, and nothing stored through the
    /// mapping reaches it. The headroom is address space only until touched.
    #[cfg(target_os = "linux")]
    pub fn map_private(file: &File, len: u64, headroom: u64, path: &str) -> PmResult<Self> {
        use std::os::fd::AsRawFd;
        let err = |op: &'static str| PmError::Io {
            op,
            path: path.to_string(),
            source: std::io::Error::last_os_error(),
        };
        let total = (len + headroom) as usize;
        // SAFETY: a fresh anonymous mapping at a kernel-chosen address (NULL hint, no
        // MAP_FIXED), so no existing memory is affected; checked for MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(err("mmap (private headroom)"));
        }
        // SAFETY: MAP_FIXED replaces the first `len` bytes of the anonymous region mapped just
        // above, which nothing else knows of; the file is at least `len` bytes long (its
        // header was checked against its length). A private mapping never writes the file;
        // what could go wrong is the file changing under it (another process truncating or
        // writing it): the read-only open refuses a pool whose lock a writer holds, and
        // damage by a process that ignores the lock is caught by the structures' checksums.
        let p = unsafe {
            libc::mmap(
                base,
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_FIXED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = err("mmap (private)");
            // SAFETY: `base`/`total` is the anonymous region mapped above, used by nothing.
            unsafe { libc::munmap(base, total) };
            return Err(e);
        }
        let ptr = NonNull::new(base.cast::<u8>()).expect("mmap returned NULL without MAP_FIXED");
        Ok(FileMapping::Private(SyncMapping { ptr, len: total }))
    }

    /// Off Linux: a private mapping of the file alone (no headroom).
    #[cfg(not(target_os = "linux"))]
    pub fn map_private(file: &File, len: u64, _headroom: u64, path: &str) -> PmResult<Self> {
        // SAFETY: as for the Linux version: a private mapping cannot change the file.
        let copy = unsafe { memmap2::MmapOptions::new().len(len as usize).map_copy(file) }
            .map_err(|source| PmError::Io {
                op: "mmap (private)",
                path: path.to_string(),
                source,
            })?;
        Ok(FileMapping::Shared(memmap2::MmapRaw::from(copy)))
    }

    /// Maps `len` bytes of `file` with `MAP_SHARED_VALIDATE | MAP_SYNC`; `InvalidArgument` if
    /// the kernel refuses (the file is not on a DAX file system).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub fn map_sync(file: &File, len: u64, path: &str) -> PmResult<Self> {
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh mapping at a kernel-chosen address (NULL hint, no MAP_FIXED), so no
        // existing memory is affected; `file` is open read-write and at least `len` bytes long
        // (the caller set or checked its length). The result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            return Err(PmError::InvalidArgument(format!(
                "durability mode dax: {path} is not on a DAX file system \
                 (mmap with MAP_SYNC failed: {err}); use msync or emulated mode"
            )));
        }
        let ptr = NonNull::new(p.cast::<u8>()).expect("mmap returned NULL without MAP_FIXED");
        Ok(FileMapping::Sync(SyncMapping {
            ptr,
            len: len as usize,
        }))
    }

    /// `dax` is only available on Linux x86_64.
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    pub fn map_sync(_file: &File, _len: u64, path: &str) -> PmResult<Self> {
        Err(PmError::InvalidArgument(format!(
            "durability mode dax: MAP_SYNC is not supported on this platform ({path})"
        )))
    }

    pub fn base(&self) -> *mut u8 {
        match self {
            FileMapping::Shared(m) => m.as_mut_ptr(),
            #[cfg(target_os = "linux")]
            FileMapping::Private(m) => m.ptr.as_ptr(),
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            FileMapping::Sync(m) => m.ptr.as_ptr(),
        }
    }

    /// `msync(MS_SYNC)` of the pages covering `[offset, offset + len)` (in bounds, checked by
    /// the caller).
    pub fn msync(&self, offset: u64, len: u64) -> std::io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        match self {
            FileMapping::Shared(m) => m.flush_range(offset as usize, len as usize),
            // Nothing of a private mapping is ever written to the file.
            #[cfg(target_os = "linux")]
            FileMapping::Private(_) => Ok(()),
            #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
            FileMapping::Sync(m) => {
                const PAGE: usize = 4096; // x86_64 base page; the mapping is page-aligned
                let start = offset as usize & !(PAGE - 1);
                let end = offset as usize + len as usize;
                debug_assert!(end <= m.len);
                // SAFETY: `[start, end)` lies inside the live mapping (the caller checked the
                // range against the pool size = mapping length) and `start` is page-aligned;
                // msync does not modify memory.
                let rc = unsafe {
                    libc::msync(m.ptr.as_ptr().add(start).cast(), end - start, libc::MS_SYNC)
                };
                if rc == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            }
        }
    }
}

/// A zeroed (or copied) heap buffer aligned to 64 bytes, freed on drop.
pub(crate) struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl AlignedBuf {
    /// A buffer holding a copy of `image` (`image.len() > 0`).
    pub fn from_bytes(image: &[u8]) -> PmResult<Self> {
        let buf = Self::zeroed(image.len())?;
        // SAFETY: `buf` is a fresh allocation of `image.len()` bytes, disjoint from `image`.
        unsafe { std::ptr::copy_nonoverlapping(image.as_ptr(), buf.ptr.as_ptr(), image.len()) };
        Ok(buf)
    }

    /// A zeroed buffer of `len > 0` bytes.
    pub fn zeroed(len: usize) -> PmResult<Self> {
        let layout = Layout::from_size_align(len, 64)
            .ok()
            .filter(|l| l.size() > 0)
            .ok_or_else(|| PmError::InvalidArgument(format!("bad buffer size {len}")))?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(p).ok_or_else(|| {
            PmError::InvalidArgument(format!("cannot allocate a {len}-byte crash-sim pool"))
        })?;
        Ok(AlignedBuf { ptr, layout })
    }

    pub fn base(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr` was returned by `alloc_zeroed(self.layout)` and is freed once, here;
        // the owning pool is being dropped, so the pointer is not used afterwards.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}
