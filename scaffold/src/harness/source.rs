//! The commit and branch a run runs on, recorded with it: the CI's own
//! variables first (a CI checkout is often a detached commit), else the
//! repository's `.git`, read as files (no `git` process: under nextest
//! every cell's process begins the run).

use std::path::{Path, PathBuf};

use crate::store::RunSource;

/// CI variables: the commit's, then the branches' (the first set wins).
const CI: &[(&str, &[&str])] = &[
    // GitHub Actions: a pull request's branch is GITHUB_HEAD_REF.
    ("GITHUB_SHA", &["GITHUB_HEAD_REF", "GITHUB_REF_NAME"]),
    ("CI_COMMIT_SHA", &["CI_COMMIT_REF_NAME"]),
    ("BUILDKITE_COMMIT", &["BUILDKITE_BRANCH"]),
    ("CIRCLE_SHA1", &["CIRCLE_BRANCH"]),
];

/// The source of a run in `dir`, from the variables `var` reads, else from
/// the repository `dir` is in; `None` when neither says.
pub(crate) fn detect(dir: &Path, var: impl Fn(&str) -> Option<String>) -> Option<RunSource> {
    let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    for (commit, branches) in CI {
        if let Some(commit) = set(commit) {
            let branch = branches.iter().find_map(|b| set(b));
            return Some(RunSource { commit, branch });
        }
    }
    from_git(dir)
}

/// The `.git` directory of the repository holding `dir` (following a
/// worktree's `gitdir:` file), and the directory of its shared refs.
fn git_dirs(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot_git = dir
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|p| p.exists())?;
    let git_dir = if dot_git.is_file() {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
        dot_git.parent()?.join(target)
    } else {
        dot_git
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(rel) => git_dir.join(rel.trim()),
        Err(_) => git_dir.clone(),
    };
    Some((git_dir, common))
}

/// HEAD's commit and branch, from the files of the repository holding `dir`.
fn from_git(dir: &Path) -> Option<RunSource> {
    let (git_dir, common) = git_dirs(dir)?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref:").map(str::trim) else {
        return is_hash(head).then(|| RunSource {
            commit: head.to_string(),
            branch: None,
        });
    };
    let commit = resolve(&common, reference)?;
    Some(RunSource {
        commit,
        branch: Some(
            reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_string(),
        ),
    })
}

/// The commit `reference` names: its loose file, else its line of
/// `packed-refs`.
fn resolve(common: &Path, reference: &str) -> Option<String> {
    if let Ok(loose) = std::fs::read_to_string(common.join(reference)) {
        let loose = loose.trim();
        return is_hash(loose).then(|| loose.to_string());
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (hash, name) = line.split_once(' ')?;
        (name.trim() == reference && is_hash(hash)).then(|| hash.to_string())
    })
}

/// A SHA-1 or SHA-256 commit hash in hex.
fn is_hash(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef01234567";
    const B: &str = "89abcdef0123456789abcdef0123456789abcdef";

    fn none(_: &str) -> Option<String> {
        None
    }

    fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("crate/src")).unwrap();
        dir
    }

    #[test]
    fn a_branch_resolves_loose_then_packed_and_a_detached_head_is_its_commit() {
        let loose = repo(&[
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".git/refs/heads/main", &format!("{A}\n")),
        ]);
        let found = detect(&loose.path().join("crate/src"), none).unwrap();
        assert_eq!(
            (found.commit.as_str(), found.branch.as_deref()),
            (A, Some("main"))
        );
        assert_eq!(found.short(), "main@01234567");
        let packed = repo(&[
            (".git/HEAD", "ref: refs/heads/feature/x\n"),
            (
                ".git/packed-refs",
                &format!(
                    "# pack-refs with: peeled\n{B} refs/heads/main\n{A} refs/heads/feature/x\n"
                ),
            ),
        ]);
        let found = detect(packed.path(), none).unwrap();
        assert_eq!(
            (found.commit.as_str(), found.branch.as_deref()),
            (A, Some("feature/x"))
        );
        let detached = repo(&[(".git/HEAD", &format!("{B}\n"))]);
        assert_eq!(detect(detached.path(), none).unwrap().branch, None);
        assert_eq!(detect(repo(&[]).path(), none), None);
    }

    #[test]
    fn a_worktree_reads_its_own_head_and_the_shared_refs() {
        let dir = repo(&[
            ("main/.git/refs/heads/topic", &format!("{B}\n")),
            ("main/.git/worktrees/wt/HEAD", "ref: refs/heads/topic\n"),
            ("main/.git/worktrees/wt/commondir", "../..\n"),
            ("wt/.git", "gitdir: ../main/.git/worktrees/wt\n"),
        ]);
        let found = detect(&dir.path().join("wt"), none).unwrap();
        assert_eq!(
            (found.commit.as_str(), found.branch.as_deref()),
            (B, Some("topic"))
        );
    }

    #[test]
    fn the_ci_variables_come_first() {
        let dir = repo(&[(".git/HEAD", &format!("{A}\n"))]);
        let github = |name: &str| match name {
            "GITHUB_SHA" => Some(B.to_string()),
            "GITHUB_HEAD_REF" => Some(String::new()),
            "GITHUB_REF_NAME" => Some("main".to_string()),
            _ => None,
        };
        let found = detect(dir.path(), github).unwrap();
        assert_eq!(
            (found.commit.as_str(), found.branch.as_deref()),
            (B, Some("main"))
        );
    }
}
