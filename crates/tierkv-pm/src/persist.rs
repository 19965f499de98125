//! CPU persist primitives: cache-line write-back, store fence and non-temporal copy.
//!
//! **Purpose.** The lowest layer of [`crate::PmPool`]: `clwb` (else `clflushopt`, else `clflush`,
//! detected once with CPUID at runtime) over every 64-byte line of a range, `sfence`, and a
//! non-temporal (`movnti`) copy. On targets other than x86_64 there are no such instructions:
//! [`flush_instruction`] reports `"msync"` and the pool makes persists durable with `msync`.
//!
//! **Thread safety.** The functions are free of shared state except the detected instruction
//! (a `OnceLock`). The `unsafe fn`s require the caller to pass ranges inside a live mapping that
//! no other thread writes concurrently (the pool checks bounds; callers coordinate ranges).
//!
//! **Durability.** After [`write_back`] of a range and a following [`fence`], the range's lines
//! have reached the persistence domain (power-fail durable on a DAX `MAP_SYNC` mapping; in the
//! page cache otherwise). After [`copy_nt`], the copied bytes are durable after the next
//! [`fence`] (its unaligned head and tail are stored normally and written back by `copy_nt`).

use std::sync::OnceLock;

/// Size of a cache line, the unit of write-back and of crash-simulation tracking.
pub const CACHE_LINE: u64 = 64;

/// The write-back instruction in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlushInsn {
    /// `clwb`: writes back, keeps the line cached.
    Clwb,
    /// `clflushopt`: writes back and evicts, weakly ordered.
    Clflushopt,
    /// `clflush`: writes back and evicts, strongly ordered.
    Clflush,
    /// No cache-line instruction (non-x86_64): persists use `msync`.
    Msync,
}

static FLUSH_INSN: OnceLock<FlushInsn> = OnceLock::new();

pub(crate) fn flush_insn() -> FlushInsn {
    *FLUSH_INSN.get_or_init(detect)
}

/// The cache-line write-back instruction detected on this machine: `"clwb"`, `"clflushopt"`,
/// `"clflush"`, or `"msync"` on targets without one (persists then use `msync`).
pub fn flush_instruction() -> &'static str {
    match flush_insn() {
        FlushInsn::Clwb => "clwb",
        FlushInsn::Clflushopt => "clflushopt",
        FlushInsn::Clflush => "clflush",
        FlushInsn::Msync => "msync",
    }
}

#[cfg(target_arch = "x86_64")]
fn detect() -> FlushInsn {
    use core::arch::x86_64::{__cpuid, __cpuid_count};
    // CPUID leaf 7 / sub-leaf 0, EBX bit 23 = CLFLUSHOPT, bit 24 = CLWB (Intel SDM vol. 2A).
    let max_leaf = __cpuid(0).eax;
    if max_leaf >= 7 {
        let ebx = __cpuid_count(7, 0).ebx;
        if ebx & (1 << 24) != 0 {
            return FlushInsn::Clwb;
        }
        if ebx & (1 << 23) != 0 {
            return FlushInsn::Clflushopt;
        }
    }
    // CLFLUSH (CPUID.1:EDX bit 19) is present on every x86_64 processor.
    FlushInsn::Clflush
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> FlushInsn {
    FlushInsn::Msync
}

/// The cache lines a write-back of `[offset, offset + len)` must cover, as line numbers (line
/// `n` holds bytes `[n * CACHE_LINE, (n + 1) * CACHE_LINE)`): every line holding at least one
/// byte of the range and no other, so none when `len == 0`. The caller guarantees that
/// `offset + len` does not overflow.
///
/// The one definition of "the lines of a range": the hardware write-back ([`write_back`]), the
/// write-back counter ([`lines_touched`]) and the crash simulation's dirty and pending lines all
/// use it, so a test of this function covers what the hardware path does (which no test can
/// observe) and what the crash tests check.
pub(crate) fn cache_lines(offset: u64, len: u64) -> std::ops::Range<u64> {
    let first = offset / CACHE_LINE;
    if len == 0 {
        return first..first;
    }
    // The line after the one holding the last byte: a partial last line is included.
    first..(offset + len).div_ceil(CACHE_LINE)
}

/// Number of cache lines touched by `[offset, offset + len)` (0 when `len == 0`): the length of
/// [`cache_lines`]. The caller guarantees `offset + len` does not overflow.
pub(crate) fn lines_touched(offset: u64, len: u64) -> u64 {
    let lines = cache_lines(offset, len);
    lines.end - lines.start
}

/// The start of every cache line of [`cache_lines`] for `[ptr, ptr + len)`, as pointers derived
/// from `ptr` (wrapping arithmetic: the first line may start up to 63 bytes before `ptr`).
/// Computing them dereferences nothing.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn line_starts(ptr: *const u8, len: usize) -> impl Iterator<Item = *const u8> {
    let lines = cache_lines(ptr.addr() as u64, len as u64);
    let first = ptr.with_addr((lines.start * CACHE_LINE) as usize);
    (0..(lines.end - lines.start) as usize)
        .map(move |i| first.wrapping_add(i * CACHE_LINE as usize))
}

/// Writes back every cache line touched by `[ptr, ptr + len)` (those of [`cache_lines`]) with
/// the detected instruction. No fence. A no-op on targets without a cache-line instruction.
///
/// # Safety
/// Every cache line touched by the range must lie inside one live mapping or allocation (the
/// pool's base is page- or 64-byte-aligned and its size a multiple of 64, so the lines of an
/// in-bounds range are in bounds).
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn write_back(ptr: *const u8, len: usize) {
    use std::arch::asm;
    let insn = flush_insn();
    for line in line_starts(ptr, len) {
        match insn {
            // SAFETY: `line` is inside the caller's live mapping (function contract); CPUID
            // reported CLWB. CLWB writes the line back without changing memory contents.
            FlushInsn::Clwb => unsafe {
                asm!("clwb [{0}]", in(reg) line, options(nostack, preserves_flags))
            },
            // SAFETY: as above; CPUID reported CLFLUSHOPT, which only writes back and evicts.
            FlushInsn::Clflushopt => unsafe {
                asm!("clflushopt [{0}]", in(reg) line, options(nostack, preserves_flags))
            },
            // SAFETY: `line` is inside the live mapping; `_mm_clflush` (SSE2, baseline on
            // x86_64) only writes back and evicts the line.
            FlushInsn::Clflush => unsafe { core::arch::x86_64::_mm_clflush(line) },
            FlushInsn::Msync => {}
        }
    }
}

/// Non-x86_64: no cache-line instruction; the pool uses `msync` instead.
///
/// # Safety
/// None required (kept `unsafe` for signature parity with the x86_64 version).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) unsafe fn write_back(_ptr: *const u8, _len: usize) {}

/// Store fence: orders and completes earlier write-backs and non-temporal stores.
pub(crate) fn fence() {
    // SAFETY: SFENCE (SSE) is part of the x86_64 baseline, so the instruction exists on every
    // CPU this code can run on; it touches no memory operands.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Copies `src` to `dst` with non-temporal stores for the 8-byte-aligned middle; the unaligned
/// head and tail are stored normally and written back. Durable after the next [`fence`].
///
/// # Safety
/// `[dst, dst + src.len())` must be writable memory inside one live mapping (every cache line it
/// touches included), must not overlap `src`, and must not be accessed concurrently by another
/// thread.
pub(crate) unsafe fn copy_nt(dst: *mut u8, src: &[u8]) {
    let len = src.len();
    if len == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let head = ((8 - dst as usize % 8) % 8).min(len);
        let words = (len - head) / 8;
        let tail = len - head - words * 8;
        // SAFETY: `[dst, dst + head)` is inside the caller's range and disjoint from `src`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, head) };
        for w in 0..words {
            let at = head + w * 8;
            // SAFETY: `at + 8 <= len`, so the 8 source bytes are inside `src` (read unaligned);
            // the destination word is inside the caller's range and 8-aligned (`dst + head` is
            // 8-aligned), as MOVNTI requires.
            unsafe {
                let v = std::ptr::read_unaligned(src.as_ptr().add(at) as *const i64);
                core::arch::x86_64::_mm_stream_si64(dst.add(at) as *mut i64, v);
            }
        }
        let tail_at = head + words * 8;
        // SAFETY: `[dst + tail_at, dst + len)` is inside the caller's range, disjoint from src.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().add(tail_at), dst.add(tail_at), tail) };
        // SAFETY: the head and tail ranges are inside the caller's mapping (contract).
        unsafe {
            write_back(dst, head);
            write_back(dst.add(tail_at), tail);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: the destination range is inside the caller's mapping and disjoint from `src`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, byte by byte: the lines holding at least one byte of the range, in
    /// order, each once.
    fn brute_force_lines(offset: u64, len: u64) -> Vec<u64> {
        let mut lines: Vec<u64> = (offset..offset + len).map(|b| b / CACHE_LINE).collect();
        lines.dedup();
        lines
    }

    fn check_cache_lines(offset: u64, len: u64) {
        let expected = brute_force_lines(offset, len);
        assert_eq!(
            cache_lines(offset, len).collect::<Vec<_>>(),
            expected,
            "cache_lines({offset}, {len}) must be every line holding a byte of the range"
        );
        assert_eq!(lines_touched(offset, len), expected.len() as u64);
    }

    #[test]
    fn cache_lines_are_exactly_the_lines_holding_a_byte_of_the_range() {
        // Every misalignment and every length up to a few lines, at low and high offsets.
        for base in [0, 64, 4096, 1 << 40] {
            for misalign in 0..CACHE_LINE {
                for len in 0..=200 {
                    check_cache_lines(base + misalign, len);
                }
                for len in [4096, 4097, 65535, 65536 + 63] {
                    check_cache_lines(base + misalign, len);
                }
            }
        }
        // Too long to enumerate bytes: the first line holds the first byte, the last line the
        // last byte.
        for (offset, len) in [
            (13, 1 << 30),
            (1 << 40, (1 << 30) + 1),
            (u64::MAX - 100, 100),
        ] {
            let lines = cache_lines(offset, len);
            assert_eq!(lines.start, offset / CACHE_LINE, "{offset} {len}");
            assert_eq!(
                lines.end - 1,
                (offset + len - 1) / CACHE_LINE,
                "{offset} {len}"
            );
        }
    }

    #[test]
    fn write_back_visits_the_start_of_every_line_of_the_range() {
        #[repr(C, align(64))]
        struct Lines([u8; 512]);
        let buf = Lines([0u8; 512]);
        let base = buf.0.as_ptr();
        for misalign in 0..64usize {
            for len in 0..=(512 - misalign).min(400) {
                let ptr = base.wrapping_add(misalign);
                let got: Vec<usize> = line_starts(ptr, len).map(|p| p.addr()).collect();
                let expected: Vec<usize> = brute_force_lines(misalign as u64, len as u64)
                    .iter()
                    .map(|&l| base.addr() + (l * CACHE_LINE) as usize)
                    .collect();
                assert_eq!(
                    got, expected,
                    "write_back(base + {misalign}, {len}) must visit the start of every line \
                     holding a byte of the range"
                );
            }
        }
    }

    #[test]
    fn lines_touched_counts_partial_lines() {
        assert_eq!(lines_touched(0, 0), 0);
        assert_eq!(lines_touched(0, 1), 1);
        assert_eq!(lines_touched(0, 64), 1);
        assert_eq!(lines_touched(0, 65), 2);
        assert_eq!(lines_touched(63, 2), 2);
        assert_eq!(lines_touched(64, 64), 1);
        assert_eq!(lines_touched(10, 144), 3);
    }

    #[test]
    fn detected_flush_instruction_is_reported() {
        let insn = flush_instruction();
        assert!(["clwb", "clflushopt", "clflush", "msync"].contains(&insn));
        #[cfg(target_arch = "x86_64")]
        {
            // This crate's development machines have CLWB; if /proc/cpuinfo says so, CPUID must.
            let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            if cpuinfo.contains(" clwb") {
                assert_eq!(insn, "clwb");
            } else if cpuinfo.contains(" clflushopt") {
                assert_eq!(insn, "clflushopt");
            } else {
                assert_eq!(insn, "clflush");
            }
        }
    }

    #[test]
    fn write_back_and_copy_nt_on_heap_memory() {
        // A 64-aligned heap buffer: write-back and non-temporal copies work on any cacheable
        // memory, so this exercises the instructions themselves.
        #[repr(C, align(64))]
        struct Lines([u8; 256]);
        let mut buf = Box::new(Lines([0u8; 256]));
        let src: Vec<u8> = (0..=200u8).collect();
        for start in [0usize, 1, 7, 8, 13, 40] {
            let n = src.len().min(256 - start);
            buf.0.fill(0);
            let dst = buf.0.as_mut_ptr();
            // SAFETY: `[dst + start, dst + start + n)` is inside the 256-byte buffer, which this
            // test owns exclusively; `src` is a separate allocation.
            unsafe {
                copy_nt(dst.add(start), &src[..n]);
                write_back(dst, 256);
            }
            fence();
            assert_eq!(&buf.0[start..start + n], &src[..n]);
            assert!(buf.0[..start].iter().all(|&b| b == 0));
            assert!(buf.0[start + n..].iter().all(|&b| b == 0));
        }
    }
}
