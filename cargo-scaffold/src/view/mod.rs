//! `cargo scaffold view`: a local web server over the session store, read
//! only: every run, one run's grid of cases × variants, a cell's
//! transcript, any two runs compared. The server filters, searches and
//! pages; each page is plain HTML, the transcript viewer's script the only
//! script, served from `/assets/`.

mod cache;
mod cell_page;
mod compare_page;
mod grid;
mod layout;
mod runs_page;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use scaffold::_cargo_scaffold_support::report::html::VIEWER_SCRIPT;
use scaffold::store::Store;

use cache::RunCache;
use compare_page::{ComparePage, Compared};
use grid::{Filter, Found, RunPage};
use layout::{Built, HEADER_POLICY, Refusal, VIEWER_SCRIPT_PATH};

use crate::cli::ViewArgs;
use crate::error::{CliError, CmdResult, Exit};
use crate::store;

/// What every request reads: the store, opened read only, and the runs'
/// results last read.
#[derive(Clone)]
struct Viewer {
    store: Store,
    path: PathBuf,
    cache: Arc<RunCache>,
}

/// `cargo scaffold view`.
pub fn run(args: &ViewArgs) -> CmdResult {
    let db = store::open_read_only(args.db.database.as_deref())?;
    let host: IpAddr = args.host.parse().map_err(|_| {
        CliError::input(format!(
            "--host `{}`: expected an IP address such as 127.0.0.1",
            args.host
        ))
    })?;
    if !host.is_loopback() {
        eprintln!(
            "warning: --host {host}: the viewer is reachable from other machines, and shows every \
             session of {} to them",
            db.path.display()
        );
    }
    let viewer = Viewer {
        store: db.store,
        path: db.path,
        cache: Arc::default(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("cannot start the server's runtime: {e}")))?;
    runtime.block_on(serve(viewer, SocketAddr::new(host, args.port), args.open))
}

async fn serve(viewer: Viewer, addr: SocketAddr, open: bool) -> CmdResult {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        CliError::input(format!(
            "cannot listen on {addr}: {e} (pick another --port)"
        ))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::failed(format!("cannot read the server's address: {e}")))?;
    let url = format!("http://{addr}/");
    println!("Viewing {} at {url} (Ctrl-C stops)", viewer.path.display());
    if open {
        open_browser(&url);
    }
    let hosts = Arc::new(allowed_hosts(addr));
    let app = Router::new()
        .route("/", get(runs))
        .route("/runs/{id}", get(one_run))
        .route("/runs/{id}/cells/{cell}", get(one_cell))
        .route("/compare", get(compare_runs))
        .route(VIEWER_SCRIPT_PATH, get(viewer_script))
        .fallback(|| async { refused(Refusal::not_found("No such page.")) })
        .layer(middleware::from_fn(move |request, next| {
            only_hosts(hosts.clone(), request, next)
        }))
        .with_state(viewer);
    axum::serve(listener, app)
        .await
        .map_err(|e| CliError::failed(format!("the server stopped: {e}")))?;
    Ok(Exit::Success)
}

/// Ask the desktop to open `url`; say so when it cannot.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if std::process::Command::new(opener).arg(url).spawn().is_err() {
        eprintln!("--open: cannot run `{opener}`; open {url} yourself");
    }
}

/// The `Host` headers the server answers: its own address, and
/// `localhost` on its port for a loopback one. Any other name is a page
/// of another site that resolved its name to this address (DNS
/// rebinding): it gets nothing.
fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![addr.to_string()];
    if addr.ip().is_loopback() {
        hosts.extend([
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ]);
    }
    hosts
}

async fn only_hosts(hosts: Arc<Vec<String>>, request: Request, next: Next) -> Response {
    let host = (request.headers().get(header::HOST)).and_then(|h| h.to_str().ok());
    match host {
        Some(host) if hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) => next.run(request).await,
        _ => refused(Refusal {
            status: StatusCode::MISDIRECTED_REQUEST,
            why: format!(
                "This server answers requests for {} only.",
                hosts.join(", ")
            ),
        }),
    }
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CONTENT_SECURITY_POLICY, HEADER_POLICY),
        ],
        body,
    )
        .into_response()
}

fn refused(refusal: Refusal) -> Response {
    html(refusal.status, refusal.page())
}

fn built(page: Built) -> Response {
    match page {
        Ok(body) => html(StatusCode::OK, body),
        Err(refusal) => refused(refusal),
    }
}

async fn viewer_script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        VIEWER_SCRIPT,
    )
        .into_response()
}

/// Build a page from the store off the server's threads.
async fn reading(
    viewer: Viewer,
    build: impl FnOnce(&Viewer) -> Built + Send + 'static,
) -> Response {
    let page = tokio::task::spawn_blocking(move || build(&viewer)).await;
    built(page.unwrap_or_else(|e| Err(Refusal::store(e))))
}

/// A query string or path that cannot be read: the page saying why.
fn unreadable(e: impl std::fmt::Display) -> Response {
    refused(Refusal::bad_request(e))
}

async fn runs(State(viewer): State<Viewer>) -> Response {
    reading(viewer, |v| {
        let runs = v.store.eval_runs().map_err(Refusal::store)?;
        let trends = v.store.eval_trends().map_err(Refusal::store)?;
        Ok(runs_page::runs(
            &runs,
            &trends,
            &v.path.display().to_string(),
        ))
    })
    .await
}

fn run_page(v: &Viewer, id: &str, filter: &Filter) -> Built {
    let record = store::eval_run(&v.store, id).map_err(Refusal::not_found)?;
    let evals = v.cache.results(&v.store, &record).map_err(Refusal::store)?;
    let tags = v.store.run_tags(&record.id).map_err(Refusal::store)?;
    let runs = v.store.eval_run_ids().map_err(Refusal::store)?;
    let found = Found::read(&v.store, &v.cache, &record.id, filter)?;
    let page = RunPage {
        record: &record,
        evals: &evals,
        runs: &runs,
        tags: &tags,
        filter,
        found: &found,
    };
    page.render()
}

async fn one_run(
    State(viewer): State<Viewer>,
    id: Result<Path<String>, PathRejection>,
    filter: Result<Query<Filter>, QueryRejection>,
) -> Response {
    let (Path(id), Query(filter)) = match (id, filter) {
        (Ok(id), Ok(filter)) => (id, filter),
        (Err(e), _) => return unreadable(e),
        (_, Err(e)) => return unreadable(e),
    };
    reading(viewer, move |v| run_page(v, &id, &filter)).await
}

/// `?base=RUN`: the run whose cell shows beside.
#[derive(scaffold::serde::Deserialize)]
#[serde(crate = "scaffold::serde")]
struct Beside {
    #[serde(default)]
    base: String,
}

async fn one_cell(
    State(viewer): State<Viewer>,
    path: Result<Path<(String, String)>, PathRejection>,
    beside: Result<Query<Beside>, QueryRejection>,
) -> Response {
    let (Path((id, name)), Query(beside)) = match (path, beside) {
        (Ok(path), Ok(beside)) => (path, beside),
        (Err(e), _) => return unreadable(e),
        (_, Err(e)) => return unreadable(e),
    };
    reading(viewer, move |v| {
        cell_page::render(&v.store, &id, &name, &beside.base)
    })
    .await
}

/// `?base=RUN&head=RUN[&eval=EVAL&page=N]`.
#[derive(scaffold::serde::Deserialize)]
#[serde(crate = "scaffold::serde")]
struct Pair {
    base: String,
    head: String,
    #[serde(default)]
    eval: String,
    #[serde(default)]
    page: usize,
}

fn compare_page(v: &Viewer, pair: &Pair) -> Built {
    let base = store::eval_run(&v.store, &pair.base).map_err(Refusal::not_found)?;
    let head = store::eval_run(&v.store, &pair.head).map_err(Refusal::not_found)?;
    let base_evals = v.cache.results(&v.store, &base).map_err(Refusal::store)?;
    let head_evals = v.cache.results(&v.store, &head).map_err(Refusal::store)?;
    let (evals, unpaired) = Compared::pair(&base_evals, &head_evals);
    let page = ComparePage {
        base: &base.id,
        head: &head.id,
        evals: &evals,
        unpaired: &unpaired,
        eval: &pair.eval,
        page: pair.page,
    };
    Ok(page.render())
}

async fn compare_runs(
    State(viewer): State<Viewer>,
    pair: Result<Query<Pair>, QueryRejection>,
) -> Response {
    match pair {
        Ok(Query(pair)) => reading(viewer, move |v| compare_page(v, &pair)).await,
        Err(e) => unreadable(e),
    }
}
