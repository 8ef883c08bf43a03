//! What the root package's tests share: commands with a clean environment,
//! their output as text, temporary directories.
#![allow(dead_code)] // Each test binary uses its own part.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use scaffold::_cargo_scaffold_support::nested_cargo;

/// A command whose environment holds none of the caller's `SCAFFOLD_*` or
/// nextest variables, with snapshots never written and no progress bar.
pub fn clean(mut cmd: Command) -> Command {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("SCAFFOLD_") || key.starts_with("NEXTEST") {
            cmd.env_remove(key.as_ref());
        }
    }
    cmd.env("CI", "true")
        .env("INSTA_UPDATE", "no")
        .env("SCAFFOLD_PROGRESS", "0");
    cmd
}

/// `cargo {args}` in the root package, with a [`clean`] environment and
/// none of the variables cargo set for this test's package.
pub fn cargo(args: &[&str]) -> Command {
    let mut cmd = clean(nested_cargo());
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args(args);
    cmd
}

/// Build with `cargo {args} --message-format=json` in the root package
/// (a nested cargo in this target directory) and return the executable of
/// the target named `target`.
pub fn built_executable(args: &[&str], target: &str) -> std::path::PathBuf {
    let out = nested_cargo()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .arg("--message-format=json")
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "building {target} failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == target)
        .find_map(|m| m["executable"].as_str().map(std::path::PathBuf::from))
        .unwrap_or_else(|| panic!("cargo names {target}'s executable"))
}

/// Standard output then standard error, as text.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Whether `cargo nextest` can run here for `test`. Without it, a test
/// fails on CI (where it must run) and elsewhere says loudly that it skips.
pub fn nextest_available(test: &str) -> bool {
    let installed = nested_cargo()
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "cargo-nextest is not installed, and CI is set: install it (cargo install cargo-nextest --locked)"
        );
        eprintln!(
            "\n!!!! SKIPPED {test}: cargo-nextest is not installed \
             (cargo install cargo-nextest --locked) !!!!\n"
        );
    }
    installed
}

/// A directory under the system temp dir, removed when dropped.
pub struct TempDir(tempfile::TempDir);

impl TempDir {
    /// A fresh directory whose name starts with `scaffold-{name}-`.
    pub fn new(name: &str) -> TempDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("scaffold-{name}-"))
            .tempdir()
            .expect("a temporary directory");
        TempDir(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// `name` inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

/// Every file of `dir` (not recursive) with its bytes, sorted by name.
pub fn snapshot_dir(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("directory readable")
        .map(|entry| {
            let path = entry.expect("entry").path();
            let bytes = std::fs::read(&path).expect("file readable");
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}
