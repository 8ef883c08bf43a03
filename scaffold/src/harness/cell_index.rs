//! The suite's cells, kept for the other processes of a nextest run.
//!
//! cargo-nextest runs each cell in a process of its own (`NAME --exact`),
//! and each such process loaded every dataset and built every cell's trial
//! to run one: at 10,000 cells a process cost twice what it cost at 200.
//! The first process of a run that builds the whole suite (nextest's
//! `--list`, or its first cell) writes an index of its cells: per cell its
//! test name, eval, place among its case's cells, whether it is ignored,
//! and its dataset with its case alone. Every other process of the run
//! reads its own line and its own case, builds the evals without calling
//! their `#[dataset]` functions, and runs its cell.
//!
//! An index belongs to one nextest run (`NEXTEST_RUN_ID`), one test binary
//! (its path, size and time) and one set of `SCAFFOLD_*` settings: the
//! processes of a run see the datasets as the run's first process loaded
//! them. A run that resumes another or forks its cells writes none. An
//! index that does not read, or names a cell the suite built here does
//! not have, is ignored: the process builds the whole suite, as without one.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::trials::CELL_KIND;
use crate::dataset::Dataset;
use crate::dataset::cache::{decode, encode_exact};
use crate::util::{Fingerprint, file_safe};

/// The first line of an index: its format.
const MAGIC: &str = "scaffold cell index 1";

/// What the index says of one test name.
#[derive(Debug)]
pub(super) enum Lookup {
    /// The cell and its dataset with its case alone.
    Cell(Box<(IndexedCell, Dataset)>),
    /// The index reads, and has no cell of that name (a gate, another
    /// binary's test, a typo): building the suite will say.
    NotACell,
    /// No index, or one that does not read.
    NoIndex,
}

/// Per eval, what a process plans for the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct EvalCounts {
    /// Cells the run would run without a test-name filter (not ignored).
    pub selected: usize,
    /// Distinct cases of its cells.
    pub inputs: usize,
}

/// Where one nextest run's index of this suite is.
#[derive(Debug, Clone)]
pub(super) struct CellIndex {
    path: PathBuf,
    /// Other runs' indexes of this binary start with this.
    prefix: String,
}

/// One cell as its index has it.
#[derive(Debug)]
pub(super) struct IndexedCell {
    /// Its test name.
    pub name: String,
    /// Its eval's position in the suite.
    pub eval: usize,
    /// Its index among the cells of an eval whose only dataset is `dataset`.
    pub within: usize,
    /// Skipped (`skip`, or another case of its dataset is `only`).
    pub ignored: bool,
    /// The suite's evals, by name, and what each plans for the run.
    pub evals: Vec<(String, EvalCounts)>,
}

impl CellIndex {
    /// The index of the nextest run this process is part of, in `dir`;
    /// none outside a nextest run.
    pub(super) fn of_run(dir: &Path, manifest_dir: &Path) -> Option<CellIndex> {
        let run = std::env::var("NEXTEST_RUN_ID").ok()?;
        let run = run.trim();
        if run.is_empty() {
            return None;
        }
        let exe = std::env::current_exe().ok()?;
        let meta = fs::metadata(&exe).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        let mut key = Fingerprint::new();
        key.field("scaffold", env!("CARGO_PKG_VERSION"))
            .field("run", run)
            .field("exe", exe.as_os_str().as_encoded_bytes())
            .field("size", meta.len().to_string())
            .field("modified", modified.as_nanos().to_string())
            .field("package", manifest_dir.as_os_str().as_encoded_bytes());
        let mut settings: Vec<_> = std::env::vars_os()
            .filter(|(k, _)| k.as_encoded_bytes().starts_with(b"SCAFFOLD_"))
            .collect();
        settings.sort();
        for (k, v) in &settings {
            key.field("setting", k.as_encoded_bytes())
                .field("value", v.as_encoded_bytes());
        }
        let stem = exe.file_stem().map(|s| s.to_string_lossy().into_owned())?;
        let prefix = format!("{}--", file_safe(&stem));
        Some(CellIndex {
            path: dir.join(format!("{prefix}{}.cells", key.hex())),
            prefix,
        })
    }

    /// Cell `name` and the run's plan, with its dataset with its case
    /// alone. `name` is a test name as `--list` prints it, its kind
    /// (`[eval] `) included, as nextest passes it, or without it.
    pub(super) fn find(&self, name: &str) -> Lookup {
        // `--list` prints a test's kind before its name, and nextest names
        // the test to the process that runs it as `--list` printed it.
        let name = name
            .strip_prefix('[')
            .and_then(|n| n.strip_prefix(CELL_KIND))
            .and_then(|n| n.strip_prefix("] "))
            .unwrap_or(name);
        read(&self.path, name).unwrap_or(Lookup::NoIndex)
    }

    /// Keep `index` here, and let go of the indexes of this binary's other
    /// runs. Failing to is no error: the run's other processes build the
    /// suite themselves.
    pub(super) fn write(&self, index: IndexWriter, evals: &[(String, EvalCounts)]) {
        if !index.complete {
            return;
        }
        let written =
            crate::util::write_atomic(&self.path, false, |out| index.write_to(out, evals));
        if written.is_ok() {
            crate::util::remove_other_versions(&self.path, &self.prefix, ".cells");
        }
    }
}

/// A case's place in the suite: its eval, dataset and index.
type CasePlace = (usize, usize, usize);

/// An index being built, cell by cell, in the suite's order.
#[derive(Debug)]
pub(super) struct IndexWriter {
    /// One line per cell: name, eval, within, ignored, offset and length of
    /// its dataset in `datasets`.
    names: String,
    datasets: Vec<u8>,
    /// The last case written (eval, dataset, case) and where its dataset
    /// is: the cells of one case share it.
    last: Option<(CasePlace, (usize, usize))>,
    /// Whether every cell could be indexed.
    complete: bool,
}

impl IndexWriter {
    pub(super) fn new() -> IndexWriter {
        IndexWriter {
            names: String::from("\n"),
            datasets: Vec::new(),
            last: None,
            complete: true,
        }
    }

    /// Add cell `name` of eval `eval`: its place (dataset, case, index
    /// within the case's cells), whether it is ignored, and `alone`, which
    /// gives a dataset with a case alone, asked for when the last cell's
    /// case differs.
    pub(super) fn add(
        &mut self,
        name: &str,
        (eval, ignored): (usize, bool),
        place: Option<(usize, usize, usize)>,
        alone: impl FnOnce(usize, usize) -> Option<Dataset>,
    ) {
        let Some((dataset, case, within)) = place.filter(|_| self.complete) else {
            self.complete = false;
            return;
        };
        if name.contains(['\t', '\n']) {
            self.complete = false;
            return;
        }
        let key = (eval, dataset, case);
        let at = match self.last {
            Some((last, at)) if last == key => at,
            _ => {
                // Kept only if it reads back as itself: the index can make
                // a process faster, never give it another case.
                let Some(bytes) = alone(dataset, case).and_then(|ds| encode_exact(&ds)) else {
                    self.complete = false;
                    return;
                };
                let at = (self.datasets.len(), bytes.len());
                self.datasets.extend_from_slice(&bytes);
                self.last = Some((key, at));
                at
            }
        };
        let (offset, len) = at;
        let ignored = u8::from(ignored);
        self.names.push_str(&format!(
            "{name}\t{eval}\t{within}\t{ignored}\t{offset}\t{len}\n"
        ));
    }

    fn write_to(&self, out: &mut impl Write, evals: &[(String, EvalCounts)]) -> io::Result<()> {
        let header: Vec<serde_json::Value> = evals
            .iter()
            .map(|(name, c)| serde_json::json!([name, c.selected, c.inputs]))
            .collect();
        writeln!(out, "{MAGIC}")?;
        writeln!(out, "{}", serde_json::Value::from(header))?;
        writeln!(out, "{}", self.names.len())?;
        out.write_all(self.names.as_bytes())?;
        out.write_all(&self.datasets)
    }
}

/// Cell `name` from the index at `path`: its line found in the names
/// without reading the datasets, then its dataset alone. Lengths are
/// checked against the file's size before anything is read.
fn read(path: &Path, name: &str) -> io::Result<Lookup> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut file = BufReader::new(file);
    let mut line = String::new();
    file.read_line(&mut line)?;
    if line.trim_end() != MAGIC {
        return Ok(Lookup::NoIndex);
    }
    line.clear();
    file.read_line(&mut line)?;
    let Some(evals) = evals_of(&line) else {
        return Ok(Lookup::NoIndex);
    };
    line.clear();
    file.read_line(&mut line)?;
    let names_len = match line.trim_end().parse::<u64>() {
        Ok(n) if n <= size => n as usize,
        _ => return Ok(Lookup::NoIndex),
    };
    let mut names = vec![0; names_len];
    file.read_exact(&mut names)?;
    let datasets_at = file.stream_position()?;
    let Ok(names) = String::from_utf8(names) else {
        return Ok(Lookup::NoIndex);
    };
    let Some([eval, within, ignored, offset, len]) = line_of(&names, name) else {
        return Ok(Lookup::NotACell);
    };
    let end = datasets_at
        .checked_add(offset as u64)
        .and_then(|at| at.checked_add(len as u64));
    if eval >= evals.len() || end.is_none_or(|end| end > size) {
        return Ok(Lookup::NoIndex);
    }
    let mut bytes = vec![0; len];
    let mut file = file.into_inner();
    file.seek(SeekFrom::Start(datasets_at + offset as u64))?;
    file.read_exact(&mut bytes)?;
    let Some(dataset) = decode(&bytes) else {
        return Ok(Lookup::NoIndex);
    };
    let cell = IndexedCell {
        name: name.to_string(),
        eval,
        within,
        ignored: ignored == 1,
        evals,
    };
    Ok(Lookup::Cell(Box::new((cell, dataset))))
}

/// The evals' names and counts of the header line.
fn evals_of(line: &str) -> Option<Vec<(String, EvalCounts)>> {
    let header: Vec<(String, usize, usize)> = serde_json::from_str(line).ok()?;
    Some(
        header
            .into_iter()
            .map(|(name, selected, inputs)| (name, EvalCounts { selected, inputs }))
            .collect(),
    )
}

/// The numbers on `name`'s line of `names`.
fn line_of(names: &str, name: &str) -> Option<[usize; 5]> {
    let at = names.find(&format!("\n{name}\t"))? + name.len() + 2;
    let end = names[at..].find('\n')? + at;
    let mut fields = names[at..end].split('\t').map(str::parse::<usize>);
    let mut out = [0; 5];
    for slot in &mut out {
        *slot = fields.next()?.ok()?;
    }
    fields.next().is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Format, load_str};

    fn dataset() -> Dataset {
        let src = "name: d\ncases:\n  - id: a\n    input: {n: 1}\n    assertions: []\n  - id: b\n    input: {n: 2}\n    skip: true\n    assertions:\n      - {type: output.contains, text: two}\n";
        load_str(src, Format::Yaml, "d.yaml").unwrap()
    }

    /// A fresh folder under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("scaffold-cell-index-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn at(dir: &Path, run: &str) -> CellIndex {
        CellIndex {
            path: dir.join(format!("evals-0123--{run}.cells")),
            prefix: "evals-0123--".into(),
        }
    }

    /// The two cases of [`dataset`] × variants `x`, `y`, as the harness adds them.
    fn written(dir: &Path, run: &str) -> CellIndex {
        let ds = dataset();
        let mut asked = Vec::new();
        let mut writer = IndexWriter::new();
        for (case, id) in ["a", "b"].iter().enumerate() {
            for (v, variant) in ["x", "y"].iter().enumerate() {
                let name = format!("e::{variant}::{id}");
                writer.add(&name, (1, case == 1), Some((0, case, v)), |d, c| {
                    asked.push((d, c));
                    ds.with_one_case(c)
                });
            }
        }
        // The cells of one case share its dataset: asked for once per case.
        assert_eq!(asked, [(0, 0), (0, 1)]);
        let counts = |selected, inputs| EvalCounts { selected, inputs };
        let index = at(dir, run);
        index.write(
            writer,
            &[("other".into(), counts(3, 3)), ("e".into(), counts(2, 1))],
        );
        index
    }

    #[test]
    fn a_cell_is_read_back_with_its_case_alone_and_the_runs_plan() {
        let dir = scratch("read");
        let index = written(&dir, "r1");
        let Lookup::Cell(found) = index.find("e::y::b") else {
            panic!("not indexed")
        };
        let (cell, ds) = *found;
        assert_eq!(
            (cell.name.as_str(), cell.eval, cell.within),
            ("e::y::b", 1, 1)
        );
        assert!(cell.ignored);
        assert_eq!(ds, dataset().with_one_case(1).unwrap());
        assert_eq!(ds.cases[0].assertions().len(), 1);
        let names: Vec<_> = cell
            .evals
            .iter()
            .map(|(n, c)| (n.as_str(), c.selected))
            .collect();
        assert_eq!(names, [("other", 3), ("e", 2)]);
        // As nextest names it: with the kind `--list` prints.
        let Lookup::Cell(found) = index.find("[eval] e::x::a") else {
            panic!("not indexed")
        };
        let (first, ds) = *found;
        assert_eq!((first.within, first.ignored), (0, false));
        assert_eq!(ds.cases[0].id, "a");
        // A name that is only the start of another's, or no cell's.
        assert!(matches!(index.find("e::x"), Lookup::NotACell));
        assert!(matches!(index.find("[gate] e"), Lookup::NotACell));
        assert!(matches!(index.find("e::z::a"), Lookup::NotACell));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_index_that_does_not_read_is_no_index() {
        let dir = scratch("broken");
        let index = written(&dir, "r1");
        let text = fs::read(&index.path).unwrap();
        // Cut short inside the datasets, another format, not a header.
        fs::write(&index.path, &text[..text.len() - 10]).unwrap();
        assert!(matches!(index.find("e::y::b"), Lookup::NoIndex));
        assert!(
            matches!(index.find("e::x::a"), Lookup::Cell(..)),
            "the first case is whole"
        );
        let mut other = text.clone();
        other[20] = b'9';
        fs::write(&index.path, &other).unwrap();
        assert!(matches!(index.find("e::x::a"), Lookup::NoIndex));
        // Lengths past the file's end are no index, not an allocation.
        let header_end = text
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(2)
            .unwrap()
            .0;
        let mut huge = b"scaffold cell index 1\n[]\n99999999999999\n".to_vec();
        huge.extend_from_slice(&text[header_end + 1..]);
        fs::write(&index.path, &huge).unwrap();
        assert!(matches!(index.find("e::x::a"), Lookup::NoIndex));
        fs::write(&index.path, b"").unwrap();
        assert!(matches!(index.find("e::x::a"), Lookup::NoIndex));
        let _ = fs::remove_file(&index.path);
        assert!(matches!(index.find("e::x::a"), Lookup::NoIndex));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_suite_it_cannot_index_whole_writes_none_and_a_new_run_replaces_the_last() {
        let dir = scratch("partial");
        let mut writer = IndexWriter::new();
        let ds = dataset();
        writer.add("e::x::a", (0, false), Some((0, 0, 0)), |_, c| {
            ds.with_one_case(c)
        });
        writer.add("e::x::\tb", (0, false), Some((0, 1, 0)), |_, c| {
            ds.with_one_case(c)
        });
        at(&dir, "r0").write(writer, &[]);
        assert!(!at(&dir, "r0").path.exists(), "a name with a tab");
        let mut writer = IndexWriter::new();
        writer.add("e::x::a", (0, false), None, |_, c| ds.with_one_case(c));
        at(&dir, "r0").write(writer, &[]);
        assert!(!at(&dir, "r0").path.exists(), "a cell without a place");
        // Each run's index replaces this binary's earlier ones, not others'.
        let other_binary = dir.join("other-4567--r1.cells");
        fs::write(&other_binary, "kept").unwrap();
        let first = written(&dir, "r1");
        let second = written(&dir, "r2");
        assert!(!first.path.exists() && second.path.exists());
        assert!(other_binary.exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
