//! Fixed-width little-endian integers and LEB128 varints.
//!
//! Decoders never panic on short or malformed input: they return `None`, and the caller turns that
//! into a [`crate::Error::Corruption`] naming the file.

/// Appends `v` as 4 little-endian bytes.
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads 4 little-endian bytes at the start of `src`.
pub fn decode_fixed32(src: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(src.get(..4)?.try_into().ok()?))
}

/// Reads 8 little-endian bytes at the start of `src`.
pub fn decode_fixed64(src: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(src.get(..8)?.try_into().ok()?))
}

/// Appends `v` as a LEB128 varint (1..=5 bytes).
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, v as u64)
}

/// Appends `v` as a LEB128 varint (1..=10 bytes).
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Decodes a varint64 from the start of `src`; returns the value and the bytes consumed.
pub fn decode_varint64(src: &[u8]) -> Option<(u64, usize)> {
    let mut result = 0u64;
    for (i, &b) in src.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        if shift == 63 && b > 1 {
            return None;
        }
        result |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Decodes a varint32 from the start of `src`; returns the value and the bytes consumed.
pub fn decode_varint32(src: &[u8]) -> Option<(u32, usize)> {
    let (v, n) = decode_varint64(src)?;
    if n > 5 || v > u32::MAX as u64 {
        return None;
    }
    Some((v as u32, n))
}

/// Appends a varint32 length prefix and then `bytes`.
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint32(dst, bytes.len() as u32);
    dst.extend_from_slice(bytes);
}

/// A cursor over a byte slice for decoding records field by field.
pub struct Decoder<'a> {
    buf: &'a [u8],
}

impl<'a> Decoder<'a> {
    /// Starts decoding at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf }
    }
    /// True when every byte was consumed.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Consumes a varint32.
    pub fn varint32(&mut self) -> Option<u32> {
        let (v, n) = decode_varint32(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    /// Consumes a varint64.
    pub fn varint64(&mut self) -> Option<u64> {
        let (v, n) = decode_varint64(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    /// Consumes 4 little-endian bytes.
    pub fn fixed32(&mut self) -> Option<u32> {
        let v = decode_fixed32(self.buf)?;
        self.buf = &self.buf[4..];
        Some(v)
    }
    /// Consumes 8 little-endian bytes.
    pub fn fixed64(&mut self) -> Option<u64> {
        let v = decode_fixed64(self.buf)?;
        self.buf = &self.buf[8..];
        Some(v)
    }
    /// Consumes `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Some(head)
    }
    /// Consumes a varint32 length and that many bytes.
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = self.varint32()? as usize;
        self.bytes(n)
    }
    /// Consumes one byte.
    pub fn u8(&mut self) -> Option<u8> {
        let (&b, tail) = self.buf.split_first()?;
        self.buf = tail;
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_limits() {
        let values = [0u64, 1, 127, 128, 300, 1 << 32, u64::MAX];
        let mut buf = Vec::new();
        for &v in &values {
            put_varint64(&mut buf, v);
        }
        let mut d = Decoder::new(&buf);
        for &v in &values {
            assert_eq!(d.varint64(), Some(v));
        }
        assert!(d.is_empty());
        // Truncated and over-long encodings are rejected, not panicked on.
        assert_eq!(decode_varint64(&[0x80, 0x80]), None);
        assert_eq!(decode_varint64(&[0xff; 11]), None);
        assert_eq!(decode_varint32(&[0xff, 0xff, 0xff, 0xff, 0x7f]), None);
    }

    #[test]
    fn fixed_round_trip() {
        let mut buf = Vec::new();
        put_fixed32(&mut buf, 0xdead_beef);
        put_fixed64(&mut buf, 0x0102_0304_0506_0708);
        let mut d = Decoder::new(&buf);
        assert_eq!(d.fixed32(), Some(0xdead_beef));
        assert_eq!(d.fixed64(), Some(0x0102_0304_0506_0708));
        assert_eq!(d.fixed32(), None);
    }
}
