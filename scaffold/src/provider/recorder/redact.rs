//! Scrubbing credentials out of everything a cassette stores.
//!
//! Three sources of secrets are removed:
//! - credential headers (`Authorization`, `x-api-key`, `api-key`,
//!   `openai-organization`, anything named like a key, token, secret, cookie
//!   or session) are stored as `[REDACTED]`, and their values (and the token
//!   after a `Bearer ` scheme) are scrubbed from every other string of the
//!   exchange;
//! - credential query parameters (`key=`, `api_key=`, `token=`, ...) likewise;
//! - the user's redaction patterns and a built-in pattern for
//!   OpenAI/Anthropic-style keys (`sk-...`) are replaced wherever they match.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::RecorderError;
use crate::provider::transport::HttpRequest;

/// What replaces a secret in a cassette.
pub const REDACTED: &str = "[REDACTED]";

/// Values shorter than this that come from credential headers or query
/// parameters are not scrubbed from other strings (dummy keys such as
/// `ollama` would otherwise mangle prompts); they are still never stored in
/// their own header or parameter.
const MIN_DERIVED_SECRET_LEN: usize = 8;

/// Built-in patterns for well-known API key shapes.
const BUILTIN_PATTERNS: &[&str] = &[r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"];

/// A user-given redaction pattern: a regular expression or a literal string.
///
/// ```
/// use scaffold::provider::recorder::RedactPattern;
/// let by_regex = RedactPattern::regex(r"acct-[0-9]{6}").unwrap();
/// let literal = RedactPattern::literal("my internal hostname");
/// assert!(by_regex.as_str().contains("acct"));
/// assert_eq!(literal.as_str(), "my internal hostname");
/// ```
#[derive(Debug, Clone)]
pub struct RedactPattern(Regex);

impl RedactPattern {
    /// A regular expression (Rust `regex` syntax). Empty matches are ignored.
    pub fn regex(pattern: &str) -> Result<RedactPattern, RecorderError> {
        Regex::new(pattern)
            .map(RedactPattern)
            .map_err(|source| RecorderError::BadPattern {
                pattern: pattern.to_string(),
                source,
            })
    }

    /// A literal string, matched exactly. An empty literal matches nothing.
    pub fn literal(text: &str) -> RedactPattern {
        // An escaped literal is always a valid regex.
        match Regex::new(&regex::escape(text)) {
            Ok(re) => RedactPattern(re),
            Err(_) => RedactPattern(never_matches()),
        }
    }

    /// The pattern as a regular expression source.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl From<Regex> for RedactPattern {
    fn from(re: Regex) -> Self {
        RedactPattern(re)
    }
}

fn never_matches() -> Regex {
    // `[^\s\S]` matches no character; it compiles on every regex build.
    Regex::new(r"[^\s\S]").unwrap_or_else(|_| unreachable!("constant regex compiles"))
}

/// The built-in rules: the key shapes.
fn builtin() -> &'static Redactor {
    static BUILTIN: LazyLock<Redactor> = LazyLock::new(Redactor::default);
    &BUILTIN
}

/// A scrubber of the built-in key shapes alone, for text that carries no
/// request of its own (errors of any provider).
pub(crate) fn builtin_scrubber() -> Scrubber<'static> {
    builtin().scrubber([], None)
}

/// A scrubber of the credentials `request` carries (its credential headers
/// and query parameters) and of the built-in key shapes: what an API may
/// echo back in an error ("Incorrect API key provided: sk-…").
pub(crate) fn secrets_of(request: &HttpRequest) -> Scrubber<'static> {
    let (_, _, query) = super::split_url(&request.url);
    let headers = request
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()));
    builtin().scrubber(headers, query)
}

/// The configured redaction rules of one recorder.
#[derive(Debug, Clone)]
pub(crate) struct Redactor {
    patterns: Vec<Regex>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(Vec::new())
    }
}

impl Redactor {
    pub(crate) fn new(user: Vec<RedactPattern>) -> Redactor {
        let mut patterns: Vec<Regex> = BUILTIN_PATTERNS
            .iter()
            .filter_map(|p| Regex::new(p).ok())
            .collect();
        patterns.extend(user.into_iter().map(|p| p.0));
        Redactor { patterns }
    }

    /// A key that identifies the rules (for sharing playback scopes).
    pub(crate) fn key(&self) -> String {
        self.patterns
            .iter()
            .map(Regex::as_str)
            .collect::<Vec<_>>()
            .join("\u{1f}")
    }

    /// A scrubber for one exchange: the patterns plus the credential values
    /// found in `headers` and the query of `url`.
    pub(crate) fn scrubber<'h>(
        &self,
        headers: impl IntoIterator<Item = (&'h str, &'h str)>,
        query: Option<&str>,
    ) -> Scrubber<'_> {
        let mut literals: Vec<String> = Vec::new();
        let mut add = |value: &str| {
            let value = value.trim();
            if value.len() >= MIN_DERIVED_SECRET_LEN && !literals.iter().any(|l| l == value) {
                literals.push(value.to_string());
            }
        };
        for (name, value) in headers {
            if is_credential_header(name) {
                add(value);
                if let Some((_scheme, token)) = value.trim().split_once(' ') {
                    add(token);
                }
            }
        }
        if let Some(query) = query {
            for pair in query.split('&') {
                if let Some((k, v)) = pair.split_once('=')
                    && is_credential_param(k)
                {
                    add(v);
                    if let Some(decoded) = percent_decode(v) {
                        add(&decoded);
                    }
                }
            }
        }
        // Longest first, so a token inside a longer header value is not
        // scrubbed piecemeal.
        literals.sort_by_key(|l| std::cmp::Reverse(l.len()));
        Scrubber {
            patterns: &self.patterns,
            literals,
        }
    }
}

/// Scrubs the strings of one exchange.
pub(crate) struct Scrubber<'a> {
    patterns: &'a [Regex],
    literals: Vec<String>,
}

impl Scrubber<'_> {
    /// `text` with every secret replaced by [`REDACTED`].
    pub(crate) fn str<'s>(&self, text: &'s str) -> Cow<'s, str> {
        let mut out: Cow<'s, str> = Cow::Borrowed(text);
        for literal in &self.literals {
            if out.contains(literal.as_str()) {
                out = Cow::Owned(out.replace(literal.as_str(), REDACTED));
            }
        }
        for re in self.patterns {
            if let Some(replaced) = replace_non_empty(re, &out) {
                out = Cow::Owned(replaced);
            }
        }
        out
    }

    /// Scrub every string of a JSON value; string values under
    /// credential-named keys become [`REDACTED`].
    pub(crate) fn json(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.str(s).into_owned()),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Value::String(_) if is_credential_field(k) => {
                                Value::String(REDACTED.to_string())
                            }
                            other => self.json(other),
                        };
                        (self.str(k).into_owned(), v)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Request headers as stored: credentials become [`REDACTED`], the rest
    /// are scrubbed; names are lower-cased; repeated headers are joined.
    pub(crate) fn request_headers<'h>(
        &self,
        headers: impl IntoIterator<Item = (&'h str, &'h str)>,
    ) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            if is_transport_header(&name) {
                continue;
            }
            let value = if is_credential_header(&name) {
                REDACTED.to_string()
            } else {
                self.str(value).into_owned()
            };
            out.entry(name)
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert(value);
        }
        out
    }

    /// Response headers as stored: only the allow-list, scrubbed.
    pub(crate) fn response_headers<'h>(
        &self,
        headers: impl IntoIterator<Item = (&'h str, &'h str)>,
    ) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            if !is_kept_response_header(&name) {
                continue;
            }
            let value = self.str(value).into_owned();
            out.entry(name)
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert(value);
        }
        out
    }

    /// A query string with credential parameters replaced and the rest scrubbed.
    pub(crate) fn query(&self, query: &str) -> String {
        query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_credential_param(k) => format!("{k}={REDACTED}"),
                _ => self.str(pair).into_owned(),
            })
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// Replace non-empty matches of `re` in `text`; `None` when nothing matched.
fn replace_non_empty(re: &Regex, text: &str) -> Option<String> {
    let mut out = String::new();
    let mut last = 0;
    for m in re.find_iter(text) {
        if m.as_str().is_empty() {
            continue;
        }
        out.push_str(&text[last..m.start()]);
        out.push_str(REDACTED);
        last = m.end();
    }
    if last == 0 && out.is_empty() {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Words that make a header, parameter or field name a credential.
const CREDENTIAL_WORDS: &[&str] = &[
    "auth",
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "cookie",
    "session",
    "credential",
    "signature",
];

fn names_credential(lower: &str) -> bool {
    CREDENTIAL_WORDS.iter().any(|w| lower.contains(w))
}

/// Whether a request header carries a credential and must never be stored.
pub(crate) fn is_credential_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "openai-organization" | "openai-project" | "anthropic-organization-id"
    ) || names_credential(&lower)
}

/// Whether a query parameter carries a credential (`key`, `api_key`, `token`, `sig`...).
pub(crate) fn is_credential_param(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(lower.as_str(), "sig" | "code" | "pwd") || names_credential(&lower)
}

/// Whether a JSON field with a string value holds a credential.
fn is_credential_field(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    // `max_tokens`, `input_tokens` and friends name counts, not tokens.
    if lower.ends_with("tokens") || lower == "key" {
        return false;
    }
    matches!(
        lower.as_str(),
        "api_key" | "apikey" | "api-key" | "password" | "secret" | "access_token" | "authorization"
    ) || lower.ends_with("_key") && lower.contains("api")
        || lower.contains("secret")
        || lower.contains("password")
}

/// Headers that describe the connection, not the request.
fn is_transport_header(lower: &str) -> bool {
    matches!(
        lower,
        "host" | "content-length" | "connection" | "transfer-encoding" | "accept-encoding"
    ) || lower.starts_with("x-scaffold-")
}

/// Response headers worth keeping: the content type and request ids, and
/// what retry logic reads.
fn is_kept_response_header(lower: &str) -> bool {
    matches!(
        lower,
        "content-type" | "request-id" | "x-request-id" | "retry-after" | "retry-after-ms"
    )
}

/// Decode `%XX` escapes (and `+`) of a query value; `None` when unchanged or invalid.
fn percent_decode(value: &str) -> Option<String> {
    if !value.contains('%') && !value.contains('+') {
        return None;
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_header_values_everywhere() {
        let r = Redactor::new(vec![RedactPattern::literal("CANARY-USER")]);
        let s = r.scrubber(
            [("Authorization", "Bearer tok-123456789"), ("x-other", "v")],
            Some("a=1&key=qsecret-987654321"),
        );
        assert_eq!(s.str("x tok-123456789 y"), format!("x {REDACTED} y"));
        assert_eq!(s.str("qsecret-987654321"), REDACTED);
        assert_eq!(
            s.str("has CANARY-USER in it"),
            format!("has {REDACTED} in it")
        );
        assert_eq!(
            s.query("a=1&key=qsecret-987654321"),
            format!("a=1&key={REDACTED}")
        );
        let h = s.request_headers([("Authorization", "Bearer tok-123456789"), ("X-Other", "v")]);
        assert_eq!(h["authorization"], REDACTED);
        assert_eq!(h["x-other"], "v");
    }

    #[test]
    fn builtin_key_shape_and_fields() {
        let r = Redactor::default();
        let s = r.scrubber([], None);
        let v = serde_json::json!({
            "note": "key sk-ant-abcdefghijklmnopqrstuvwx here",
            "api_key": "short",
            "max_tokens": 5,
            "usage": {"input_tokens": 3}
        });
        let out = s.json(&v);
        assert_eq!(out["note"], format!("key {REDACTED} here"));
        assert_eq!(out["api_key"], REDACTED);
        assert_eq!(out["max_tokens"], 5);
        assert_eq!(out["usage"]["input_tokens"], 3);
    }

    #[test]
    fn empty_matches_are_ignored() {
        let r = Redactor::new(vec![RedactPattern::regex("x*").unwrap()]);
        let s = r.scrubber([], None);
        assert_eq!(s.str("abxxc"), format!("ab{REDACTED}c"));
        assert_eq!(s.str("abc"), "abc");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%2Bb+c").as_deref(), Some("a+b c"));
        assert_eq!(percent_decode("plain"), None);
        assert_eq!(percent_decode("bad%2"), None);
    }
}
