//! `cargo scaffold sessions list|show|export|import`.

use std::path::Path;

use scaffold::_cargo_scaffold_support::util::rfc3339;
use scaffold::session::{SessionError, SessionExport};
use scaffold::signal::Signal;
use scaffold::store::{SessionFilter, SessionRecord, SessionStatus, Store};
use serde_json::{Value, json};

use crate::cli::{SessionsExportArgs, SessionsImportArgs, SessionsListArgs, SessionsShowArgs};
use crate::error::{CliError, CmdResult, Exit};
use crate::paths;
use crate::store::{self as db, error as store_error};
use crate::text::{columns, cut, duration};

/// How many characters of an id the tables show: its end, since session
/// ids start with the time they were made (so sessions of a run share their
/// first characters). `sessions show` and the others take it.
pub const SHORT_ID: usize = 12;

fn open(database: Option<&Path>) -> Result<Store, CliError> {
    db::open(database).map(|db| db.store)
}

/// The last [`SHORT_ID`] characters of an id, as the tables show it.
pub fn short(id: &str) -> String {
    let skip = id.chars().count().saturating_sub(SHORT_ID);
    id.chars().skip(skip).collect()
}

fn resolve(store: &Store, id: &str) -> Result<SessionRecord, CliError> {
    db::session(store, id)
}

/// `cargo scaffold sessions list`.
pub fn list(args: &SessionsListArgs) -> CmdResult {
    let mut filter = SessionFilter::default();
    if let Some(s) = &args.status {
        let status: SessionStatus = s.parse().map_err(|_| {
            CliError::input(format!(
                "--status `{s}`: not a session status (use running, completed, failed, terminated or interrupted)"
            ))
        })?;
        filter = filter.status(status);
    }
    for tag in &args.tag {
        filter = filter.tag(tag.clone());
    }
    if let Some(v) = &args.variant {
        filter = filter.variant(v.clone());
    }
    if let Some(w) = &args.workflow {
        filter = filter.workflow(w.clone());
    }
    let store = open(args.db.database.as_deref())?;
    if let Some(p) = &args.parent {
        filter = filter.parent(resolve(&store, p)?.meta.id);
    }
    if args.limit > 0 {
        filter = filter.limit(args.limit);
    }
    let sessions = store.list(&filter).map_err(store_error)?;
    if args.json {
        let doc = serde_json::to_string_pretty(&sessions).unwrap_or_default();
        println!("{doc}");
        return Ok(Exit::Success);
    }
    if sessions.is_empty() {
        eprintln!("no sessions match");
        return Ok(Exit::Success);
    }
    let mut rows = vec![
        [
            "ID", "WORKFLOW", "VARIANT", "STATUS", "SIGNALS", "STARTED", "PARENT",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for s in &sessions {
        rows.push(vec![
            short(&s.meta.id),
            s.meta.workflow.clone(),
            s.meta.variant.clone().unwrap_or_else(|| "-".into()),
            s.status.to_string(),
            s.signal_count.to_string(),
            rfc3339(s.meta.started_at_ms),
            s.meta
                .parent_id
                .as_deref()
                .map(short)
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    print!("{}", columns(&rows));
    if args.limit > 0 && sessions.len() == args.limit {
        eprintln!(
            "(the {} newest; --limit N for more, --limit 0 for all)",
            args.limit
        );
    }
    Ok(Exit::Success)
}

/// The ancestors of `session`, nearest first (stops at a missing parent or a cycle).
fn ancestors(store: &Store, session: &SessionRecord) -> Result<Vec<SessionRecord>, CliError> {
    let mut out: Vec<SessionRecord> = Vec::new();
    let mut next = session.meta.parent_id.clone();
    while let Some(id) = next {
        if id == session.meta.id || out.iter().any(|s| s.meta.id == id) {
            break;
        }
        match store.session(&id).map_err(store_error)? {
            Some(parent) => {
                next = parent.meta.parent_id.clone();
                out.push(parent);
            }
            None => break,
        }
    }
    Ok(out)
}

/// `cargo scaffold sessions show`.
pub fn show(args: &SessionsShowArgs) -> CmdResult {
    let store = open(args.db.database.as_deref())?;
    let session = resolve(&store, &args.id)?;
    let lineage = ancestors(&store, &session)?;
    let children = store
        .list(&SessionFilter::default().parent(session.meta.id.clone()))
        .map_err(store_error)?;
    let signals = store.signals(&session.meta.id).map_err(store_error)?;
    if let Some(path) = &args.html {
        return write_html(path, &session, &signals);
    }
    if args.json {
        let doc = json!({
            "session": session,
            "lineage": lineage.iter().map(|s| json!({
                "id": s.meta.id, "workflow": s.meta.workflow, "forkPoint": s.meta.fork_point,
            })).collect::<Vec<_>>(),
            "children": children.iter().map(|s| json!({
                "id": s.meta.id, "variant": s.meta.variant, "forkPoint": s.meta.fork_point,
            })).collect::<Vec<_>>(),
            "signals": signals,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(Exit::Success);
    }
    print!(
        "{}",
        describe(&session, &lineage, &children, &signals, args.full)
    );
    Ok(Exit::Success)
}

/// `sessions show --html`: the transcript page (with the session's
/// lineage), printed (`-`) or written to `path`.
fn write_html(path: &std::path::Path, session: &SessionRecord, signals: &[Signal]) -> CmdResult {
    let page =
        scaffold::_cargo_scaffold_support::report::html::session_record_page(session, signals);
    if path.as_os_str() == "-" {
        print!("{page}");
        return Ok(Exit::Success);
    }
    std::fs::write(path, page)
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    eprintln!("  Transcript: {}", path.display());
    Ok(Exit::Success)
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn describe(
    s: &SessionRecord,
    lineage: &[SessionRecord],
    children: &[SessionRecord],
    signals: &[Signal],
    full: bool,
) -> String {
    let m = &s.meta;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |k: &str, v: String| rows.push(vec![format!("{k}:"), v]);
    row("session", m.id.clone());
    row("workflow", m.workflow.clone());
    if let Some(v) = &m.variant {
        row("variant", v.clone());
    }
    row("status", s.status.to_string());
    row("started", rfc3339(m.started_at_ms));
    if let Some(d) = s.duration_ms {
        row("duration", duration(d));
    }
    if !m.tags.is_empty() {
        row("tags", m.tags.join(", "));
    }
    row("input", cut(&compact(&m.input), 200));
    if let Some(e) = &s.error {
        row("error", e.clone());
    }
    if let Some(o) = &s.output {
        row(
            "output",
            if full {
                compact(o)
            } else {
                cut(&compact(o), 200)
            },
        );
    }
    row("signals", s.signal_count.to_string());
    let mut out = columns(&rows);

    out.push_str("\nlineage:\n");
    if lineage.is_empty() && m.parent_id.is_none() {
        out.push_str("  (a root session: not forked)\n");
    }
    let mut fork_of = m.fork_point.as_ref();
    let mut child = m.id.as_str();
    for parent in lineage {
        out.push_str(&format!(
            "  {} forked from {} at {}\n",
            short(child),
            parent.meta.id,
            fork_of.map(compact).unwrap_or_else(|| "?".into())
        ));
        fork_of = parent.meta.fork_point.as_ref();
        child = &parent.meta.id;
    }
    if let Some(missing) = lineage
        .last()
        .map_or(m.parent_id.as_deref(), |p| p.meta.parent_id.as_deref())
    {
        out.push_str(&format!(
            "  {} forked from {missing} (not in this database)\n",
            short(child)
        ));
    }
    for c in children {
        out.push_str(&format!(
            "  forked into {} ({}) at {}\n",
            c.meta.id,
            c.meta.variant.as_deref().unwrap_or("-"),
            c.meta
                .fork_point
                .as_ref()
                .map(compact)
                .unwrap_or_else(|| "?".into())
        ));
    }

    out.push_str("\nsignals:\n");
    let mut rows: Vec<Vec<String>> = Vec::new();
    for sig in signals {
        let payload = compact(&sig.payload);
        rows.push(vec![
            format!("  {:>4}", sig.index),
            format!("+{}ms", sig.at_ms),
            sig.name.clone(),
            sig.agent.clone().unwrap_or_default(),
            if full { payload } else { cut(&payload, 80) },
        ]);
    }
    out.push_str(&columns(&rows));
    out
}

/// `cargo scaffold sessions export`.
pub fn export(args: &SessionsExportArgs) -> CmdResult {
    if let Some(out) = &args.output
        && out.is_dir()
    {
        return Err(CliError::input(format!(
            "-o {}: this is a directory; give the file to write (e.g. {}/session.json)",
            out.display(),
            out.display()
        )));
    }
    let store = open(args.db.database.as_deref())?;
    let session = resolve(&store, &args.id)?;
    let export = SessionExport::from_store(&store, &session.meta.id).map_err(session_error)?;
    match &args.output {
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| {
                    CliError::failed(format!(
                        "cannot create the directory {}: {e}",
                        dir.display()
                    ))
                })?;
            }
            export.save(path).map_err(session_error)?;
            eprintln!(
                "exported session {} ({} signals) to {}",
                session.meta.id,
                export.signals.len(),
                path.display()
            );
        }
        None => {
            let text = serde_json::to_string_pretty(&export)
                .map_err(|e| CliError::failed(format!("cannot serialize the session: {e}")))?;
            println!("{text}");
        }
    }
    Ok(Exit::Success)
}

/// `cargo scaffold sessions import`.
pub fn import(args: &SessionsImportArgs) -> CmdResult {
    // Every file is read and checked before anything is written.
    let mut exports = Vec::new();
    for file in &args.files {
        if db::is_database(file) {
            return Err(CliError::input(format!(
                "{} is a session database, not a file written by `cargo scaffold sessions export`: export its sessions first",
                file.display()
            )));
        }
        let export = SessionExport::load(file).map_err(|e| CliError::input(e.to_string()))?;
        if let Some((other, _)) = exports
            .iter()
            .find(|(_, e): &&(&Path, SessionExport)| e.session.meta.id == export.session.meta.id)
        {
            return Err(CliError::input(format!(
                "{} and {} hold the same session {}: import it once",
                other.display(),
                file.display(),
                export.session.meta.id
            )));
        }
        exports.push((file.as_path(), export));
    }
    let (path, _) = paths::database(args.database.as_deref())?;
    let store = Store::open(&path)
        .map_err(|e| CliError::failed(format!("cannot open the session database: {e}")))?;
    for (file, export) in &exports {
        let id = &export.session.meta.id;
        if store.session(id).map_err(store_error)?.is_some() {
            return Err(CliError::input(format!(
                "session {id} ({}) is already in {}: nothing was imported; import into another database (--database)",
                file.display(),
                path.display()
            )));
        }
    }
    for (file, export) in &exports {
        export.import(&store).map_err(session_error)?;
        eprintln!(
            "imported session {} ({}, {} signals) from {}",
            export.session.meta.id,
            export.session.meta.workflow,
            export.signals.len(),
            file.display()
        );
    }
    eprintln!(
        "{} session(s) imported into {}",
        exports.len(),
        path.display()
    );
    Ok(Exit::Success)
}

/// A session operation's error: bad input unless the store failed.
pub fn session_error(e: SessionError) -> CliError {
    match e {
        SessionError::Store(e) => store_error(e),
        SessionError::Io { .. } => CliError::failed(e.to_string()),
        other => CliError::input(other.to_string()),
    }
}
