//! Where the session database and the reports go by default.
//!
//! `<target>/scaffold/` when `<target>` is the workspace's own `target/`.
//! When it is elsewhere (`CARGO_TARGET_DIR` shared by several projects), a
//! directory per package, `<target>/scaffold/<package>-<hash of its
//! directory>/`, so that projects (or two checkouts of one) keep their own
//! database and reports, and `SCAFFOLD_RESUME` only sees their own runs.

use std::path::{Path, PathBuf};

/// The directory of the database and reports for the package at or above
/// `dir`, with the target directory `target` (`None`: the workspace's own).
pub(super) fn scaffold_dir(target: Option<&Path>, dir: &Path) -> PathBuf {
    let own = own_target(dir);
    let Some(target) = target.filter(|t| !same_dir(t, &own)) else {
        return own.join("scaffold");
    };
    let base = target.join("scaffold");
    match package_key(dir) {
        Some(key) => base.join(key),
        None => base,
    }
}

/// `target/` beside the nearest `Cargo.lock` above `dir`, else in `dir`.
fn own_target(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .map(|d| d.join("target"))
        .unwrap_or_else(|| dir.join("target"))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || canonical(a) == canonical(b)
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `<name>-<8 hex>` of the nearest package manifest at or above `dir`;
/// `None` when the nearest `Cargo.toml` has no `[package]` (a virtual
/// workspace) or there is none.
fn package_key(dir: &Path) -> Option<String> {
    let package = dir.ancestors().find(|d| d.join("Cargo.toml").is_file())?;
    let manifest = std::fs::read_to_string(package.join("Cargo.toml")).ok()?;
    let name = package_name(&manifest)?;
    let place = canonical(package);
    Some(format!("{name}-{}", short_hash(&place.to_string_lossy())))
}

/// `name` of the `[package]` table of a manifest (`name = "…"` on its own line).
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if in_package && key.trim() == "name" {
            let name = value.trim().trim_matches(|c| c == '"' || c == '\'');
            let safe = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            return (safe && !name.is_empty()).then(|| name.to_string());
        }
    }
    None
}

/// Eight hex digits of FNV-1a: stable across runs and platforms.
fn short_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_name_is_read_from_its_table_only() {
        let manifest = "[workspace]\nname = \"no\"\n\n[package]\nversion = \"0.1.0\"\nname = \"my-evals\"\n[dependencies]\nname = \"x\"\n";
        assert_eq!(package_name(manifest).as_deref(), Some("my-evals"));
        assert_eq!(package_name("[workspace]\nmembers = []\n"), None);
        assert_eq!(package_name("[package]\nname = \"../x\"\n"), None);
    }

    #[test]
    fn a_shared_target_gets_a_directory_per_package() {
        let root = std::env::temp_dir().join(format!("scaffold-location-{}", uuid::Uuid::new_v4()));
        let (a, b) = (root.join("a"), root.join("b"));
        for (dir, name) in [(&a, "alpha"), (&b, "beta")] {
            std::fs::create_dir_all(dir.join("tests")).expect("dir");
            std::fs::write(
                dir.join("Cargo.toml"),
                format!("[package]\nname = \"{name}\"\n"),
            )
            .expect("manifest");
            std::fs::write(dir.join("Cargo.lock"), "").expect("lock");
        }
        let shared = root.join("shared");
        let in_a = scaffold_dir(Some(&shared), &a.join("tests"));
        let in_b = scaffold_dir(Some(&shared), &b);
        assert_ne!(in_a, in_b);
        assert_eq!(in_a.parent(), Some(shared.join("scaffold").as_path()));
        let key = in_a
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        assert!(
            key.starts_with("alpha-") && key.len() == "alpha-".len() + 8,
            "{key}"
        );
        // The same package, from its directory or below: the same place.
        assert_eq!(in_a, scaffold_dir(Some(&shared), &a));
        // The workspace's own target dir, named or not: `target/scaffold`.
        assert_eq!(scaffold_dir(None, &a), a.join("target").join("scaffold"));
        assert_eq!(
            scaffold_dir(Some(&a.join("target")), &a),
            a.join("target").join("scaffold")
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
