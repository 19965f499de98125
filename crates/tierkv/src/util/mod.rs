//! Byte encodings and checksums shared by every on-disk format.

pub mod coding;
pub mod crc;

/// `key` as printable text for error messages: ASCII as is, other bytes escaped, cut at 64
/// bytes.
pub(crate) fn escape(key: &[u8]) -> String {
    let shown = &key[..key.len().min(64)];
    let mut s = format!("\"{}\"", shown.escape_ascii());
    if key.len() > 64 {
        s.push_str(&format!(" (+{} bytes)", key.len() - 64));
    }
    s
}
