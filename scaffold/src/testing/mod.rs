//! Test utilities: a fake model API server.
//!
//! **For tests and benchmarks only.** [`FakeProviderServer`] listens on a
//! real TCP port on `127.0.0.1` and speaks just enough HTTP/1.1 to answer the
//! OpenAI and Anthropic providers the way the real APIs do:
//!
//! | route | shape |
//! |---|---|
//! | `POST /v1/chat/completions` | OpenAI chat completion, or its SSE stream when `stream: true` |
//! | `POST /v1/embeddings` | OpenAI embeddings (deterministic vectors) |
//! | `POST /v1/messages` | Anthropic message, or its SSE stream when `stream: true` |
//!
//! (the `/v1` prefix is optional). By default a reply echoes the last message
//! of the conversation (`Echo: …`); a request with a JSON schema gets a
//! minimal instance of the schema. Scripted [`FakeReply`]s (text, tool
//! calls) are served in order before falling back to the echo.
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

mod payloads;
mod server;

pub use server::{
    FakeProviderServer, FakeReply, FakeServerBuilder, FakeToolCall, Fault, RecordedRequest,
};
