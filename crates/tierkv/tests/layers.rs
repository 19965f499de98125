//! The engine's modules import downward only.
//!
//! `docs/ARCHITECTURE.md` lists the engine's top-level modules in layers, top to bottom, in a
//! fenced block marked `layers`; a module may import only modules of lower layers. The same
//! page lists, in a block marked `upward-imports`, the imports that still point up (each as
//! `file -> module`), which the seams work removes one by one. This test reads every source
//! file of `crates/tierkv/src`, finds the modules each one names (`use crate::...` lines, paths
//! written inline as `crate::module::...`, `super::` paths that leave their top-level module,
//! the crate root's re-exports), and fails on:
//!
//! * an import that points up (or sideways, inside one layer) and is not listed;
//! * a listed import that no longer exists (the list only shrinks);
//! * a top-level module placed in no layer, or a layer naming a module that does not exist;
//! * two files of one top-level module that import each other (a cycle), unless one is the
//!   other's parent (`mod.rs` and its own children), or the pair is listed in the block marked
//!   `import-cycles` (the same rule: the list only shrinks).
//!
//! No parser: comments are cut, then paths are read from the text. A path inside a string
//! literal would be read as an import; the engine has none.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn architecture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of the fenced block of `doc` whose info string is `tag`, comments (after `#`)
/// and blank lines dropped.
fn block(doc: &str, tag: &str) -> Vec<String> {
    let open = format!("```{tag}");
    let mut lines = doc.lines().skip_while(|l| l.trim() != open);
    assert!(
        lines.next().is_some(),
        "docs/ARCHITECTURE.md has no ```{tag} block"
    );
    lines
        .take_while(|l| l.trim() != "```")
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Every `.rs` file under `dir`, as paths relative to `src/` with `/` separators.
fn sources(dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(src_dir()).unwrap();
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// `text` without `//` comments (doc comments included) and block comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else if rest.starts_with("//") {
            rest = rest.find('\n').map_or("", |i| &rest[i..]);
        } else if rest.starts_with('"') {
            // A string literal: kept as an empty one, so that `//` inside it cuts nothing.
            let body = &rest[1..];
            let mut end = body.len();
            let mut escaped = false;
            for (i, c) in body.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        end = i + 1;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            out.push_str("\"\"");
            rest = body.get(end..).unwrap_or("");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The module path of a source file: `db/compact.rs` -> [db, compact]; `db/mod.rs` -> [db].
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The identifier starting `s` (letters, digits, `_`).
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The paths (as segments from the crate root) that `code` names: `crate::a::b`, `super::x`
/// resolved against `module`, and each item of a `use crate::{a::b, c::{d, e}}` group.
fn paths_named(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let rest = &code[i..];
        let base: Option<(Vec<String>, &str)> = if !boundary {
            None
        } else if let Some(r) = rest.strip_prefix("crate::") {
            Some((Vec::new(), r))
        } else if rest.starts_with("super::") {
            let mut r = rest;
            let mut base = module.to_vec();
            while let Some(after) = r.strip_prefix("super::") {
                base.pop();
                r = after;
            }
            Some((base, r))
        } else {
            None
        };
        match base {
            Some((base, r)) => {
                let consumed = rest.len() - r.len();
                collect_tree(&base, r, &mut paths);
                i += consumed;
            }
            None => i += rest.chars().next().unwrap().len_utf8(),
        }
    }
    paths
}

/// Reads a use tree at `r` (`a::b::c`, `a::{b, c::d}`, `{a, b}`) under `base`.
fn collect_tree(base: &[String], r: &str, out: &mut Vec<Vec<String>>) {
    let mut path = base.to_vec();
    let mut r = r.trim_start();
    loop {
        if let Some(group) = r.strip_prefix('{') {
            // Split the group at top-level commas.
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        collect_tree(&path, &group[start..i], out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        collect_tree(&path, &group[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let id = ident(r);
        if id.is_empty() {
            break;
        }
        if id != "self" {
            path.push(id.to_string());
        }
        r = r[id.len()..].trim_start();
        match r.strip_prefix("::") {
            Some(after) => r = after.trim_start(),
            None => break,
        }
    }
    out.push(path);
}

struct Engine {
    /// Source files, relative to `src/`.
    files: Vec<String>,
    /// Top-level modules.
    tops: BTreeSet<String>,
    /// The crate root's re-exports: name -> the top-level module it comes from.
    reexports: BTreeMap<String, String>,
}

impl Engine {
    fn read() -> Engine {
        let mut files = Vec::new();
        sources(&src_dir(), &mut files);
        let tops: BTreeSet<String> = files
            .iter()
            .filter(|f| f.as_str() != "lib.rs")
            .map(|f| module_of(f)[0].clone())
            .collect();
        let lib = strip_comments(&fs::read_to_string(src_dir().join("lib.rs")).unwrap());
        let mut reexports = BTreeMap::new();
        for stmt in lib.split(';') {
            let Some(tree) = stmt.trim().strip_prefix("pub use ") else {
                continue;
            };
            let top = ident(tree).to_string();
            if !tops.contains(&top) {
                continue;
            }
            for path in paths_named(&format!("crate::{tree}"), &[]) {
                if let Some(name) = path.last() {
                    reexports.insert(name.clone(), top.clone());
                }
            }
        }
        Engine {
            files,
            tops,
            reexports,
        }
    }

    fn code(&self, file: &str) -> String {
        strip_comments(&fs::read_to_string(src_dir().join(file)).unwrap())
    }

    /// The top-level modules `file` imports, other than its own.
    fn imports(&self, file: &str) -> BTreeSet<String> {
        let module = module_of(file);
        let own = module.first().cloned().unwrap_or_default();
        paths_named(&self.code(file), &module)
            .into_iter()
            .filter_map(|p| {
                let first = p.first()?;
                if self.tops.contains(first) {
                    Some(first.clone())
                } else {
                    self.reexports.get(first).cloned()
                }
            })
            .filter(|m| *m != own)
            .collect()
    }

    /// The files of its own top-level module that `file` imports (the deepest file each path
    /// reaches), other than itself.
    fn file_imports(&self, file: &str) -> BTreeSet<String> {
        let module = module_of(file);
        let known: BTreeMap<Vec<String>, &String> =
            self.files.iter().map(|f| (module_of(f), f)).collect();
        let mut out = BTreeSet::new();
        for path in paths_named(&self.code(file), &module) {
            if path.first() != module.first() {
                continue;
            }
            let target = (1..=path.len())
                .rev()
                .find_map(|n| known.get(&path[..n]).copied());
            if let Some(t) = target.filter(|t| t.as_str() != file) {
                out.insert(t.clone());
            }
        }
        out
    }
}

/// Fails unless `found` and `listed` agree: every found item listed (else `what`), every
/// listed item found (else the list is stale: `stale`).
fn check_list(found: &BTreeSet<String>, listed: &BTreeSet<String>, what: &str, stale: &str) {
    let unlisted: Vec<&str> = found.difference(listed).map(String::as_str).collect();
    let gone: Vec<&str> = listed.difference(found).map(String::as_str).collect();
    assert!(unlisted.is_empty(), "{what}:\n{}", unlisted.join("\n"));
    assert!(gone.is_empty(), "{stale}:\n{}", gone.join("\n"));
}

#[test]
fn imports_point_down() {
    let doc = architecture();
    let engine = Engine::read();
    let mut layer_of: BTreeMap<String, usize> = BTreeMap::new();
    // Top layer first: a larger index is a lower layer.
    for (i, line) in block(&doc, "layers").iter().enumerate() {
        for m in line.split_whitespace() {
            assert!(
                engine.tops.contains(m),
                "the layers name `{m}`, which is no module of crates/tierkv/src"
            );
            assert!(
                layer_of.insert(m.to_string(), i).is_none(),
                "`{m}` is in two layers"
            );
        }
    }
    for m in &engine.tops {
        assert!(
            layer_of.contains_key(m),
            "module `{m}` is in no layer of docs/ARCHITECTURE.md"
        );
    }
    let listed: BTreeSet<String> = block(&doc, "upward-imports").into_iter().collect();
    let mut found = BTreeSet::new();
    for file in engine.files.iter().filter(|f| f.as_str() != "lib.rs") {
        let own = &module_of(file)[0];
        for m in engine.imports(file) {
            if layer_of[&m] <= layer_of[own] {
                found.insert(format!("{file} -> {m}"));
            }
        }
    }
    check_list(
        &found,
        &listed,
        "imports that point up or sideways (the layers are in docs/ARCHITECTURE.md)",
        "listed upward imports that no longer exist: remove them from docs/ARCHITECTURE.md",
    );
}

#[test]
fn files_of_one_module_import_each_other_only_as_parent_and_child() {
    let engine = Engine::read();
    let imports: BTreeMap<&String, BTreeSet<String>> = engine
        .files
        .iter()
        .map(|f| (f, engine.file_imports(f)))
        .collect();
    let parent_of = |child: &str, parent: &str| {
        let (c, p) = (module_of(child), module_of(parent));
        c.len() == p.len() + 1 && c.starts_with(&p)
    };
    let mut cycles = BTreeSet::new();
    for (a, targets) in &imports {
        for b in targets {
            let back = imports.get(b).is_some_and(|t| t.contains(a.as_str()));
            if back && a.as_str() < b.as_str() && !parent_of(a, b) && !parent_of(b, a) {
                cycles.insert(format!("{a} <-> {b}"));
            }
        }
    }
    let listed: BTreeSet<String> = block(&architecture(), "import-cycles")
        .into_iter()
        .collect();
    check_list(
        &cycles,
        &listed,
        "files that import each other",
        "listed pairs that no longer import each other: remove them from docs/ARCHITECTURE.md",
    );
}

#[test]
fn the_reader_finds_paths() {
    let m: Vec<String> = vec!["db".into(), "compact".into()];
    let found = paths_named(
        "use crate::{a::b, c::{d, e::f}};\nlet x = crate::g::h(1); super::State; // crate::no\n",
        &m,
    );
    let expect: Vec<Vec<&str>> = vec![
        vec!["a", "b"],
        vec!["c", "d"],
        vec!["c", "e", "f"],
        vec!["g", "h"],
        vec!["db", "State"],
    ];
    let found_ref: Vec<Vec<&str>> = found
        .iter()
        .map(|p| p.iter().map(String::as_str).collect())
        .collect();
    // The comment is cut only by strip_comments; paths_named reads what it is given.
    assert_eq!(&found_ref[..5], &expect[..]);
    let code = strip_comments("let a = \"crate::x\"; // crate::y\n/* crate::z */ crate::w::v;");
    let found = paths_named(&code, &m);
    assert_eq!(found, vec![vec!["w".to_string(), "v".to_string()]]);
    assert_eq!(module_of("db/mod.rs"), vec!["db".to_string()]);
    assert_eq!(
        module_of("labdb/l0/iter.rs"),
        vec!["labdb".to_string(), "l0".to_string(), "iter".to_string()]
    );
}
