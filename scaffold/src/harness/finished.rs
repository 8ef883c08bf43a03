//! What the finished cells of one eval leave for the summary, in little
//! memory.
//!
//! A suite of 10,000 cells keeps 10,000 cell summaries until its reports
//! are written. As [`CellRecord`]s (320 bytes before their strings, each
//! string and score list its own allocation between the cells' short-lived
//! buffers) they took about 570 bytes each and kept the allocator from
//! returning the pages around them. A passing cell's summary is mostly
//! numbers and names every other cell repeats (variant, dataset, scorers),
//! so it is kept here as a fixed-size [`Compact`] row with its names
//! interned, in one growing vector; anything else (a failure's message, a
//! borderline judgement, a whole record) stays a [`CellRecord`]. The
//! records are rebuilt, exactly as they were pushed, when the summary asks.

use std::collections::HashMap;
use std::sync::Arc;

use crate::eval::CellRecord;
use crate::eval::results::ScoreRecord;
use crate::eval::small_map::SmallMap;
use crate::metrics::Metrics;
use crate::workflow::RunStatus;

/// Strings many cells share, kept once each and named by index.
#[derive(Debug, Default)]
struct Names {
    index: HashMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
}

impl Names {
    /// The index of `name`, added if new; `None` past `u32::MAX` names.
    fn intern(&mut self, name: &str) -> Option<u32> {
        if let Some(&i) = self.index.get(name) {
            return Some(i);
        }
        let i = u32::try_from(self.names.len()).ok()?;
        let name: Arc<str> = Arc::from(name);
        self.names.push(name.clone());
        self.index.insert(name, i);
        Some(i)
    }

    fn get(&self, i: u32) -> &str {
        self.names.get(i as usize).map_or("", |n| n)
    }
}

/// Marks a score without a unit.
const NO_UNIT: u32 = u32::MAX;

/// One score of a compact row.
#[derive(Debug, Clone, Copy)]
struct CompactScore {
    value: f64,
    name: u32,
    unit: u32,
    pass: bool,
    borderline: bool,
}

/// A cell summary with nothing of its own to allocate: names by index,
/// scores as a range of [`Finished::scores`].
#[derive(Debug, Clone, Copy)]
struct Compact {
    metrics: Metrics,
    duration_ms: u64,
    events: u64,
    variant: u32,
    dataset: u32,
    case: u32,
    trial: u32,
    scores_from: u32,
    scores_len: u32,
    status: RunStatus,
    passed: bool,
    quarantined: bool,
}

/// The finished cells of one eval, in the order they finished.
#[derive(Debug, Default)]
pub(crate) struct Finished {
    names: Names,
    compact: Vec<Compact>,
    scores: Vec<CompactScore>,
    /// Cells that do not fit a [`Compact`] row, by their position among
    /// all the cells.
    records: Vec<(usize, CellRecord)>,
    /// How many of the cells differed from their snapshot.
    drift: usize,
}

impl Finished {
    /// Room for `cells` compact rows, so that the vector is not doubled
    /// (and held twice over while it moves) as the cells finish.
    pub(crate) fn with_capacity(cells: usize) -> Finished {
        Finished {
            compact: Vec::with_capacity(cells),
            ..Finished::default()
        }
    }

    /// How many cells finished.
    pub(crate) fn len(&self) -> usize {
        self.compact.len() + self.records.len()
    }

    /// How many of them differed from their snapshot.
    pub(crate) fn drift(&self) -> usize {
        self.drift
    }

    /// Keep `record` (a summary, [`CellRecord::into_summary`], or a whole record).
    pub(crate) fn push(&mut self, record: CellRecord, snapshot_ok: bool) {
        self.drift += usize::from(!snapshot_ok);
        let position = self.len();
        if let Err(record) = self.push_compact(record) {
            self.records.push((position, *record));
        }
    }

    /// Keep `record` as a compact row, or give it back when it holds more
    /// than a row can (any text of its own).
    fn push_compact(&mut self, record: CellRecord) -> Result<(), Box<CellRecord>> {
        let fits = record.input.is_null()
            && record.output.is_none()
            && record.error.is_none()
            && record.assertions.is_empty()
            && record.session_id.is_empty()
            && record.scores.values().all(|s| s.detail.is_none());
        let scores_from = u32::try_from(self.scores.len()).ok();
        let scores_len = u32::try_from(record.scores.len()).ok();
        let (true, Some(scores_from), Some(scores_len)) = (fits, scores_from, scores_len) else {
            return Err(Box::new(record));
        };
        let mut scores = Vec::with_capacity(record.scores.len());
        for (name, s) in &record.scores {
            let unit = match &s.unit {
                Some(unit) => self.names.intern(unit),
                None => Some(NO_UNIT),
            };
            let (Some(name), Some(unit)) = (self.names.intern(name), unit) else {
                return Err(Box::new(record));
            };
            scores.push(CompactScore {
                value: s.value,
                name,
                unit,
                pass: s.pass,
                borderline: s.borderline,
            });
        }
        let names = (
            self.names.intern(&record.variant),
            self.names.intern(&record.dataset),
            self.names.intern(&record.case),
        );
        let (Some(variant), Some(dataset), Some(case)) = names else {
            return Err(Box::new(record));
        };
        self.scores.extend(scores);
        self.compact.push(Compact {
            metrics: record.metrics,
            duration_ms: record.duration_ms,
            events: record.events as u64,
            variant,
            dataset,
            case,
            trial: record.trial,
            scores_from,
            scores_len,
            status: record.status,
            passed: record.passed,
            quarantined: record.quarantined,
        });
        Ok(())
    }

    /// Every cell's record, in the order they were pushed, as pushed.
    pub(crate) fn into_records(self) -> Vec<CellRecord> {
        let mut out = Vec::with_capacity(self.len());
        let mut records = self.records.into_iter().peekable();
        let mut compact = self.compact.into_iter();
        let (names, scores) = (&self.names, &self.scores);
        loop {
            if let Some((_, record)) = records.next_if(|(position, _)| *position == out.len()) {
                out.push(record);
                continue;
            }
            let Some(row) = compact.next() else {
                out.extend(records.map(|(_, record)| record));
                return out;
            };
            let from = row.scores_from as usize;
            let row_scores = scores
                .get(from..from + row.scores_len as usize)
                .unwrap_or_default();
            let mut record = CellRecord::new(names.get(row.variant), names.get(row.case));
            record.dataset = names.get(row.dataset).to_string();
            record.trial = row.trial;
            record.passed = row.passed;
            record.status = row.status;
            record.scores = row_scores
                .iter()
                .map(|s| {
                    let score = ScoreRecord {
                        pass: s.pass,
                        value: s.value,
                        unit: (s.unit != NO_UNIT).then(|| names.get(s.unit).to_string()),
                        detail: None,
                        borderline: s.borderline,
                    };
                    (names.get(s.name).to_string(), score)
                })
                .collect::<SmallMap<_, _>>();
            record.metrics = row.metrics;
            record.duration_ms = row.duration_ms;
            record.events = row.events as usize;
            record.quarantined = row.quarantined;
            out.push(record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passing(variant: &str, case: &str, trial: u32) -> CellRecord {
        let mut cell = CellRecord::new(variant, case);
        cell.dataset = "qa".into();
        cell.trial = trial;
        cell.passed = true;
        cell.metrics.latency_ms = 12 + u64::from(trial);
        cell.metrics.cost_usd = 0.25;
        cell.duration_ms = 12 + u64::from(trial);
        cell.events = 9;
        cell.scores.insert(
            "accuracy".to_string(),
            ScoreRecord {
                pass: true,
                value: 0.75,
                unit: Some("ratio".into()),
                detail: None,
                borderline: trial == 1,
            },
        );
        cell.scores.insert(
            "cost".to_string(),
            ScoreRecord {
                pass: false,
                value: 1.5,
                unit: None,
                detail: None,
                borderline: false,
            },
        );
        cell
    }

    #[test]
    fn gives_back_every_record_as_pushed_in_order() {
        let mut failing = CellRecord::new("gpt", "b");
        failing.error = Some("the provider answered 500".into());
        failing.status = RunStatus::Failed;
        let mut whole = passing("claude", "c", 0);
        whole.input = serde_json::json!({"question": "why?"});
        whole.session_id = "0199a3e0".into();
        let mut quarantined = passing("claude", "a", 2);
        quarantined.quarantined = true;
        quarantined.status = RunStatus::Terminated;
        let cells = vec![
            passing("gpt", "a", 0),
            failing,
            passing("gpt", "a", 1),
            whole,
            quarantined,
            CellRecord::new("gpt", "no-scores"),
        ];
        let mut finished = Finished::with_capacity(cells.len());
        for (i, cell) in cells.iter().enumerate() {
            finished.push(cell.clone(), i != 2);
        }
        assert_eq!(finished.len(), 6);
        assert_eq!(finished.drift(), 1);
        // Only the cells with text of their own are kept as records.
        assert_eq!(finished.records.len(), 2);
        assert_eq!(finished.compact.len(), 4);
        assert_eq!(finished.into_records(), cells);
    }

    #[test]
    fn records_pushed_last_come_back_last() {
        let mut finished = Finished::default();
        let mut failing = CellRecord::new("gpt", "z");
        failing.error = Some("boom".into());
        finished.push(passing("gpt", "a", 0), true);
        finished.push(failing.clone(), true);
        finished.push(failing.clone(), true);
        let records = finished.into_records();
        assert_eq!(
            records,
            vec![passing("gpt", "a", 0), failing.clone(), failing]
        );
    }

    #[test]
    fn names_are_kept_once() {
        let mut finished = Finished::default();
        for trial in 0..100 {
            finished.push(passing("gpt", "a", trial), true);
        }
        // gpt, qa, a, ratio, accuracy, cost.
        assert_eq!(finished.names.names.len(), 6);
        assert_eq!(finished.scores.len(), 200);
    }
}
