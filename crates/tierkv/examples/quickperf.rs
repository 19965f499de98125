use std::time::Instant;
use tierkv::{Db, Options};
fn main() {
    let n: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1_000_000);
    let dir = "/dev/shm/tkv-quick";
    let _ = std::fs::remove_dir_all(dir);
    let db = Db::open(dir, Options { block_cache_bytes: 8 << 20, ..Options::default() }).unwrap();
    let mut x: u64 = 0x1234567;
    let mut rnd = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
    let mut key = vec![b'0'; 16];
    let val = vec![7u8; 128];
    let t = Instant::now();
    for _ in 0..n {
        let k = rnd() % n;
        key[..8].copy_from_slice(&k.to_be_bytes());
        db.put(&key, &val).unwrap();
    }
    let e = t.elapsed().as_secs_f64();
    println!("fillrandom {:.0} ops/s", n as f64 / e);
    let t = Instant::now();
    let mut found = 0;
    for _ in 0..n {
        let k = rnd() % n;
        key[..8].copy_from_slice(&k.to_be_bytes());
        if db.get(&key).unwrap().is_some() { found += 1; }
    }
    let e = t.elapsed().as_secs_f64();
    println!("readrandom {:.0} ops/s found {found}", n as f64 / e);
    let s = db.stats();
    println!("WA {:.2} tablesWA {:.2} levels {:?} stall_us {}", s.write_amplification(), s.write_amplification_tables(), s.levels.iter().map(|l| l.files).collect::<Vec<_>>(), s.stall_micros());
}
