//! Test utilities: a fake model API server.
//!
//! **For tests and benchmarks only.** [`FakeProviderServer`] listens on a
//! real TCP port on `127.0.0.1` and speaks just enough HTTP/1.1 to answer the
//! OpenAI and Anthropic providers (and clients of the OpenAI Responses API)
//! the way the real APIs do:
//!
//! | route | shape |
//! |---|---|
//! | `POST /v1/chat/completions` | OpenAI chat completion, or its SSE stream when `stream: true` |
//! | `POST /v1/responses` | OpenAI Responses API response, or its SSE events when `stream: true` |
//! | `POST /v1/embeddings` | OpenAI embeddings (deterministic vectors) |
//! | `POST /v1/messages` | Anthropic message, or its SSE stream when `stream: true` |
//!
//! (the `/v1` prefix is optional). By default a reply echoes the last message
//! of the conversation (`Echo: …`); a request with a JSON schema gets a
//! minimal instance of the schema. Scripted [`FakeReply`]s (text, tool
//! calls) are served in order before falling back to the echo.
//!
//! To record a suite, answer by content instead, which holds when cells run
//! in parallel: [`FakeProvider`] [`Rule`]s match a request's model, system
//! prompt, prompt or tool results and answer with text, tool calls or a
//! structured value in the shape of the API asked, streamed or not:
//!
//! ```
//! # async fn demo() -> std::io::Result<()> {
//! use scaffold::testing::{Answer, FakeProvider, Rule};
//! use serde_json::json;
//!
//! let server = FakeProvider::builder()
//!     .rule(
//!         Rule::when()
//!             .model("gpt-4o")
//!             .system_contains("code reviewer")
//!             .prompt_contains("SELECT *")
//!             .then(Answer::structured(json!({"findings": []})).usage(120, 40)),
//!     )
//!     .rule(Rule::when().tool_result_contains("42").then(Answer::text("The answer is 42.")))
//!     .rule(Rule::when().then(Answer::tool_call("lookup", json!({"q": "answer"}))))
//!     .start()
//!     .await?;
//! // Point the providers at it: OPENAI_BASE_URL=server.openai_base_url()
//! // (chat completions and responses), ANTHROPIC_BASE_URL=server.anthropic_base_url().
//! # drop(server);
//! # Ok(())
//! # }
//! ```
//!
//! A request no rule matches gets a 400 naming its model, system prompt
//! and last user message. With [`FakeServerBuilder::simulated_timing`]
//! each answer states the time a real model would have taken (a seeded
//! [`SimulatedTiming`] per model, the same for the same request) in the
//! [`SIMULATED_TIMING_HEADER`], which record mode records in place of
//! the measured time, so a suite recorded from it has realistic latencies
//! that re-recording reproduces byte for byte. [`payloads`] builds the APIs' response bodies
//! and event streams for servers of your own.
//!
//! Unlike wiremock it can misbehave mid-way: a [`Fault`] plan, indexed by the
//! order in which requests arrive, returns 429 with `Retry-After`, 500, 529,
//! never answers, resets the connection, sends malformed JSON, cuts or stalls
//! a stream, or answers with the wrong content type. Latency (before the
//! first byte) and the delay between stream chunks are configurable, every
//! request is logged, and connections are served concurrently.
//!
//! ```
//! # async fn demo() -> std::io::Result<()> {
//! use std::time::Duration;
//! use scaffold::provider::openai::OpenAi;
//! use scaffold::testing::{Fault, FakeProviderServer};
//!
//! let server = FakeProviderServer::builder()
//!     .latency(Duration::from_millis(5))
//!     .fault_plan(vec![Fault::RateLimited { retry_after: Some(Duration::from_millis(10)) }])
//!     .start()
//!     .await?;
//! let provider = OpenAi::new("gpt-4o-mini").base_url(server.openai_base_url()).api_key("sk-test");
//! // ... the first call is rate limited once, retried, then answered.
//! # let _ = provider;
//! # Ok(())
//! # }
//! ```

#[doc(hidden)]
pub mod payloads;
mod router;
mod server;
mod timing;

pub use router::{Answer, Api, Rule, When};
pub use server::{
    FakeProviderServer, FakeReply, FakeServerBuilder, FakeToolCall, Fault, RecordedRequest,
};
pub use timing::{ModelSpeed, SIMULATED_TIMING_HEADER, SimulatedTiming};

/// A fake model API that answers by [`Rule`]s (see the [module docs](self)).
#[derive(Debug, Clone, Copy)]
pub struct FakeProvider;

impl FakeProvider {
    /// Configure the server: add [`Rule`]s, then [`start`](FakeServerBuilder::start) it.
    pub fn builder() -> FakeServerBuilder {
        FakeServerBuilder::default()
    }
}
