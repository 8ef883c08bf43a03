//! `Read`, `Grep`, `Edit` and `Write` over a file tree kept in the
//! workflow's state (no real file system: every run is deterministic), for
//! the refactoring and debugging workflows.

use std::collections::BTreeMap;

use scaffold::workflow::{State, Tool, ToolContext};
use schemars::JsonSchema;
use serde::Deserialize;

/// A file tree: path → content.
pub(crate) type Files = BTreeMap<String, String>;

/// A state that holds a [`Files`] tree.
pub(crate) trait HasFiles {
    /// The files.
    fn files(&self) -> &Files;
    /// The files, to change.
    fn files_mut(&mut self) -> &mut Files;
    /// `path` was changed by `Edit` or `Write` (nothing by default).
    fn modified(&mut self, _path: &str) {}
}

/// The files of a case's input: `[{path, content}]`.
pub(crate) fn files_of(input: &serde_json::Value) -> Files {
    input
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| Some((f["path"].as_str()?.into(), f["content"].as_str()?.into())))
        .collect()
}

/// The `Read` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ReadFile {
    /// Path of the file, relative to the project root.
    pub file_path: String,
}

/// The `Grep` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GrepArgs {
    /// A regular expression, searched line by line.
    pub pattern: String,
    /// Only files whose path starts with this (a file or a directory).
    #[serde(default)]
    pub path: Option<String>,
}

/// The `Edit` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EditFile {
    /// Path of the file, relative to the project root.
    pub file_path: String,
    /// The exact text to replace; it must occur once unless `replace_all`.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence of `old_string`.
    #[serde(default)]
    pub replace_all: bool,
}

/// The `Write` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WriteFile {
    /// Path of the file, relative to the project root.
    pub file_path: String,
    /// The whole content of the file.
    pub content: String,
}

fn missing(files: &Files, path: &str) -> String {
    let known: Vec<&str> = files.keys().map(String::as_str).collect();
    format!("no file `{path}` (the files are: {})", known.join(", "))
}

/// The content of `path`, its lines numbered from 1.
pub(crate) fn read(files: &Files, path: &str) -> Result<String, String> {
    let content = files.get(path).ok_or_else(|| missing(files, path))?;
    Ok(content
        .lines()
        .enumerate()
        .map(|(i, line)| format!("{:>4}\t{line}\n", i + 1))
        .collect())
}

/// Every line matching `pattern` as `path:line: text`, in path order; a
/// search that finds nothing says so (it is not an error).
pub(crate) fn grep(files: &Files, pattern: &str, under: Option<&str>) -> Result<String, String> {
    let re = regex::Regex::new(pattern).map_err(|e| format!("bad pattern `{pattern}`: {e}"))?;
    let hits: Vec<String> = files
        .iter()
        .filter(|(path, _)| under.is_none_or(|p| path.starts_with(p)))
        .flat_map(|(path, content)| {
            content
                .lines()
                .enumerate()
                .filter(|(_, line)| re.is_match(line))
                .map(move |(i, line)| format!("{path}:{}: {line}", i + 1))
        })
        .collect();
    if hits.is_empty() {
        return Ok(format!("no match for `{pattern}`"));
    }
    Ok(hits.join("\n"))
}

/// Replace `old` by `new` in `path`: exactly one occurrence, or every one
/// with `all`. Errors (the file left as it was): no such file, empty or
/// absent `old`, or `old` found more than once without `all`.
pub(crate) fn edit(
    files: &mut Files,
    path: &str,
    old: &str,
    new: &str,
    all: bool,
) -> Result<String, String> {
    if old.is_empty() {
        return Err("old_string is empty: give the exact text to replace".into());
    }
    let known = missing(files, path);
    let content = files.get_mut(path).ok_or(known)?;
    let count = content.matches(old).count();
    match (count, all) {
        (0, _) => Err(format!("old_string not found in {path}")),
        (1, _) | (_, true) => {
            *content = content.replace(old, new);
            Ok(format!("edited {path}: {count} replacement(s)"))
        }
        (n, false) => Err(format!(
            "old_string occurs {n} times in {path}: give more context to pick one, or set replace_all"
        )),
    }
}

/// `Read`: a file of the state, its lines numbered.
pub(crate) fn read_tool<S: State + HasFiles>() -> Tool<S> {
    Tool::stateful(
        "Read",
        "Read a file of the project; its lines come numbered from 1",
        |r: ReadFile, ctx: ToolContext<S>| async move { ctx.read(|s| read(s.files(), &r.file_path)) },
    )
}

/// `Grep`: the lines of the state's files that match a regular expression.
pub(crate) fn grep_tool<S: State + HasFiles>() -> Tool<S> {
    Tool::stateful(
        "Grep",
        "Search the project's files for a regular expression; answers path:line: text",
        |g: GrepArgs, ctx: ToolContext<S>| async move {
            ctx.read(|s| grep(s.files(), &g.pattern, g.path.as_deref()))
        },
    )
}

/// `Edit`: an exact-string replacement in one file of the state.
pub(crate) fn edit_tool<S: State + HasFiles>() -> Tool<S> {
    Tool::stateful(
        "Edit",
        "Replace exact text in one file: old_string must occur once, unless replace_all",
        |e: EditFile, ctx: ToolContext<S>| async move {
            let mut outcome = Err(String::new());
            ctx.update(|s| {
                outcome = edit(
                    s.files_mut(),
                    &e.file_path,
                    &e.old_string,
                    &e.new_string,
                    e.replace_all,
                );
                if outcome.is_ok() {
                    s.modified(&e.file_path);
                }
            });
            outcome
        },
    )
}

/// `Write`: adds (or replaces) a file of the state.
pub(crate) fn write_tool<S: State + HasFiles>() -> Tool<S> {
    Tool::stateful(
        "Write",
        "Write a file of the project (replacing it if it exists)",
        |w: WriteFile, ctx: ToolContext<S>| async move {
            let bytes = w.content.len();
            ctx.update(|s| {
                s.files_mut().insert(w.file_path.clone(), w.content);
                s.modified(&w.file_path);
            });
            Ok::<_, String>(format!("wrote {} ({bytes} bytes)", w.file_path))
        },
    )
}
