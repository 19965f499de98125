//! `put`, `get`, `delete` and `scan` on an existing database (or, for `put`, a new one).

use super::*;

/// `tierkv put`: writes `key` -> `value`, creating the database if needed.
pub fn put(args: &DbArgs, key: &str, value: &str) -> EngineResult<()> {
    let (key, value) = (parse_bytes_arg(key)?, parse_bytes_arg(value)?);
    let db = args.open(true)?;
    db.put(&key, &value)?;
    Ok(db.close()?)
}

/// `tierkv get`: prints the value of `key`; returns whether it was found.
pub fn get(args: &DbArgs, key: &str, out: &mut dyn Write) -> EngineResult<bool> {
    let key = parse_bytes_arg(key)?;
    let db = args.open(false)?;
    let value = db.get(&key)?;
    if let Some(v) = &value {
        writeln!(out, "{}", display_bytes(v))?;
    }
    db.close()?;
    Ok(value.is_some())
}

/// `tierkv delete`: deletes `key`.
pub fn delete(args: &DbArgs, key: &str) -> EngineResult<()> {
    let key = parse_bytes_arg(key)?;
    let db = args.open(false)?;
    db.delete(&key)?;
    Ok(db.close()?)
}

/// `tierkv scan`: prints `key<TAB>value` lines for keys in `[from, to)`, at most `limit` of
/// them; returns the number printed.
pub fn scan(
    args: &DbArgs,
    from: Option<&str>,
    to: Option<&str>,
    limit: Option<u64>,
    out: &mut dyn Write,
) -> EngineResult<u64> {
    let from = from.map(parse_bytes_arg).transpose()?;
    let to = to.map(parse_bytes_arg).transpose()?;
    let db = args.open(false)?;
    let lower = from.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let upper = to.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let limit = limit.unwrap_or(u64::MAX);
    let mut n = 0;
    {
        // The iterator ends before the database closes.
        let mut it = db.scan((lower, upper))?;
        while n < limit && it.valid() {
            let (k, v) = (display_bytes(it.key()), display_bytes(it.value()));
            writeln!(out, "{k}\t{v}")?;
            n += 1;
            it.next();
        }
        it.status()?;
    }
    db.close()?;
    Ok(n)
}
