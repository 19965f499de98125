//! The `tierkv` command-line tool (being written).
fn main() {}
