//! Small helpers shared across modules; [`rfc3339`] is public, for tools
//! that print the store's Unix-millisecond times the way the reports do.

use std::fs;
use std::io::{self, BufWriter};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Remove from `cmd`'s environment the variables cargo sets for the package
/// it runs (`CARGO_PKG_*`, `CARGO_MANIFEST_*`, `CARGO_CRATE_*`,
/// `CARGO_BIN_*`, `CARGO_PRIMARY_PACKAGE`, `CARGO_TARGET_TMPDIR`), so that
/// a `cargo` started from inside a cargo run (a test, an example, `cargo
/// scaffold run` under a test) builds as one from a shell does. Inherited,
/// they reach the dependencies' builds, whose fingerprints then differ from
/// a plain `cargo`'s: every switch between the two rebuilt ring, rustls,
/// reqwest and scaffold, over a minute and a half each time.
pub fn without_package_vars(cmd: &mut std::process::Command) -> &mut std::process::Command {
    let set_by_cargo = |key: &str| {
        [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|prefix| key.starts_with(prefix))
            || matches!(key, "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR")
    };
    for (key, _) in std::env::vars_os() {
        if set_by_cargo(&key.to_string_lossy()) {
            cmd.env_remove(&key);
        }
    }
    cmd
}

/// `raw` as one safe file-name component: characters outside
/// `[A-Za-z0-9._-]` become `-`, runs of `_` shrink to one (so a `__`
/// separator stays unambiguous), and a component of dots alone (`.`, `..`)
/// becomes dashes, so that it never names a folder above; an empty one is `-`.
pub(crate) fn file_safe(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
            c
        } else {
            '-'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    if out.starts_with('_') {
        out.replace_range(..1, "-");
    }
    if out.ends_with('_') {
        out.replace_range(out.len() - 1.., "-");
    }
    if out.bytes().all(|b| b == b'.') {
        out = "-".repeat(out.len().max(1));
    }
    out
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `ms` since the epoch as an RFC 3339 UTC timestamp (`2026-01-28T12:00:00Z`),
/// as the results documents write their `timestamp`.
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Now, as RFC 3339.
pub(crate) fn now_rfc3339() -> String {
    rfc3339(now_ms())
}

/// A SHA-256 of tagged fields, as 64 hex digits: each field is its tag,
/// then its length and bytes, so that no two lists of fields hash alike.
/// The judge's verdict cache and the dataset cache key their entries so.
pub(crate) struct Fingerprint(sha2::Sha256);

impl Fingerprint {
    pub(crate) fn new() -> Fingerprint {
        Fingerprint(<sha2::Sha256 as sha2::Digest>::new())
    }

    /// Add the field `tag` with `value`.
    pub(crate) fn field(&mut self, tag: &str, value: impl AsRef<[u8]>) -> &mut Fingerprint {
        use sha2::Digest;
        let value = value.as_ref();
        self.0.update(tag.as_bytes());
        self.0.update((value.len() as u64).to_le_bytes());
        self.0.update(value);
        self
    }

    /// The hash, in lower-case hex.
    pub(crate) fn hex(self) -> String {
        use std::fmt::Write as _;
        let digest = sha2::Digest::finalize(self.0);
        let mut hex = String::with_capacity(2 * digest.len());
        for b in digest {
            let _ = write!(hex, "{b:02x}");
        }
        hex
    }
}

/// Remove the files beside `path` whose names start with `prefix` and end
/// with `suffix`, but `path` itself: the earlier versions of a file kept
/// under a name that changes with its contents. Failing to is no error.
pub(crate) fn remove_other_versions(path: &Path, prefix: &str, suffix: &str) {
    let (Some(dir), Some(mine)) = (path.parent(), path.file_name()) else {
        return;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let other = name != mine
            && name
                .to_str()
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix));
        if other {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Write `path` through a hidden temporary file in the same folder (made if
/// missing), renamed over `path` once `write` has succeeded: a reader sees
/// the old file or the whole new one, never a part. When `write` fails, the
/// temporary file is removed and `path` is left as it was. `sync` puts the
/// data on disk before the rename.
pub(crate) fn write_atomic(
    path: &Path,
    sync: bool,
    write: impl FnOnce(&mut BufWriter<fs::File>) -> io::Result<()>,
) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = BufWriter::new(fs::File::create(&tmp)?);
        write(&mut file)?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        if sync {
            file.sync_all()?;
        }
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Sort `items` stably by `compare`, with a scratch of one index per item
/// rather than the half or whole copy of the items a stable sort takes (for
/// 10,000 cell records, 3.2 MB: the summary's peak).
pub(crate) fn sort_stable_by<T>(items: &mut [T], compare: impl Fn(&T, &T) -> std::cmp::Ordering) {
    if items.is_sorted_by(|a, b| compare(a, b).is_le()) {
        return;
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| compare(&items[a], &items[b]));
    // Position `i` takes the item at `order[i]`: follow each cycle of the
    // permutation, marking each position done as it is filled.
    for start in 0..items.len() {
        let mut at = start;
        while order[at] != at {
            let from = order[at];
            order[at] = at;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

/// Numbers as reports and comparisons show them.
pub(crate) mod fmt {
    /// `n thing` / `n things`.
    pub(crate) fn plural(n: usize, thing: &str) -> String {
        if n == 1 {
            format!("1 {thing}")
        } else {
            format!("{n} {thing}s")
        }
    }

    /// `$0`, `$0.0042`, `$0.01`, `$1.25`: two decimals, four under a cent.
    pub(crate) fn usd(x: f64) -> String {
        if x == 0.0 {
            return "$0".into();
        }
        let s = if x.abs() < 0.01 {
            format!("{x:.4}")
        } else {
            format!("{x:.2}")
        };
        // $0.0100 (a cent, less rounding noise) reads as $0.01.
        let s = match s.split_once('.') {
            Some((int, frac)) if frac.len() > 2 => {
                let kept = frac.trim_end_matches('0');
                format!("{int}.{}", if kept.len() < 2 { &frac[..2] } else { kept })
            }
            _ => s,
        };
        format!("${s}")
    }

    /// [`usd`] with `extra` more decimals (trailing zeros past the second
    /// dropped): what [`apart`] shows.
    pub(crate) fn usd_digits(x: f64, extra: usize) -> String {
        if extra == 0 || x == 0.0 {
            return usd(x);
        }
        let decimals = if x.abs() < 0.01 { 4 } else { 2 } + extra;
        let s = format!("{x:.decimals$}");
        let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
        let kept = frac.trim_end_matches('0');
        let frac = if kept.len() < 2 { &frac[..2] } else { kept };
        format!("${int}.{frac}")
    }

    /// [`duration`] with `extra` more decimals: what [`apart`] shows.
    pub(crate) fn duration_digits(ms: f64, extra: usize) -> String {
        match extra {
            0 => duration(ms),
            _ if ms >= 1000.0 => format!("{:.*}s", 1 + extra, ms / 1000.0),
            _ => format!("{ms:.extra$}ms"),
        }
    }

    /// Two different figures as `show(x, extra)` writes them with the
    /// fewest `extra` digits (none, up to 8) that tell them apart:
    /// `$0.00011 vs $0.00014` where [`usd`] wrote `$0.0001` twice.
    pub(crate) fn apart(a: f64, b: f64, show: impl Fn(f64, usize) -> String) -> (String, String) {
        let mut extra = 0;
        loop {
            let (x, y) = (show(a, extra), show(b, extra));
            if x != y || a == b || extra >= 8 {
                return (x, y);
            }
            extra += 1;
        }
    }

    /// `850ms`, `2.1s`.
    pub(crate) fn duration(ms: f64) -> String {
        if ms >= 1000.0 {
            format!("{:.1}s", ms / 1000.0)
        } else {
            format!("{ms:.0}ms")
        }
    }

    /// `80%`.
    pub(crate) fn pct(rate: f64) -> String {
        format!("{:.0}%", rate * 100.0)
    }

    /// `p = 0.031`, `p < 0.001`.
    pub(crate) fn p_value(p: f64) -> String {
        if p < 0.001 {
            "p < 0.001".into()
        } else {
            format!("p = {p:.3}")
        }
    }
}

/// Arbitrary values for property tests.
#[cfg(test)]
pub(crate) mod arbitrary {
    use serde_json::Value;

    /// Strings that exercise every rule of insta's quoting: its indicator
    /// characters first and anywhere, its reserved words, numbers, dates,
    /// spaces at either end, control characters, non-ASCII.
    pub(crate) fn tricky_string() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let pieces = prop::sample::select(vec![
            "a",
            "Echo",
            " ",
            ":",
            ": ",
            "-",
            "- ",
            "&",
            "*",
            "?",
            "|",
            "<",
            ">",
            "=",
            "!",
            "%",
            "@",
            "{",
            "}",
            "[",
            "]",
            ",",
            "#",
            "`",
            "\"",
            "'",
            "\\",
            "\0",
            "\x01",
            "\x07",
            "\x08",
            "\t",
            "\n",
            "\x0b",
            "\x0c",
            "\r",
            "\x0e",
            "\x1b",
            "\x1f",
            "\x7f",
            ".",
            "0x",
            "1",
            "12",
            "-3",
            "2.5",
            "1e3",
            "inf",
            "NaN",
            "true",
            "no",
            "Null",
            "~",
            "y",
            "2014-12-31",
            "é",
            "日本",
            "\u{2028}",
            "\u{85}",
        ]);
        prop::collection::vec(pieces, 0..5).prop_map(|p| p.concat())
    }

    pub(crate) fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            prop::sample::select(vec![0.0, 1.0, -1.5, 0.000084, 1e21, 1e-7]).prop_map(Value::from),
            tricky_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(tricky_string(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn an_atomic_write_leaves_the_whole_file_or_none() {
        let dir = std::env::temp_dir().join(format!("scaffold-atomic-{}", std::process::id()));
        let path = dir.join("sub").join("report.json");
        write_atomic(&path, false, |f| f.write_all(b"first")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");
        let failed = write_atomic(&path, true, |f| {
            f.write_all(b"half of the sec")?;
            Err(io::Error::other("the store went away"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "the store went away");
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");
        let left: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["report.json"], "no temporary file is left");
        write_atomic(&path, true, |f| f.write_all(b"second")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "second");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_769_601_600_000), "2026-01-28T12:00:00Z");
        assert_eq!(super::rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn sort_stable_by_matches_the_standard_stable_sort() {
        // Keys with repeats, tagged with their first position: the order of
        // equal keys tells a stable sort from an unstable one.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for len in [0, 1, 2, 3, 7, 64, 1000] {
            for _ in 0..20 {
                let items: Vec<(u64, usize)> = (0..len)
                    .map(|i| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        (seed % 10, i)
                    })
                    .collect();
                let mut expected = items.clone();
                expected.sort_by_key(|item| item.0);
                let mut sorted = items.clone();
                sort_stable_by(&mut sorted, |a, b| a.0.cmp(&b.0));
                assert_eq!(sorted, expected, "{items:?}");
            }
        }
        let mut reversed: Vec<u32> = (0..100).rev().collect();
        sort_stable_by(&mut reversed, u32::cmp);
        assert_eq!(reversed, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn file_safe_components_never_climb_out_of_their_folder() {
        for (raw, safe) in [
            ("sql injection", "sql-injection"),
            ("a__b", "a_b"),
            ("_x_", "-x-"),
            ("..", "--"),
            (".", "-"),
            ("", "-"),
            ("../etc", "..-etc"),
            ("v1.2", "v1.2"),
        ] {
            assert_eq!(super::file_safe(raw), safe, "{raw:?}");
        }
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn rfc3339_writes_epoch_milliseconds_as_a_utc_timestamp() {
        assert_eq!(
            crate::util::rfc3339(1_769_601_600_000),
            "2026-01-28T12:00:00Z"
        );
    }
}
