//! What the finished cells of one eval leave for the summary, in little
//! memory.
//!
//! A suite of 10,000 cells keeps 10,000 cell summaries until its reports
//! are written. As [`CellRecord`]s (320 bytes before their strings, each
//! string and score list its own allocation between the cells' short-lived
//! buffers) they took about 570 bytes each and kept the allocator from
//! returning the pages around them. A passing cell's summary is mostly
//! small numbers and names every other cell repeats (variant, dataset,
//! scorers), so it is kept here as a row of bytes in one growing buffer:
//! the repeated names interned, the numbers as variable-length integers
//! (floats as their exact bits), the case id inline. A row of a typical
//! cell takes 30 to 50 bytes. Anything else (a failure's message, a
//! borderline judgement, a whole record) stays a [`CellRecord`]. The
//! records are rebuilt, exactly as they were pushed, when the summary asks.

use std::collections::HashMap;
use std::sync::Arc;

use crate::eval::CellRecord;
use crate::eval::results::ScoreRecord;
use crate::eval::small_map::SmallMap;
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

    fn get(&self, i: u64) -> &str {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.names.get(i))
            .map_or("", |n| n)
    }
}

/// The flags byte of a row.
const PASSED: u8 = 1;
const QUARANTINED: u8 = 1 << 1;
/// The run status takes bits 2 and 3.
const STATUS_SHIFT: u8 = 2;
/// `duration_ms` is `metrics.latency_ms` (as the harness sets it).
const DURATION_IS_LATENCY: u8 = 1 << 4;
/// `metrics.cost_usd` is +0.0.
const NO_COST: u8 = 1 << 5;

/// The flags byte of a score.
const SCORE_PASSED: u8 = 1;
const SCORE_BORDERLINE: u8 = 1 << 1;

fn status_bits(status: RunStatus) -> u8 {
    match status {
        RunStatus::Completed => 0,
        RunStatus::Failed => 1,
        RunStatus::Terminated => 2,
    }
}

fn status_of(bits: u8) -> RunStatus {
    match bits {
        1 => RunStatus::Failed,
        2 => RunStatus::Terminated,
        _ => RunStatus::Completed,
    }
}

/// Appends a row's fields to the buffer.
struct RowWriter<'a>(&'a mut Vec<u8>);

impl RowWriter<'_> {
    fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    /// LEB128: seven bits a byte, low bits first.
    fn uint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn float(&mut self, x: f64) {
        self.0.extend_from_slice(&x.to_bits().to_le_bytes());
    }

    fn text(&mut self, s: &str) {
        self.uint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
}

/// Reads a row's fields back, in the order they were written.
struct RowReader<'a>(&'a [u8]);

impl RowReader<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    fn uint(&mut self) -> u64 {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte();
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        n
    }

    fn float(&mut self) -> f64 {
        let (bytes, rest) = self.0.split_at(self.0.len().min(8));
        self.0 = rest;
        let mut bits = [0u8; 8];
        bits[..bytes.len()].copy_from_slice(bytes);
        f64::from_bits(u64::from_le_bytes(bits))
    }

    fn text(&mut self) -> &str {
        let len = usize::try_from(self.uint()).unwrap_or(usize::MAX);
        let (text, rest) = self.0.split_at(self.0.len().min(len));
        self.0 = rest;
        // Written from a `&str`, cut at its own length.
        std::str::from_utf8(text).unwrap_or("")
    }
}

/// The finished cells of one eval, in the order they finished.
#[derive(Debug, Default)]
pub(crate) struct Finished {
    names: Names,
    /// The rows of the cells that fit one, one after the other.
    rows: Vec<u8>,
    /// How many rows `rows` holds.
    row_count: usize,
    /// Cells that do not fit a row, by their position among all the cells.
    records: Vec<(usize, CellRecord)>,
}

/// Room set aside per expected cell: most rows fit.
const ROW_BYTES: usize = 48;

impl Finished {
    /// Room for `cells` typical rows, so that the buffer is seldom moved
    /// (and held twice over while it moves) as the cells finish: at 10,000
    /// cells the run peaks 0.2-0.4 MiB lower than with a buffer that grows.
    pub(crate) fn with_capacity(cells: usize) -> Finished {
        Finished {
            rows: Vec::with_capacity(cells.saturating_mul(ROW_BYTES)),
            ..Finished::default()
        }
    }

    /// How many cells finished.
    pub(crate) fn len(&self) -> usize {
        self.row_count + self.records.len()
    }

    /// Keep `record` (a summary, [`CellRecord::into_summary`], or a whole record).
    pub(crate) fn push(&mut self, record: CellRecord) {
        let position = self.len();
        if let Err(record) = self.push_row(record) {
            self.records.push((position, *record));
        }
    }

    /// Keep `record` as a row, or give it back when it holds more than a
    /// row can (any text of its own but its case id).
    fn push_row(&mut self, record: CellRecord) -> Result<(), Box<CellRecord>> {
        let fits = record.input.is_null()
            && record.output.is_none()
            && record.error.is_none()
            && record.assertions.is_empty()
            && record.session_id.is_empty()
            && record.retries == 0
            && !(record.excluded || record.unplayable || record.snapshot_changed)
            && record.scores.values().all(|s| s.detail.is_none());
        if !fits {
            return Err(Box::new(record));
        }
        // Names first: past u32::MAX of them, nothing is written.
        let mut score_names = Vec::with_capacity(record.scores.len());
        for (name, s) in &record.scores {
            let unit = match &s.unit {
                Some(unit) => self.names.intern(unit).map(|u| u64::from(u) + 1),
                None => Some(0),
            };
            let (Some(name), Some(unit)) = (self.names.intern(name), unit) else {
                return Err(Box::new(record));
            };
            score_names.push((name, unit));
        }
        let (Some(variant), Some(dataset)) = (
            self.names.intern(&record.variant),
            self.names.intern(&record.dataset),
        ) else {
            return Err(Box::new(record));
        };
        let m = &record.metrics;
        let mut flags = status_bits(record.status) << STATUS_SHIFT;
        for (set, flag) in [
            (record.passed, PASSED),
            (record.quarantined, QUARANTINED),
            (record.duration_ms == m.latency_ms, DURATION_IS_LATENCY),
            (m.cost_usd.to_bits() == 0, NO_COST),
        ] {
            if set {
                flags |= flag;
            }
        }
        let mut w = RowWriter(&mut self.rows);
        w.byte(flags);
        w.uint(u64::from(variant));
        w.uint(u64::from(dataset));
        w.text(&record.case);
        w.uint(u64::from(record.trial));
        for n in [
            m.latency_ms,
            m.input_tokens,
            m.output_tokens,
            m.total_tokens,
        ] {
            w.uint(n);
        }
        if flags & NO_COST == 0 {
            w.float(m.cost_usd);
        }
        for n in [m.unpriced_calls, m.activations, m.provider_calls] {
            w.uint(n);
        }
        if flags & DURATION_IS_LATENCY == 0 {
            w.uint(record.duration_ms);
        }
        w.uint(record.events as u64);
        w.uint(score_names.len() as u64);
        for ((name, unit), s) in score_names.into_iter().zip(record.scores.values()) {
            w.uint(u64::from(name));
            w.uint(unit);
            w.float(s.value);
            let mut score_flags = 0;
            if s.pass {
                score_flags |= SCORE_PASSED;
            }
            if s.borderline {
                score_flags |= SCORE_BORDERLINE;
            }
            w.byte(score_flags);
        }
        self.row_count += 1;
        Ok(())
    }

    /// Every cell's record, in the order they were pushed, as pushed.
    pub(crate) fn into_records(self) -> Vec<CellRecord> {
        let mut out = Vec::with_capacity(self.len());
        let mut records = self.records.into_iter().peekable();
        let mut reader = RowReader(&self.rows);
        let names = &self.names;
        let mut rows_left = self.row_count;
        loop {
            if let Some((_, record)) = records.next_if(|(position, _)| *position == out.len()) {
                out.push(record);
                continue;
            }
            if rows_left == 0 {
                out.extend(records.map(|(_, record)| record));
                return out;
            }
            rows_left -= 1;
            out.push(read_row(&mut reader, names));
        }
    }
}

/// The next row of `r` as the record it was written from.
fn read_row(r: &mut RowReader<'_>, names: &Names) -> CellRecord {
    let flags = r.byte();
    let variant = names.get(r.uint());
    let dataset = names.get(r.uint());
    let mut record = CellRecord::new(variant, r.text());
    record.dataset = dataset.to_string();
    record.trial = u32::try_from(r.uint()).unwrap_or(u32::MAX);
    record.passed = flags & PASSED != 0;
    record.quarantined = flags & QUARANTINED != 0;
    record.status = status_of((flags >> STATUS_SHIFT) & 0b11);
    let m = &mut record.metrics;
    m.latency_ms = r.uint();
    m.input_tokens = r.uint();
    m.output_tokens = r.uint();
    m.total_tokens = r.uint();
    m.cost_usd = if flags & NO_COST == 0 { r.float() } else { 0.0 };
    m.unpriced_calls = r.uint();
    m.activations = r.uint();
    m.provider_calls = r.uint();
    record.duration_ms = if flags & DURATION_IS_LATENCY == 0 {
        r.uint()
    } else {
        record.metrics.latency_ms
    };
    record.events = usize::try_from(r.uint()).unwrap_or(usize::MAX);
    let scores = usize::try_from(r.uint()).unwrap_or(0);
    let mut map = SmallMap::with_capacity(scores);
    for _ in 0..scores {
        let name = names.get(r.uint());
        let unit = r.uint();
        let value = r.float();
        let score_flags = r.byte();
        let score = ScoreRecord {
            pass: score_flags & SCORE_PASSED != 0,
            value,
            unit: (unit != 0).then(|| names.get(unit - 1).to_string()),
            detail: None,
            borderline: score_flags & SCORE_BORDERLINE != 0,
        };
        map.insert(name.to_string(), score);
    }
    record.scores = map;
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

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
        for cell in &cells {
            finished.push(cell.clone());
        }
        assert_eq!(finished.len(), 6);
        // Only the cells with text of their own are kept as records.
        assert_eq!(finished.records.len(), 2);
        assert_eq!(finished.row_count, 4);
        assert_eq!(finished.into_records(), cells);
    }

    #[test]
    fn records_pushed_last_come_back_last() {
        let mut finished = Finished::default();
        let mut failing = CellRecord::new("gpt", "z");
        failing.error = Some("boom".into());
        finished.push(passing("gpt", "a", 0));
        finished.push(failing.clone());
        finished.push(failing.clone());
        let records = finished.into_records();
        assert_eq!(
            records,
            vec![passing("gpt", "a", 0), failing.clone(), failing]
        );
    }

    #[test]
    fn names_are_kept_once_and_rows_are_small() {
        let mut finished = Finished::default();
        for trial in 0..100 {
            finished.push(passing("gpt", "case-0042", trial));
        }
        // gpt, accuracy, ratio, cost, qa: the case id is in each row.
        assert_eq!(finished.names.names.len(), 5);
        assert_eq!(finished.row_count, 100);
        // Two scores with their values' 16 bytes, and metrics with a cost.
        let per_row = finished.rows.len() / 100;
        assert!((40..=56).contains(&per_row), "{per_row} bytes a row");
    }

    /// Any record comes back as it was pushed, whether it fits a row or not:
    /// extreme numbers, floats of every kind, names past one byte of index.
    #[test]
    fn every_record_comes_back_as_pushed() {
        use proptest::prelude::*;
        let number = prop_oneof![Just(0u64), 0..300u64, Just(u64::MAX), any::<u64>()];
        let float = prop_oneof![
            Just(0.0f64),
            Just(-0.0),
            Just(f64::NAN),
            Just(f64::INFINITY),
            any::<f64>()
        ];
        let status = prop_oneof![
            Just(RunStatus::Completed),
            Just(RunStatus::Failed),
            Just(RunStatus::Terminated)
        ];
        let score = (
            any::<bool>(),
            float.clone(),
            proptest::option::of("[a-z%]{0,4}"),
            proptest::option::of(".{0,6}"),
            any::<bool>(),
        )
            .prop_map(|(pass, value, unit, detail, borderline)| ScoreRecord {
                pass,
                value,
                unit,
                detail,
                borderline,
            });
        let record = (
            (
                0..300u32,
                "[a-z]{0,3}",
                ".{0,12}",
                any::<u32>(),
                any::<bool>(),
                any::<bool>(),
            ),
            (
                status,
                proptest::collection::vec(number.clone(), 8),
                float,
                number.clone(),
            ),
            (
                proptest::collection::btree_map("[a-z]{1,3}", score, 0..4),
                proptest::option::of("[a-z ]{0,8}"),
                any::<u64>(),
            ),
        )
            .prop_map(|(ids, run, rest)| {
                let (variant, dataset, case, trial, passed, quarantined) = ids;
                let (status, numbers, cost, duration) = run;
                let (scores, error, events) = rest;
                let mut c = CellRecord::new(format!("v{variant}"), case);
                c.dataset = dataset;
                c.trial = trial;
                c.passed = passed;
                c.quarantined = quarantined;
                c.status = status;
                c.error = error;
                c.metrics = Metrics {
                    latency_ms: numbers[0],
                    input_tokens: numbers[1],
                    output_tokens: numbers[2],
                    total_tokens: numbers[3],
                    cost_usd: cost,
                    unpriced_calls: numbers[4],
                    activations: numbers[5],
                    provider_calls: numbers[6],
                };
                c.duration_ms = if numbers[7] % 2 == 0 {
                    c.metrics.latency_ms
                } else {
                    duration
                };
                c.events = usize::try_from(events).unwrap_or(usize::MAX);
                c.scores = scores.into_iter().collect();
                c
            });
        let config = ProptestConfig {
            cases: 300,
            ..ProptestConfig::default()
        };
        proptest!(config, |(cells in proptest::collection::vec(record, 0..40))| {
            let mut finished = Finished::with_capacity(cells.len());
            for cell in &cells {
                finished.push(cell.clone());
            }
            let back = finished.into_records();
            // Compared as JSON text and bits: NaN is not equal to itself.
            prop_assert_eq!(back.len(), cells.len());
            for (b, c) in back.iter().zip(&cells) {
                prop_assert_eq!(
                    b.metrics.cost_usd.to_bits(),
                    c.metrics.cost_usd.to_bits()
                );
                let bits = |r: &CellRecord| -> Vec<u64> {
                    r.scores.values().map(|s| s.value.to_bits()).collect()
                };
                prop_assert_eq!(bits(b), bits(c));
                let text = |r: &CellRecord| {
                    let mut r = r.clone();
                    r.metrics.cost_usd = 0.0;
                    for s in r.scores.values_mut() {
                        s.value = 0.0;
                    }
                    format!("{r:?}")
                };
                prop_assert_eq!(text(b), text(c));
            }
        });
    }
}
