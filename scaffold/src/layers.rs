//! The layering test: every `crate::` path of `scaffold/src` must name a
//! module its own module may import, as listed in `ARCHITECTURE.md`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The layer list: module → (rank, the modules it may import).
type Map = BTreeMap<String, (usize, Vec<String>)>;

/// Files that sit over every layer (or only hold this test).
const EXEMPT: [&str; 2] = ["lib.rs", "layers.rs"];

/// Parse `N. \`module\`: ... Imports: a, b.` lines of the `## Layers` section.
fn parse_map(doc: &str) -> Map {
    let section = doc.split("## Layers").nth(1).unwrap_or("");
    let section = section.split("\n## ").next().unwrap_or("");
    let mut map = Map::new();
    for line in section.lines() {
        let Some((_, rest)) = line.split_once(". `") else {
            continue;
        };
        let Some((name, rest)) = rest.split_once('`') else {
            continue;
        };
        let imports = rest
            .rsplit_once("Imports:")
            .map_or("", |(_, list)| list)
            .trim()
            .trim_end_matches('.');
        let imports = imports
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty() && *m != "none")
            .map(str::to_string)
            .collect();
        let rank = map.len();
        map.insert(name.to_string(), (rank, imports));
    }
    map
}

/// Blank out comments, keeping offsets (and lines). String literals stay:
/// a path in one (`#[serde(with = "crate::x::y")]`) is an import too.
fn code_only(src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &src[i..];
        let skip = if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            rest.find("*/").map_or(rest.len(), |e| e + 2)
        } else {
            0
        };
        if skip == 0 {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        } else {
            out.extend(
                rest[..skip]
                    .chars()
                    .map(|c| if c == '\n' { '\n' } else { ' ' }),
            );
            i += skip;
        }
    }
    out
}

/// The first segments named by the path after each `crate::`, with their
/// byte offsets: `crate::a::b` → `a`; `crate::{a::x, b}` → `a`, `b`.
fn crate_paths(code: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let start = at + "crate::".len();
        if code[start..].starts_with('{') {
            top_names(code, start, &mut found);
        } else {
            found.push((ident(&code[start..]), start));
        }
    }
    found
}

/// The names at depth one of the brace group at `start`.
fn top_names(code: &str, start: usize, found: &mut Vec<(String, usize)>) {
    let mut depth = 0;
    let mut expect = false;
    for (i, c) in code[start..].char_indices() {
        match c {
            '{' => {
                depth += 1;
                expect = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
            ',' if depth == 1 => expect = true,
            c if expect && depth == 1 && (c.is_alphanumeric() || c == '_') => {
                found.push((ident(&code[start + i..]), start + i));
                expect = false;
            }
            _ => {}
        }
    }
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src` belongs to.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_string())
}

/// Every breach of `map` in the files under `src`, one line each.
fn violations(src: &Path, map: &Map) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .display()
            .to_string();
        if EXEMPT.contains(&rel.as_str()) {
            continue;
        }
        let Some(module) = module_of(src, &file) else {
            continue;
        };
        let Some((rank, allowed)) = map.get(&module) else {
            found.push(format!(
                "{rel}: module `{module}` is not in ARCHITECTURE.md's layers"
            ));
            continue;
        };
        let Ok(text) = fs::read_to_string(&file) else {
            found.push(format!("{rel}: unreadable"));
            continue;
        };
        let code = code_only(&text);
        for (name, at) in crate_paths(&code) {
            let Some((other_rank, _)) = map.get(&name) else {
                continue;
            };
            if name == module {
                continue;
            }
            let line = code[..at].matches('\n').count() + 1;
            if other_rank > rank {
                found.push(format!(
                    "{rel}:{line}: `{module}` imports `{name}`, a layer above it"
                ));
            } else if !allowed.contains(&name) {
                found.push(format!(
                    "{rel}:{line}: `{module}` imports `{name}`, not in its Imports list"
                ));
            }
        }
    }
    found
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn map() -> Map {
    let doc = fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap_or_default();
    parse_map(&doc)
}

#[test]
fn the_map_is_a_dag_of_every_module() {
    let map = map();
    assert!(map.len() > 10, "ARCHITECTURE.md lists no layers: {map:?}");
    for (module, (rank, imports)) in &map {
        for import in imports {
            let below = map.get(import).is_some_and(|(r, _)| r < rank);
            assert!(
                below,
                "ARCHITECTURE.md: `{module}` may import `{import}`, which is not listed above it"
            );
        }
    }
}

#[test]
fn no_module_imports_one_above_it() {
    let found = violations(&root().join("scaffold/src"), &map());
    assert!(found.is_empty(), "layer breaches:\n{}", found.join("\n"));
}

#[test]
fn a_breach_is_found_with_its_file_line_and_modules() {
    let dir = std::env::temp_dir().join(format!("scaffold-layers-{}", std::process::id()));
    let src = dir.as_path();
    fs::create_dir_all(src.join("store")).expect("a module directory");
    let store = "//! crate::eval in a comment is fine\n\
                 use crate::signal::Signal;\n\
                 use crate::{util, eval::{CellRecord, stats}};\n\
                 #[serde(with = \"crate::eval::json\")]\n";
    fs::write(src.join("store/runs.rs"), store).expect("a source file");
    fs::write(src.join("signal.rs"), "fn f() -> crate::store::Store {}\n").expect("a source file");
    fs::write(src.join("extra.rs"), "\n").expect("a source file");
    let doc = "## Layers\n1. `signal`: s. Imports: none.\n2. `util`: u. Imports: none.\n\
               3. `store`: st. Imports: signal.\n4. `eval`: e. Imports: store.\n";
    let found = violations(src, &parse_map(doc));
    let _ = fs::remove_dir_all(src);
    assert_eq!(
        found,
        [
            "extra.rs: module `extra` is not in ARCHITECTURE.md's layers",
            "signal.rs:1: `signal` imports `store`, a layer above it",
            "store/runs.rs:3: `store` imports `util`, not in its Imports list",
            "store/runs.rs:3: `store` imports `eval`, a layer above it",
            "store/runs.rs:4: `store` imports `eval`, a layer above it",
        ]
    );
}
