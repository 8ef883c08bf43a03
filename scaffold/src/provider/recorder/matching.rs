//! Which parts of a request must equal its recording for playback to
//! answer it (VCR's `match_requests_on`, Polly.js's `matchRequestsBy`).

use serde_json::Value;

use super::cassette::RecordedRequest;
use super::diff::{Change, diff_requests};

/// Body fields real SDKs fill per run or per user, ignored by
/// [`MatchRules::default`].
pub const DEFAULT_IGNORED_FIELDS: &[&str] =
    &["user", "metadata", "prompt_cache_key", "safety_identifier"];

/// Which differences between a request and its recording playback forgives.
///
/// The method, the path, the query and the JSON body are compared; headers
/// never are (SDKs send their version, platform and retry count in them).
/// A field is named by its dot path in the body, `*` standing for any one
/// key or array index (`messages.*.name`, `input.*.id`); ignoring a field
/// ignores everything under it. A query parameter is named by its name.
///
/// ```
/// use scaffold::provider::recorder::MatchRules;
/// let rules = MatchRules::default()
///     .ignore_field("messages.*.name")
///     .ignore_query_param("trace");
/// assert!(rules.ignores_field("metadata.request_id"));
/// assert!(rules.ignores_field("messages[2].name"));
/// assert!(!rules.ignores_field("messages[2].content"));
/// assert!(!MatchRules::exact().ignores_field("user"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchRules {
    fields: Vec<Vec<String>>,
    query: Vec<String>,
}

impl Default for MatchRules {
    /// Everything compared but [`DEFAULT_IGNORED_FIELDS`].
    fn default() -> Self {
        DEFAULT_IGNORED_FIELDS
            .iter()
            .fold(MatchRules::exact(), |rules, field| {
                rules.ignore_field(field)
            })
    }
}

impl MatchRules {
    /// Every field and query parameter compared.
    pub fn exact() -> Self {
        MatchRules {
            fields: Vec::new(),
            query: Vec::new(),
        }
    }

    /// Forgive differences in the body field at `path` and under it.
    pub fn ignore_field(mut self, path: &str) -> Self {
        let segments = path_segments(path);
        if !segments.is_empty() && !self.fields.contains(&segments) {
            self.fields.push(segments);
        }
        self
    }

    /// Forgive differences in the query parameter `name`.
    pub fn ignore_query_param(mut self, name: &str) -> Self {
        if !self.query.iter().any(|q| q == name) {
            self.query.push(name.to_string());
        }
        self
    }

    /// Whether a difference at body path `path` (as a mismatch names it:
    /// `messages[2].name`, `["odd key"]`) is forgiven.
    pub fn ignores_field(&self, path: &str) -> bool {
        let path = path_segments(path);
        self.fields.iter().any(|rule| {
            rule.len() <= path.len() && rule.iter().zip(&path).all(|(r, p)| r == "*" || r == p)
        })
    }

    /// The differences between `recorded` and a request that these rules
    /// do not forgive.
    pub(crate) fn differences(
        &self,
        recorded: &RecordedRequest,
        method: &str,
        path: &str,
        query: Option<&str>,
        body: Option<&Value>,
    ) -> Vec<Change> {
        let mut changes = diff_requests(recorded, method, path, query, body);
        changes.retain(|change| match change.path.as_str() {
            "(method)" | "(path)" | "(body)" => true,
            "(query)" => self.query(recorded.query.as_deref()) != self.query(query),
            field => !self.ignores_field(field),
        });
        changes
    }

    /// `query` without the ignored parameters, its others in order.
    fn query(&self, query: Option<&str>) -> String {
        query
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty())
            .filter(|pair| {
                let name = pair.split_once('=').map_or(*pair, |(name, _)| name);
                !self.query.iter().any(|q| q == name)
            })
            .collect::<Vec<_>>()
            .join("&")
    }

    /// A text naming these rules, for telling recorder scopes apart.
    pub(crate) fn key(&self) -> String {
        let fields: Vec<String> = self.fields.iter().map(|f| f.join(".")).collect();
        format!("{}?{}", fields.join(","), self.query.join(","))
    }
}

/// `a.b[0]["c d"]` → `a`, `b`, `0`, `c d`.
fn path_segments(path: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut rest = path.trim();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').unwrap_or(after.len());
            let inner = &after[..end];
            let key = serde_json::from_str::<String>(inner).unwrap_or_else(|_| inner.to_string());
            segments.push(key);
            rest = after.get(end + 1..).unwrap_or_default();
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end > 0 {
                segments.push(rest[..end].to_string());
            }
            rest = &rest[end..];
        }
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded(query: Option<&str>, body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            query: query.map(str::to_string),
            headers: Default::default(),
            body: Some(body),
        }
    }

    #[test]
    fn paths_split_into_segments() {
        assert_eq!(
            path_segments("a.b[0][\"c d\"].e"),
            ["a", "b", "0", "c d", "e"]
        );
        assert_eq!(path_segments("messages.*.name"), ["messages", "*", "name"]);
        assert!(path_segments("  ").is_empty());
    }

    #[test]
    fn ignored_fields_and_query_params_are_forgiven_and_nothing_else() {
        let old = recorded(
            Some("a=1&trace=x"),
            json!({"model": "m", "user": "u1", "metadata": {"run": 1}, "messages": [{"role": "user", "name": "n1", "content": "hi"}]}),
        );
        let new = json!({"model": "m", "user": "u2", "metadata": {"run": 2}, "messages": [{"role": "user", "name": "n2", "content": "hi"}]});
        let rules = MatchRules::default()
            .ignore_field("messages.*.name")
            .ignore_query_param("trace");
        let diff = |rules: &MatchRules, query: &str, body: &Value| {
            rules
                .differences(
                    &old,
                    "post",
                    "/v1/chat/completions",
                    Some(query),
                    Some(body),
                )
                .into_iter()
                .map(|c| c.path)
                .collect::<Vec<_>>()
        };
        assert!(diff(&rules, "a=1&trace=y", &new).is_empty());
        assert_eq!(diff(&rules, "a=2&trace=y", &new), ["(query)"]);
        let mut changed = new.clone();
        changed["messages"][0]["content"] = json!("bye");
        assert_eq!(diff(&rules, "a=1", &changed), ["messages[0].content"]);
        assert_eq!(
            diff(&MatchRules::exact(), "a=1&trace=x", &new),
            ["messages[0].name", "metadata.run", "user"]
        );
        assert_ne!(rules.key(), MatchRules::default().key());
    }
}
