//! `cargo scaffold view`: a local web server over the session store, read
//! only: every run, one run's grid of cases × variants, a cell's
//! transcript, any two runs compared. The server filters, searches and
//! pages; each page is plain HTML, the transcript viewer's script the only
//! script, served from `/assets/`.

mod cache;
mod compare_page;
mod grid;
mod layout;
mod runs_page;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use scaffold::_cargo_scaffold_support::eval::{CompareOptions, compare};
use scaffold::_cargo_scaffold_support::report::html::{CellPage, VIEWER_SCRIPT};
use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::store::Store;

use cache::{Results, RunCache};
use compare_page::{ComparePage, Compared};
use grid::{Filter, Found, RunPage};
use layout::{CONTENT_SECURITY_POLICY, NAV, VIEWER_SCRIPT_PATH, esc, policy_meta, problem, query};

use crate::cli::ViewArgs;
use crate::error::{CliError, CmdResult, Exit};
use crate::store;

/// What every request reads: the store, opened read only.
#[derive(Clone)]
struct Viewer {
    store: Store,
    path: PathBuf,
    cache: std::sync::Arc<RunCache>,
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
        cache: Default::default(),
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
        .route("/runs/{id}/cells/{cell}", get(one_cell))
        .route("/compare", get(compare_runs))
        .route(VIEWER_SCRIPT_PATH, get(viewer_script))
        .fallback(|| async { html(StatusCode::NOT_FOUND, problem("No such page.")) })
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
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        ],
        body,
    )
        .into_response()
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

/// Run `read` on the store off the server's threads; a store error is a
/// 500 page saying it.
async fn reading(
    viewer: Viewer,
    read: impl FnOnce(&Viewer) -> Response + Send + 'static,
) -> Response {
    tokio::task::spawn_blocking(move || read(&viewer))
        .await
        .unwrap_or_else(|e| html(StatusCode::INTERNAL_SERVER_ERROR, problem(&e.to_string())))
}

fn store_problem(e: impl std::fmt::Display) -> Response {
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        problem(&format!("cannot read the store: {e}")),
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
                runs_page::runs(&runs, &trends, &v.path.display().to_string()),
            ),
            Err(e) => store_problem(e),
        }
    })
    .await
}

/// A response in place of what was asked (boxed: a response is large).
type Refused = Box<Response>;

fn not_found(e: impl std::fmt::Display) -> Refused {
    Box::new(html(StatusCode::NOT_FOUND, problem(&e.to_string())))
}

fn run_record(v: &Viewer, id: &str) -> Result<EvalRunRecord, Refused> {
    store::eval_run(&v.store, id).map_err(not_found)
}

fn run_results(v: &Viewer, record: &EvalRunRecord) -> Result<Results, Refused> {
    (v.cache.results(&v.store, record)).map_err(|e| Box::new(store_problem(e)))
}

/// What `filter` finds in the store for run `run`.
fn found(v: &Viewer, run: &str, filter: &Filter) -> Result<Found, Refused> {
    let stored = |e| Box::new(store_problem(e));
    let mut found = Found::default();
    if !filter.q.trim().is_empty() {
        let cells = v.store.search_cells(run, &filter.q).map_err(stored)?;
        found.search = Some(cells.into_iter().collect());
    }
    if !filter.tag.is_empty() {
        let cells = v.store.cells_tagged(run, &filter.tag).map_err(stored)?;
        found.tagged = Some(cells.into_iter().collect());
    }
    if !filter.changed.is_empty() {
        let other = run_record(v, &filter.changed)?;
        let results = run_results(v, &other)?;
        let verdicts = (results.iter())
            .flat_map(|e| e.results.iter().map(move |c| (grid::key(e, c), c.passed)))
            .collect();
        found.other = Some(verdicts);
    }
    Ok(found)
}

fn run_page(v: &Viewer, id: &str, filter: &Filter) -> Result<Response, Refused> {
    let record = run_record(v, id)?;
    let evals = run_results(v, &record)?;
    let stored = |e| Box::new(store_problem(e));
    let tags = v.store.run_tags(&record.id).map_err(stored)?;
    let runs = v.store.eval_run_ids().map_err(stored)?;
    let found = found(v, &record.id, filter)?;
    let page = RunPage {
        record: &record,
        evals: &evals,
        runs: &runs,
        tags: &tags,
        filter,
        found: &found,
    };
    Ok(html(StatusCode::OK, page.render()))
}

async fn one_run(
    State(viewer): State<Viewer>,
    Path(id): Path<String>,
    Query(filter): Query<Filter>,
) -> Response {
    reading(viewer, move |v| {
        run_page(v, &id, &filter).unwrap_or_else(|page| *page)
    })
    .await
}

/// `?base=RUN`: the run whose cell shows beside.
#[derive(scaffold::serde::Deserialize)]
#[serde(crate = "scaffold::serde")]
struct Beside {
    #[serde(default)]
    base: String,
}

/// The record of cell `name` (`{eval}::{variant}::{case}[::t{n}]`) of run `run`.
fn cell_record(
    v: &Viewer,
    run: &str,
    name: &str,
) -> Result<scaffold::_cargo_scaffold_support::eval::CellRecord, Refused> {
    let eval = name.split("::").next().unwrap_or_default();
    let mut found = (v.store.cell_records(run, eval, vec![name.to_owned()]))
        .map_err(|e| Box::new(store_problem(e)))?;
    found
        .pop()
        .flatten()
        .ok_or_else(|| not_found(format!("run {run} has no cell {name}")))
}

fn cell_page(v: &Viewer, id: &str, name: &str, base: &str) -> Result<Response, Refused> {
    let record = run_record(v, id)?;
    let cell = cell_record(v, &record.id, name)?;
    let baseline = match base {
        "" => None,
        base => Some(cell_record(v, &run_record(v, base)?.id, name)?),
    };
    let back = format!(
        "{NAV}<p>Cell of run <a href=\"/runs/{}\">{}</a>{}</p>",
        query(&record.id),
        esc(&record.id),
        match &baseline {
            Some(_) => format!(
                ", beside the same cell of run <a href=\"/runs/{}\">{}</a>",
                query(base),
                esc(base)
            ),
            None => String::new(),
        }
    );
    let head = policy_meta();
    let page = CellPage::new(&v.store, name, &cell)
        .baseline(baseline.as_ref())
        .head(&head)
        .body(&back)
        .script_src(VIEWER_SCRIPT_PATH)
        .render();
    Ok(html(StatusCode::OK, page))
}

async fn one_cell(
    State(viewer): State<Viewer>,
    Path((id, name)): Path<(String, String)>,
    Query(beside): Query<Beside>,
) -> Response {
    reading(viewer, move |v| {
        cell_page(v, &id, &name, &beside.base).unwrap_or_else(|page| *page)
    })
    .await
}

/// `?base=RUN&head=RUN[&page=N]`.
#[derive(scaffold::serde::Deserialize)]
#[serde(crate = "scaffold::serde")]
struct Pair {
    base: String,
    head: String,
    #[serde(default)]
    page: usize,
}

fn compare_page(v: &Viewer, pair: &Pair) -> Result<Response, Refused> {
    let base = run_record(v, &pair.base)?;
    let head = run_record(v, &pair.head)?;
    let (base_evals, head_evals) = (run_results(v, &base)?, run_results(v, &head)?);
    let options = CompareOptions::default();
    let mut unpaired = Vec::new();
    let evals: Vec<Compared<'_>> = (head_evals.iter())
        .filter_map(|h| match base_evals.iter().find(|b| b.eval == h.eval) {
            Some(b) => Some(Compared {
                base: b,
                head: h,
                comparison: compare(b, h, &options),
            }),
            None => {
                unpaired.push(h.eval.clone());
                None
            }
        })
        .collect();
    let page = ComparePage {
        base: &base.id,
        head: &head.id,
        evals: &evals,
        unpaired: &unpaired,
        page: pair.page,
    };
    Ok(html(StatusCode::OK, page.render()))
}

async fn compare_runs(State(viewer): State<Viewer>, Query(pair): Query<Pair>) -> Response {
    reading(viewer, move |v| {
        compare_page(v, &pair).unwrap_or_else(|page| *page)
    })
    .await
}
