//! Reports written cell by cell, when memory holds cell summaries
//! ([`CellRecord::into_summary`]) and the whole records are elsewhere (the
//! store): the JSON document and JUnit XML show what a summary drops (the
//! input, the output, the passed assertions).

use std::io::{self, Write};

use crate::eval::CellRecord;

/// How many whole cell records a streamed report asks for at a time
/// (256 held 2.4 MB of parsed JSON at the end of a 10,000-cell run).
pub const STREAM_CHUNK: usize = 64;

/// Where the whole records of cell summaries come from: given up to
/// [`STREAM_CHUNK`] summaries, their whole records in the same order (`None`
/// keeps a cell as it is).
pub trait Details: FnMut(&[CellRecord]) -> Result<Vec<Option<CellRecord>>, String> {}

impl<F: FnMut(&[CellRecord]) -> Result<Vec<Option<CellRecord>>, String>> Details for F {}

/// The cells as they are: for records that are already whole.
pub fn as_they_are(chunk: &[CellRecord]) -> Result<Vec<Option<CellRecord>>, String> {
    Ok(vec![None; chunk.len()])
}

/// Call `each` with every cell of `cells` made whole by `details`
/// ([`CellRecord::with_details`]), in order, one chunk of whole records in
/// memory at a time.
pub(crate) fn each_whole(
    cells: &[CellRecord],
    details: &mut impl Details,
    mut each: impl FnMut(&CellRecord) -> io::Result<()>,
) -> io::Result<()> {
    for chunk in cells.chunks(STREAM_CHUNK) {
        let whole = details(chunk).map_err(io::Error::other)?;
        if whole.len() != chunk.len() {
            return Err(io::Error::other(format!(
                "asked for {} cell records, got {}",
                chunk.len(),
                whole.len()
            )));
        }
        for (summary, whole) in chunk.iter().zip(whole) {
            match whole {
                Some(whole) => each(&summary.clone().with_details(whole))?,
                None => each(summary)?,
            }
        }
    }
    Ok(())
}

/// A writer that passes bytes through to `out` and, the first time they
/// spell `marker`, writes the marker and then calls `at_marker` with `out`.
pub(crate) struct Splice<'m, W, F> {
    out: W,
    marker: &'m [u8],
    /// How many bytes of the marker the latest bytes matched (held back).
    matched: usize,
    at_marker: Option<F>,
}

impl<'m, W: Write, F: FnOnce(&mut W) -> io::Result<()>> Splice<'m, W, F> {
    /// `marker` must not repeat its first byte (a restart after a partial
    /// match only looks at the byte that broke it).
    pub(crate) fn new(out: W, marker: &'m str, at_marker: F) -> Self {
        Splice {
            out,
            marker: marker.as_bytes(),
            matched: 0,
            at_marker: Some(at_marker),
        }
    }

    /// The writer, once everything is written; an error if the marker never came.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        if self.at_marker.is_some() {
            return Err(io::Error::other(format!(
                "the document has no `{}`",
                String::from_utf8_lossy(self.marker).trim()
            )));
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write, F: FnOnce(&mut W) -> io::Result<()>> Write for Splice<'_, W, F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        for (i, &b) in buf.iter().enumerate() {
            if self.at_marker.is_none() {
                break;
            }
            if b == self.marker[self.matched] {
                if self.matched == 0 {
                    self.out.write_all(&buf[start..i])?;
                }
                self.matched += 1;
                start = i + 1;
                if self.matched == self.marker.len() {
                    self.out.write_all(self.marker)?;
                    self.matched = 0;
                    if let Some(f) = self.at_marker.take() {
                        f(&mut self.out)?;
                    }
                }
            } else if self.matched > 0 {
                // Held-back bytes that were not the marker after all.
                self.out.write_all(&self.marker[..self.matched])?;
                self.matched = 0;
                start = i;
                if b == self.marker[0] {
                    self.matched = 1;
                    start = i + 1;
                }
            }
        }
        if self.matched == 0 {
            self.out.write_all(&buf[start..])?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splice(pieces: &[&str]) -> String {
        let mut s = Splice::new(Vec::new(), "\n  \"r\": [", |out: &mut Vec<u8>| {
            out.extend_from_slice(b"<cells>");
            Ok(())
        });
        for p in pieces {
            s.write_all(p.as_bytes()).unwrap();
        }
        String::from_utf8(s.finish().unwrap()).unwrap()
    }

    #[test]
    fn splices_once_wherever_the_writes_break() {
        let doc = "{\n  \"a\": 1,\n    \"r\": [],\n  \"r\": [],\n  \"r\": []\n}";
        let want = "{\n  \"a\": 1,\n    \"r\": [],\n  \"r\": [<cells>],\n  \"r\": []\n}";
        assert_eq!(splice(&[doc]), want);
        for cut in 0..doc.len() {
            assert_eq!(splice(&[&doc[..cut], &doc[cut..]]), want, "cut at {cut}");
        }
        let bytes: Vec<String> = doc.chars().map(String::from).collect();
        let refs: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(splice(&refs), want);
    }

    #[test]
    fn a_document_without_the_marker_is_an_error() {
        let mut s = Splice::new(Vec::new(), "\n  \"r\": [", |_: &mut Vec<u8>| Ok(()));
        s.write_all(b"{\n  \"r\"").unwrap();
        let e = s.finish().unwrap_err();
        assert_eq!(e.to_string(), "the document has no `\"r\": [`");
    }
}
