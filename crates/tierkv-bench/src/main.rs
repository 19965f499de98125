//! The `tierkv` command-line tool: argument parsing and dispatch to
//! [`tierkv_bench::commands`]. Errors print `error: ...` to stderr and exit with status 1
//! (clap's own usage errors exit with status 2).

#![forbid(unsafe_code)]
use clap::{Parser, Subcommand};

/// mimalloc instead of glibc's allocator: the memtable allocates one node and one key/value
/// block per write, and glibc's malloc/free was ~15% of a fillrandom profile.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::io::Write;
use std::process::ExitCode;
use tierkv_bench::commands::{self, DbArgs};
use tierkv_bench::reproduce::{self, ReproduceArgs};
use tierkv_bench::{BenchConfig, EngineResult};

/// TierKV command-line tool: benchmarks and database tools.
#[derive(Parser, Debug)]
#[command(name = "tierkv", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs db_bench-style benchmarks (flags as in db_bench: --benchmarks=fillseq,readrandom
    /// --num=1000000 ...).
    Bench(Box<BenchConfig>),
    /// Runs a scaled-down version of a paper's experiment (every phase, --rounds times),
    /// judges its checks on the medians over the rounds and writes a markdown report with SVG
    /// charts (--list shows the experiments).
    Reproduce(ReproduceArgs),
    /// Draws the scaling curve of `tierkv bench` runs at several thread counts: reads their
    /// --json reports (one per --threads value) and writes, into --out, a chart of each
    /// benchmark's throughput against threads (a line per design) and a markdown table.
    Scaling {
        /// Where the charts and `scaling.md` go (created if needed).
        #[arg(long)]
        out: std::path::PathBuf,
        /// The --json reports.
        reports: Vec<std::path::PathBuf>,
    },
    /// Writes KEY -> VALUE (creates the database if needed). 0x-prefixed arguments are hex.
    Put {
        #[command(flatten)]
        db: DbArgs,
        /// The key (text, or 0x-prefixed hex).
        key: String,
        /// The value (text, or 0x-prefixed hex).
        value: String,
    },
    /// Prints the value of KEY; exits with status 1 if it is absent.
    Get {
        #[command(flatten)]
        db: DbArgs,
        /// The key (text, or 0x-prefixed hex).
        key: String,
    },
    /// Deletes KEY.
    Delete {
        #[command(flatten)]
        db: DbArgs,
        /// The key (text, or 0x-prefixed hex).
        key: String,
    },
    /// Prints `key<TAB>value` lines of the keys in `[--from, --to)`.
    Scan {
        #[command(flatten)]
        db: DbArgs,
        /// First key (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// End key (exclusive).
        #[arg(long)]
        to: Option<String>,
        /// Most entries to print.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Prints what the database holds: its design, live keys and bytes, each stage's levels
    /// with their tables (files, bytes, tier), the WAL and the PM pool's usage.
    Stats {
        #[command(flatten)]
        db: DbArgs,
        /// Print the figures as one JSON document instead.
        #[arg(long)]
        json: bool,
    },
    /// Verifies every checksum and invariant and prints what was checked (tables, entries,
    /// WAL records, torn tail bytes, index keys, ...); exits non-zero on damage.
    Check {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Points CURRENT at the newest manifest from which the database opens consistently (for a
    /// lost or damaged CURRENT); writes nothing else.
    Repair {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Grows the PM pool of a closed database to --size bytes (a larger multiple of its chunk
    /// size): the way out of a full pool, whose database opens read-only until then.
    GrowPool {
        #[command(flatten)]
        db: DbArgs,
        /// The pool's new size in bytes.
        #[arg(long)]
        size: u64,
    },
    /// Puts a key stream through a design's stages and compaction policies without I/O and
    /// prints each stage's write amplification.
    SimulateCompaction(tierkv_bench::simulate::SimulateArgs),
    /// Lists every design with its one-line summary (the names `--design` takes).
    Designs,
}

fn run(command: Command) -> EngineResult<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        Command::Bench(config) => {
            commands::bench(&config, &mut out)?;
        }
        Command::Reproduce(args) => {
            reproduce::reproduce(&args, &mut out)?;
        }
        Command::Scaling { out: dir, reports } => {
            tierkv_bench::scaling::scaling(&reports, &dir, &mut out)?;
        }
        Command::Put { db, key, value } => commands::put(&db, &key, &value)?,
        Command::Get { db, key } => {
            if !commands::get(&db, &key, &mut out)? {
                out.flush()?;
                eprintln!("error: key {key} not found");
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Delete { db, key } => commands::delete(&db, &key)?,
        Command::Scan {
            db,
            from,
            to,
            limit,
        } => {
            commands::scan(&db, from.as_deref(), to.as_deref(), limit, &mut out)?;
        }
        Command::Stats { db, json } => commands::stats(&db, json, &mut out)?,
        Command::Check { db } => commands::check(&db, &mut out)?,
        Command::Repair { db } => commands::repair(&db, &mut out)?,
        Command::GrowPool { db, size } => commands::grow_pool(&db, size, &mut out)?,
        Command::Designs => write!(out, "{}", commands::design_list())?,
        Command::SimulateCompaction(args) => {
            tierkv_bench::simulate::simulate_compaction(&args, &mut out)?
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Parses `args` with the registry's designs and their summaries in `bench --help`'s
/// `--design` (the registry is data, so the help is built from it, not written twice).
fn parse_from(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = Cli::command().mut_subcommand("bench", |bench| {
        bench.mut_arg("design", |arg| {
            let help = arg
                .get_long_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            arg.long_help(format!(
                "{help}\n\nDesigns:\n{}",
                commands::design_list().trim_end()
            ))
        })
    });
    let matches = command.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// The command line, or the exit after clap's message; an unknown flag is named as unknown
/// (clap's "a similar argument exists" tip pointed db_bench users at unrelated flags).
fn parse_cli() -> Result<Cli, ExitCode> {
    use clap::error::{ContextKind, ErrorKind};
    match parse_from(tierkv_bench::config::normalize_ycsb_args(
        std::env::args_os(),
    )) {
        Ok(cli) => Ok(cli),
        Err(e) if e.kind() == ErrorKind::UnknownArgument => {
            let flag = e
                .get(ContextKind::InvalidArg)
                .map_or_else(|| "?".to_string(), |v| v.to_string());
            eprintln!(
                "error: unknown flag {flag}: tierkv does not have it (`tierkv <command> --help` \
                 lists the flags of each command)"
            );
            Err(ExitCode::from(2))
        }
        Err(e) => e.exit(),
    }
}

fn main() -> ExitCode {
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`tierkv scan ... | head`) is not an error worth reporting.
            let broken_pipe = e
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe);
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkv_bench::Benchmark;

    #[test]
    fn parses_bench_with_db_bench_flags() {
        let cli = Cli::try_parse_from([
            "tierkv",
            "bench",
            "--benchmarks=fillseq,readrandom",
            "--num=1000",
            "--key_size=20",
        ])
        .unwrap();
        let Command::Bench(c) = cli.command else {
            panic!("not bench: {:?}", cli.command)
        };
        assert_eq!(
            c.benchmarks,
            vec![Benchmark::Fillseq, Benchmark::Readrandom]
        );
        assert_eq!((c.num, c.key_size, c.value_size), (1000, 20, 128));
    }

    #[test]
    fn parses_tool_subcommands() {
        let cli = Cli::try_parse_from(["tierkv", "put", "--db", "d", "k", "0x00ff"]).unwrap();
        match cli.command {
            Command::Put { db, key, value } => {
                assert_eq!(db.db, std::path::PathBuf::from("d"));
                assert_eq!((key.as_str(), value.as_str()), ("k", "0x00ff"));
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from([
            "tierkv",
            "scan",
            "--db=d",
            "--from",
            "a",
            "--to=b",
            "--limit=3",
        ])
        .unwrap();
        match cli.command {
            Command::Scan {
                from, to, limit, ..
            } => {
                assert_eq!(from.as_deref(), Some("a"));
                assert_eq!(to.as_deref(), Some("b"));
                assert_eq!(limit, Some(3));
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(["tierkv", "reproduce", "--list"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Reproduce(ReproduceArgs { list: true, .. })
        ));
        let cli = Cli::try_parse_from([
            "tierkv",
            "reproduce",
            "leveled-vs-leveled-pm",
            "--out=/tmp/x",
            "--num=10",
            "--ops=5",
            "--rounds=3",
        ])
        .unwrap();
        match cli.command {
            Command::Reproduce(a) => {
                assert_eq!(a.experiment.as_deref(), Some("leveled-vs-leveled-pm"));
                assert_eq!((a.num, a.reads), (Some(10), Some(5)));
                assert_eq!(a.rounds, Some(3));
                assert!(!a.rejudge && !a.self_test);
            }
            other => panic!("{other:?}"),
        }
        // --db is required by the tools; a bad --benchmarks is clap's error.
        assert!(Cli::try_parse_from(["tierkv", "get", "k"]).is_err());
        let err = Cli::try_parse_from(["tierkv", "bench", "--benchmarks=nope"]).unwrap_err();
        assert!(
            err.to_string().contains("unknown benchmark \"nope\""),
            "{err}"
        );
    }
}
