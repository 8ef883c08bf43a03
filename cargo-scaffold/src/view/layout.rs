//! What every page of the viewer shares: escaping, the style, the frame
//! with its navigation and the content security policy.

use std::fmt::Write as _;

use axum::http::StatusCode;

/// `s` as HTML text or an attribute value (the reports' escaping).
pub use scaffold::_cargo_scaffold_support::report::escape_html as esc;

/// What a page may load: its own style, the viewer's script from
/// `/assets/`, nothing else (no inline script, no other origin).
macro_rules! page_policy {
    () => {
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; base-uri 'none'; \
         form-action 'self'"
    };
}

/// The policy as each page's head states it.
pub const CONTENT_SECURITY_POLICY: &str = page_policy!();

/// The policy as the server sends it: no other site may frame a page
/// either (which a policy in the page cannot say).
pub const HEADER_POLICY: &str = concat!(page_policy!(), "; frame-ancestors 'none'");

/// Where the transcript viewer's script is served.
pub const VIEWER_SCRIPT_PATH: &str = "/assets/viewer.js";

/// Seconds between two loads of the page of a run still going: its cells
/// show as they finish, a nextest run's processes' too.
pub const LIVE_REFRESH_SECONDS: u32 = 2;

/// `s` for a query string value or a path segment.
pub use scaffold::_cargo_scaffold_support::report::escape_url_component as query;

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.3em .5em;\
vertical-align:top;text-align:left}th{background:#f4f4f4}.pass{color:#16692c}.fail{color:#b3261e}\
.out{white-space:pre-wrap;max-width:40em;font:12px ui-monospace,monospace}nav a{margin-right:1em}\
form{margin:.5em 0}.num{text-align:right;font-variant-numeric:tabular-nums}";

/// The head's policy, as a meta element (the server also sends it as a header).
pub fn policy_meta() -> String {
    format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">")
}

/// The navigation at the top of every page.
pub const NAV: &str = "<nav><a href=\"/\">Runs</a></nav>";

/// A whole page: its title (text) and body (HTML).
pub fn page(title: &str, body: &str) -> String {
    page_with(title, "", body)
}

/// A whole page with `head` (HTML) added to its head.
pub fn page_with(title: &str, head: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">{}\
         {head}<title>{}</title><style>{STYLE}</style></head><body>\
         {NAV}<h1>{}</h1>{body}</body></html>",
        policy_meta(),
        esc(title),
        esc(title)
    )
}

/// What a request gets instead of its page: a status and why.
#[derive(Debug)]
pub struct Refusal {
    /// The status.
    pub status: StatusCode,
    /// Why, in words (text).
    pub why: String,
}

impl Refusal {
    /// Nothing there: 404.
    pub fn not_found(why: impl std::fmt::Display) -> Refusal {
        Refusal {
            status: StatusCode::NOT_FOUND,
            why: why.to_string(),
        }
    }

    /// The request cannot be read: 400.
    pub fn bad_request(why: impl std::fmt::Display) -> Refusal {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            why: why.to_string(),
        }
    }

    /// The store could not be read: 500.
    pub fn store(e: impl std::fmt::Display) -> Refusal {
        Refusal {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            why: format!("cannot read the store: {e}"),
        }
    }

    /// The page saying so.
    pub fn page(&self) -> String {
        let title = self.status.canonical_reason().unwrap_or("Error");
        page(title, &format!("<p>{}</p>", esc(&self.why)))
    }
}

/// The result of building a page.
pub type Built = Result<String, Refusal>;

/// The first `n` characters of `s`, `…` last when cut.
pub use crate::text::cut;

/// The links to pages `0..pages` of a list, `href(page)` each, the
/// current one in bold; nothing for one page.
pub fn pager(current: usize, pages: usize, href: impl Fn(usize) -> String) -> String {
    if pages <= 1 {
        return String::new();
    }
    let mut out = String::from("<p class=\"pager\">Page ");
    let mut last = None;
    for p in 0..pages {
        // The first, the last and those near the current one.
        if p != 0 && p + 1 != pages && p.abs_diff(current) > 3 {
            continue;
        }
        if last.is_some_and(|l: usize| p > l + 1) {
            out.push_str("… ");
        }
        last = Some(p);
        if p == current {
            let _ = write!(out, "<b>{}</b> ", p + 1);
        } else {
            let _ = write!(out, "<a href=\"{}\">{}</a> ", esc(&href(p)), p + 1);
        }
    }
    out.push_str("</p>");
    out
}
