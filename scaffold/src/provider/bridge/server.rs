//! The bridge's HTTP side: accept the agent's requests, send each on
//! through the run's transport, answer with what came back (a whole body,
//! or an event stream passed on as it arrives) and log the exchange.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use super::host::HostRef;
use super::protocol::{self, Api};
use super::{Exchange, Shared};
use crate::clock::Clock;
use crate::provider::http::{HttpProvider, Passed, join_url, without_secrets};
use crate::provider::limit::{Permit, with_rate_limits};
use crate::provider::recorder::secrets_of;
use crate::provider::transport::{ByteStream, HttpRequest};
use crate::provider::{Attempts, CallContext, ProviderError, RecordingId};

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// Largest request body an agent may send.
const MAX_REQUEST: usize = 64 * 1024 * 1024;

/// Headers that belong to one hop, or that the transport sets itself.
const NOT_FORWARDED: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
    "accept-encoding",
];

/// Accept connections until the task is aborted (which drops, and so
/// aborts, every connection's task).
pub(super) async fn serve(listener: tokio::net::TcpListener, host: HostRef) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: wait rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let host = host.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let host = host.clone();
                async move { Ok::<_, Infallible>(route(&host, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
}

/// Where a request went: `/{agent}/openai/...` or `/{agent}/anthropic/...`.
struct Route<'a> {
    agent: &'a str,
    anthropic: bool,
    /// The path after the API segment (`/v1/chat/completions`).
    rest: &'a str,
}

impl<'a> Route<'a> {
    fn parse(path: &'a str) -> Option<Route<'a>> {
        let (agent, after) = path.strip_prefix('/')?.split_once('/')?;
        let (api, rest) = after.split_once('/').map_or((after, ""), |(a, r)| (a, r));
        let anthropic = match api {
            "openai" => false,
            "anthropic" => true,
            _ => return None,
        };
        let rest = &path[path.len() - rest.len() - usize::from(!rest.is_empty())..];
        super::valid_agent_name(agent).then_some(Route {
            agent,
            anthropic,
            rest: if rest.is_empty() { "/" } else { rest },
        })
    }

    /// The path under the upstream base URL: OpenAI's base has `/v1`
    /// already, Anthropic's does not.
    fn upstream_path(&self) -> &'a str {
        match self.rest.strip_prefix("/v1") {
            Some(rest) if !self.anthropic && rest.starts_with('/') => rest,
            _ => self.rest,
        }
    }
}

/// Hand a request to the bridge its path (or, through the proxy, its
/// `Proxy-Authorization`) names.
async fn route(host: &HostRef, request: Request<Incoming>) -> Response<Body> {
    let Some(host) = host.upgrade() else {
        return error_response(StatusCode::SERVICE_UNAVAILABLE, false, "the run has ended");
    };
    let (parts, body) = request.into_parts();
    if let Some(called) = parts.uri.authority() {
        // A proxy request: the agent called a host itself, and its
        // environment sent it here (a program's HTTPS_PROXY, in playback).
        // Without its query: a key there must not reach the message.
        let uri = parts.uri.to_string();
        let shown = uri.split('?').next().unwrap_or_default();
        let message = format!(
            "the agent called {called} itself ({} {shown}), not the cell's base URL: give its \
             client the base URL scaffold sets (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, or \
             cx.openai_base_url(..)); in playback no request leaves the machine",
            parts.method
        );
        if let Some(shared) = proxy_user(&parts.headers).and_then(|token| host.route(token)) {
            shared.problem(message.clone());
        }
        return error_response(StatusCode::FORBIDDEN, false, &message);
    }
    let full = parts.uri.path().to_string();
    let rooted = full.strip_prefix('/').unwrap_or(&full);
    let (token, path) = rooted.split_once('/').unwrap_or((rooted, ""));
    let Some(shared) = token.parse().ok().and_then(|token| host.route(token)) else {
        let message = format!(
            "no agent bridge serves {full} (its cell has ended, or the URL was not one a cell handed out)"
        );
        return error_response(StatusCode::NOT_FOUND, false, &message);
    };
    handle(&shared, parts, body, &format!("/{path}")).await
}

/// The bridge token a proxy request carries as its user
/// (`Proxy-Authorization: Basic base64("{token}:scaffold")`).
fn proxy_user(headers: &hyper::HeaderMap) -> Option<u64> {
    use base64::Engine;
    let value = headers.get("proxy-authorization")?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?.trim();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    text.split(':').next()?.parse().ok()
}

async fn handle(
    shared: &Arc<Shared>,
    parts: hyper::http::request::Parts,
    body: Incoming,
    path: &str,
) -> Response<Body> {
    let Some(route) = Route::parse(path) else {
        let message = format!(
            "the agent bridge at {} got {} {path}, which is not under a base URL it handed \
             out: give the agent's client the cell's base URL (cx.openai_base_url(\"agent\") \
             is {}/agent/openai/v1, cx.anthropic_base_url(\"agent\") is {}/agent/anthropic)",
            shared.url, parts.method, shared.url, shared.url
        );
        shared.problem(message.clone());
        return error_response(StatusCode::NOT_FOUND, false, &message);
    };
    let anthropic = route.anthropic;
    let bytes = match Limited::new(body, MAX_REQUEST).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            let message = format!("the agent bridge could not read the body of {path}: {e}");
            shared.problem(message.clone());
            return error_response(StatusCode::BAD_REQUEST, anthropic, &message);
        }
    };
    let json = if bytes.is_empty() {
        None
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => Some(value),
            Err(e) => {
                let message = format!(
                    "the agent bridge passes on JSON bodies only, and the body of {} {path} is not JSON ({e})",
                    parts.method
                );
                shared.problem(message.clone());
                return error_response(StatusCode::BAD_REQUEST, anthropic, &message);
            }
        }
    };
    let upstream = if anthropic {
        &shared.setup.anthropic
    } else {
        &shared.setup.openai
    };
    let mut url = join_url(&upstream.base_url, route.upstream_path());
    if let Some(query) = parts.uri.query() {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(query);
    }
    let headers = parts
        .headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            !NOT_FORWARDED.contains(&name) && !name.starts_with("x-scaffold-")
        })
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_string())))
        .collect();
    let request = HttpRequest {
        method: parts.method.to_string(),
        url,
        headers,
        body: json,
    };
    let call = Call::new(shared, &route, request);
    call.send(shared, upstream, anthropic).await
}

/// One call under way, and what its exchange will say of the request.
struct Call {
    request: HttpRequest,
    exchange: Exchange,
    context: CallContext,
}

impl Call {
    fn new(shared: &Arc<Shared>, route: &Route<'_>, request: HttpRequest) -> Call {
        let api = Api::of(route.anthropic, route.rest);
        let body = request.body.as_ref();
        let picked = shared.pick(route.agent, &request);
        let arrived = shared.tick();
        let clock = shared.setup.virtual_time.then(Clock::virtual_time);
        let context = CallContext {
            recording_id: picked.id.as_ref().map(ToString::to_string),
            attempt: 0,
            clock,
            attempts: Attempts::default(),
            order: Some(arrived),
        };
        let exchange = Exchange {
            agent: route.agent.to_string(),
            provider: protocol::provider_name(route.anthropic),
            api,
            recording_id: picked.id,
            invocation: picked.invocation,
            recorded_order: picked.order,
            model: protocol::model_of(body),
            asked: protocol::asked(api, body),
            streamed: protocol::streams(body),
            ticks: (arrived, 0),
            real: (shared.started.elapsed(), Duration::ZERO),
            recorded: Duration::ZERO,
            attempts: 1,
            answer: None,
            unread: None,
            error: None,
        };
        Call {
            request,
            exchange,
            context,
        }
    }

    /// Send the call on to `upstream` (the Anthropic one when `anthropic`)
    /// and answer the agent.
    async fn send(
        self,
        shared: &Arc<Shared>,
        upstream: &HttpProvider,
        anthropic: bool,
    ) -> Response<Body> {
        let Call {
            request,
            mut exchange,
            context,
        } = self;
        let client = upstream.client(shared.setup.transport.as_ref());
        let secrets = secrets_of(&request);
        let sent = without_secrets(
            secrets,
            client.send_passthrough(request, &context, exchange.streamed),
        );
        let sent = match shared.setup.limits.clone() {
            Some(limits) => with_rate_limits(limits, sent).await,
            None => sent.await,
        };
        exchange.attempts = context.attempts.get().max(1);
        match sent {
            Ok((Passed::Json(bytes), _)) => {
                let model = exchange.model.clone().unwrap_or_default();
                read_answer(&mut exchange, &model, bytes.clone()).await;
                finish(shared, exchange, &context);
                Response::builder()
                    .status(StatusCode::OK)
                    .header("content-type", "application/json")
                    .body(Full::new(bytes).map_err(never).boxed_unsync())
                    .unwrap_or_else(|_| {
                        error_response(StatusCode::BAD_GATEWAY, anthropic, "bad answer")
                    })
            }
            Ok((Passed::Stream(stream, permit), _)) => {
                let idle = upstream.config.idle_timeout;
                pass_stream(shared, (exchange, context), (stream, permit), idle)
            }
            Err(error) => {
                let status = status_of(&error);
                let message = error.to_string();
                exchange.error = Some(error);
                finish(shared, exchange, &context);
                error_response(status, anthropic, &message)
            }
        }
    }
}

/// Pass a streamed answer on as it arrives, keep its bytes, and log the
/// exchange once it ended (or broke off, or the agent let go of it).
fn pass_stream(
    shared: &Arc<Shared>,
    (mut exchange, context): (Exchange, CallContext),
    (mut stream, permit): (ByteStream, Option<Permit>),
    idle: Duration,
) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
    let pump_shared = shared.clone();
    let pump = async move {
        let _permit = permit;
        let mut kept = BytesMut::new();
        loop {
            let item = match tokio::time::timeout(idle, stream.next()).await {
                Ok(item) => item,
                Err(_) => Some(Err(crate::provider::transport::TransportError::Timeout(
                    u64::try_from(idle.as_millis()).unwrap_or(u64::MAX),
                ))),
            };
            match item {
                None => break,
                Some(Ok(chunk)) => {
                    kept.extend_from_slice(&chunk);
                    // An agent may stop reading once it has the answer's
                    // last event: keep reading the rest for the exchange.
                    let _ = tx.send(Ok(Frame::data(chunk))).await;
                }
                Some(Err(e)) => {
                    let message = format!("the stream broke off: {e}");
                    let _ = tx.send(Err(std::io::Error::other(message.clone()))).await;
                    exchange.error = Some(ProviderError::Connection {
                        provider: exchange.provider.to_string(),
                        message,
                    });
                    break;
                }
            }
        }
        drop(tx);
        if exchange.error.is_none() {
            let model = exchange.model.clone().unwrap_or_default();
            read_answer(&mut exchange, &model, kept.freeze()).await;
        }
        finish(&pump_shared, exchange, &context);
    };
    shared
        .pumps
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .spawn(pump);
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(StreamBody::new(frames).boxed_unsync())
        .unwrap_or_else(|_| error_response(StatusCode::BAD_GATEWAY, false, "bad stream"))
}

/// Read the exchange's answer from its body.
async fn read_answer(exchange: &mut Exchange, model: &str, body: Bytes) {
    match protocol::answered(exchange.api, model, body, exchange.streamed).await {
        Some(Ok(answer)) => exchange.answer = Some(answer),
        Some(Err(why)) => exchange.unread = Some(why),
        None => {}
    }
}

/// Stamp the exchange's end and log it.
fn finish(shared: &Shared, mut exchange: Exchange, context: &CallContext) {
    exchange.ticks.1 = shared.tick();
    exchange.real.1 = shared.started.elapsed();
    if let Some(clock) = &context.clock {
        exchange.recorded = clock.elapsed();
    }
    shared.record(exchange);
}

fn never(never: Infallible) -> std::io::Error {
    match never {}
}

/// The status an agent gets for a failed call: the API's own, or what
/// stands for the failure. Playback failures are the suite's, not the
/// API's: 400, which clients do not retry.
fn status_of(error: &ProviderError) -> StatusCode {
    let code = match error {
        ProviderError::Http { status, .. } => *status,
        ProviderError::RateLimited { .. } => 429,
        ProviderError::Timeout { .. } => 504,
        ProviderError::Connection { .. }
        | ProviderError::Protocol { .. }
        | ProviderError::Scripted(_) => 502,
        ProviderError::Playback { .. } => 400,
    };
    StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY)
}

/// An error answer in the API's own shape, marked not to be retried: the
/// bridge has retried already.
fn error_response(status: StatusCode, anthropic: bool, message: &str) -> Response<Body> {
    let body = if anthropic {
        json!({"type": "error", "error": {"type": "scaffold_bridge_error", "message": message}})
    } else {
        json!({"error": {"message": message, "type": "scaffold_bridge_error", "code": null}})
    };
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(never)
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        "x-should-retry",
        hyper::header::HeaderValue::from_static("false"),
    );
    response
}

impl Shared {
    /// The recording id of `agent`'s next call, its invocation, and (in
    /// playback) the place its recording was recorded at: its place among
    /// the agent's calls, or where recordings answer calls (playback,
    /// record mode recording what is missing) the first recording of the
    /// agent not yet answered whose request is this one (calls made at
    /// once arrive in any order).
    fn pick(&self, agent: &str, request: &HttpRequest) -> Picked {
        let n = {
            let mut state = self.state();
            let calls = state.calls.entry(agent.to_string()).or_insert(0);
            *calls += 1;
            *calls - 1
        };
        let Some(ids) = &self.setup.ids else {
            return Picked {
                id: None,
                invocation: n,
                order: None,
            };
        };
        // In playback, and in record mode where a call its recording
        // answers is answered from it, calls made at once find theirs by
        // content.
        let recorder = self.setup.recorder.as_ref().filter(|r| r.replays());
        let Some(recorder) = recorder else {
            let id = ids(agent, n);
            self.state().used.insert(id.clone());
            return Picked {
                id: Some(id),
                invocation: n,
                order: None,
            };
        };
        let answering = |id: &RecordingId| match recorder.recording_answers(id, request) {
            Ok(Some(recorded)) if recorded.matches => Some(recorded),
            _ => None,
        };
        // The expected one first (an agent's calls one after another),
        // then every other recording of the agent, until one is missing.
        let candidates = std::iter::once(n).chain((0..u32::MAX).filter(move |&i| i != n));
        for invocation in candidates {
            let id = ids(agent, invocation);
            if invocation != n && !recorder.recording_path(&id).exists() {
                break;
            }
            let Some(recorded) = answering(&id) else {
                continue;
            };
            if self.state().used.insert(id.clone()) {
                return Picked {
                    id: Some(id),
                    invocation,
                    order: recorded.order,
                };
            }
        }
        // None answers: the expected one fails with its diff, or (another
        // call took it) the next one no call took.
        let state = &mut self.state();
        let id = (n..u32::MAX)
            .map(|i| ids(agent, i))
            .find(|id| !state.used.contains(id))
            .unwrap_or_else(|| ids(agent, n));
        state.used.insert(id.clone());
        let n = id.invocation;
        Picked {
            id: Some(id),
            invocation: n,
            order: None,
        }
    }
}

/// The recording a call is keyed to.
struct Picked {
    id: Option<RecordingId>,
    invocation: u32,
    /// Where its recording was recorded among the run's calls.
    order: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_name_the_agent_the_api_and_the_rest() {
        let route = Route::parse("/planner/openai/v1/chat/completions").unwrap();
        assert_eq!(
            (
                route.agent,
                route.anthropic,
                route.rest,
                route.upstream_path()
            ),
            (
                "planner",
                false,
                "/v1/chat/completions",
                "/chat/completions"
            )
        );
        let route = Route::parse("/a_b-2/anthropic/v1/messages").unwrap();
        assert_eq!(
            (route.agent, route.anthropic, route.upstream_path()),
            ("a_b-2", true, "/v1/messages")
        );
        assert_eq!(Route::parse("/agent/openai").unwrap().rest, "/");
        for bad in [
            "/",
            "/v1/chat/completions",
            "/agent/gemini/v1",
            "/a%20b/openai/v1/x",
            "/agent",
        ] {
            assert!(Route::parse(bad).is_none(), "{bad}");
        }
    }
}
