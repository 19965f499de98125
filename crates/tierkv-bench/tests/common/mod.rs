//! What the end-to-end tests of the `tierkv` tools share: running the binary and asserting
//! how it exited.

#![allow(dead_code)] // each test binary uses a part of it

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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

/// `p` as the `&str` the binary's arguments take.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file under `dir` (recursively) and `extra`, with its bytes: what must not change.
pub fn contents(dir: &Path, extra: &[&Path]) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    for p in extra {
        out.insert(p.to_path_buf(), std::fs::read(p).unwrap());
    }
    out
}
