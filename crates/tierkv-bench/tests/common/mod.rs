//! What the end-to-end tests of the `tierkv` tools share: running the binary and asserting
//! how it exited.

#![allow(dead_code)] // each test binary uses a part of it

use std::path::Path;
use std::process::{Command, Output};

/// Runs the `tierkv` binary with `args`, in `cwd` when given.
pub fn tierkv_in(cwd: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tierkv"));
    c.args(args);
    if let Some(dir) = cwd {
        c.current_dir(dir);
    }
    c.output().expect("the tierkv binary runs")
}

/// Runs the `tierkv` binary with `args`.
pub fn tierkv(args: &[&str]) -> Output {
    tierkv_in(None, args)
}

/// Runs `args`, asserts success, returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = tierkv(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `args`, asserts failure with status 1, returns stderr.
pub fn fails(args: &[&str]) -> String {
    let out = tierkv(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    stderr
}
