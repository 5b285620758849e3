//! Opening trace files: transparent gzip, and byte counting for progress.
//!
//! Gzip is recognised by its magic bytes (1f 8b), not by the file name, so a
//! renamed or extension-less compressed trace still reads. Progress counts
//! bytes taken from the file itself (compressed bytes for gzip), which is
//! what the file size can be compared with.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Large buffers: traces are read sequentially once, and fewer refills mean
/// fewer passes through the decompressor and the counting layer.
const BUF_BYTES: usize = 256 * 1024;

/// An opened trace file, positioned at its first (decompressed) byte.
pub(crate) struct Input {
    pub reader: Box<dyn BufRead + Send>,
    pub path: PathBuf,
    pub counter: ByteCounter,
}

/// Shared count of raw file bytes consumed, readable while the reader is
/// owned elsewhere (inside a decompressor).
#[derive(Clone, Debug, Default)]
pub(crate) struct ByteCounter {
    done: Arc<AtomicU64>,
    pub total: Option<u64>,
}

impl ByteCounter {
    pub fn progress(&self) -> super::Progress {
        let done = self.done.load(Ordering::Relaxed);
        super::Progress { done: self.total.map_or(done, |t| done.min(t)), total: self.total }
    }
}

struct Counting<R> {
    inner: R,
    done: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// True if the data starts with the gzip magic bytes.
pub(crate) fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

pub(crate) fn open_input(path: &Path) -> Result<Input> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let total = file.metadata().ok().map(|m| m.len());
    let counter = ByteCounter { done: Arc::default(), total };
    let counting = Counting { inner: file, done: counter.done.clone() };
    let mut raw = BufReader::with_capacity(BUF_BYTES, counting);
    let head = raw.fill_buf().map_err(|e| Error::io(path, e))?;
    let mut reader: Box<dyn BufRead + Send> = if is_gzip(head) {
        // Multi-member: `cat a.gz b.gz` and pigz output are valid gzip too.
        let dec = flate2::bufread::MultiGzDecoder::new(raw);
        Box::new(BufReader::with_capacity(BUF_BYTES, dec))
    } else {
        Box::new(raw)
    };
    skip_bom(&mut reader).map_err(|e| Error::io(path, e))?;
    Ok(Input { reader, path: path.to_path_buf(), counter })
}

const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Consumes a UTF-8 byte order mark at the start of the (decompressed)
/// text, which editors on Windows write and which is no part of the first
/// field. (The first fill of the 256 KiB buffer holds the whole mark.)
fn skip_bom(reader: &mut dyn BufRead) -> io::Result<()> {
    if reader.fill_buf()?.starts_with(UTF8_BOM) {
        reader.consume(UTF8_BOM.len());
    }
    Ok(())
}

/// What [`read_line_bounded`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// A line (with its `\n`, unless it ends the input) is in the buffer.
    Line,
    /// The input is at its end.
    End,
    /// The line is longer than the limit: the buffer holds its first bytes
    /// and the rest is still unread ([`skip_line`] discards it).
    TooLong,
}

/// Reads the next line into `buf` (cleared first), holding at most `max`
/// bytes of it, so one huge line (a corrupt file, a gzip bomb) is refused
/// before it is in memory.
pub(crate) fn read_line_bounded(reader: &mut dyn BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<LineRead> {
    buf.clear();
    loop {
        let avail = reader.fill_buf()?;
        if avail.is_empty() {
            return Ok(if buf.is_empty() { LineRead::End } else { LineRead::Line });
        }
        let (take, done) = match memchr::memchr(b'\n', avail) {
            Some(p) => (p + 1, true),
            None => (avail.len(), false),
        };
        let take = take.min(max + 1 - buf.len());
        buf.extend_from_slice(&avail[..take]);
        reader.consume(take);
        if buf.len() > max {
            return Ok(LineRead::TooLong);
        }
        if done {
            return Ok(LineRead::Line);
        }
    }
}

/// Discards input up to and including the next `\n`.
pub(crate) fn skip_line(reader: &mut dyn BufRead) -> io::Result<()> {
    loop {
        let avail = reader.fill_buf()?;
        if avail.is_empty() {
            return Ok(());
        }
        match memchr::memchr(b'\n', avail) {
            Some(p) => {
                reader.consume(p + 1);
                return Ok(());
            }
            None => {
                let n = avail.len();
                reader.consume(n);
            }
        }
    }
}

/// Reads up to `limit` bytes from the start of the (decompressed) file, for
/// format sniffing.
pub(crate) fn read_head(path: &Path, limit: usize) -> Result<Vec<u8>> {
    let input = open_input(path)?;
    let mut head = Vec::with_capacity(limit.min(1 << 20));
    input.reader.take(limit as u64).read_to_end(&mut head).map_err(|e| Error::io(path, e))?;
    Ok(head)
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for the readers' tests: temporary files, plain or gzipped.

    use std::io::Write;
    use std::path::PathBuf;

    pub struct TempTrace {
        _dir: tempfile::TempDir,
        pub path: PathBuf,
    }

    pub fn write_file(name: &str, data: &[u8]) -> TempTrace {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::write(&path, data).expect("write temp trace");
        TempTrace { _dir: dir, path }
    }

    /// Writes `data` to a temporary file and reads it all with `format`.
    pub fn read_all(
        format: &str,
        data: &[u8],
        skip_bad_lines: bool,
    ) -> crate::Result<(Vec<crate::trace::HostCmd>, u64)> {
        let t = write_file("trace", data);
        let opts = crate::trace::OpenOptions { format: Some(format.parse()?), skip_bad_lines };
        let mut o = crate::trace::open(&t.path, &opts)?;
        let mut cmds = Vec::new();
        while let Some(c) = o.source.next_cmd()? {
            cmds.push(c);
        }
        Ok((cmds, o.source.skipped_lines()))
    }

    pub use read_all as read_all_bytes;

    pub fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).expect("gzip");
        enc.finish().expect("gzip")
    }
}
