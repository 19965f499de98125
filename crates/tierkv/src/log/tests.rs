//! Tests of the record log: round trips over every fragment type, truncations, torn and
//! zeroed tails, and corruption in the middle.

use super::*;
use crate::fs::{FileSystem, PosixFs};

fn write_log(records: &[Vec<u8>]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.log");
    let mut w = LogWriter::new(PosixFs.create(&path).unwrap());
    for r in records {
        w.add_record(r).unwrap();
    }
    w.sync().unwrap();
    PosixFs.read_all(&path).unwrap()
}

fn read_all(data: Vec<u8>) -> crate::Result<(Vec<Vec<u8>>, TailStatus)> {
    let mut r = LogReader::new(data, "test.log");
    let mut out = Vec::new();
    while let Some(rec) = r.next_record()? {
        out.push(rec);
    }
    Ok((out, r.tail()))
}

fn sample_records() -> Vec<Vec<u8>> {
    // Small, empty, exactly-block-sized and multi-block records, so fragments of every type and
    // block-tail padding occur.
    let mut v = vec![b"hello".to_vec(), Vec::new()];
    v.push(vec![1u8; BLOCK_SIZE - 2 * HEADER_SIZE - 5]);
    v.push(vec![2u8; 3]);
    v.push((0..100_000u32).map(|i| i as u8).collect());
    v.push(vec![3u8; BLOCK_SIZE]);
    v.push(b"last".to_vec());
    v
}

#[test]
fn round_trip_every_fragment_type() {
    let recs = sample_records();
    let data = write_log(&recs);
    let (got, tail) = read_all(data.clone()).unwrap();
    assert_eq!(got, recs);
    assert_eq!(tail.dropped_bytes, 0);
    assert_eq!(tail.valid_end, data.len() as u64);
}

#[test]
fn every_truncation_recovers_a_prefix() {
    let recs = sample_records();
    let data = write_log(&recs);
    for cut in (0..data.len()).step_by(97).chain([data.len() - 1]) {
        let (got, tail) = read_all(data[..cut].to_vec()).unwrap();
        assert!(got.len() <= recs.len());
        assert_eq!(got[..], recs[..got.len()], "cut {cut}");
        assert_eq!(tail.valid_end + tail.dropped_bytes, cut as u64);
    }
}

#[test]
fn zeroed_and_garbage_tails_are_torn_tails() {
    let recs = sample_records();
    let mut data = write_log(&recs);
    let good_len = data.len() as u64;
    data.extend_from_slice(&[0u8; 5000]);
    let (got, tail) = read_all(data.clone()).unwrap();
    assert_eq!(got, recs);
    assert_eq!(tail.valid_end, good_len);
    // Garbage bytes after the last record.
    let mut g = write_log(&recs);
    g.extend((0..3000u32).map(|i| (i * 7919 % 251) as u8));
    let (got, _) = read_all(g).unwrap();
    assert_eq!(got, recs);
    // A torn last record: its tail bytes replaced by garbage.
    let mut t = write_log(&recs);
    let n = t.len();
    t[n - 2] ^= 0x55;
    let (got, tail) = read_all(t).unwrap();
    assert_eq!(got[..], recs[..recs.len() - 1]);
    assert!(tail.dropped_bytes > 0);
}

#[test]
fn corruption_in_the_middle_is_an_error_naming_the_file() {
    let recs = sample_records();
    let data = write_log(&recs);
    // Flip a bit inside the first record's payload: valid records follow, so this is an error.
    let mut d = data.clone();
    d[HEADER_SIZE + 1] ^= 0x01;
    let err = read_all(d).unwrap_err();
    assert!(err.is_corruption());
    assert!(err.to_string().contains("test.log"), "{err}");
    // Flip bits at many positions: never a panic, never a record that was not written.
    for pos in (0..data.len()).step_by(331) {
        let mut d = data.clone();
        d[pos] ^= 0x10;
        if let Ok((got, _)) = read_all(d) {
            assert_eq!(
                got[..],
                recs[..got.len()],
                "flip at {pos} returned wrong data"
            );
        }
    }
}

/// An interrupted append of a multi-fragment record can leave its fragments durable in any
/// order (a PM log persists an append with one fence). Damage in the last logical record is a
/// torn tail even when a later fragment of that same record survived; damage followed by the
/// start of another logical record is corruption.
#[test]
fn damage_in_the_last_record_is_torn_even_with_its_later_fragments_intact() {
    // The last record spans blocks 0 and 1 as FIRST + LAST.
    let mut recs = vec![vec![7u8; BLOCK_SIZE - HEADER_SIZE - 100]];
    recs.push(vec![9u8; 300]);
    let data = write_log(&recs);
    let first_at = HEADER_SIZE + recs[0].len();
    assert_eq!(data[first_at + 6], RecordType::First as u8);
    assert_eq!(data[BLOCK_SIZE + 6], RecordType::Last as u8);
    // The FIRST fragment never became durable (zeros), its LAST fragment did.
    let mut d = data.clone();
    d[first_at..BLOCK_SIZE].fill(0);
    let (got, tail) = read_all(d).unwrap();
    assert_eq!(got, recs[..1]);
    assert_eq!(tail.valid_end, first_at as u64);
    // The same damage followed by another logical record is corruption.
    recs.push(b"after".to_vec());
    let mut d = write_log(&recs);
    d[first_at..BLOCK_SIZE].fill(0);
    assert!(read_all(d).unwrap_err().is_corruption());
}

/// `physical_len` predicts exactly what `add_record` appends, from every block position a
/// record can start at (including the padded last bytes of a block).
#[test]
fn physical_len_is_what_add_record_appends() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = LogWriter::new(PosixFs.create(&dir.path().join("x.log")).unwrap());
    let sizes = [
        0usize,
        1,
        5,
        100,
        BLOCK_SIZE - HEADER_SIZE,
        BLOCK_SIZE,
        3 * BLOCK_SIZE + 17,
    ];
    for i in 0..2000usize {
        let len = if i % 7 == 0 {
            sizes[i / 7 % sizes.len()]
        } else {
            (i * 37) % 700
        };
        let predicted = w.physical_len(len);
        let appended = w.add_record(&vec![0x5a; len]).unwrap();
        assert_eq!(predicted, appended, "record {i} of {len} bytes");
    }
}
