//! `cargo scaffold view`: a local web server over the session store, read
//! only: every run, one run's grid of cases × variants, any two runs
//! compared.

mod pages;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use scaffold::_cargo_scaffold_support::eval::{CompareOptions, Comparison, EvalResults, compare};
use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::store::Store;

use crate::cli::ViewArgs;
use crate::error::{CliError, CmdResult, Exit};
use crate::store;

/// What every request reads: the store, opened read only.
#[derive(Clone)]
struct Viewer {
    store: Store,
    path: PathBuf,
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
    let app = Router::new()
        .route("/", get(runs))
        .route("/runs/{id}", get(one_run))
        .route("/compare", get(compare_runs))
        .fallback(|| async { html(StatusCode::NOT_FOUND, pages::problem("No such page.")) })
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

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// Run `read` on the store off the server's threads; a store error is a
/// 500 page saying it.
async fn reading(
    viewer: Viewer,
    read: impl FnOnce(&Viewer) -> Response + Send + 'static,
) -> Response {
    tokio::task::spawn_blocking(move || read(&viewer))
        .await
        .unwrap_or_else(|e| {
            html(
                StatusCode::INTERNAL_SERVER_ERROR,
                pages::problem(&e.to_string()),
            )
        })
}

fn store_problem(e: impl std::fmt::Display) -> Response {
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        pages::problem(&format!("cannot read the store: {e}")),
    )
}

async fn runs(State(viewer): State<Viewer>) -> Response {
    reading(viewer, |v| {
        let read = v
            .store
            .eval_runs()
            .and_then(|runs| Ok((runs, v.store.eval_trends()?)));
        match read {
            Ok((runs, trends)) => html(
                StatusCode::OK,
                pages::runs(&runs, &trends, &v.path.display().to_string()),
            ),
            Err(e) => store_problem(e),
        }
    })
    .await
}

/// A run's record and results, or the page saying why not (boxed: a
/// response is large).
type RunFound = (EvalRunRecord, Vec<EvalResults>);

fn run_results(v: &Viewer, id: &str) -> Result<RunFound, Box<Response>> {
    let record = store::eval_run(&v.store, id)
        .map_err(|e| Box::new(html(StatusCode::NOT_FOUND, pages::problem(&e.to_string()))))?;
    let mut evals = v
        .store
        .eval_results(&record.id)
        .map_err(|e| Box::new(store_problem(e)))?;
    evals.sort_by(|a, b| a.eval.cmp(&b.eval));
    Ok((record, evals))
}

async fn one_run(
    State(viewer): State<Viewer>,
    Path(id): Path<String>,
    Query(filter): Query<pages::Filter>,
) -> Response {
    reading(viewer, move |v| match run_results(v, &id) {
        Ok((record, evals)) => html(StatusCode::OK, pages::run(&record, &evals, &filter)),
        Err(page) => *page,
    })
    .await
}

/// `?base=RUN&head=RUN`.
#[derive(scaffold::serde::Deserialize)]
#[serde(crate = "scaffold::serde")]
struct Pair {
    base: String,
    head: String,
}

async fn compare_runs(State(viewer): State<Viewer>, Query(pair): Query<Pair>) -> Response {
    reading(viewer, move |v| {
        let (base, base_evals) = match run_results(v, &pair.base) {
            Ok(found) => found,
            Err(page) => return *page,
        };
        let (head, head_evals) = match run_results(v, &pair.head) {
            Ok(found) => found,
            Err(page) => return *page,
        };
        let options = CompareOptions::default();
        let mut unpaired = Vec::new();
        let compared: Vec<(String, Comparison)> = head_evals
            .iter()
            .filter_map(|h| match base_evals.iter().find(|b| b.eval == h.eval) {
                Some(b) => Some((h.eval.clone(), compare(b, h, &options))),
                None => {
                    unpaired.push(h.eval.clone());
                    None
                }
            })
            .collect();
        html(
            StatusCode::OK,
            pages::compare(&base.id, &head.id, &compared, &unpaired),
        )
    })
    .await
}
