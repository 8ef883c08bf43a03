//! `ReqwestTransport::serve_shared_on`: the providers' shared client served
//! by a runtime of the caller's (what the eval harness does), and the
//! background runtime again once its guard is dropped.
//!
//! One test in its own binary: installing a runtime is process-wide, and
//! whether the background thread `scaffold-http` was started is part of
//! what it checks.

use std::time::Duration;

use scaffold::provider::http::ReqwestTransport;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::{CompletionRequest, Message, Provider, StreamSink};
use scaffold::testing::FakeProviderServer;

#[derive(Default)]
struct Deltas(Vec<String>);

impl StreamSink for Deltas {
    fn text_delta(&mut self, delta: &str) {
        self.0.push(delta.to_string());
    }
}

fn ask(text: &str, stream: bool) -> CompletionRequest {
    let mut request = CompletionRequest {
        messages: vec![Message::user(text)],
        ..CompletionRequest::default()
    };
    request.options.stream = stream;
    request
}

/// Ask `text` (streamed or not) and check the echo.
async fn echo(provider: &OpenAi, text: &str, stream: bool) {
    let mut sink = Deltas::default();
    let response = provider
        .complete(&ask(text, stream), &mut sink)
        .await
        .expect("answer");
    assert_eq!(response.text, format!("Echo: {text}"));
    if stream {
        assert_eq!(sink.0.concat(), response.text);
    }
}

/// Whether a thread of this process is named `scaffold-http` (the
/// background runtime of the shared client).
fn background_started() -> bool {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .any(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| name.trim() == "scaffold-http")
        })
}

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn a_served_runtime_carries_the_shared_client_until_its_guard_drops() {
    let server_runtime = runtime(1);
    let server = server_runtime
        .block_on(FakeProviderServer::builder().write_chunk_size(7).start())
        .expect("fake server starts");
    let provider = OpenAi::new("gpt-4o-mini")
        .base_url(server.openai_base_url())
        .api_key("sk-test")
        .timeout(Duration::from_secs(5));

    let served = runtime(2);
    let guard = ReqwestTransport::serve_shared_on(served.handle().clone()).expect("client");
    // From the served runtime (its own calls run on the caller's task) and
    // from short-lived runtimes (handed over to it), whole and streamed.
    served.block_on(echo(&provider, "on the served runtime", false));
    served.block_on(echo(&provider, "streamed on the served runtime", true));
    for i in 0..2 {
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        other.block_on(echo(&provider, &format!("from runtime {i}"), i == 1));
    }
    // Several at once from threads blocking on the served runtime, as the
    // harness's test threads do.
    std::thread::scope(|scope| {
        for i in 0..8 {
            let (served, provider) = (&served, &provider);
            scope
                .spawn(move || served.block_on(echo(provider, &format!("thread {i}"), i % 2 == 0)));
        }
    });
    assert!(
        !background_started(),
        "every call was served by the installed runtime"
    );

    // A second installation serves until dropped, then the first again.
    let inner = runtime(1);
    let second = ReqwestTransport::serve_shared_on(inner.handle().clone()).expect("client");
    inner.block_on(echo(&provider, "on the second runtime", true));
    drop(second);
    drop(inner);
    served.block_on(echo(&provider, "on the first runtime again", false));
    assert!(!background_started());

    // Once the guard and the runtime are gone, the background runtime serves.
    drop(guard);
    drop(served);
    let after = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    after.block_on(echo(&provider, "after the guard", false));
    after.block_on(echo(&provider, "streamed after the guard", true));
    assert!(background_started());
}
