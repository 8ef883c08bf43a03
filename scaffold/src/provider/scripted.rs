use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::{
    CompletionRequest, CompletionResponse, Provider, ProviderError, StopReason, StreamSink,
    ToolCall, Usage,
};

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedReply {
    /// Answer with text, streamed to the sink in the given pieces.
    Text {
        /// The pieces; the answer is their concatenation.
        chunks: Vec<String>,
        /// Usage to report.
        usage: Usage,
    },
    /// Ask for tool calls.
    ToolCalls {
        /// The calls.
        calls: Vec<ToolCall>,
        /// Usage to report.
        usage: Usage,
    },
    /// Fail the call.
    Error(ProviderError),
}

impl ScriptedReply {
    /// A text answer with usage estimated as one token per four characters.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        let usage = Usage {
            input_tokens: 10,
            output_tokens: (text.len() as u64).div_ceil(4),
        };
        ScriptedReply::Text {
            chunks: vec![text],
            usage,
        }
    }

    /// A structured answer: the JSON value, serialized as text.
    pub fn json(value: Value) -> Self {
        Self::text(value.to_string())
    }

    /// A streamed text answer made of `chunks`.
    pub fn streamed<I, T>(chunks: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        let chunks: Vec<String> = chunks.into_iter().map(Into::into).collect();
        let len: usize = chunks.iter().map(String::len).sum();
        ScriptedReply::Text {
            chunks,
            usage: Usage {
                input_tokens: 10,
                output_tokens: (len as u64).div_ceil(4),
            },
        }
    }

    /// One tool call.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ScriptedReply::ToolCalls {
            calls: vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments,
            }],
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
            },
        }
    }

    /// A failure.
    pub fn error(message: impl Into<String>) -> Self {
        ScriptedReply::Error(ProviderError::Scripted(message.into()))
    }

    /// Replace the usage reported.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        let new = Usage {
            input_tokens,
            output_tokens,
        };
        match &mut self {
            ScriptedReply::Text { usage, .. } | ScriptedReply::ToolCalls { usage, .. } => {
                *usage = new
            }
            ScriptedReply::Error(_) => {}
        }
        self
    }
}

type Responder = dyn Fn(&CompletionRequest) -> ScriptedReply + Send + Sync;

enum Script {
    Queue(Mutex<VecDeque<ScriptedReply>>),
    Responder(Box<Responder>),
}

/// A provider that answers from a script, for testing workflows without HTTP.
///
/// ```
/// use scaffold::provider::{ScriptedProvider, ScriptedReply};
/// let provider = ScriptedProvider::new("test-model")
///     .reply(ScriptedReply::text("first answer"))
///     .reply(ScriptedReply::text("second answer"));
/// assert_eq!(provider.remaining(), 2);
/// ```
#[derive(Clone)]
pub struct ScriptedProvider {
    model: String,
    script: Arc<Script>,
    /// Every request received, unless [`ScriptedProvider::forget_requests`].
    requests: Option<Arc<Mutex<Vec<CompletionRequest>>>>,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl ScriptedProvider {
    /// A provider that answers with queued replies, in order.
    pub fn new(model: impl Into<String>) -> Self {
        ScriptedProvider {
            model: model.into(),
            script: Arc::new(Script::Queue(Mutex::new(VecDeque::new()))),
            requests: Some(Arc::default()),
        }
    }

    /// A provider that computes each reply from the request (deterministic under concurrency).
    pub fn responder<F>(model: impl Into<String>, respond: F) -> Self
    where
        F: Fn(&CompletionRequest) -> ScriptedReply + Send + Sync + 'static,
    {
        ScriptedProvider {
            model: model.into(),
            script: Arc::new(Script::Responder(Box::new(respond))),
            requests: Some(Arc::default()),
        }
    }

    /// Queue one more reply (queue providers only; ignored by responders).
    pub fn reply(self, reply: ScriptedReply) -> Self {
        if let Script::Queue(queue) = &*self.script {
            lock(queue).push_back(reply);
        }
        self
    }

    /// Replies still queued.
    pub fn remaining(&self) -> usize {
        match &*self.script {
            Script::Queue(queue) => lock(queue).len(),
            Script::Responder(_) => 0,
        }
    }

    /// Keep no copy of the requests received, so that memory does not grow
    /// with the calls of a long run (a responder answering every cell of a
    /// large eval); [`ScriptedProvider::requests`] is then empty.
    ///
    /// ```
    /// use scaffold::provider::{ScriptedProvider, ScriptedReply};
    /// let provider = ScriptedProvider::responder("echo", |_| ScriptedReply::text("hi"))
    ///     .forget_requests();
    /// assert!(provider.requests().is_empty());
    /// ```
    pub fn forget_requests(mut self) -> Self {
        self.requests = None;
        self
    }

    /// Every request received so far (none after
    /// [`ScriptedProvider::forget_requests`]).
    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests
            .as_ref()
            .map(|r| lock(r).clone())
            .unwrap_or_default()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        sink: &mut dyn StreamSink,
    ) -> Result<CompletionResponse, ProviderError> {
        if let Some(requests) = &self.requests {
            lock(requests).push(request.clone());
        }
        let reply = match &*self.script {
            Script::Queue(queue) => lock(queue).pop_front().ok_or_else(|| {
                ProviderError::Scripted(format!(
                    "scripted provider `{}` has no reply left for this call",
                    self.model
                ))
            })?,
            Script::Responder(respond) => respond(request),
        };
        match reply {
            ScriptedReply::Text { chunks, usage } => {
                if request.options.stream {
                    for chunk in &chunks {
                        sink.text_delta(chunk);
                    }
                }
                Ok(CompletionResponse {
                    model: self.model.clone(),
                    text: chunks.concat(),
                    tool_calls: Vec::new(),
                    usage,
                    stop_reason: StopReason::EndTurn,
                })
            }
            ScriptedReply::ToolCalls { calls, usage } => Ok(CompletionResponse {
                model: self.model.clone(),
                text: String::new(),
                tool_calls: calls,
                usage,
                stop_reason: StopReason::ToolUse,
            }),
            ScriptedReply::Error(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Message;

    fn ask(text: &str) -> CompletionRequest {
        CompletionRequest {
            messages: vec![Message::user(text)],
            ..CompletionRequest::default()
        }
    }

    #[test]
    fn a_provider_that_forgets_its_requests_still_answers_and_keeps_none() {
        let echo = |req: &CompletionRequest| {
            ScriptedReply::text(format!("Echo: {}", req.messages[0].text()))
        };
        let keeping = ScriptedProvider::responder("echo", echo);
        let forgetting = ScriptedProvider::responder("echo", echo).forget_requests();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            for provider in [&keeping, &forgetting] {
                for text in ["one", "two"] {
                    let response = provider.complete(&ask(text), &mut ()).await.unwrap();
                    assert_eq!(response.text, format!("Echo: {text}"));
                }
            }
        });
        assert_eq!(keeping.requests().len(), 2);
        assert!(forgetting.requests().is_empty());
    }
}
