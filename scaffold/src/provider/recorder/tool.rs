//! Recorded tool results: a [`Tool::recorded`](crate::workflow::Tool::recorded)
//! call's arguments and result, kept beside the provider recordings as
//! `{recording_id}.json` whose node is `{agent}.tool.{name}`, so playback
//! can answer it without running the tool.
//!
//! Like provider recordings: written atomically in record mode, scrubbed of
//! secrets (the built-in key patterns and the suite's own), and in playback
//! a missing recording or one made for other arguments fails the run with
//! the file, what changed and the command that re-records it. The recorded
//! duration counts on playback's virtual clock.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diff::{diff_values, render_changes};
use super::redact::Redactor;
use super::{RecordPolicy, RecorderMode, messages};
use crate::provider::RecordingId;

/// The format version of a tool recording.
pub const TOOL_RECORDING_VERSION: u32 = 1;

/// One recorded tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRecording {
    /// [`TOOL_RECORDING_VERSION`].
    pub version: u32,
    /// The recording id.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments it was called with.
    pub arguments: Value,
    /// What it returned (the error message when `is_error`).
    pub result: Value,
    /// Whether it failed (the model got a tool error).
    #[serde(default)]
    pub is_error: bool,
    /// How long it took.
    pub duration_ms: u64,
}

/// What a recorded tool call answers in playback.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    /// The recorded result.
    pub result: Result<Value, String>,
    /// The recorded duration.
    pub duration: Duration,
}

/// Records and plays back recorded tools' results (see the module docs);
/// made by [`ProviderRecorder::tools`](super::ProviderRecorder::tools).
#[derive(Clone)]
pub struct ToolRecorder {
    pub(super) dir: PathBuf,
    pub(super) mode: RecorderMode,
    pub(super) policy: RecordPolicy,
    pub(super) redactor: Arc<Redactor>,
    pub(super) rerecord: Option<String>,
}

impl std::fmt::Debug for ToolRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRecorder")
            .field("dir", &self.dir)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl ToolRecorder {
    /// The mode: live runs tools, record runs and keeps them, playback answers.
    pub fn mode(&self) -> RecorderMode {
        self.mode
    }

    /// Where the recording of `id` lives.
    pub fn path(&self, id: &RecordingId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// What answers call `id` of the tool in place of running it: in
    /// playback its recording (an error, saying how to re-record, when
    /// there is none or it was made for other arguments); in record mode
    /// under [`RecordPolicy::Missing`] its recording if it answers these
    /// arguments (else `None`: the tool runs and is recorded); otherwise
    /// `None`.
    pub(crate) fn recorded_answer(
        &self,
        id: &RecordingId,
        arguments: &Value,
    ) -> Result<Option<ToolAnswer>, String> {
        match (self.mode, self.policy) {
            (RecorderMode::Playback, _) => self.play(id, arguments).map(Some),
            (RecorderMode::Record, RecordPolicy::Missing) => Ok(self.play(id, arguments).ok()),
            _ => Ok(None),
        }
    }

    /// The recorded answer to `tool` called with `arguments` as call `id`;
    /// an error (missing, unreadable or stale recording) says how to
    /// re-record.
    pub(crate) fn play(&self, id: &RecordingId, arguments: &Value) -> Result<ToolAnswer, String> {
        let path = self.path(id);
        let rerecord = self.rerecord.as_deref();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(messages::missing(id, &path, rerecord));
            }
            Err(e) => return Err(messages::unreadable(id, &e.to_string(), rerecord)),
        };
        let recording: ToolRecording = serde_json::from_slice(&bytes).map_err(|e| {
            let why = format!("{} is not a tool recording: {e}", path.display());
            messages::unreadable(id, &why, rerecord)
        })?;
        if recording.version != TOOL_RECORDING_VERSION {
            let why = format!(
                "{} has format version {}; this version of scaffold reads {TOOL_RECORDING_VERSION}",
                path.display(),
                recording.version
            );
            return Err(messages::unreadable(id, &why, rerecord));
        }
        // Compare as recorded: the new arguments scrubbed the same way.
        let arguments = self
            .redactor
            .scrubber(std::iter::empty(), None)
            .json(arguments);
        let mut changes = Vec::new();
        diff_values(
            &recording.arguments,
            &arguments,
            &mut "(arguments)".to_string(),
            &mut changes,
        );
        if !changes.is_empty() {
            return Err(messages::stale(
                id,
                &path,
                &render_changes(&changes),
                rerecord,
            ));
        }
        let result = if recording.is_error {
            Err(match recording.result {
                Value::String(s) => s,
                other => other.to_string(),
            })
        } else {
            Ok(recording.result)
        };
        Ok(ToolAnswer {
            result,
            duration: Duration::from_millis(recording.duration_ms),
        })
    }

    /// Keep call `id` of `tool`: its arguments, result and duration,
    /// scrubbed of secrets, written atomically (unless the file holds
    /// these very bytes already).
    pub(crate) fn record(
        &self,
        id: &RecordingId,
        tool: &str,
        arguments: &Value,
        result: &Result<Value, String>,
        duration: Duration,
    ) -> Result<(), String> {
        let scrub = self.redactor.scrubber(std::iter::empty(), None);
        let (result, is_error) = match result {
            Ok(value) => (scrub.json(value), false),
            Err(message) => (Value::String(scrub.str(message).into_owned()), true),
        };
        let recording = ToolRecording {
            version: TOOL_RECORDING_VERSION,
            id: id.to_string(),
            tool: tool.to_string(),
            arguments: scrub.json(arguments),
            result,
            is_error,
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        };
        let mut text = serde_json::to_string_pretty(&recording).unwrap_or_default();
        text.push('\n');
        let path = self.path(id);
        super::cassette::write_if_changed(&path, text.as_bytes())
            .map(|_| ())
            .map_err(|e| format!("cannot write tool recording {}: {e}", path.display()))
    }
}
