//! Keys and values as text on the command line and in messages.
//!
//! Arguments are taken as UTF-8 text, or as hex when prefixed with `0x` ([`parse_bytes_arg`]).
//! On output, bytes are shown as text when they are valid UTF-8 without control characters and
//! do not themselves start with `0x`, otherwise as `0x`-prefixed hex ([`display_bytes`]), so
//! that any printed key can be passed back to `get`.

/// Parses a key or value argument: `0x`-prefixed hex (`0x00ff`), else the UTF-8 bytes.
pub fn parse_bytes_arg(s: &str) -> Result<Vec<u8>, String> {
    let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) else {
        return Ok(s.as_bytes().to_vec());
    };
    if hex.len() % 2 != 0 {
        return Err(format!("hex argument {s:?} has an odd number of digits"));
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    hex.as_bytes()
        .chunks(2)
        .map(|p| match (digit(p[0]), digit(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err(format!("hex argument {s:?} has a non-hex digit")),
        })
        .collect()
}

/// Shows bytes as text when printable UTF-8, else as `0x`-prefixed lowercase hex.
pub fn display_bytes(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s)
            if !s.chars().any(char::is_control) && !s.starts_with("0x") && !s.starts_with("0X") =>
        {
            s.to_string()
        }
        _ => {
            let mut out = String::with_capacity(2 + 2 * b.len());
            out.push_str("0x");
            for byte in b {
                out.push_str(&format!("{byte:02x}"));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_arguments_round_trip() {
        assert_eq!(parse_bytes_arg("apple").unwrap(), b"apple");
        assert_eq!(parse_bytes_arg("").unwrap(), b"");
        assert_eq!(parse_bytes_arg("0x00ff10").unwrap(), vec![0, 0xff, 0x10]);
        assert_eq!(parse_bytes_arg("0XABcd").unwrap(), vec![0xab, 0xcd]);
        assert_eq!(parse_bytes_arg("0x").unwrap(), Vec::<u8>::new());
        assert!(parse_bytes_arg("0x123").unwrap_err().contains("odd number"));
        assert!(parse_bytes_arg("0xzz").unwrap_err().contains("non-hex"));
        assert!(
            parse_bytes_arg("0xé1").is_err(),
            "multi-byte characters are not hex digits"
        );

        assert_eq!(display_bytes(b"apple"), "apple");
        assert_eq!(display_bytes("pomme-é".as_bytes()), "pomme-é");
        assert_eq!(display_bytes(&[0, 1, 0xff]), "0x0001ff");
        assert_eq!(display_bytes(b"a\tb"), "0x610962");
        assert_eq!(
            display_bytes(b"0x12"),
            "0x30783132",
            "text that looks like hex is shown as hex"
        );
        for b in [&b"apple"[..], &[0, 0xff], b"0x12", b"", b"a\nb"] {
            assert_eq!(parse_bytes_arg(&display_bytes(b)).unwrap(), b);
        }
        // A db_bench key prints as hex.
        assert_eq!(
            display_bytes(&crate::workload::make_key(1, 10)),
            "0x00000000000000013030"
        );
    }
}
