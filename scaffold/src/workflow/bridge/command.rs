//! Agents in any language: a program run once per case, its model calls
//! through the bridge.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::AgentCx;
use crate::provider::recorder::RecorderMode;

/// How much of stderr a run keeps: its end, where the error usually is.
const STDERR_KEPT: usize = 4 * 1024;

/// A program run as a bridged agent, once per cell: Python, TypeScript,
/// a shell script, another Rust binary.
///
/// The program gets:
/// - the case's input as JSON on stdin (or, where an argument holds
///   `{input}`, there: a string input as it is, anything else as JSON);
/// - `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL` (the bridge's base URLs of
///   the agent named `agent`), `OPENAI_API_KEY` and `ANTHROPIC_API_KEY`
///   (placeholders in playback), `SCAFFOLD_BRIDGE_URL` (the root: a
///   program with several agents uses `{root}/{name}/openai/v1`),
///   `SCAFFOLD_VARIANT` (the [`Variant`](super::Variant) as JSON),
///   `SCAFFOLD_MODEL` and `SCAFFOLD_PROMPT` (when the variant sets them)
///   and `SCAFFOLD_MODE`;
/// - in playback, `HTTPS_PROXY` and `HTTP_PROXY` pointing at the bridge,
///   which refuses them: a call that does not use the base URLs fails the
///   cell, naming the host, and never leaves the machine.
///
/// Its stdout is the output (without its last line break); with [`AgentCommand::json_output`]
/// a JSON object `{"output": …, "state": {…}, "signals": [{"name", "payload"}]}`.
/// The end of its stderr is kept in a `process:exit` signal. A non-zero
/// exit fails the cell with the end of stderr; past its time limit the
/// whole process group is killed.
///
/// ```
/// use scaffold::prelude::*;
/// let eval = Eval::<AgentState>::new()
///     .command(AgentCommand::new("python3").arg("agents/weather.py"))
///     .variant("gpt-4o-mini", Variant::new().model("gpt-4o-mini"));
/// # let _ = eval;
/// ```
#[derive(Debug, Clone)]
pub struct AgentCommand {
    program: String,
    args: Vec<String>,
    envs: Vec<(String, String)>,
    dir: Option<PathBuf>,
    json: bool,
    timeout: Duration,
    max_output: usize,
}

impl AgentCommand {
    /// Run `program` (found on `PATH` unless it is a path).
    pub fn new(program: impl Into<String>) -> AgentCommand {
        AgentCommand {
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            dir: None,
            json: false,
            timeout: Duration::from_secs(600),
            max_output: 1024 * 1024,
        }
    }

    /// Add an argument; `{input}` in it becomes the case's input.
    pub fn arg(mut self, arg: impl Into<String>) -> AgentCommand {
        self.args.push(arg.into());
        self
    }

    /// Add arguments.
    pub fn args<I, T>(mut self, args: I) -> AgentCommand
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Set an environment variable (after scaffold's own: it may replace
    /// them).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> AgentCommand {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Run in `dir` (default: the suite's package).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> AgentCommand {
        self.dir = Some(dir.into());
        self
    }

    /// Read stdout as a JSON object with `output`, and optionally `state`
    /// (an object) and `signals` (`[{"name", "payload", "agent"?}]`).
    pub fn json_output(mut self) -> AgentCommand {
        self.json = true;
        self
    }

    /// Kill the program (and every process it started) after `limit`
    /// (default 10 minutes; a cell's own time limit also applies).
    pub fn timeout(mut self, limit: Duration) -> AgentCommand {
        self.timeout = limit;
        self
    }

    /// Keep at most `bytes` of stdout (default 1 MiB); the rest is read
    /// and dropped, and the output says so.
    pub fn max_output(mut self, bytes: usize) -> AgentCommand {
        self.max_output = bytes;
        self
    }

    /// Run the program for one cell.
    pub(crate) async fn run(self, cx: AgentCx) -> Result<Value, String> {
        let mut child = self.spawn(&cx)?;
        let group = ProcessGroup(child.id());
        let input = self.stdin_input(&cx);
        let mut stdin = child.stdin.take();
        let feed = async move {
            if let (Some(stdin), Some(input)) = (stdin.as_mut(), input) {
                // A program that does not read its input is not an error.
                let _ = stdin.write_all(input.as_bytes()).await;
            }
            drop(stdin);
        };
        // Read both pipes as the program runs (a full pipe would stop it).
        let stdout = tokio::spawn(read_capped(child.stdout.take(), self.max_output, false));
        let stderr = tokio::spawn(read_capped(child.stderr.take(), STDERR_KEPT, true));
        let waited = async {
            let (_, status) = tokio::join!(feed, child.wait());
            status
        };
        let Ok(status) = tokio::time::timeout(self.timeout, waited).await else {
            drop(group);
            stdout.abort();
            stderr.abort();
            return Err(format!(
                "`{}` did not finish within {} s: it was killed, with every process it started",
                self.program,
                self.timeout.as_secs_f64()
            ));
        };
        // The program is done: what it left running goes with it, and
        // closes the pipes it kept open.
        drop(group);
        let out = drained(stdout).await;
        let err = drained(stderr).await;
        let status = status.map_err(|e| format!("could not wait for `{}`: {e}", self.program))?;
        let stderr_tail = err.text();
        cx.emit(
            "process:exit",
            json!({"status": status.code(), "stderr": stderr_tail}),
        );
        if !status.success() {
            let how = match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_string(),
            };
            return Err(format!(
                "`{}` {how}; the end of its stderr:\n{}",
                self.program,
                indent(&stderr_tail)
            ));
        }
        self.output(&cx, out)
    }

    fn spawn(&self, cx: &AgentCx) -> Result<tokio::process::Child, String> {
        let input_text = cx.input_text();
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(self.args.iter().map(|a| a.replace("{input}", &input_text)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        for (key, value) in scaffold_env(cx) {
            command.env(key, value);
        }
        for (key, value) in &self.envs {
            command.env(key, value);
        }
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        command
            .spawn()
            .map_err(|e| format!("could not start `{}`: {e}", self.program))
    }

    /// What goes to stdin: the input as JSON, unless an argument took it.
    fn stdin_input(&self, cx: &AgentCx) -> Option<String> {
        (!self.args.iter().any(|a| a.contains("{input}"))).then(|| format!("{}\n", cx.input()))
    }

    /// The output of what the program printed.
    fn output(&self, cx: &AgentCx, out: Captured) -> Result<Value, String> {
        let text = out.text();
        let cut = out.note("stdout", self.max_output);
        if !self.json {
            let mut output = text.trim_end_matches(['\n', '\r']).to_string();
            if let Some(cut) = cut {
                output.push_str(&format!("\n{cut}"));
            }
            return Ok(Value::String(output));
        }
        let parsed: Value = serde_json::from_str(&text).map_err(|e| {
            let start: String = text.chars().take(200).collect();
            format!(
                "`{}` was to print a JSON object (json_output), but its stdout is not JSON ({e}){}; it begins: {start:?}",
                self.program,
                cut.map(|c| format!(" ({c})")).unwrap_or_default()
            )
        })?;
        let Value::Object(mut object) = parsed else {
            return Err(format!(
                "`{}` was to print a JSON object (json_output) with `output`, and printed {}",
                self.program,
                kind(&parsed)
            ));
        };
        for signal in object
            .remove("signals")
            .and_then(|s| s.as_array().cloned())
            .unwrap_or_default()
        {
            let name = signal["name"].as_str().unwrap_or("process:signal");
            let payload = signal.get("payload").cloned().unwrap_or(Value::Null);
            match signal["agent"].as_str() {
                Some(agent) => cx.emit_as(agent, name, payload),
                None => cx.emit(name, payload),
            }
        }
        if let Some(state) = object.remove("state") {
            cx.state(&state);
        }
        Ok(object.remove("output").unwrap_or(Value::Null))
    }
}

/// The environment scaffold gives a program.
fn scaffold_env(cx: &AgentCx) -> Vec<(String, String)> {
    let variant = cx.variant();
    let mut env = vec![
        ("OPENAI_BASE_URL", cx.openai_base_url("agent")),
        ("OPENAI_API_KEY", cx.openai_api_key()),
        ("ANTHROPIC_BASE_URL", cx.anthropic_base_url("agent")),
        ("ANTHROPIC_API_KEY", cx.anthropic_api_key()),
        ("SCAFFOLD_BRIDGE_URL", cx.bridge_url().to_string()),
        (
            "SCAFFOLD_VARIANT",
            serde_json::to_string(variant).unwrap_or_default(),
        ),
        ("SCAFFOLD_MODE", cx.mode().to_string()),
    ];
    if let Some(model) = &variant.model {
        env.push(("SCAFFOLD_MODEL", model.clone()));
    }
    if let Some(prompt) = &variant.prompt {
        env.push(("SCAFFOLD_PROMPT", prompt.clone()));
    }
    // The bridge is never reached through a proxy, whatever the
    // machine's: its host joins the variables' own list.
    let mut no_proxy = std::env::var("NO_PROXY").unwrap_or_default();
    if !no_proxy.is_empty() {
        no_proxy.push(',');
    }
    no_proxy.push_str("127.0.0.1,localhost");
    if let Some(proxy_url) = cx
        .proxy_url()
        .filter(|_| cx.mode() == RecorderMode::Playback)
    {
        for proxy in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            env.push((proxy, proxy_url.to_string()));
        }
        // Node's fetch (the TypeScript SDKs) reads the proxy variables
        // only when told to.
        env.push(("NODE_USE_ENV_PROXY", "1".to_string()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name, no_proxy.clone()));
    }
    env.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Kills a process group when dropped (the program and all it started).
struct ProcessGroup(Option<u32>);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0.and_then(|pid| i32::try_from(pid).ok()) {
            // SAFETY: kill(2) with a negative pid signals the process group
            // `pid` made with process_group(0); it touches no memory of
            // ours, and a group already gone is ESRCH, which is ignored.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

/// What was read of a stream: the bytes kept and how many came in all.
#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    total: usize,
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.kept).into_owned()
    }

    /// A note when more came than was kept.
    fn note(&self, name: &str, cap: usize) -> Option<String> {
        (self.total > self.kept.len()).then(|| {
            format!(
                "[{name} cut at {cap} bytes: the program printed {} bytes]",
                self.total
            )
        })
    }
}

/// What a pipe's reader read, given a moment to finish once the program's
/// processes are gone.
async fn drained(reader: tokio::task::JoinHandle<Captured>) -> Captured {
    match tokio::time::timeout(Duration::from_secs(1), reader).await {
        Ok(Ok(captured)) => captured,
        _ => Captured::default(),
    }
}

/// Read `stream` to its end, keeping its first `cap` bytes (`tail`: its
/// last), so a program that floods it neither blocks nor fills memory.
async fn read_capped(stream: Option<impl AsyncRead + Unpin>, cap: usize, tail: bool) -> Captured {
    let mut captured = Captured {
        kept: Vec::new(),
        total: 0,
    };
    let Some(mut stream) = stream else {
        return captured;
    };
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        captured.total += n;
        if tail {
            captured.kept.extend_from_slice(&buf[..n]);
            let over = captured.kept.len().saturating_sub(cap);
            captured.kept.drain(..over);
        } else {
            let room = cap.saturating_sub(captured.kept.len()).min(n);
            captured.kept.extend_from_slice(&buf[..room]);
        }
    }
    captured
}

/// What a JSON value is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn indent(text: &str) -> String {
    let trimmed = text.trim_end();
    if trimmed.is_empty() {
        return "  (nothing)".to_string();
    }
    trimmed
        .lines()
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
