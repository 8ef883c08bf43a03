//! Loaded datasets kept between the processes of a run.
//!
//! cargo-nextest runs every cell in a process of its own, and each process
//! loaded every dataset again: a 5,000-case YAML file took 40 ms of a
//! process whose cell takes one. Under nextest the harness keeps each
//! loaded dataset in `target/scaffold/datasets/` as compact JSON, and any
//! process whose dataset file has not changed reads that instead of
//! parsing and validating the file. A run of `cargo test` reads entries
//! but writes none: it loads each dataset once, and writing one would add
//! a copy of the dataset to its peak memory.
//!
//! An entry is found by the SHA-256 of the file's bytes, its name as given,
//! its format and the version of scaffold, so an edited file never meets
//! an entry of its old text. An entry is written only once reading it back
//! gives the very dataset the file gave (warnings included), and one that
//! does not read is ignored: the cache can make loading faster, never
//! different.

use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Case, Dataset, Diagnostic, Format};
use crate::assert::Assertion;
use crate::util::{Fingerprint, file_safe};

/// The folder the harness keeps datasets in, for [`super::load`].
static SHARED: OnceLock<DatasetCache> = OnceLock::new();

/// Read the datasets [`super::load`] loads from `dir` from now on, and
/// keep there those it had to parse when `write` (the harness calls this
/// once, before loading any).
pub(crate) fn keep_in(dir: PathBuf, write: bool) {
    let _ = SHARED.set(DatasetCache { dir, write });
}

/// The cache [`super::load`] uses, if the harness set one up.
pub(super) fn shared() -> Option<&'static DatasetCache> {
    SHARED.get()
}

/// A folder of loaded datasets.
#[derive(Debug, Clone)]
pub(crate) struct DatasetCache {
    dir: PathBuf,
    /// Whether datasets parsed are kept.
    write: bool,
}

/// Where the dataset of one file text is kept.
pub(super) struct Entry {
    path: PathBuf,
    /// Other texts of the same file start with this.
    prefix: String,
    /// Whether [`Entry::write`] keeps anything (its cache's `write`).
    write: bool,
}

impl DatasetCache {
    #[cfg(test)]
    pub(crate) fn new(dir: PathBuf, write: bool) -> DatasetCache {
        DatasetCache { dir, write }
    }

    /// The entry of `src`, the text of `file` in `format`.
    pub(super) fn entry(&self, src: &str, format: Format, file: &str) -> Entry {
        let mut hash = Fingerprint::new();
        hash.field("scaffold", env!("CARGO_PKG_VERSION"))
            .field(
                "format",
                match format {
                    Format::Yaml => "yaml",
                    Format::Json => "json",
                },
            )
            .field("file", file)
            .field("text", src);
        let prefix = format!("{}--", file_safe(file));
        Entry {
            path: self.dir.join(format!("{prefix}{}.json", hash.hex())),
            prefix,
            write: self.write,
        }
    }
}

impl Entry {
    /// The dataset kept here, if there is one that reads.
    pub(super) fn read(&self) -> Option<Dataset> {
        decode(&fs::read(&self.path).ok()?)
    }

    /// Keep `dataset` here if the cache writes and it reads back as itself,
    /// and let go of the entries of the file's earlier texts. Failing to is
    /// no error: the next process parses the file.
    pub(super) fn write(&self, dataset: &Dataset) {
        if !self.write {
            return;
        }
        let Some(bytes) = encode_exact(dataset) else {
            return;
        };
        let written = crate::util::write_atomic(&self.path, false, |out| {
            std::io::Write::write_all(out, &bytes)
        });
        if written.is_ok() {
            // The entries of the file's other texts.
            crate::util::remove_other_versions(&self.path, &self.prefix, ".json");
        }
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }
}

/// `dataset` as compact JSON, every field kept (what [`decode`] reads).
pub(crate) fn encode(dataset: &Dataset) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Stored::of(dataset))
}

/// [`encode`]'s bytes of `dataset`, if they read back as the dataset itself:
/// what a cache may keep (it can save a parse, never give another dataset).
pub(crate) fn encode_exact(dataset: &Dataset) -> Option<Vec<u8>> {
    let bytes = encode(dataset).ok()?;
    decode(&bytes)
        .is_some_and(|back| back == *dataset)
        .then_some(bytes)
}

/// The dataset [`encode`] wrote, if `bytes` are one.
pub(crate) fn decode(bytes: &[u8]) -> Option<Dataset> {
    serde_json::from_slice::<Stored>(bytes)
        .ok()
        .map(Stored::into_dataset)
}

/// A dataset as it is kept: every field, the cases' assertions without the
/// defaults they share.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    name: String,
    id: Option<String>,
    description: Option<String>,
    default_assertions: Vec<Assertion>,
    default_timeout_ms: Option<u64>,
    metadata: Map<String, Value>,
    workflow_name: Option<String>,
    version: Option<String>,
    source: String,
    warnings: Vec<Diagnostic>,
    cases: Vec<StoredCase>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredCase {
    id: String,
    name: Option<String>,
    description: Option<String>,
    input: Box<str>,
    own: Vec<Assertion>,
    tags: Vec<String>,
    timeout_ms: Option<u64>,
    skip: bool,
    only: bool,
}

impl Stored {
    fn of(ds: &Dataset) -> Stored {
        Stored {
            name: ds.name.clone(),
            id: ds.id.clone(),
            description: ds.description.clone(),
            default_assertions: ds.default_assertions.clone(),
            default_timeout_ms: ds.default_timeout_ms,
            metadata: ds.metadata.clone(),
            workflow_name: ds.workflow_name.clone(),
            version: ds.version.clone(),
            source: ds.source.clone(),
            warnings: ds.warnings.clone(),
            cases: ds
                .cases
                .iter()
                .map(|c| StoredCase {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    description: c.description.clone(),
                    input: c.input.clone(),
                    own: c.own.to_vec(),
                    tags: c.tags.clone(),
                    timeout_ms: c.timeout_ms,
                    skip: c.skip,
                    only: c.only,
                })
                .collect(),
        }
    }

    fn into_dataset(self) -> Dataset {
        let defaults: Arc<[Assertion]> = Arc::from(self.default_assertions.as_slice());
        Dataset {
            name: self.name,
            id: self.id,
            description: self.description,
            default_assertions: self.default_assertions,
            default_timeout_ms: self.default_timeout_ms,
            metadata: self.metadata,
            workflow_name: self.workflow_name,
            version: self.version,
            cases: self
                .cases
                .into_iter()
                .map(|c| Case {
                    id: c.id,
                    name: c.name,
                    description: c.description,
                    input: c.input,
                    defaults: defaults.clone(),
                    own: c.own.into_boxed_slice(),
                    tags: c.tags,
                    timeout_ms: c.timeout_ms,
                    skip: c.skip,
                    only: c.only,
                })
                .collect(),
            source: self.source,
            warnings: self.warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::dataset::load::load_with;
    use crate::dataset::load_str;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/datasets")
            .join(name)
    }

    /// A fresh folder under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "scaffold-dataset-cache-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn every_fixture_reads_back_as_the_dataset_its_file_gives() {
        let cache = DatasetCache::new(scratch("fixtures"), true);
        for name in [
            "code-review-agent.yaml",
            "code-gen-agent.yaml",
            "refactoring-agent.yaml",
            "debugging-agent.yaml",
            "my-workflow.v1.json",
        ] {
            let path = fixture(name);
            let src = fs::read_to_string(&path).unwrap();
            let file = path.display().to_string();
            let format = Format::from_path(&path);
            let fresh = load_str(&src, format, &file).unwrap();
            let entry = cache.entry(&src, format, &file);
            assert!(entry.read().is_none(), "{name}: nothing kept yet");
            entry.write(&fresh);
            assert!(entry.path().exists(), "{name}: not kept");
            let kept = entry.read().expect("the entry reads");
            assert_eq!(kept, fresh, "{name}");
            assert_eq!(kept.warnings, fresh.warnings, "{name}");
        }
        // The warning of the debugging example survives the trip.
        let path = fixture("debugging-agent.yaml");
        let src = fs::read_to_string(&path).unwrap();
        let file = path.display().to_string();
        let kept = cache.entry(&src, Format::Yaml, &file).read().unwrap();
        assert_eq!(kept.warnings.len(), 1, "{:?}", kept.warnings);
    }

    #[test]
    fn load_reads_the_entry_of_an_unchanged_file_and_parses_an_edited_one() {
        let dir = scratch("load");
        let cache = DatasetCache::new(dir.join("cache"), true);
        let path = dir.join("review.yaml");
        let text = "name: review\ncases:\n  - id: a\n    input: {x: 1}\n    assertions:\n      - {type: output.contains, text: ok}\n";
        fs::write(&path, text).unwrap();
        let first = load_with(&path, Some(&cache)).unwrap();
        let file = path.display().to_string();
        let entry = cache.entry(text, Format::Yaml, &file);
        assert!(entry.path().exists(), "the first load keeps the dataset");
        // What the next load returns is the entry, not a parse of the file:
        // an entry edited by hand shows through.
        let kept = fs::read_to_string(entry.path()).unwrap();
        fs::write(
            entry.path(),
            kept.replace("\"id\":\"a\"", "\"id\":\"from-cache\""),
        )
        .unwrap();
        assert_eq!(
            load_with(&path, Some(&cache)).unwrap().cases[0].id,
            "from-cache"
        );
        // An entry that does not read is ignored, and replaced.
        fs::write(entry.path(), "{not json").unwrap();
        assert_eq!(load_with(&path, Some(&cache)).unwrap(), first);
        assert_eq!(entry.read().unwrap(), first);
        // An edited file is parsed again, and its old entry goes.
        let edited = text.replace("x: 1", "x: 2");
        fs::write(&path, &edited).unwrap();
        let second = load_with(&path, Some(&cache)).unwrap();
        assert_eq!(second.cases[0].input(), serde_json::json!({"x": 2}));
        assert!(!entry.path().exists(), "the old text's entry is removed");
        assert!(cache.entry(&edited, Format::Yaml, &file).path().exists());
        // A file with errors keeps nothing and fails as it would without a cache.
        fs::write(&path, "name: broken\ncases: []\n").unwrap();
        let err = load_with(&path, Some(&cache)).unwrap_err().to_string();
        let plain = load_with(&path, None).unwrap_err().to_string();
        assert_eq!(err, plain);
        // A cache that only reads (`cargo test`) keeps nothing new, and
        // still reads what is there.
        fs::write(&path, text).unwrap();
        let reader = DatasetCache::new(dir.join("cache"), false);
        let fresh = reader.entry(text, Format::Yaml, &file);
        let _ = fs::remove_file(fresh.path());
        assert_eq!(load_with(&path, Some(&reader)).unwrap(), first);
        assert!(!fresh.path().exists(), "a reading cache wrote");
        // Kept by a writing process (nextest's) of the same run.
        cache.entry(text, Format::Yaml, &file).write(&first);
        fs::write(
            fresh.path(),
            fs::read_to_string(fresh.path())
                .unwrap()
                .replace("\"id\":\"a\"", "\"id\":\"kept\""),
        )
        .unwrap();
        assert_eq!(load_with(&path, Some(&reader)).unwrap().cases[0].id, "kept");
        let _ = fs::remove_dir_all(&dir);
    }
}
