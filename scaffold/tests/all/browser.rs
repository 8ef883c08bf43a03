//! Headless Chromium for the report tests: where it is (a test skips
//! without it, but not in CI), and a page driven over the DevTools protocol
//! (`--remote-debugging-pipe`: JSON messages ending in a NUL byte, read by
//! Chromium on fd 3 and written on fd 4) for what `--dump-dom` cannot do:
//! real key presses and text typed into the focused element, values read
//! back, and times measured from navigation to the first frame after load.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Where the tests find Chromium.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// How long any one DevTools answer may take before the test fails.
const ANSWER: Duration = Duration::from_secs(180);

/// Chromium, or `None` (with a message) when it is not installed outside
/// CI; in CI its absence fails the test.
pub(crate) fn chromium() -> Option<&'static Path> {
    let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    if Path::new(CHROMIUM).exists() {
        return Some(Path::new(CHROMIUM));
    }
    assert!(
        !in_ci,
        "{CHROMIUM} is missing in CI: .ci/run installs Debian's chromium"
    );
    eprintln!(
        "SKIPPED: {CHROMIUM} is not installed (apt-get install -y chromium) and this is not CI"
    );
    None
}

/// The flags every headless run of the tests has.
pub(crate) const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
];

/// A page open in headless Chromium, driven over the DevTools protocol.
pub(crate) struct Page {
    child: Child,
    to: ChildStdin,
    from: Receiver<Value>,
    session: String,
    next: u64,
    /// Events received and not yet waited for.
    events: Vec<Value>,
    dir: PathBuf,
    /// Milliseconds from navigation start to the first frame after the
    /// load event.
    pub(crate) loaded_ms: f64,
}

impl Page {
    /// Write `pages` (file name, HTML) into a temp dir, open the first in
    /// Chromium and wait for its load event and the frame after it; `None`
    /// when Chromium is missing outside CI.
    pub(crate) fn open(name: &str, pages: &[(&str, &str)]) -> Option<Page> {
        Page::open_at(name, pages, "")
    }

    /// [`Page::open`] at `#hash` (`""`: none).
    pub(crate) fn open_at(name: &str, pages: &[(&str, &str)], hash: &str) -> Option<Page> {
        let mut page = Page::blank(name)?;
        for (file, html) in pages {
            std::fs::write(page.dir.join(file), html).unwrap();
        }
        let url = format!("file://{}{hash}", page.dir.join(pages[0].0).display());
        page.go(&url);
        Some(page)
    }

    /// Open `url` (a served page) in Chromium and wait for its load event
    /// and the frame after it; `None` when Chromium is missing outside CI.
    #[allow(dead_code)]
    pub(crate) fn open_url(name: &str, url: &str) -> Option<Page> {
        let mut page = Page::blank(name)?;
        page.go(url);
        Some(page)
    }

    /// Go to `url` and wait for its load event and the frame after it;
    /// [`Page::loaded_ms`] is then that page's.
    pub(crate) fn go(&mut self, url: &str) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        self.call("Page.navigate", json!({"url": url}));
        self.wait_event("Page.loadEventFired");
        self.loaded_ms = self
            .eval(&format!(
                "{NEXT_FRAME}.then(function () {{ return performance.now(); }})"
            ))
            .as_f64()
            .unwrap();
    }

    /// Chromium on about:blank, attached, with a temp dir of its own.
    fn blank(name: &str) -> Option<Page> {
        let chromium = chromium()?;
        let dir = std::env::temp_dir().join(format!(
            "scaffold-cdp-{name}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(dir.join("profile")).unwrap();
        // fd 3 is the shell's stdin and fd 4 its stdout: our pipes.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("exec \"$0\" \"$@\" 3<&0 4>&1 </dev/null >/dev/null 2>/dev/null")
            .arg(chromium)
            .args(FLAGS)
            .arg("--remote-debugging-pipe")
            .arg("--window-size=1280,900")
            .arg(format!("--user-data-dir={}", dir.join("profile").display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("chromium runs");
        let to = child.stdin.take().unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let (tx, from) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            while reader.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                buf.pop_if(|b| *b == 0);
                if let Ok(v) = serde_json::from_slice::<Value>(&buf)
                    && tx.send(v).is_err()
                {
                    return;
                }
                buf.clear();
            }
        });
        let mut page = Page {
            child,
            to,
            from,
            session: String::new(),
            next: 0,
            events: Vec::new(),
            dir,
            loaded_ms: 0.0,
        };
        let target = page.call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = page.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        page.session = attached["sessionId"].as_str().unwrap().to_string();
        page.call("Page.enable", json!({}));
        Some(page)
    }

    /// Send `method` (to the page, once attached) and wait for its answer.
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        self.to.flush().unwrap();
        loop {
            let m = self.from.recv_timeout(ANSWER).unwrap_or_else(|e| {
                panic!("no answer to {method} from Chromium ({e})");
            });
            if m["id"] == json!(id) {
                if let Some(e) = m.get("error") {
                    panic!("{method}: {e}");
                }
                return m["result"].clone();
            }
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    /// Wait for the event `method`.
    fn wait_event(&mut self, method: &str) -> Value {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            return self.events.remove(i);
        }
        loop {
            let m = self.from.recv_timeout(ANSWER).unwrap_or_else(|e| {
                panic!("no {method} from Chromium ({e})");
            });
            if m["method"] == method {
                return m;
            }
        }
    }

    /// Run `expression`, which leaves for another page, and wait for
    /// that page's load event.
    pub(crate) fn follow(&mut self, expression: &str) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        self.eval(&format!("{expression}; true"));
        self.wait_event("Page.loadEventFired");
    }

    /// The value of `expression` (a promise's, awaited); an exception fails the test.
    pub(crate) fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expression}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Press `key` (`j`, `/`, `Enter`, `Escape`) as a user does: down,
    /// its character, up.
    pub(crate) fn press(&mut self, key: &str) {
        let (code, vk, text) = match key {
            "Enter" => ("Enter", 13, "\r"),
            "Escape" => ("Escape", 27, ""),
            "/" => ("Slash", 191, "/"),
            k if k.len() == 1 && k.as_bytes()[0].is_ascii_lowercase() => {
                let c = k.as_bytes()[0].to_ascii_uppercase();
                return self.press_key(&format!("Key{}", c as char), u64::from(c), k, k);
            }
            other => panic!("no key {other}"),
        };
        self.press_key(code, vk, key, text);
    }

    fn press_key(&mut self, code: &str, vk: u64, key: &str, text: &str) {
        let mut down =
            json!({"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk});
        if !text.is_empty() {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down);
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk}),
        );
    }

    /// Type `text` into the focused element.
    pub(crate) fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({"text": text}));
    }

    /// Wait for the next frame to be drawn (after the work queued before it).
    pub(crate) fn next_frame(&mut self) {
        self.eval(NEXT_FRAME);
    }

    /// Milliseconds from before `act` to the frame drawn after it.
    pub(crate) fn time(&mut self, act: impl FnOnce(&mut Page)) -> f64 {
        self.next_frame();
        let started = Instant::now();
        act(self);
        self.next_frame();
        started.elapsed().as_secs_f64() * 1000.0
    }

    /// The page's DOM, serialized.
    pub(crate) fn dom(&mut self) -> String {
        self.eval("document.documentElement.outerHTML")
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// A promise of the end of the frame after the work queued now.
const NEXT_FRAME: &str =
    "new Promise(function (r) { requestAnimationFrame(function () { setTimeout(r, 0); }); })";

impl Drop for Page {
    fn drop(&mut self) {
        // Ask Chromium to close (a browser command: no session), kill it
        // if it lingers.
        let _ = self
            .to
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0")
            .and_then(|()| self.to.flush());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
