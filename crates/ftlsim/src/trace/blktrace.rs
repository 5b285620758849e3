//! Binary blktrace per-CPU files (`DEV.blktrace.N`), read without blkparse.
//!
//! Each record is `struct blk_io_trace` (48 bytes: u32 magic, u32 sequence,
//! u64 time ns, u64 sector, u32 bytes, u32 action, u32 pid, u32 device,
//! u32 cpu, u16 error, u16 pdu_len) followed by `pdu_len` payload bytes,
//! in the byte order of the recording machine, detected from the magic
//! (`0x65617400 | version`, version 7). Layout and constants from Linux
//! `include/uapi/linux/blktrace_api.h`: the low 16 bits of `action` are the
//! event (`__BLK_TA_QUEUE` = 1, `__BLK_TA_ISSUE` = 7, ...), the high 16 bits
//! the category mask (`BLK_TC_READ` = 1 << 0, `WRITE` 1 << 1, `FLUSH`
//! 1 << 2, `NOTIFY` 1 << 10, `DISCARD` 1 << 13).
//!
//! As with blkparse text, requests are issue (`D`) events, or queue (`Q`)
//! events for a file without any issue event. Op: discard → TRIM, write →
//! WRITE, any other with bytes → READ, flush without bytes → FLUSH; the rest
//! (notify records, zero-byte events) is skipped silently.
//!
//! blktrace writes one file per CPU. Opening `NAME.blktrace.N` reads every
//! sibling `NAME.blktrace.*` in the same directory (same suffix after the
//! CPU number, e.g. `.gz`) and merges them by timestamp, as blkparse does;
//! a file whose name does not follow that pattern is read alone.
//!
//! Simplification: the device field is ignored. "Line" in error messages is the 1-based record
//! number. A record with a bad magic means the stream is corrupt from there
//! on, so it is always an error, even with `skip_bad_lines`; a truncated final
//! record is a bad record (skipped and counted with `skip_bad_lines`).

use super::input::{ByteCounter, Input, open_input};
use super::text::{Rebase, Tally};
use super::{CmdSource, HostCmd, NonEmpty, Op, Progress};
use crate::error::{Error, Result};
use crate::units::{SECTOR_BYTES, Sector};
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

pub(crate) const MAGIC: u32 = 0x6561_7400;
pub(crate) const VERSION: u32 = 0x07;
pub(crate) const RECORD_BYTES: usize = 48;

pub(crate) const TA_QUEUE: u32 = 1;
pub(crate) const TA_ISSUE: u32 = 7;
pub(crate) const TC_READ: u32 = 1 << 0;
pub(crate) const TC_WRITE: u32 = 1 << 1;
pub(crate) const TC_FLUSH: u32 = 1 << 2;
pub(crate) const TC_NOTIFY: u32 = 1 << 10;
pub(crate) const TC_DISCARD: u32 = 1 << 13;

/// True if `head` starts with a blktrace magic in either byte order.
pub(crate) fn is_blktrace(head: &[u8]) -> bool {
    let Some(m) = head.get(..4) else { return false };
    let m: [u8; 4] = [m[0], m[1], m[2], m[3]];
    u32::from_le_bytes(m) & 0xffff_ff00 == MAGIC || u32::from_be_bytes(m) & 0xffff_ff00 == MAGIC
}

/// The fields of one record this reader uses.
#[derive(Clone, Copy, Debug)]
struct Record {
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
}

enum ReadRec {
    Rec(Record),
    End,
    Truncated,
}

/// Reads until `buf` is full or the input ends; returns bytes read.
fn read_full(r: &mut dyn BufRead, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

struct RecordReader {
    reader: Box<dyn BufRead + Send>,
    big_endian: Option<bool>,
}

impl RecordReader {
    /// The next record header, with its payload skipped. `Err(reason)` for a
    /// record that cannot be decoded.
    fn next(&mut self) -> io::Result<std::result::Result<ReadRec, String>> {
        let mut h = [0u8; RECORD_BYTES];
        let got = read_full(&mut *self.reader, &mut h)?;
        if got == 0 {
            return Ok(Ok(ReadRec::End));
        }
        if got < RECORD_BYTES {
            return Ok(Ok(ReadRec::Truncated));
        }
        let magic_bytes = [h[0], h[1], h[2], h[3]];
        let be = match self.big_endian {
            Some(be) => be,
            None => {
                let be = u32::from_le_bytes(magic_bytes) & 0xffff_ff00 != MAGIC;
                self.big_endian = Some(be);
                be
            }
        };
        let u32_at = |i: usize| {
            let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
            if be { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }
        };
        let u64_at = |i: usize| {
            let b = [h[i], h[i + 1], h[i + 2], h[i + 3], h[i + 4], h[i + 5], h[i + 6], h[i + 7]];
            if be { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) }
        };
        let magic = u32_at(0);
        if magic & 0xffff_ff00 != MAGIC {
            return Ok(Err(format!("bad magic 0x{magic:08x}: not a blktrace record (corrupt or not blktrace)")));
        }
        if magic & 0xff != VERSION {
            return Ok(Err(format!("unsupported blktrace version {} (expected {VERSION})", magic & 0xff)));
        }
        let pdu_len = {
            let b = [h[46], h[47]];
            if be { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) }
        };
        let rec = Record { time: u64_at(8), sector: u64_at(16), bytes: u32_at(24), action: u32_at(28) };
        if pdu_len > 0 {
            let skipped = io::copy(&mut (&mut self.reader).take(pdu_len as u64), &mut io::sink())?;
            if skipped < pdu_len as u64 {
                return Ok(Ok(ReadRec::Truncated));
            }
        }
        Ok(Ok(ReadRec::Rec(rec)))
    }
}

pub(crate) struct BlktraceSource {
    name: String,
    records: RecordReader,
    counter: ByteCounter,
    record: u64,
    event: u32,
    tally: Tally,
    rebase: Rebase,
    done: bool,
}

impl BlktraceSource {
    pub fn new(input: Input, event: u32, skip_bad: bool) -> Self {
        BlktraceSource {
            name: input.path.display().to_string(),
            records: RecordReader { reader: input.reader, big_endian: None },
            counter: input.counter,
            record: 0,
            event,
            tally: Tally { skip_bad, ..Tally::default() },
            rebase: Rebase::default(),
            done: false,
        }
    }

    fn err(&self, reason: String) -> Error {
        Error::Trace { file: self.name.clone(), line: self.record, reason }
    }
}

fn decode(rec: &Record) -> Option<(Op, u64, u64)> {
    let cat = rec.action >> 16;
    if cat & TC_NOTIFY != 0 {
        return None;
    }
    let sectors = (rec.bytes as u64).div_ceil(SECTOR_BYTES);
    let op = if cat & TC_DISCARD != 0 {
        Op::Trim
    } else if cat & TC_WRITE != 0 {
        Op::Write
    } else if rec.bytes > 0 {
        Op::Read
    } else if cat & TC_FLUSH != 0 {
        return Some((Op::Flush, 0, 0));
    } else {
        return None;
    };
    if sectors == 0 && cat & TC_FLUSH != 0 {
        return Some((Op::Flush, 0, 0));
    }
    Some((op, rec.sector, sectors))
}

type RawCmd = (u64, Op, u64, u64);

impl CmdSource for BlktraceSource {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        Ok(self.next_raw()?.map(|(t, op, start, sectors)| {
            let time = self.rebase.apply(t);
            HostCmd { time, op, start: Sector(start), sectors, continued: false }
        }))
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn skipped_lines(&self) -> u64 {
        self.tally.skipped
    }

    fn zero_length(&self) -> u64 {
        self.tally.zero_length
    }

    fn clamped_timestamps(&self) -> u64 {
        self.rebase.clamped
    }

    fn progress(&self) -> Progress {
        self.counter.progress()
    }
}

impl BlktraceSource {
    /// The next command with its absolute trace time.
    fn next_raw(&mut self) -> Result<Option<RawCmd>> {
        while !self.done {
            let next = self.records.next().map_err(|e| Error::io(&self.name, e))?;
            self.record += 1;
            let rec = match next {
                Ok(ReadRec::Rec(rec)) => rec,
                Ok(ReadRec::End) => {
                    self.done = true;
                    break;
                }
                Ok(ReadRec::Truncated) => {
                    self.done = true;
                    if self.tally.skip_bad {
                        self.tally.skipped += 1;
                        break;
                    }
                    return Err(self.err("truncated record at end of file".into()));
                }
                Err(reason) => {
                    self.done = true;
                    return Err(self.err(reason));
                }
            };
            if rec.action & 0xffff != self.event {
                continue;
            }
            let Some((op, start, sectors)) = decode(&rec) else {
                continue;
            };
            if start.checked_add(sectors).and_then(|e| e.checked_mul(SECTOR_BYTES)).is_none() {
                if self.tally.skip_bad {
                    self.tally.skipped += 1;
                    continue;
                }
                return Err(self.err(format!("sector range {start} + {sectors} overflows")));
            }
            if sectors == 0 && op != Op::Flush {
                self.tally.zero_length += 1;
                continue;
            }
            return Ok(Some((rec.time, op, start, sectors)));
        }
        Ok(None)
    }
}

/// Per-CPU files of one capture, merged by time.
pub(crate) struct MergedSource {
    name: String,
    parts: Vec<BlktraceSource>,
    heads: Vec<Option<RawCmd>>,
    /// The part whose head was taken last and must be refilled: refilling
    /// lazily means an error there cannot lose the command already returned.
    refill: Option<usize>,
    started: bool,
    rebase: Rebase,
}

impl CmdSource for MergedSource {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        if !self.started {
            for (part, head) in self.parts.iter_mut().zip(self.heads.iter_mut()) {
                *head = part.next_raw()?;
            }
            self.started = true;
        }
        if let Some(i) = self.refill.take() {
            self.heads[i] = self.parts[i].next_raw()?;
        }
        let mut best: Option<(usize, u64)> = None;
        for (i, head) in self.heads.iter().enumerate() {
            if let Some((t, ..)) = head
                && best.is_none_or(|(_, bt)| *t < bt)
            {
                best = Some((i, *t));
            }
        }
        let Some((i, _)) = best else { return Ok(None) };
        let Some((t, op, start, sectors)) = self.heads[i].take() else {
            return Ok(None);
        };
        self.refill = Some(i);
        let time = self.rebase.apply(t);
        Ok(Some(HostCmd { time, op, start: Sector(start), sectors, continued: false }))
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn skipped_lines(&self) -> u64 {
        self.parts.iter().map(|p| p.tally.skipped).sum()
    }

    fn zero_length(&self) -> u64 {
        self.parts.iter().map(|p| p.tally.zero_length).sum()
    }

    fn clamped_timestamps(&self) -> u64 {
        self.rebase.clamped
    }

    fn progress(&self) -> Progress {
        let mut p = Progress { done: 0, total: Some(0) };
        for part in &self.parts {
            let q = part.counter.progress();
            p.done += q.done;
            p.total = p.total.zip(q.total).map(|(a, b)| a + b);
        }
        p
    }
}

/// The per-CPU siblings of `path` (including itself), sorted by CPU, or just
/// `path` if its name is not `NAME.blktrace.N[SUFFIX]`.
pub(crate) fn siblings(path: &Path) -> Vec<PathBuf> {
    let alone = vec![path.to_path_buf()];
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return alone;
    };
    let Some((prefix, _, suffix)) = split_cpu_name(name) else {
        return alone;
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return alone;
    };
    let mut found: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let (p, c, s) = split_cpu_name(&n)?;
            (p == prefix && s == suffix && e.path().is_file()).then(|| (c, dir.join(&n)))
        })
        .collect();
    if found.is_empty() {
        return alone;
    }
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// `sda.blktrace.12.gz` → (`sda`, 12, `.gz`).
fn split_cpu_name(name: &str) -> Option<(&str, u64, &str)> {
    let idx = name.rfind(".blktrace.")?;
    let rest = &name[idx + ".blktrace.".len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let cpu = rest[..digits].parse().ok()?;
    Some((&name[..idx], cpu, &rest[digits..]))
}

/// Opens a capture: all its per-CPU files, merged if there are several.
pub(crate) fn open_capture(path: &Path, skip_bad: bool) -> Result<Box<dyn CmdSource>> {
    let files = siblings(path);
    // The event type is chosen per capture: issue events if any CPU has them.
    let mut event = TA_QUEUE;
    for f in &files {
        if choose_event(f)? == TA_ISSUE {
            event = TA_ISSUE;
            break;
        }
    }
    let mut parts = Vec::with_capacity(files.len());
    for f in &files {
        parts.push(BlktraceSource::new(open_input(f)?, event, skip_bad));
    }
    if parts.len() == 1
        && let Some(only) = parts.pop()
    {
        return Ok(Box::new(NonEmpty::new(only)));
    }
    let name = format!("{} (+{} CPU files)", path.display(), parts.len().saturating_sub(1));
    let heads = vec![None; parts.len()];
    let merged = MergedSource { name, parts, heads, refill: None, started: false, rebase: Rebase::default() };
    Ok(Box::new(NonEmpty::new(merged)))
}

/// Issue events if the file has any, else queue events if it has any.
pub(crate) fn choose_event(path: &Path) -> Result<u32> {
    let input = open_input(path)?;
    let mut records = RecordReader { reader: input.reader, big_endian: None };
    let mut seen_queue = false;
    loop {
        match records.next().map_err(|e| Error::io(path, e))? {
            Ok(ReadRec::Rec(rec)) => match rec.action & 0xffff {
                TA_ISSUE if (rec.action >> 16) & TC_NOTIFY == 0 => return Ok(TA_ISSUE),
                TA_QUEUE if (rec.action >> 16) & TC_NOTIFY == 0 => seen_queue = true,
                _ => {}
            },
            // Decoding errors are reported by the real pass, with a position.
            _ => return Ok(if seen_queue { TA_QUEUE } else { TA_ISSUE }),
        }
    }
}

/// Encodes one record (test data and the trace writer).
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode(
    out: &mut Vec<u8>,
    big_endian: bool,
    seq: u32,
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    pdu: &[u8],
) {
    let w32 =
        |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&if big_endian { v.to_be_bytes() } else { v.to_le_bytes() });
    let w64 =
        |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&if big_endian { v.to_be_bytes() } else { v.to_le_bytes() });
    w32(out, MAGIC | VERSION);
    w32(out, seq);
    w64(out, time);
    w64(out, sector);
    w32(out, bytes);
    w32(out, action);
    for _ in 0..3 {
        w32(out, 0); // pid, device, cpu
    }
    let tail: [u8; 2] = if big_endian { 0u16.to_be_bytes() } else { 0u16.to_le_bytes() };
    out.extend_from_slice(&tail); // error
    let len = u16::try_from(pdu.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&if big_endian { len.to_be_bytes() } else { len.to_le_bytes() });
    out.extend_from_slice(&pdu[..len as usize]);
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::{gzip, read_all_bytes};
    use super::*;

    const ISSUE_TC: u32 = 1 << 6;
    const QUEUE_TC: u32 = 1 << 4;

    fn sample(be: bool) -> Vec<u8> {
        let mut v = Vec::new();
        let act = |ev: u32, cat: u32| ev | (cat << 16);
        encode(&mut v, be, 0, 1_000, 100, 4096, act(TA_QUEUE, QUEUE_TC | TC_WRITE), &[]);
        encode(&mut v, be, 1, 2_000, 100, 4096, act(TA_ISSUE, ISSUE_TC | TC_WRITE), &[]);
        encode(&mut v, be, 2, 2_500, 0, 0, act(0, TC_NOTIFY), b"process name\0");
        encode(&mut v, be, 3, 3_000, 8, 512, act(TA_ISSUE, ISSUE_TC | TC_READ), &[1, 2, 3]);
        encode(&mut v, be, 4, 4_000, 64, 1 << 20, act(TA_ISSUE, ISSUE_TC | TC_WRITE | TC_DISCARD), &[]);
        encode(&mut v, be, 5, 5_000, 0, 0, act(TA_ISSUE, ISSUE_TC | TC_FLUSH | TC_WRITE), &[]);
        encode(&mut v, be, 6, 6_000, 0, 0, act(8, 1 << 7 | TC_READ), &[]);
        v
    }

    fn expected() -> Vec<(u64, Op, u64, u64)> {
        vec![(0, Op::Write, 100, 8), (1_000, Op::Read, 8, 1), (2_000, Op::Trim, 64, 2048), (3_000, Op::Flush, 0, 0)]
    }

    #[test]
    fn both_byte_orders_and_gzip() {
        for be in [false, true] {
            for gz in [false, true] {
                let data = if gz { gzip(&sample(be)) } else { sample(be) };
                let (cmds, _) = read_all_bytes("blktrace", &data, false).unwrap();
                let got: Vec<_> = cmds.iter().map(|c| (c.time.0, c.op, c.start.0, c.sectors)).collect();
                assert_eq!(got, expected(), "be={be} gz={gz}");
            }
        }
    }

    #[test]
    fn queue_fallback() {
        let mut v = Vec::new();
        encode(&mut v, false, 0, 10, 100, 4096, TA_QUEUE | ((QUEUE_TC | TC_READ) << 16), &[]);
        encode(&mut v, false, 1, 30, 200, 4096, TA_QUEUE | ((QUEUE_TC | TC_READ) << 16), &[]);
        let (cmds, _) = read_all_bytes("blktrace", &v, false).unwrap();
        assert_eq!(cmds.len(), 2);
        assert_eq!(cmds[1].time.0, 20);
    }

    #[test]
    fn merges_cpu_files() {
        let dir = tempfile::tempdir().unwrap();
        let issue = |cat: u32| TA_ISSUE | ((ISSUE_TC | cat) << 16);
        let mut cpu0 = Vec::new();
        encode(&mut cpu0, false, 0, 100, 1, 512, issue(TC_READ), &[]);
        encode(&mut cpu0, false, 1, 400, 4, 512, issue(TC_READ), &[]);
        let mut cpu1 = Vec::new();
        encode(&mut cpu1, false, 0, 200, 2, 512, issue(TC_WRITE), &[]);
        encode(&mut cpu1, false, 1, 300, 3, 512, issue(TC_WRITE), &[]);
        std::fs::write(dir.path().join("sdb.blktrace.0"), &cpu0).unwrap();
        std::fs::write(dir.path().join("sdb.blktrace.1"), gzip(&cpu1)).unwrap();
        std::fs::write(dir.path().join("sdb.blktrace.1.gz"), b"other suffix: not a sibling").unwrap();
        std::fs::write(dir.path().join("sdc.blktrace.0"), b"other device").unwrap();
        let path = dir.path().join("sdb.blktrace.1");
        assert_eq!(siblings(&path).len(), 2);
        let mut src = open_capture(&path, false).unwrap();
        let mut got = Vec::new();
        while let Some(c) = src.next_cmd().unwrap() {
            got.push((c.time.0, c.start.0));
        }
        assert_eq!(got, vec![(0, 1), (100, 2), (200, 3), (300, 4)]);
        let p = src.progress();
        assert_eq!(Some(p.done), p.total);
        assert_eq!(split_cpu_name("a.b.blktrace.12.gz"), Some(("a.b", 12, ".gz")));
        assert_eq!(split_cpu_name("sda.blktrace"), None);
    }

    #[test]
    fn corrupt_input() {
        let mut v = sample(false);
        v.truncate(v.len() - 10);
        let err = read_all_bytes("blktrace", &v, false).unwrap_err().to_string();
        assert!(err.ends_with(":7: truncated record at end of file"), "{err}");
        let (cmds, skipped) = read_all_bytes("blktrace", &v, true).unwrap();
        assert_eq!((cmds.len(), skipped), (4, 1));

        let mut v = sample(false);
        // Top byte of the fourth record's (little-endian) magic; the third
        // record carries a 13-byte PDU.
        v[RECORD_BYTES * 3 + 13 + 3] = 0;
        let err = read_all_bytes("blktrace", &v, false).unwrap_err().to_string();
        assert!(err.contains(":4: bad magic 0x00617407"), "{err}");

        let mut v = Vec::new();
        encode(&mut v, false, 0, 10, 100, 4096, TA_ISSUE | (TC_READ << 16), &[]);
        v[0] = 0x06; // version 6
        let err = read_all_bytes("blktrace", &v, false).unwrap_err().to_string();
        assert!(err.ends_with(":1: unsupported blktrace version 6 (expected 7)"), "{err}");
    }
}
