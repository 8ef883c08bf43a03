//! The cassette: one recorded provider call as a readable, versioned JSON file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::RecorderError;

/// The cassette format version this crate writes and reads.
pub const CASSETTE_VERSION: u32 = 1;

/// One recorded HTTP exchange, stored at `{recordings_dir}/{recording_id}.json`.
///
/// Credentials are never part of a cassette (see the module docs of
/// [`crate::provider::recorder`]). `B` is how its JSON bodies are held:
/// parsed (the default), or as their text ([`RawCassette`], what playback
/// reads on every call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "B: Deserialize<'de>"))]
pub struct Cassette<B = Value> {
    /// Format version, [`CASSETTE_VERSION`].
    pub version: u32,
    /// The recording id.
    pub id: String,
    /// What was sent.
    pub request: RecordedRequest<B>,
    /// Attempts that failed and were retried before `response` (a 429, a
    /// 503, ...), in order; playback answers them first, in turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<RecordedAttempt<B>>,
    /// What came back (to the last attempt).
    pub response: RecordedResponse<B>,
    /// How long it took (the last attempt).
    pub timing: Timing,
    /// Its place among the calls of its run when it was recorded, for
    /// calls an agent bridge numbered ([`CallContext::order`](crate::provider::CallContext::order)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<u64>,
}

/// An attempt of a call that failed and was retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "B: Deserialize<'de>"))]
pub struct RecordedAttempt<B = Value> {
    /// What came back.
    pub response: RecordedResponse<B>,
    /// How long it took.
    pub timing: Timing,
    /// How long the client waited before its next attempt (its backoff).
    #[serde(default)]
    pub wait_ms: u64,
}

/// The recorded request, scrubbed of credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "B: Deserialize<'de>"))]
pub struct RecordedRequest<B = Value> {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The URL path, without scheme, host or query.
    pub path: String,
    /// The query string, credentials replaced, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Headers with lower-case names; credentials are `[REDACTED]`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The JSON body, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<B>,
}

/// The recorded response. At most one of `body`, `text` and `sse` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "B: Deserialize<'de>"))]
pub struct RecordedResponse<B = Value> {
    /// HTTP status.
    pub status: u16,
    /// Kept headers (content type, request id, retry-after).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<B>,
    /// A body that is not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A server-sent-event stream, one event per element (each with its
    /// terminating blank line), in order; joined they are the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<Vec<String>>,
    /// The stream failed before it ended; `sse` holds what came.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Why the stream failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A cassette with its JSON bodies kept as their text, unparsed: what
/// playback needs of a call (the request's body to compare byte for byte,
/// the response's to send) without building a tree of each.
pub(crate) type RawCassette = Cassette<Box<RawValue>>;

impl<B> RecordedResponse<B> {
    /// How the recorded stream failed, when it did: the error as recorded
    /// (a cassette written before errors were kept says only that it broke
    /// off).
    pub fn failure(&self) -> Option<String> {
        self.truncated.then(|| {
            self.error
                .clone()
                .unwrap_or_else(|| "the recorded stream broke off here".to_string())
        })
    }

    /// The content type playback serves.
    pub fn content_type(&self) -> String {
        let recorded = self.headers.get("content-type").cloned();
        if self.sse.is_some() {
            return recorded
                .filter(|c| c.starts_with("text/event-stream"))
                .unwrap_or_else(|| "text/event-stream".to_string());
        }
        if self.body.is_some() {
            return recorded.unwrap_or_else(|| "application/json".to_string());
        }
        recorded.unwrap_or_else(|| "text/plain; charset=utf-8".to_string())
    }
}

impl RecordedResponse<Box<RawValue>> {
    /// The body bytes playback serves: the SSE events joined, the JSON body
    /// as compact JSON (its text without the whitespace between tokens,
    /// which is what serializing the parsed body gives for a body the
    /// recorder wrote), or the text.
    pub(crate) fn body_bytes(&self) -> Vec<u8> {
        if let Some(events) = &self.sse {
            return events.concat().into_bytes();
        }
        if let Some(body) = &self.body {
            return compact_json(body.get()).into_bytes();
        }
        self.text.clone().unwrap_or_default().into_bytes()
    }
}

/// `json` (valid JSON text) without the whitespace between its tokens.
pub(crate) fn compact_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if !matches!(c, ' ' | '\n' | '\r' | '\t') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// Timing of the recorded call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timing {
    /// From sending the request to the end of the body.
    pub duration_ms: u64,
    /// From sending the request to the first body bytes (the headers, for a
    /// whole body).
    pub first_byte_ms: u64,
}

impl<B> Cassette<B> {
    /// The answer to attempt `attempt` (0 for the first) of the call: a
    /// recorded failed attempt while there is one, then the final response
    /// (to every later attempt too).
    pub fn exchange(&self, attempt: u32) -> (&RecordedResponse<B>, Timing) {
        match self.attempts.get(attempt as usize) {
            Some(failed) => (&failed.response, failed.timing),
            None => (&self.response, self.timing),
        }
    }

    /// Whether the recorded call succeeded: its last answer a 2xx that did
    /// not break off.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.response.status) && !self.response.truncated
    }

    /// How long the recorded client waited before attempt `attempt`: the
    /// backoff after the failed attempt before it (0 for the first).
    pub fn wait_before(&self, attempt: u32) -> u64 {
        (attempt as usize)
            .checked_sub(1)
            .and_then(|before| self.attempts.get(before))
            .map_or(0, |failed| failed.wait_ms)
    }

    /// Parse and check cassette bytes; `path` is for messages.
    pub(crate) fn from_slice(bytes: &[u8], path: &Path) -> Result<Cassette<B>, RecorderError>
    where
        B: DeserializeOwned,
    {
        let version_error = |found: Value| RecorderError::Version {
            path: path.to_path_buf(),
            found,
        };
        match serde_json::from_slice::<Cassette<B>>(bytes) {
            Ok(cassette) if cassette.version == CASSETTE_VERSION => Ok(cassette),
            Ok(cassette) => Err(version_error(Value::from(cassette.version))),
            Err(source) => {
                // Another version may have another shape: say so rather than
                // report a missing field.
                let found = serde_json::from_slice::<Value>(bytes)
                    .ok()
                    .map(|v| v.get("version").cloned().unwrap_or(Value::Null));
                match found {
                    Some(found) if found != CASSETTE_VERSION => Err(version_error(found)),
                    _ => Err(RecorderError::Parse {
                        path: path.to_path_buf(),
                        source,
                    }),
                }
            }
        }
    }
}

impl Cassette {
    /// The cassette as pretty-printed JSON with a trailing newline.
    pub fn to_pretty_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Write the cassette to `path` atomically (a temporary file in the same
    /// folder, then a rename), creating the folder if needed, unless the
    /// file holds these very bytes already: then it is left alone (its
    /// time too). Whether it was written.
    pub fn save(&self, path: &Path) -> Result<bool, RecorderError> {
        write_if_changed(path, self.to_pretty_json().as_bytes()).map_err(|source| {
            RecorderError::Write {
                path: path.to_path_buf(),
                source,
            }
        })
    }
}

/// Write `bytes` to `path` atomically unless the file holds them already:
/// a re-record that changed nothing writes no file. Whether it wrote.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    if let Ok(meta) = std::fs::metadata(path)
        && meta.len() == bytes.len() as u64
        && std::fs::read(path).is_ok_and(|on_disk| on_disk == bytes)
    {
        return Ok(false);
    }
    crate::util::write_atomic(path, true, |f| f.write_all(bytes))?;
    Ok(true)
}

/// Split an SSE byte stream into events, each keeping its terminating blank
/// line; a trailing partial event is the last element. Joined, the events
/// are exactly `bytes` (when `bytes` is UTF-8).
pub(crate) fn split_sse(bytes: &[u8]) -> Vec<String> {
    let mut events = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let end = if bytes[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if bytes[i..].starts_with(b"\n\n") || bytes[i..].starts_with(b"\r\r") {
            Some(i + 2)
        } else {
            None
        };
        match end {
            Some(end) => {
                events.push(String::from_utf8_lossy(&bytes[start..end]).into_owned());
                start = end;
                i = end;
            }
            None => i += 1,
        }
    }
    if start < bytes.len() {
        events.push(String::from_utf8_lossy(&bytes[start..]).into_owned());
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_split_round_trips() {
        let raw = "data: {\"a\":1}\n\ndata: [DONE]\n\n";
        let events = split_sse(raw.as_bytes());
        assert_eq!(events, vec!["data: {\"a\":1}\n\n", "data: [DONE]\n\n"]);
        assert_eq!(events.concat(), raw);
        let partial = "event: x\r\ndata: 1\r\n\r\ndata: 2";
        let events = split_sse(partial.as_bytes());
        assert_eq!(events, vec!["event: x\r\ndata: 1\r\n\r\n", "data: 2"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// Playback serves a recorded body as its text without the layout:
        /// for any body the recorder wrote (pretty), the very bytes of
        /// the parsed body serialized compactly.
        #[test]
        fn a_pretty_body_compacted_is_the_body_serialized(
            value in crate::util::arbitrary::json_value()
        ) {
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            proptest::prop_assert_eq!(compact_json(&pretty), serde_json::to_string(&value).unwrap());
        }
    }

    #[test]
    fn a_raw_cassette_serves_and_compares_what_the_parsed_one_does() {
        let recorded = Cassette {
            version: CASSETTE_VERSION,
            id: "x".into(),
            request: RecordedRequest {
                method: "POST".into(),
                path: "/v1/messages".into(),
                query: None,
                headers: BTreeMap::new(),
                body: Some(
                    serde_json::json!({"messages": [{"content": "a \"b\" {c}\n", "role": "user"}], "n": 1.5}),
                ),
            },
            attempts: vec![RecordedAttempt {
                response: RecordedResponse {
                    status: 429,
                    headers: BTreeMap::from([("retry-after".into(), "1".into())]),
                    body: Some(serde_json::json!({"error": {"type": "rate_limit"}})),
                    text: None,
                    sse: None,
                    truncated: false,
                    error: None,
                },
                timing: Timing::default(),
                wait_ms: 1000,
            }],
            response: RecordedResponse {
                status: 200,
                headers: BTreeMap::new(),
                body: Some(
                    serde_json::json!({"content": [{"text": "x  y", "type": "text"}], "usage": {"input_tokens": 3}}),
                ),
                text: None,
                sse: None,
                truncated: false,
                error: None,
            },
            timing: Timing {
                duration_ms: 5,
                first_byte_ms: 2,
            },
            order: Some(3),
        };
        let file = recorded.to_pretty_json();
        let raw = RawCassette::from_slice(file.as_bytes(), Path::new("x.json")).unwrap();
        let compact = |v: &Option<Value>| serde_json::to_vec(v.as_ref().unwrap()).unwrap();
        for attempt in 0..3 {
            let (parsed, timing) = recorded.exchange(attempt);
            let (read, read_timing) = raw.exchange(attempt);
            assert_eq!(
                read.body_bytes(),
                compact(&parsed.body),
                "attempt {attempt}"
            );
            assert_eq!((read.status, read_timing), (parsed.status, timing));
            assert_eq!(read.content_type(), parsed.content_type());
            assert_eq!(raw.wait_before(attempt), recorded.wait_before(attempt));
        }
        let body = raw.request.body.as_ref().unwrap().get();
        assert_eq!(
            compact_json(body).into_bytes(),
            compact(&recorded.request.body)
        );
        assert_eq!((raw.order, raw.succeeded()), (Some(3), true));
    }

    #[test]
    fn version_is_checked() {
        let bytes = br#"{"version": 2}"#;
        let e = Cassette::<Value>::from_slice(bytes, Path::new("x.json")).unwrap_err();
        assert!(e.to_string().contains("version"), "{e}");
        let e = RawCassette::from_slice(bytes, Path::new("x.json")).unwrap_err();
        assert!(e.to_string().contains("version"), "{e}");
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_cassette_file_parses_into_its_request_and_response() {
        use crate::provider::recorder::cassette::Cassette;
        let text = r#"{
  "version": 1,
  "id": "eval__ds__case__v__node__inv0",
  "request": {"method": "POST", "path": "/v1/chat/completions", "headers": {}, "body": {"model": "m"}},
  "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": {"ok": true}},
  "timing": {"durationMs": 12, "firstByteMs": 12}
}"#;
        let cassette: Cassette = serde_json::from_str(text).unwrap();
        assert_eq!(cassette.response.status, 200);
        assert_eq!(cassette.request.body.unwrap()["model"], "m");
    }
}
