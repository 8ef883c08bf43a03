//! State folding and checkpoints.
//!
//! A session's state is a JSON object. Each `state:<key>:changed` signal sets
//! the top-level `key` to the payload's `newValue`, or removes it when the
//! payload has `"removed": true`. The key comes from the signal's name. A
//! state that is not an object (for example a `null` initial state) becomes
//! an empty object at the first change.
//!
//! The writer folds changes as it stores them and writes a checkpoint (the
//! folded state after signal `idx`) every `checkpoint_interval` signals, when
//! the state changed since the previous checkpoint. [`state_at`] starts from
//! the nearest checkpoint at or before the index asked for and folds only the
//! state changes after it, read from `state_changes` (a row per change).

use rusqlite::{Connection, OptionalExtension, params};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{Context, StoreError, to_i64};
use crate::signal::Signal;

/// The state changes of one session in `(after, upto]`, in index order.
pub(crate) const STATE_CHANGES_SQL: &str = "SELECT state_key, payload FROM state_changes \
     WHERE session_id = ?1 AND idx > ?2 AND idx <= ?3 \
     ORDER BY idx";

const CHECKPOINT_SQL: &str = "SELECT idx, state FROM checkpoints \
     WHERE session_id = ?1 AND idx <= ?2 ORDER BY idx DESC LIMIT 1";

const INITIAL_SQL: &str = "SELECT initial_state FROM sessions WHERE id = ?1";

/// Apply one `state:<key>:changed` payload to `state`.
pub fn apply_state_change(state: &mut Value, key: &str, payload: &Value) {
    set_key(state, key, change_of(payload));
}

/// What a state-change payload does to its key: `Some(newValue)` (`null`
/// when absent), or `None` when it removes the key (`"removed": true`).
pub(crate) fn change_of(payload: &Value) -> Option<Value> {
    if payload.get("removed") == Some(&Value::Bool(true)) {
        None
    } else {
        Some(payload.get("newValue").cloned().unwrap_or(Value::Null))
    }
}

/// Fold the state changes among `signals` (in the order given) over `initial`.
pub fn fold_state<'a>(initial: Value, signals: impl IntoIterator<Item = &'a Signal>) -> Value {
    let mut state = initial;
    for s in signals {
        if let Some(key) = s.state_key() {
            apply_state_change(&mut state, key, &s.payload);
        }
    }
    state
}

pub(crate) fn set_key(state: &mut Value, key: &str, value: Option<Value>) {
    if !state.is_object() {
        *state = Value::Object(Map::new());
    }
    if let Value::Object(map) = state {
        match value {
            Some(v) => {
                map.insert(key.to_owned(), v);
            }
            None => {
                map.remove(key);
            }
        }
    }
}

/// The fields of a state-change payload that folding needs; the rest
/// (`oldValue`, `agent`) is skipped without being built.
#[derive(Deserialize)]
struct Change {
    #[serde(rename = "newValue", default)]
    new_value: Option<Value>,
    #[serde(default)]
    removed: Option<Value>,
}

/// Apply a payload stored as JSON text.
fn apply_stored(state: &mut Value, key: &str, payload: &str) -> Result<(), serde_json::Error> {
    match serde_json::from_str::<Change>(payload) {
        Ok(c) => {
            let removed = c.removed == Some(Value::Bool(true));
            let v = if removed {
                None
            } else {
                Some(c.new_value.unwrap_or(Value::Null))
            };
            set_key(state, key, v);
            Ok(())
        }
        // Not an object (or an odd shape): fall back to the general rule.
        Err(_) => {
            let v: Value = serde_json::from_str(payload)?;
            apply_state_change(state, key, &v);
            Ok(())
        }
    }
}

/// The state of session `id` after every signal with index `<= index`.
///
/// With `use_checkpoints` false it folds from the initial state (the
/// benchmark's comparison and a cross-check in tests).
pub(crate) fn state_at(
    conn: &Connection,
    path: &str,
    id: &str,
    index: u64,
    use_checkpoints: bool,
) -> Result<Value, StoreError> {
    // Indices above i64::MAX cannot be stored, so they mean "the end".
    let upto = to_i64(path, "state_at index", index).unwrap_or(i64::MAX);
    let checkpoint: Option<(i64, String)> = if use_checkpoints {
        conn.prepare_cached(CHECKPOINT_SQL)
            .and_then(|mut st| {
                st.query_row(params![id, upto], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .ctx(path, || {
                format!("reading the checkpoint of session {id} at {index}")
            })?
    } else {
        None
    };
    let (after, mut state) = match checkpoint {
        Some((idx, text)) => {
            let v: Value = serde_json::from_str(&text).ctx(path, || {
                format!("parsing the checkpoint of session {id} at {idx}")
            })?;
            (idx, v)
        }
        None => (-1, initial_state(conn, path, id)?),
    };
    fold_stored(conn, path, id, after, upto, &mut state)?;
    Ok(state)
}

/// The initial state of a session; [`StoreError::SessionNotFound`] if there is none.
pub(crate) fn initial_state(conn: &Connection, path: &str, id: &str) -> Result<Value, StoreError> {
    let text: Option<String> = conn
        .prepare_cached(INITIAL_SQL)
        .and_then(|mut st| st.query_row([id], |r| r.get(0)).optional())
        .ctx(path, || {
            format!("reading the initial state of session {id}")
        })?;
    let text = text.ok_or_else(|| StoreError::SessionNotFound {
        path: path.to_owned(),
        id: id.to_owned(),
    })?;
    serde_json::from_str(&text).ctx(path, || {
        format!("parsing the initial state of session {id}")
    })
}

/// Fold the stored state changes of `id` in `(after, upto]` into `state`.
fn fold_stored(
    conn: &Connection,
    path: &str,
    id: &str,
    after: i64,
    upto: i64,
    state: &mut Value,
) -> Result<(), StoreError> {
    let what = || format!("reading the state changes of session {id} in ({after}, {upto}]");
    let mut st = conn.prepare_cached(STATE_CHANGES_SQL).ctx(path, what)?;
    let mut rows = st.query(params![id, after, upto]).ctx(path, what)?;
    while let Some(row) = rows.next().ctx(path, what)? {
        let key = row
            .get_ref(0)
            .and_then(|v| Ok(v.as_str()?))
            .ctx(path, what)?;
        let payload = row
            .get_ref(1)
            .and_then(|v| Ok(v.as_str()?))
            .ctx(path, what)?;
        apply_stored(state, key, payload)
            .ctx(path, || format!("parsing a state change of session {id}"))?;
    }
    Ok(())
}

/// What the writer needs to go on appending to a session it has not seen
/// since it started: the folded state and the last index.
pub(crate) fn load_running(
    conn: &Connection,
    path: &str,
    id: &str,
) -> Result<(Value, Option<u64>), StoreError> {
    let state = state_at(conn, path, id, u64::MAX, true)?;
    let last: Option<i64> = conn
        .prepare_cached("SELECT max(last_idx) FROM signal_blocks WHERE session_id = ?1")
        .and_then(|mut st| st.query_row([id], |r| r.get(0)))
        .ctx(path, || {
            format!("reading the last signal index of session {id}")
        })?;
    let last = last
        .map(|v| super::error::to_u64(path, "signals.idx", v))
        .transpose()?;
    Ok((state, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_and_in_memory_rules_agree() {
        let cases = [
            json!({"key": "k", "oldValue": 1, "newValue": {"a": [1, 2]}, "agent": "x"}),
            json!({"key": "k", "removed": true}),
            json!({"key": "k", "removed": false, "newValue": 3}),
            json!({"key": "k"}),
            json!("not an object"),
            json!({"removed": "yes", "newValue": 4}),
        ];
        for p in cases {
            let mut a = json!({"k": 0, "other": 1});
            let mut b = a.clone();
            apply_state_change(&mut a, "k", &p);
            apply_stored(&mut b, "k", &p.to_string()).unwrap();
            assert_eq!(a, b, "payload {p}");
        }
    }

    #[test]
    fn non_object_state_becomes_an_object() {
        let mut s = Value::Null;
        apply_state_change(&mut s, "a", &json!({"newValue": 1}));
        assert_eq!(s, json!({"a": 1}));
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn state_changes_set_keys_and_a_removal_deletes_one() {
        use crate::store::apply_state_change;
        use serde_json::json;
        let mut state = json!({"plan": null});
        apply_state_change(
            &mut state,
            "plan",
            &json!({"key": "plan", "oldValue": null, "newValue": ["a"]}),
        );
        apply_state_change(&mut state, "draft", &json!({"key": "draft", "newValue": 1}));
        apply_state_change(
            &mut state,
            "draft",
            &json!({"key": "draft", "removed": true}),
        );
        assert_eq!(state, json!({"plan": ["a"]}));
    }

    #[test]
    fn folding_a_state_changed_signal_sets_its_key() {
        use crate::{signal::Signal, store::fold_state};
        use serde_json::json;
        let s = Signal {
            index: 0,
            name: "state:n:changed".into(),
            payload: json!({"newValue": 2}),
            at_ms: 0,
            agent: None,
        };
        assert_eq!(fold_state(json!({"n": 1}), [&s]), json!({"n": 2}));
    }
}
