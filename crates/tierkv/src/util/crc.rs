//! CRC-32C checksums, masked as LevelDB does so that a checksum stored inside checksummed data
//! does not produce degenerate values.

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC-32C of the concatenation of `a` and `b`.
pub fn crc32c_two(a: &[u8], b: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(a), b)
}

/// Masks a CRC for storage.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverts [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_round_trip_and_known_value() {
        // Known CRC-32C check value for "123456789".
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c_two(b"1234", b"56789"), 0xe306_9283);
        for v in [0u32, 1, 0xe306_9283, u32::MAX] {
            assert_eq!(unmask(mask(v)), v);
            assert_ne!(mask(v), v);
        }
    }
}
