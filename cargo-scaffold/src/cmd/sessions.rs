//! `cargo scaffold sessions list|show|export|import`.

use std::path::Path;

use scaffold::signal::Signal;
use scaffold::store::{SessionFilter, SessionRecord, SessionStatus, Store};
use serde_json::{Value, json};

use crate::cli::{SessionsExportArgs, SessionsImportArgs, SessionsListArgs, SessionsShowArgs};
use crate::cmd::not_yet;
use crate::error::{CliError, CmdResult, Exit};
use crate::paths;
use crate::text::{columns, cut, duration, utc};

/// How many characters of an id the table shows.
const SHORT_ID: usize = 8;

fn open(database: Option<&Path>) -> Result<Store, CliError> {
    let path = paths::existing_database(database)?;
    Store::open(&path)
        .map_err(|e| CliError::failed(format!("cannot open the session database: {e}")))
}

fn store_error(e: scaffold::store::StoreError) -> CliError {
    CliError::failed(format!("session database: {e}"))
}

fn short(id: &str) -> String {
    id.chars().take(SHORT_ID).collect()
}

/// `cargo scaffold sessions list`.
pub fn list(args: &SessionsListArgs) -> CmdResult {
    let mut filter = SessionFilter::default();
    if let Some(s) = &args.status {
        let status: SessionStatus = s.parse().map_err(|_| {
            CliError::input(format!(
                "--status `{s}`: not a session status (use running, completed, failed or terminated)"
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
            "ID",
            "WORKFLOW",
            "VARIANT",
            "STATUS",
            "SIGNALS",
            "STARTED (UTC)",
            "PARENT",
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
            utc(s.meta.started_at_ms),
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

/// The session `id`, or the only one whose id starts with it.
fn resolve(store: &Store, id: &str) -> Result<SessionRecord, CliError> {
    if id.is_empty() {
        return Err(CliError::input("empty session id"));
    }
    if let Some(s) = store.session(id).map_err(store_error)? {
        return Ok(s);
    }
    let matches: Vec<SessionRecord> = store
        .list(&SessionFilter::default())
        .map_err(store_error)?
        .into_iter()
        .filter(|s| s.meta.id.starts_with(id))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(CliError::input(format!(
            "no session `{id}` in {}: see `cargo scaffold sessions list`",
            store.path()
        ))),
        many => Err(CliError::input(format!(
            "`{id}` is the start of {} session ids ({}, …): give more of it",
            many.len(),
            many.iter()
                .take(3)
                .map(|s| s.meta.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
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
    row("started", format!("{} UTC", utc(m.started_at_ms)));
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
    let _ = args;
    Err(not_yet(
        "sessions export",
        "scaffold::session::SessionExport",
    ))
}

/// `cargo scaffold sessions import`.
pub fn import(args: &SessionsImportArgs) -> CmdResult {
    let _ = args;
    Err(not_yet(
        "sessions import",
        "scaffold::session::SessionExport",
    ))
}
