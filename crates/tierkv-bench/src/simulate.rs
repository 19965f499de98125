//! `tierkv simulate-compaction`: puts a key stream through a design's stages and compaction
//! policies without any I/O (`tierkv::simulate_compaction`) and prints what each stage and
//! group wrote: a policy's write amplification in milliseconds, without a benchmark run.

use crate::engine::EngineResult;
use crate::workload::{make_key, KeyGen};
use std::io::Write;
use std::str::FromStr;
use tierkv::{Design, Options};

/// The key order of the simulated stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyOrder {
    /// Uniformly random keys of `[0, num)` (db_bench's fillrandom).
    Uniform,
    /// Keys `0, 1, 2, ...` (fillseq).
    Sequential,
}

/// The flags of `tierkv simulate-compaction`.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct SimulateArgs {
    /// The design whose stages and policies run.
    #[arg(long, default_value = "leveled", value_parser = |s: &str| Design::from_str(s).map_err(|e| e.to_string()))]
    pub design: Design,
    /// Puts to simulate.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Key size in bytes.
    #[arg(long = "key_size", default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes.
    #[arg(long = "value_size", default_value_t = 100)]
    pub value_size: usize,
    /// Key order.
    #[arg(long, value_enum, default_value_t = KeyOrder::Uniform)]
    pub order: KeyOrder,
    /// Write-buffer size in bytes (default: the design's).
    #[arg(long = "write_buffer_size")]
    pub write_buffer_size: Option<usize>,
    /// Target size of L1 in bytes (default: the design's).
    #[arg(long = "max_bytes_for_level_base")]
    pub max_bytes_for_level_base: Option<u64>,
    /// Size of compaction output runs in bytes (default: the design's).
    #[arg(long = "target_file_size_base")]
    pub target_file_size: Option<u64>,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
}

/// Runs the simulation and prints the report.
pub fn simulate_compaction(args: &SimulateArgs, out: &mut dyn Write) -> EngineResult<()> {
    let mut o = args.design.options(Options::default());
    if let Some(n) = args.write_buffer_size {
        o.write_buffer_size = n;
    }
    if let Some(n) = args.max_bytes_for_level_base {
        o.compaction.max_bytes_for_level_base = n;
    }
    if let Some(n) = args.target_file_size {
        o.compaction.target_file_size = n;
    }
    o.validate()?;
    let mut keys = KeyGen::new(args.seed, args.num);
    let (order, key_size, value_size) = (args.order, args.key_size, args.value_size);
    let stream = (0..args.num).map(move |i| {
        let k = match order {
            KeyOrder::Uniform => keys.next_key(),
            KeyOrder::Sequential => i,
        };
        (make_key(k, key_size), value_size)
    });
    let t = std::time::Instant::now();
    let r = tierkv::simulate_compaction(&o, stream)?;
    writeln!(
        out,
        "Simulated {} {:?} puts of {} + {} bytes through {} in {:.2} s (no I/O)",
        args.num,
        args.order,
        args.key_size,
        args.value_size,
        args.design,
        t.elapsed().as_secs_f64()
    )?;
    writeln!(
        out,
        "user bytes {}, flushes {}, write amplification without the log {:.3}",
        r.user_bytes,
        r.flushes,
        r.write_amplification()
    )?;
    for (i, s) in r.stages.iter().enumerate() {
        writeln!(
            out,
            "stage{i} ({}): write amplification {:.3}, {} merges, {} moves",
            s.name,
            r.stage_write_amplification(i),
            s.compactions,
            s.moves
        )?;
        for (g, group) in s.groups.iter().enumerate() {
            writeln!(
                out,
                "  group {g}: wrote {:>14} bytes ({:.3} x user), holds {:>5} runs, {:>14} bytes",
                group.bytes_written,
                group.bytes_written as f64 / r.user_bytes.max(1) as f64,
                group.runs,
                group.bytes
            )?;
        }
    }
    Ok(())
}
