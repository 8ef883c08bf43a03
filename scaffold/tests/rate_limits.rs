//! Per-provider rate limits against the fake provider server (real TCP,
//! real reqwest): what the server sees of requests per window, calls in
//! flight and tokens, and how a 429 storm slows the provider down.

use std::sync::Arc;
use std::time::{Duration, Instant};

use scaffold::_cargo_scaffold_support::provider::limit::{RateLimits, with_rate_limits};
use scaffold::provider::RateLimit;
use scaffold::provider::http::RetryPolicy;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::{CompletionRequest, Message, Provider, Usage};
use scaffold::testing::{FakeProviderServer, RecordedRequest};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn ask(text: &str) -> CompletionRequest {
    CompletionRequest {
        messages: vec![Message::user(text)],
        ..CompletionRequest::default()
    }
}

fn hello(i: usize) -> CompletionRequest {
    ask(&format!("hello {i}"))
}

/// A server with `latency` whose client is warmed up (the shared HTTP
/// client built, a connection open), so that the requests of a test reach
/// it as soon as they are sent; it has seen one request.
async fn warm_server(latency: Duration) -> FakeProviderServer {
    let server = FakeProviderServer::builder()
        .latency(latency)
        .start()
        .await
        .unwrap();
    openai(&server, "gpt-4o")
        .complete(&hello(0), &mut ())
        .await
        .unwrap();
    server
}

fn openai(server: &FakeProviderServer, model: &str) -> OpenAi {
    OpenAi::new(model)
        .base_url(server.openai_base_url())
        .api_key("sk-test")
}

/// Run `cells` calls of `providers` (cell `i` calls provider `i % len`
/// with `request(i)`) at once, each in a task of its own inside the run `limits`, if any; their
/// usage, or the first error.
async fn cells(
    providers: &[Arc<dyn Provider>],
    cells: usize,
    request: impl Fn(usize) -> CompletionRequest,
    limits: Option<&RateLimits>,
) -> Vec<Usage> {
    let tasks: Vec<_> = (0..cells)
        .map(|i| {
            let provider = providers[i % providers.len()].clone();
            let request = request(i);
            let limits = limits.cloned();
            tokio::spawn(async move {
                let call = async { provider.complete(&request, &mut ()).await };
                match limits {
                    Some(limits) => with_rate_limits(limits, call).await,
                    None => call.await,
                }
            })
        })
        .collect();
    let mut usage = Vec::new();
    for task in tasks {
        let response = task.await.expect("the cell ran");
        usage.push(response.expect("the call succeeded").usage);
    }
    usage
}

/// The most requests the server received in any `window` (less `slack`
/// for the time a request takes from the client to the server).
fn most_in_a_window(requests: &[RecordedRequest], window: Duration, slack: Duration) -> usize {
    let mut at: Vec<Instant> = requests.iter().map(|r| r.received).collect();
    at.sort();
    (0..at.len())
        .map(|i| {
            at[i..]
                .iter()
                .take_while(|&&t| t < at[i] + window - slack)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_cells_never_exceed_the_requests_per_window() {
    let server = warm_server(ms(10)).await;
    let limit = RateLimit::per(ms(500), 5);
    let provider: Arc<dyn Provider> = Arc::new(openai(&server, "gpt-4o").rate_limit(limit));
    let start = Instant::now();
    cells(&[provider], 15, hello, None).await;
    let wall = start.elapsed();
    let requests = &server.requests()[1..];
    assert_eq!(requests.len(), 15);
    let most = most_in_a_window(requests, ms(500), ms(20));
    assert!(most <= 5, "{most} requests in one window of 500 ms");
    // Three windows' worth: the third batch goes when the second window ends.
    assert!(wall >= ms(1000), "{wall:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_variants_on_one_api_share_its_budget_in_a_run() {
    let server = warm_server(ms(10)).await;
    let limit = RateLimit::per(ms(500), 4);
    let variants: [Arc<dyn Provider>; 2] = [
        Arc::new(openai(&server, "gpt-4o").rate_limit(limit)),
        Arc::new(openai(&server, "gpt-4o-mini").rate_limit(limit)),
    ];
    let run = RateLimits::new();
    cells(&variants, 12, hello, Some(&run)).await;
    let most = most_in_a_window(&server.requests()[1..], ms(500), ms(20));
    assert!(
        most <= 4,
        "{most} requests in one window: the variants did not share"
    );
    assert_eq!(run.limiters().len(), 1, "one limiter for the API");
    let stats = run.limiters()[0].stats();
    assert_eq!(stats.calls, 12);
    assert!(stats.waited_calls >= 8, "{stats:?}");
    assert_eq!(run.summary_lines().len(), 1);
    assert!(
        run.summary_lines()[0].starts_with(&format!(
            "Rate limit openai {} (4 requests per 500 ms): ",
            server.openai_base_url()
        )),
        "{:?}",
        run.summary_lines()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_sees_no_more_calls_in_flight_than_the_limit() {
    let server = FakeProviderServer::builder()
        .latency(ms(100))
        .start()
        .await
        .unwrap();
    let provider: Arc<dyn Provider> =
        Arc::new(openai(&server, "gpt-4o").rate_limit(RateLimit::none().concurrent(3)));
    let start = Instant::now();
    cells(&[provider], 12, hello, None).await;
    assert_eq!(server.max_in_flight(), 3);
    // Four waves of three.
    assert!(start.elapsed() >= ms(400));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_per_window_count_the_real_usage() {
    let server = warm_server(Duration::ZERO).await;
    // All the calls are alike: the same prompt and `max_tokens`.
    let request = |_| {
        let mut request = ask(&"word ".repeat(80));
        request.options.max_tokens = Some(150);
        request
    };
    let real = openai(&server, "gpt-4o")
        .complete(&request(0), &mut ())
        .await
        .unwrap()
        .usage
        .total();
    // Room for two calls' real usage a window. A call is estimated at its
    // body's characters / 4 plus its 150 `max_tokens`, more than it uses:
    // on estimates alone only one would go a window.
    let limit = RateLimit::per(ms(500), 100).tokens(real * 5 / 2);
    let provider: Arc<dyn Provider> = Arc::new(openai(&server, "gpt-4o").rate_limit(limit));
    let usage = cells(&[provider], 6, request, None).await;
    assert!(usage.iter().all(|u| u.total() == real), "{usage:?}");
    let most = most_in_a_window(&server.requests()[2..], ms(500), ms(20));
    assert_eq!(most, 2, "two calls' real usage a window");
}

/// The server answers 4 requests every 300 ms and 429s the rest, with
/// `retry-after`; 24 cells ask at once, allowed 40 attempts each (enough
/// that, unlimited, the unluckiest cell still gets through on a loaded
/// machine: what is compared is how many 429s it took).
async fn storm(limit: Option<RateLimit>) -> (usize, Duration) {
    let server = FakeProviderServer::builder()
        .rate_limit(ms(300), 4)
        .start()
        .await
        .unwrap();
    let mut provider = openai(&server, "gpt-4o").retry(RetryPolicy::new(40).base_delay(ms(50)));
    if let Some(limit) = limit {
        provider = provider.rate_limit(limit);
    }
    let start = Instant::now();
    cells(&[Arc::new(provider)], 24, hello, None).await;
    let wall = start.elapsed();
    (server.request_count() - 24, wall)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_storm_slows_the_provider_down_for_every_cell() {
    // Each cell on its own: every rejected cell retries when told, all at
    // once, and most are rejected again.
    let (alone, alone_wall) = storm(None).await;
    // A limit set too high (16 a window where the server takes 4): the
    // first 429 halves it for everyone, and so on until it fits.
    let (adaptive, adaptive_wall) = storm(Some(RateLimit::per(ms(300), 16))).await;
    // With no limit set, as in a run: calls in flight are halved instead.
    let (in_flight, _) = storm(Some(RateLimit::none())).await;
    eprintln!(
        "429s: {alone} each cell alone ({alone_wall:?}), {adaptive} adaptive ({adaptive_wall:?}), \
         {in_flight} adaptive without a limit"
    );
    assert!(alone >= 40, "the storm without a limiter: {alone} 429s");
    assert!(
        adaptive * 2 < alone,
        "{adaptive} 429s with the limiter, {alone} without"
    );
    // At least a quarter fewer: over 8 runs on two cores (before and after
    // issue 35 alike) it took 34-43 against 60-72, and a third fewer
    // failed about one run in five at 40 against 60.
    assert!(
        in_flight * 4 < alone * 3,
        "{in_flight} 429s with the adaptive limiter, {alone} without"
    );
    // Slowing down costs little time: the server's rate is the bound
    // either way, but the limiter counts each request 100 ms past a window
    // (against network jitter), a third of the server's 300 ms here; about
    // 1.3 times as long, bounded at 2.5 for a loaded machine.
    assert!(
        adaptive_wall < alone_wall.mul_f64(2.5),
        "{adaptive_wall:?} vs {alone_wall:?}"
    );
}
