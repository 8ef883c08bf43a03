//! A first suite in minutes, for real: new crates next to this workspace,
//! built with nested `cargo` runs against this workspace's `scaffold` (a
//! path dependency) in this workspace's target directory, so that only the
//! new crates compile.
//!
//! - The "Your first eval" guide (`docs/first-eval.md`): its files, taken
//!   from the guide's code blocks, recorded against the fake provider,
//!   played back, snapshots accepted, played back again.
//! - The README's example suite is `tests/evals.rs`, word for word, and no
//!   link of the README or the guides leaves the repository.
//! - Two packages sharing one `CARGO_TARGET_DIR` keep separate databases
//!   and reports, and `SCAFFOLD_RESUME` does not pick the other's run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common;

use common::{TempDir, text};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The target directory this test was built in (reused by the nested builds).
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    // <target>/debug/deps/first_suite-<hash>
    let exe = std::env::current_exe().expect("the test's path");
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .expect("the test runs from a target directory")
}

/// The `[profile…]` tables of a manifest, from the first one on, without
/// comments or blank lines.
fn profiles(manifest: &str) -> Vec<&str> {
    let at = manifest.find("[profile.").unwrap_or(manifest.len());
    manifest[at..]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// This workspace's dev profile (the same builds of the dependencies).
fn workspace_profiles() -> String {
    let root = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).expect("Cargo.toml");
    profiles(&root).join("\n")
}

/// What a new crate needs to build like this workspace besides the
/// guide's profiles: its lock file (the same dependency versions). A
/// manifest without profiles gets the workspace's.
fn like_this_workspace(dir: &Path, manifest: &str) -> String {
    let lock = std::fs::read(Path::new(ROOT).join("Cargo.lock")).expect("Cargo.lock");
    std::fs::write(dir.join("Cargo.lock"), lock).expect("write Cargo.lock");
    match profiles(manifest).is_empty() {
        true => format!("{manifest}\n{}", workspace_profiles()),
        false => manifest.to_string(),
    }
}

/// The guide gives a new crate the profiles the repository builds with, as
/// the repository has them: a library cannot set them for its dependents.
#[test]
fn the_guides_manifest_sets_the_workspaces_profiles() {
    let files = guide_files();
    let manifest = files
        .iter()
        .find(|(name, _)| name == "Cargo.toml")
        .map(|(_, content)| content.as_str())
        .expect("the guide's Cargo.toml");
    assert_eq!(profiles(manifest).join("\n"), workspace_profiles());
}

/// `cargo` in `dir` with a clean environment (none of the variables cargo
/// set for this test's package either), building in [`target_dir`].
fn cargo(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = common::clean(scaffold::_cargo_scaffold_support::nested_cargo());
    cmd.current_dir(dir)
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("INSTA_UPDATE")
        .env_remove("INSTA_FORCE_PASS");
    cmd
}

fn check(out: &Output, ok: bool, what: &str) {
    assert!(
        out.status.success() == ok,
        "{what}: expected {}\n{}",
        if ok { "success" } else { "failure" },
        text(out)
    );
}

/// Whether `line` opens or closes a code block (in a list item too).
fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// The code blocks of `text`, each as its lines.
fn code_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if is_fence(line) {
            blocks.push(lines.by_ref().take_while(|l| !is_fence(l)).collect());
        }
    }
    blocks
}

/// The lines of `text` outside its code blocks, with their numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut inside = false;
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if is_fence(line) {
            inside = !inside;
        } else if !inside {
            lines.push((n + 1, line));
        }
    }
    lines
}

/// The README and the guides of `docs/`, by path from the root.
fn doc_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.insert(0, Path::new(ROOT).join("README.md"));
    // The published crates' READMEs, shown on their own.
    for krate in ["scaffold", "scaffold-macros", "cargo-scaffold"] {
        pages.push(Path::new(ROOT).join(krate).join("README.md"));
    }
    pages
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of the headings of the page at `path`.
fn anchors(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    prose(&text)
        .into_iter()
        .filter_map(|(_, l)| l.strip_prefix('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

/// The targets of the inline links (`[text](target)`) of `line`.
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            rest.find(')').map(|end| rest[..end].trim())
        })
        .collect()
}

/// What is wrong with the link to `target` on a page in `dir`, if anything.
fn broken_link(page: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") || target.starts_with("www.") {
        return Some(format!("{target} leaves the repository"));
    }
    let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
    let dir = page.parent().expect("a page is in a directory");
    let path = if file.is_empty() {
        page.to_path_buf()
    } else {
        dir.join(file)
    };
    // ARCHITECTURE.md is written on another branch: its link may come first.
    let architecture = path == Path::new(ROOT).join("ARCHITECTURE.md");
    if !path.exists() {
        return (!architecture).then(|| format!("{target}: {} does not exist", path.display()));
    }
    let is_page = path.extension().is_some_and(|e| e == "md");
    (!fragment.is_empty() && is_page && !anchors(&path).iter().any(|a| a == fragment))
        .then(|| format!("{target}: {} has no heading #{fragment}", path.display()))
}

/// Every problem with the links of `page`: external, or to nothing.
fn link_problems(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).expect("read the page");
    let mut problems = Vec::new();
    for (n, line) in prose(&text) {
        let bare = ["http://", "https://", "<www.", " www."]
            .iter()
            .any(|p| line.contains(p));
        if bare {
            problems.push(format!("line {n}: a link out of the repository: {line}"));
        }
        for target in link_targets(line) {
            if let Some(why) = broken_link(page, target) {
                problems.push(format!("line {n}: {why}"));
            }
        }
    }
    problems
}

#[test]
fn no_link_of_the_docs_leaves_the_repository_or_points_at_nothing() {
    let pages = doc_pages();
    assert!(pages.len() >= 9, "the README and the guides: {pages:?}");
    let problems: Vec<String> = pages
        .iter()
        .flat_map(|page| {
            link_problems(page)
                .into_iter()
                .map(move |p| format!("{}: {p}", page.display()))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_link_check_finds_external_and_broken_links() {
    let tmp = TempDir::new("links");
    let page = tmp.join("page.md");
    std::fs::write(
        &page,
        "# Title\n\n[ok](#title) [out](https://example.com) <http://example.com>\n\
         [gone](missing.md) [no heading](page.md#nowhere) [page](page.md#title)\n\
         ```sh\ncurl https://example.com   # code, not a link\n```\n",
    )
    .expect("write");
    let problems = link_problems(&page);
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].contains("line 3: a link out"), "{problems:#?}");
    assert!(
        problems[1].contains("https://example.com leaves"),
        "{problems:#?}"
    );
    assert!(problems[2].contains("missing.md: "), "{problems:#?}");
    assert!(
        problems[3].contains("has no heading #nowhere"),
        "{problems:#?}"
    );
}

/// The files of the guide "Your first eval" (`docs/first-eval.md`, up to its
/// first `##` section): each code block whose first line is a comment naming
/// a file (`# Cargo.toml`, `// tests/evals.rs`).
fn guide_files() -> Vec<(String, String)> {
    let path = Path::new(ROOT).join("docs/first-eval.md");
    let guide = std::fs::read_to_string(&path).expect("docs/first-eval.md");
    assert!(
        guide.starts_with("# Your first eval\n"),
        "{}",
        path.display()
    );
    let section = &guide[..guide.find("\n## ").unwrap_or(guide.len())];
    let mut files = Vec::new();
    for block in code_blocks(section) {
        let named = block.first().and_then(|first| {
            first
                .strip_prefix("// ")
                .or_else(|| first.strip_prefix("# "))
                .filter(|name| [".rs", ".toml", ".yaml"].iter().any(|e| name.ends_with(e)))
        });
        if let Some(name) = named {
            files.push((name.to_string(), block[1..].join("\n") + "\n"));
        }
    }
    files
}

#[test]
fn the_readme_example_suite_is_tests_evals_rs() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README");
    let suite = std::fs::read_to_string(Path::new(ROOT).join("tests/evals.rs")).expect("suite");
    let shown: Vec<String> = code_blocks(&readme)
        .into_iter()
        .map(|block| block.join("\n") + "\n")
        .filter(|block| block.contains("scaffold::main!()"))
        .collect();
    assert_eq!(shown.len(), 1, "the README shows one suite: {shown:#?}");
    assert_eq!(shown[0], suite, "the README's suite is not tests/evals.rs");
}

/// The guide's crate in `dir`, its scaffold dependency pointed at this workspace.
fn write_guide_crate(dir: &Path) {
    let files = guide_files();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["Cargo.toml", "tests/evals.rs", "evals/fake.yaml"],
        "the guide's files"
    );
    for (name, content) in files {
        let content = if name == "Cargo.toml" {
            let scaffold = Path::new(ROOT).join("scaffold");
            // The guide's published form, pointed at this checkout.
            let line = format!(
                "scaffold-evals = {{ path = {:?} }}",
                scaffold.display().to_string()
            );
            assert!(content.contains("\nscaffold-evals = \"0.1\""), "{content}");
            let pointed: Vec<String> = content
                .lines()
                .map(|l| match l.starts_with("scaffold-evals = ") {
                    true => line.clone(),
                    false => l.to_string(),
                })
                .collect();
            like_this_workspace(dir, &pointed.join("\n"))
        } else {
            content
        };
        let path = dir.join(&name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }
    // What `cargo new --lib` makes.
    std::fs::create_dir_all(dir.join("src")).expect("mkdir src");
    std::fs::write(dir.join("src/lib.rs"), "").expect("write src/lib.rs");
}

/// One shell command of the guide: `VAR=value … cargo args…`.
struct Step {
    line: String,
    env: Vec<(String, String)>,
    args: Vec<String>,
}

/// The guide's commands that record, play back and accept: the shell
/// block (of its first section) that starts by recording.
fn guide_steps() -> Vec<Step> {
    let guide = std::fs::read_to_string(Path::new(ROOT).join("docs/first-eval.md"))
        .expect("docs/first-eval.md");
    let section = &guide[..guide.find("\n## ").unwrap_or(guide.len())];
    let block = code_blocks(section)
        .into_iter()
        .find(|b| {
            b.first()
                .is_some_and(|l| l.starts_with("SCAFFOLD_MODE=record"))
        })
        .expect("the guide's block of commands");
    block
        .iter()
        .map(|line| {
            let command = line.split(" #").next().unwrap_or(line).trim();
            let mut words = command.split_whitespace().peekable();
            let mut env = Vec::new();
            while let Some((k, v)) = words.peek().and_then(|w| w.split_once('=')) {
                env.push((k.to_string(), v.to_string()));
                words.next();
            }
            assert_eq!(words.next(), Some("cargo"), "{line}");
            Step {
                line: line.to_string(),
                env,
                args: words.map(str::to_string).collect(),
            }
        })
        .collect()
}

impl Step {
    /// Run in `dir`, with `extra` variables (the test's own), timed.
    fn run(&self, dir: &Path, extra: &[(&str, PathBuf)]) -> (Output, std::time::Duration) {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let mut cmd = cargo(dir, &args);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let started = std::time::Instant::now();
        let out = cmd.output().expect("cargo runs");
        (out, started.elapsed())
    }
}

/// The crates a cargo run compiled, from its `Compiling name vX` lines.
fn compiled(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Compiling "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The reply recorded for Ada, and the prompt it answered.
fn adas_recording(dir: &Path) -> (Value, Value) {
    let recordings: Vec<String> = std::fs::read_dir(dir.join("evals/recordings"))
        .expect("recordings written")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert_eq!(recordings.len(), 2, "{recordings:?}");
    let ada = recordings
        .iter()
        .find(|r| r.contains("__ada__"))
        .expect("ada's recording");
    let cassette: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("evals/recordings").join(ada)).expect("read"),
    )
    .expect("JSON cassette");
    let answer = cassette["response"]["body"]["choices"][0]["message"]["content"].clone();
    let prompt = cassette["request"]["body"]["messages"][1]["content"].clone();
    (answer, prompt)
}

/// The guide, followed as written: its files, its commands (record from
/// `evals/fake.yaml`, play back, accept the snapshots, play back), then the
/// loop a user repeats: edit a prompt, re-record, play back. Recording and
/// playback are one test binary: switching between them builds nothing,
/// and the prompt edit rebuilds the suite's crate only. The re-record and
/// playback times are printed (a figure, not a bound a slow machine fails).
#[test]
fn the_first_eval_guide_records_plays_back_and_accepts_snapshots() {
    let tmp = TempDir::new("first-eval");
    let dir = tmp.join("greeter-evals");
    std::fs::create_dir_all(&dir).expect("mkdir");
    write_guide_crate(&dir);
    // Not part of the guide: keep the database and reports out of the
    // shared target directory.
    let quiet = [
        ("SCAFFOLD_DATABASE", PathBuf::from(":memory:")),
        ("SCAFFOLD_OUTPUT", tmp.join("reports")),
    ];
    let steps = guide_steps();
    let kinds: Vec<&str> = steps.iter().map(|s| s.line.as_str()).collect();
    assert_eq!(
        steps.len(),
        4,
        "record, play back, accept, play back: {kinds:#?}"
    );
    let [record, first_playback, accept, playback] = &steps[..] else {
        unreachable!()
    };
    assert!(
        record
            .env
            .iter()
            .any(|(k, v)| k == "SCAFFOLD_FAKE" && v == "evals/fake.yaml")
    );

    let (out, _) = record.run(&dir, &quiet);
    check(&out, true, &record.line);
    assert!(
        text(&out)
            .contains("Fake provider: 2 rule(s) of evals/fake.yaml answer every provider call"),
        "{}",
        text(&out)
    );
    let (answer, _) = adas_recording(&dir);
    assert_eq!(answer, "Hello, Ada! Welcome.");

    let (out, _) = first_playback.run(&dir, &quiet);
    check(&out, false, &first_playback.line);
    assert!(
        compiled(&out).is_empty(),
        "playback rebuilt: {:?}",
        compiled(&out)
    );
    assert!(!dir.join("snapshots/greeter/ada/gpt-4o-mini.snap").exists());

    let (out, _) = accept.run(&dir, &quiet);
    check(&out, true, &accept.line);
    let snapshot = std::fs::read_to_string(dir.join("snapshots/greeter/ada/gpt-4o-mini.snap"))
        .expect("the snapshot is written");
    assert!(snapshot.contains("Hello, Ada! Welcome."), "{snapshot}");

    let (out, _) = playback.run(&dir, &quiet);
    check(&out, true, &playback.line);
    let all = text(&out);
    assert!(all.contains("Eval: greeter"), "{all}");
    assert!(all.contains("2/2 (100%)"), "{all}");

    // The loop: a prompt edit, re-record, play back (accepting the new
    // snapshots, which hold the prompt).
    let suite = dir.join("tests/evals.rs");
    let source = std::fs::read_to_string(&suite).expect("read the suite");
    let edited = source.replace(
        r#"format!("Greet {}.", s.name)"#,
        r#"format!("Say hello to {}.", s.name)"#,
    );
    assert_ne!(edited, source, "the guide's prompt");
    std::fs::write(&suite, edited).expect("edit the prompt");
    let (out, rerecorded) = record.run(&dir, &quiet);
    check(&out, true, "re-recording after the prompt edit");
    assert_eq!(
        compiled(&out),
        ["greeter-evals"],
        "what the re-record built"
    );
    let (_, prompt) = adas_recording(&dir);
    assert_eq!(prompt, "Say hello to Ada.");
    let (out, played) = accept.run(&dir, &quiet);
    check(&out, true, "playing the new recordings back");
    assert!(
        compiled(&out).is_empty(),
        "playback rebuilt: {:?}",
        compiled(&out)
    );
    the_fakes_failures_are_named(&dir, &tmp, &quiet);
    eprintln!(
        "after a prompt edit: re-record {:.1} s (the suite's rebuild included) + playback {:.1} s = {:.1} s",
        rerecorded.as_secs_f64(),
        played.as_secs_f64(),
        (rerecorded + played).as_secs_f64()
    );
}

/// The guide's crate's suite, run directly (built already) with `env`.
fn suite_run(dir: &Path, quiet: &[(&str, PathBuf)], env: &[(&str, &str)]) -> String {
    let (_, exe) = evals_executables(dir, &["test", "--test", "evals"], "the guide's suite")
        .pop()
        .expect("the guide's suite executable");
    let mut cmd = common::clean(Command::new(exe));
    cmd.current_dir(dir);
    for (k, v) in quiet {
        cmd.env(k, v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the suite runs");
    assert!(!out.status.success(), "expected a failure:\n{}", text(&out));
    text(&out)
}

/// What goes wrong with `SCAFFOLD_FAKE` is said: a request no rule
/// answers (its model and prompt), a mistake in the file (its line and
/// column), a fake in playback (which it cannot answer).
fn the_fakes_failures_are_named(dir: &Path, tmp: &TempDir, quiet: &[(&str, PathBuf)]) {
    let only_ada = tmp.join("only-ada.yaml");
    std::fs::write(
        &only_ada,
        "rules:\n  - when: { prompt_contains: Ada }\n    then: { text: Hi Ada }\n",
    )
    .expect("write");
    let only_ada = only_ada.display().to_string();
    let live = [
        ("SCAFFOLD_MODE", "live"),
        ("SCAFFOLD_FAKE", only_ada.as_str()),
    ];
    let all = suite_run(dir, quiet, &live);
    assert!(
        all.contains("no rule of the fake provider matches this request"),
        "{all}"
    );
    assert!(
        all.contains("gpt-4o-mini") && all.contains("Say hello to Grace."),
        "{all}"
    );
    assert!(all.contains("1 passed, 1 failed"), "{all}");

    let bad = tmp.join("bad.yaml");
    std::fs::write(
        &bad,
        "rules:\n  - when: { prompt_contain: Ada }\n    then: { txt: Hi }\n",
    )
    .expect("write");
    let bad = bad.display().to_string();
    let all = suite_run(
        dir,
        quiet,
        &[("SCAFFOLD_MODE", "record"), ("SCAFFOLD_FAKE", bad.as_str())],
    );
    assert!(
        all.contains(&format!(
            "{bad}:2:13: error: unknown field `prompt_contain` in `when`"
        )),
        "{all}"
    );
    assert!(all.contains("did you mean `prompt_contains`?"), "{all}");
    assert!(
        all.contains(&format!("{bad}:3:13: error: unknown field `txt` in `then`")),
        "{all}"
    );
    assert!(!all.contains("test result"), "no cell ran:\n{all}");

    let all = suite_run(dir, quiet, &[("SCAFFOLD_FAKE", "evals/fake.yaml")]);
    assert!(
        all.contains("SCAFFOLD_FAKE is set, but SCAFFOLD_MODE is `playback`"),
        "{all}"
    );
}

/// A suite of three cells answered by a scripted model; the cell whose case
/// id is `$ABORT_ON` aborts the process (an interrupted run).
const SHARED_SUITE: &str = r#"
use scaffold::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct S {
    reply: String,
}

#[scaffold::eval(name = "shared")]
fn shared() -> Eval<S> {
    Eval::new()
}

#[scaffold::variant(eval = "shared", name = "scripted")]
fn scripted() -> Workflow<S> {
    let agent = Agent::<S>::new("a")
        .provider(ScriptedProvider::responder("scripted", |_| ScriptedReply::text("ok")))
        .prompt(|_| "go".into())
        .update(|text, s| s.reply = text);
    Workflow::new("w", S::default())
        .start(|input: &Value, _| {
            if std::env::var("ABORT_ON").ok().as_deref() == input["id"].as_str() {
                std::process::abort();
            }
        })
        .phase("p", Phase::run(agent).next("done"))
        .terminal("done")
        .output(|s| Value::String(s.reply.clone()))
}

#[scaffold::dataset(eval = "shared")]
fn cases() -> DatasetBuilder {
    Dataset::builder("cells").cases(["c1", "c2", "c3"].map(|id| {
        Case::builder(id)
            .input(json!({"id": id}))
            .assert(json!({"type": "output.contains", "text": "ok"}))
    }))
}

scaffold::main!();
"#;

/// A workspace of two packages, `alpha` and `beta`, with the same suite;
/// their test executables.
fn two_packages(dir: &Path) -> Vec<(String, PathBuf)> {
    let workspace = like_this_workspace(dir, "[workspace]\nmembers = [\"alpha\", \"beta\"]\n");
    std::fs::write(dir.join("Cargo.toml"), workspace).expect("write");
    let scaffold = Path::new(ROOT).join("scaffold").display().to_string();
    for name in ["alpha", "beta"] {
        let package = dir.join(name);
        std::fs::create_dir_all(package.join("tests")).expect("mkdir");
        std::fs::create_dir_all(package.join("src")).expect("mkdir");
        let manifest = format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [dependencies]\nscaffold-evals = {{ path = {scaffold:?} }}\n\
             serde = {{ version = \"1\", features = [\"derive\"] }}\nserde_json = \"1\"\n\n\
             [[test]]\nname = \"evals\"\nharness = false\n"
        );
        std::fs::write(package.join("Cargo.toml"), manifest).expect("write");
        std::fs::write(package.join("src/lib.rs"), "").expect("write");
        std::fs::write(package.join("tests/evals.rs"), SHARED_SUITE).expect("write");
    }
    let args = ["test", "--workspace", "--test", "evals"];
    evals_executables(dir, &args, "building the two packages")
        .into_iter()
        .filter_map(|(package, exe)| {
            let name = ["alpha", "beta"]
                .into_iter()
                .find(|n| package.contains(n))?;
            Some((name.to_string(), exe))
        })
        .collect()
}

/// Build the `evals` targets `cargo {args}` would run in `dir` (`what`
/// names the build in a failure): each one's package id and executable.
fn evals_executables(dir: &Path, args: &[&str], what: &str) -> Vec<(String, PathBuf)> {
    let mut args = args.to_vec();
    args.extend(["--no-run", "--message-format=json"]);
    let out = cargo(dir, &args).output().expect("cargo runs");
    check(&out, true, what);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "evals")
        .filter_map(|m| {
            let package = m["package_id"].as_str()?.to_string();
            Some((package, PathBuf::from(m["executable"].as_str()?)))
        })
        .collect()
}

/// Run `package`'s suite as `cargo test` would, with `shared` as CARGO_TARGET_DIR.
fn run_suite(exe: &Path, package: &Path, shared: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = common::clean(Command::new(exe));
    cmd.current_dir(package)
        .env("CARGO_TARGET_DIR", shared)
        .env("SCAFFOLD_SNAPSHOTS", "off")
        .env_remove("ABORT_ON")
        .args(["--test-threads", "1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the suite runs")
}

/// The directories under `<shared>/scaffold/` with a database.
fn databases(shared: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(shared.join("scaffold"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().join("scaffold.db").is_file())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn two_packages_sharing_a_target_dir_keep_their_own_runs() {
    let tmp = TempDir::new("shared-target");
    let exes = two_packages(tmp.path());
    let exe = |name: &str| {
        exes.iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.clone())
            .unwrap_or_else(|| panic!("{name}'s suite was built: {exes:?}"))
    };
    let shared = tmp.join("shared-target");
    let (alpha, beta) = (tmp.join("alpha"), tmp.join("beta"));

    // alpha is interrupted at its second cell: an unfinished run.
    let out = run_suite(&exe("alpha"), &alpha, &shared, &[("ABORT_ON", "c2")]);
    check(&out, false, "alpha, interrupted");

    // beta resumes: there is nothing of its own to resume.
    let out = run_suite(&exe("beta"), &beta, &shared, &[("SCAFFOLD_RESUME", "1")]);
    let all = text(&out);
    assert!(
        !all.contains("resuming run"),
        "beta resumed alpha's run:\n{all}"
    );
    check(&out, false, "beta, resuming");
    assert!(
        all.contains("there is no unfinished eval run to resume"),
        "{all}"
    );
    assert!(!shared.join("scaffold").join("scaffold.db").exists());

    // beta runs whole, into its own database and reports.
    let out = run_suite(&exe("beta"), &beta, &shared, &[]);
    check(&out, true, "beta");
    let dbs = databases(&shared);
    assert_eq!(dbs.len(), 2, "{dbs:?}");
    assert!(dbs[1].starts_with("beta-"), "{dbs:?}");
    let beta_results = shared.join("scaffold").join(&dbs[1]).join("shared.json");
    assert!(beta_results.is_file(), "{}", beta_results.display());
    assert!(!shared.join("scaffold").join("shared.json").exists());

    // alpha resumes its own run: one cell was finished before the abort.
    let out = run_suite(&exe("alpha"), &alpha, &shared, &[("SCAFFOLD_RESUME", "1")]);
    check(&out, true, "alpha, resuming");
    let all = text(&out);
    assert!(all.contains("resuming run"), "{all}");
    assert!(all.contains("1 of 3 cells already finished"), "{all}");
    let alpha_results = shared.join("scaffold").join(&dbs[0]).join("shared.json");
    assert!(alpha_results.is_file(), "{}", alpha_results.display());
}
