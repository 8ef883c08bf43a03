//! Rules that answer a request by its content rather than its arrival order.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::payloads::{self, Content, Message, ToolUse};
use super::server::RecordedRequest;

/// Which API a request was made to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/chat/completions`.
    OpenAi,
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST /v1/responses` (the OpenAI Responses API).
    Responses,
}

/// One rule of a fake provider: when a request matches, the answer.
///
/// Build it with [`Rule::when`], add conditions, and end with
/// [`When::then`] (a fixed answer) or [`When::then_with`] (an answer
/// computed from the request). Rules are tried in the order they were added;
/// the first that matches answers.
#[derive(Clone)]
pub struct Rule {
    when: When,
    then: Then,
}

#[derive(Clone)]
enum Then {
    Fixed(Answer),
    With(Arc<dyn Fn(&RecordedRequest) -> Answer + Send + Sync>),
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Rule");
        s.field("when", &self.when);
        match &self.then {
            Then::Fixed(answer) => s.field("then", answer),
            Then::With(_) => s.field("then", &"<fn>"),
        };
        s.finish()
    }
}

impl Rule {
    /// A rule's conditions; with none, it matches every request.
    pub fn when() -> When {
        When::default()
    }
}

/// The conditions of a [`Rule`]: all of them must hold.
#[derive(Debug, Clone, Default)]
pub struct When {
    api: Option<Api>,
    model: Option<String>,
    system: Vec<String>,
    prompt: Vec<String>,
    tool_result: Vec<String>,
}

impl When {
    /// Requests to this API only.
    pub fn api(mut self, api: Api) -> Self {
        self.api = Some(api);
        self
    }

    /// Requests for this model, or a dated version of it (`gpt-4o` matches
    /// `gpt-4o-2024-08-06`, not `gpt-4o-mini`).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The system prompt contains `text` (Anthropic's `system`, the
    /// Responses API's `instructions`, or a system or developer message).
    ///
    /// This is how a rule tells agents apart: requests do not name the agent
    /// that makes them, so match a phrase of its system prompt.
    pub fn system_contains(mut self, text: impl Into<String>) -> Self {
        self.system.push(text.into());
        self
    }

    /// A user message (tool results aside) contains `text`.
    pub fn prompt_contains(mut self, text: impl Into<String>) -> Self {
        self.prompt.push(text.into());
        self
    }

    /// A tool result sent since the model's last answer contains `text`
    /// (`""`: there is such a tool result at all): an OpenAI `tool`
    /// message, an Anthropic `tool_result` block or a Responses
    /// `function_call_output` item.
    pub fn tool_result_contains(mut self, text: impl Into<String>) -> Self {
        self.tool_result.push(text.into());
        self
    }

    /// The rule: when these conditions hold, `answer`.
    pub fn then(self, answer: Answer) -> Rule {
        Rule {
            when: self,
            then: Then::Fixed(answer),
        }
    }

    /// The rule: when these conditions hold, the answer `answer` makes from the request.
    pub fn then_with(
        self,
        answer: impl Fn(&RecordedRequest) -> Answer + Send + Sync + 'static,
    ) -> Rule {
        Rule {
            when: self,
            then: Then::With(Arc::new(answer)),
        }
    }

    fn matches(&self, seen: &Seen) -> bool {
        self.api.is_none_or(|api| api == seen.api)
            && self
                .model
                .as_deref()
                .is_none_or(|m| model_matches(m, &seen.model))
            && self.system.iter().all(|t| seen.system.contains(t.as_str()))
            && self
                .prompt
                .iter()
                .all(|t| seen.prompts.iter().any(|p| p.contains(t.as_str())))
            && self
                .tool_result
                .iter()
                .all(|t| seen.tool_results.iter().any(|r| r.contains(t.as_str())))
    }
}

/// `wanted`, or `wanted-<digit>…` (a dated snapshot of it).
fn model_matches(wanted: &str, model: &str) -> bool {
    model == wanted
        || model
            .strip_prefix(wanted)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Text(String),
    Structured(Value),
    Tools(Vec<(String, Value)>),
}

/// What a [`Rule`] answers, in the shape of the API asked.
///
/// Ids, the model name and token counts have deterministic defaults: ids
/// from a hash of the request, the model the request named, and about four
/// characters a token; set them to match a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    reply: Reply,
    usage: Option<(u64, u64)>,
    id: Option<String>,
    model: Option<String>,
    request_id: Option<String>,
    created: Option<u64>,
    fingerprint: Option<String>,
}

impl Answer {
    fn of(reply: Reply) -> Self {
        Answer {
            reply,
            usage: None,
            id: None,
            model: None,
            request_id: None,
            created: None,
            fingerprint: None,
        }
    }

    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Answer::of(Reply::Text(text.into()))
    }

    /// A structured answer: the value's JSON as text, or, when an Anthropic
    /// request forces a tool (`tool_choice: {type: tool}`), that tool's input.
    pub fn structured(value: Value) -> Self {
        Answer::of(Reply::Structured(value))
    }

    /// One tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Answer::of(Reply::Tools(vec![(name.into(), arguments)]))
    }

    /// Several tool calls, in order.
    pub fn tool_calls<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> Self {
        Answer::of(Reply::Tools(
            calls.into_iter().map(|(n, a)| (n.into(), a)).collect(),
        ))
    }

    /// Input and output token counts.
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.usage = Some((input, output));
        self
    }

    /// The response id (`chatcmpl-…`, `resp_…`, `msg_…`).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The model named in the response.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The `x-request-id` (OpenAI, Responses) or `request-id` (Anthropic) header.
    pub fn request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// OpenAI's `created` time (Unix seconds), the Responses API's
    /// `created_at` and `completed_at`.
    pub fn created(mut self, seconds: u64) -> Self {
        self.created = Some(seconds);
        self
    }

    /// OpenAI's `system_fingerprint`.
    pub fn fingerprint(mut self, fingerprint: impl Into<String>) -> Self {
        self.fingerprint = Some(fingerprint.into());
        self
    }
}

/// What the router read from a request.
struct Seen {
    api: Api,
    model: String,
    system: String,
    prompts: Vec<String>,
    tool_results: Vec<String>,
    last_user: String,
}

impl Seen {
    fn read(api: Api, body: &Value) -> Seen {
        let messages = payloads::conversation(body);
        let messages: &[Value] = &messages;
        // Anthropic's `system`, the Responses API's `instructions`.
        let mut system: Vec<String> = ["system", "instructions"]
            .iter()
            .filter_map(|key| body.get(key))
            .map(text_of)
            .collect();
        system.extend(
            messages
                .iter()
                .filter(|m| matches!(role(m), "system" | "developer"))
                .map(|m| text_of(m.get("content").unwrap_or(&Value::Null))),
        );
        let prompts: Vec<String> = messages
            .iter()
            .filter(|m| role(m) == "user")
            .map(|m| text_of(m.get("content").unwrap_or(&Value::Null)))
            .collect();
        let since_answer = messages
            .iter()
            .rposition(is_answer)
            .map_or(messages, |i| &messages[i + 1..]);
        Seen {
            api,
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            system: system.join("\n"),
            last_user: prompts.last().cloned().unwrap_or_default(),
            prompts,
            tool_results: since_answer.iter().flat_map(tool_results).collect(),
        }
    }
}

fn role(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or("")
}

fn kind(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

/// A message or item of the model's: an assistant message, or a Responses
/// tool call or reasoning item (which have no role).
fn is_answer(item: &Value) -> bool {
    role(item) == "assistant"
        || matches!(
            kind(item),
            "function_call" | "custom_tool_call" | "reasoning"
        )
}

/// The text parts of a content value (a string or a list of blocks), tool results left out.
fn text_of(content: &Value) -> String {
    match content {
        Value::Array(parts) => parts
            .iter()
            .filter(|p| payloads::is_text_part(p))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        other => payloads::content_text(other),
    }
}

/// The tool results a message carries: an OpenAI `tool` message, a
/// Responses `function_call_output` item, or the `tool_result` blocks of an
/// Anthropic user message.
fn tool_results(message: &Value) -> Vec<String> {
    if matches!(
        kind(message),
        "function_call_output" | "custom_tool_call_output"
    ) {
        let output = message.get("output").unwrap_or(&Value::Null);
        return vec![payloads::content_text(output)];
    }
    let content = message.get("content").unwrap_or(&Value::Null);
    if role(message) == "tool" {
        return vec![payloads::content_text(content)];
    }
    content
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
                .map(|p| payloads::content_text(p.get("content").unwrap_or(&Value::Null)))
                .collect()
        })
        .unwrap_or_default()
}

/// A routed answer: the message to send and its request-id header value.
pub(crate) struct Routed {
    pub(crate) message: Message,
    pub(crate) request_id: String,
}

/// The answer of the first rule that matches, or why none did.
pub(crate) fn route(
    rules: &[Rule],
    api: Api,
    request: &RecordedRequest,
    body: &Value,
) -> Result<Routed, String> {
    let seen = Seen::read(api, body);
    let rule = rules
        .iter()
        .find(|r| r.when.matches(&seen))
        .ok_or_else(|| unmatched(&seen, rules.len()))?;
    let answer = match &rule.then {
        Then::Fixed(answer) => answer.clone(),
        Then::With(make) => make(request),
    };
    Ok(render(answer, api, body, &seen, &tag(&request.body)))
}

fn unmatched(seen: &Seen, rules: usize) -> String {
    format!(
        "no rule of the fake provider matches this request ({rules} rule{}): model `{}`, \
         system prompt `{}`, last user message `{}`",
        if rules == 1 { "" } else { "s" },
        seen.model,
        excerpt(&seen.system, 80),
        excerpt(&seen.last_user, 160),
    )
}

fn excerpt(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// A short stable hex tag of the request (FNV-1a), for default ids.
fn tag(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn render(answer: Answer, api: Api, body: &Value, seen: &Seen, tag: &str) -> Routed {
    let call_id = |i: usize| match api {
        Api::Anthropic => format!("toolu_{tag}{i:02}"),
        Api::OpenAi | Api::Responses => format!("call_{tag}{i:02}"),
    };
    let forced_tool = body
        .pointer("/tool_choice/name")
        .and_then(Value::as_str)
        .filter(|_| api == Api::Anthropic);
    let tools = |calls: Vec<(String, Value)>| {
        Content::Tools(
            calls
                .into_iter()
                .enumerate()
                .map(|(i, (name, arguments))| ToolUse {
                    id: call_id(i),
                    name,
                    arguments,
                })
                .collect(),
        )
    };
    let content = match answer.reply {
        Reply::Text(text) => Content::Text(text),
        Reply::Structured(value) => match forced_tool {
            Some(name) => tools(vec![(name.to_string(), value)]),
            None => Content::Text(value.to_string()),
        },
        Reply::Tools(calls) => tools(calls),
    };
    let usage = answer
        .usage
        .unwrap_or_else(|| payloads::usage_for(body, &content));
    let id = answer.id.unwrap_or_else(|| match api {
        Api::Anthropic => format!("msg_{tag}"),
        Api::OpenAi => format!("chatcmpl-{tag}"),
        Api::Responses => format!("resp_{tag}"),
    });
    let mut message = Message::new(
        id,
        answer.model.unwrap_or_else(|| seen.model.clone()),
        content,
        usage,
    );
    if let Some(created) = answer.created {
        message.created = created;
    }
    if let Some(fingerprint) = answer.fingerprint {
        message.fingerprint = fingerprint;
    }
    Routed {
        message,
        request_id: answer.request_id.unwrap_or_else(|| format!("req_{tag}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dated_model_matches_its_alias_only() {
        assert!(model_matches("gpt-4o", "gpt-4o"));
        assert!(model_matches("gpt-4o", "gpt-4o-2024-08-06"));
        assert!(!model_matches("gpt-4o", "gpt-4o-mini"));
        assert!(!model_matches("gpt-4o", "gpt-4"));
    }

    #[test]
    fn tool_results_count_only_since_the_last_answer() {
        let body = serde_json::json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "a", "content": "old result"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "b", "content": "new result"}
        ]});
        let seen = Seen::read(Api::OpenAi, &body);
        assert_eq!(seen.tool_results, vec!["new result".to_string()]);
        assert_eq!(seen.prompts, vec!["hi".to_string()]);
    }

    #[test]
    fn a_responses_request_is_read_from_its_instructions_and_input_items() {
        let body = serde_json::json!({
            "model": "gpt-4o",
            "instructions": "You define words.",
            "input": [
                {"role": "developer", "content": "Be brief."},
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "Define ossify."}]},
                {"type": "function_call", "call_id": "call_a", "name": "lookup", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_a", "output": "old result"},
                {"type": "function_call", "call_id": "call_b", "name": "lookup", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_b",
                 "output": [{"type": "input_text", "text": "to turn into bone"}]}
            ]
        });
        let seen = Seen::read(Api::Responses, &body);
        assert_eq!(seen.model, "gpt-4o");
        assert_eq!(seen.system, "You define words.\nBe brief.");
        assert_eq!(seen.prompts, vec!["Define ossify.".to_string()]);
        assert_eq!(seen.tool_results, vec!["to turn into bone".to_string()]);
        assert_eq!(
            payloads::last_message_text(&body),
            "to turn into bone".to_string()
        );

        let plain = serde_json::json!({"model": "gpt-4o", "input": "hi there"});
        let seen = Seen::read(Api::Responses, &plain);
        assert_eq!(seen.last_user, "hi there");
        assert!(seen.tool_results.is_empty());
        assert!(When::default().prompt_contains("hi").matches(&seen));
        assert!(!When::default().api(Api::OpenAi).matches(&seen));
        assert!(When::default().api(Api::Responses).matches(&seen));
    }

    #[test]
    fn an_excerpt_is_cut_on_a_char_boundary() {
        assert_eq!(excerpt("héllo   wörld", 7), "héllo w…");
        assert_eq!(excerpt("short", 80), "short");
    }
}
