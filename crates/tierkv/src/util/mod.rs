//! Byte encodings and checksums shared by every on-disk format.

pub mod coding;
pub mod crc;
