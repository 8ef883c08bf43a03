//! Readable messages from API error bodies, scrubbed of credentials.

use serde_json::Value;

use crate::provider::ProviderError;

/// The HTTP status an API error type stands for (used for errors that
/// arrive inside a 200 stream).
pub(crate) fn status_for_error_type(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" | "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" | "rate_limit_exceeded" | "requests" | "tokens" => 429,
        "overloaded_error" => 529,
        "timeout_error" => 504,
        _ => 500,
    }
}

/// A readable message from an error body: the `error.message` (with its type
/// and code) of OpenAI and Anthropic bodies, a bare `error` or `message`
/// string, or the start of the body itself; plus the request id if any.
pub(crate) fn error_message(body: &[u8], headers: &[(String, String)]) -> String {
    let mut message = match serde_json::from_slice::<Value>(body) {
        Ok(value) => message_from_json(&value).unwrap_or_else(|| snippet(body, 500)),
        Err(_) => snippet(body, 500),
    };
    if message.is_empty() {
        message = "(empty body)".to_string();
    }
    let request_id = headers
        .iter()
        .find(|(k, _)| {
            k.eq_ignore_ascii_case("x-request-id") || k.eq_ignore_ascii_case("request-id")
        })
        .map(|(_, v)| v.clone());
    match request_id {
        Some(id) if !id.is_empty() => format!("{message} (request id {id})"),
        _ => message,
    }
}

/// `type: message (code)` from an `{"error": {...}}` object or similar.
pub(crate) fn message_from_json(value: &Value) -> Option<String> {
    match value.get("error") {
        Some(Value::Object(err)) => {
            let text = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| Value::Object(err.clone()).to_string());
            let kind = err.get("type").and_then(Value::as_str);
            let code = err.get("code").and_then(|c| match c {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            });
            let mut out = match kind {
                Some(kind) if !kind.is_empty() => format!("{kind}: {text}"),
                _ => text,
            };
            if let Some(code) = code
                && Some(code.as_str()) != kind
            {
                out.push_str(&format!(" (code {code})"));
            }
            Some(out)
        }
        Some(Value::String(s)) => Some(s.clone()),
        _ => ["message", "detail"]
            .iter()
            .find_map(|k| value.get(*k).and_then(Value::as_str).map(str::to_owned)),
    }
}

/// The start of a body as text, for messages.
pub(crate) fn snippet(body: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut out: String = text.chars().take(max_chars).collect();
    if text.chars().count() > max_chars {
        out.push('…');
    }
    out
}

/// The result of `call` with the credentials of its request (`secrets`,
/// from [`secrets_of`](super::recorder::secrets_of)), and key-shaped
/// strings, scrubbed from its error: APIs echo a rejected key back
/// ("Incorrect API key provided: sk-…"), and an error reaches signals,
/// snapshots, reports, the database and the terminal.
pub(crate) async fn without_secrets<T>(
    secrets: crate::provider::recorder::Scrubber<'static>,
    call: impl std::future::Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    call.await
        .map_err(|e| e.map_messages(|m| secrets.str(m).into_owned()))
}
