//! Text output of `blkparse` in its default format.
//!
//! `maj,min cpu seq seconds.nanoseconds pid action RWBS [sector + count] [process]`
//! as printed by blkparse(1) (blktrace package, default `-f` format). One
//! request is one dispatch (`D`, the request sent to the driver) event, which
//! is what the device saw: queue events (`Q`) precede merging and splitting
//! in the block layer. If a file holds no `D` event at all (captured with a
//! filter mask that excludes issues), the reader falls back to `Q` events;
//! the choice is made by a pre-scan that stops at the first `D` event, so it
//! costs a full read only for files that take the fallback.
//!
//! RWBS: `D` (discard) gives TRIM, else `W` a write, else `R` a read; an `F`
//! (flush) event without a sector range gives FLUSH. A flush combined with
//! data (`FWS 1234 + 8`) is taken as the write alone. Events without a sector
//! range are skipped: silently when their RWBS names no data (`N`), else
//! counted as zero-length requests (a SCSI passthrough's `BYTES (CDB)`); a
//! sector with no `+ COUNT` after it, or nothing after the RWBS, is a
//! truncated line and an error. Every other event type is skipped silently. The device (`maj,min`) is ignored: several devices share one address
//! space.
//!
//! The per-CPU and total summary blkparse prints at the end (`CPU0 (8,33):`,
//! ` Reads Queued: ...`, `Total (...)`, `Throughput ...`, `Events (...)`,
//! `Skips: ...`) is recognised and ignored; any other line that is not an
//! event is an error.

use super::Op;
use super::input::{LineRead, open_input, read_line_bounded, skip_line};
use super::num::{int, need_fields, scaled, sector_range, show, split_ws};
use super::text::{LineParser, Parsed, Raw};
use crate::error::{Error, Result};
use crate::limits::MAX_LINE_BYTES;
use std::path::Path;

pub(crate) struct BlkparseParser {
    /// The action letter taken as a request: `D`, or `Q` as a fallback.
    pub event: u8,
}

fn is_dev(f: &[u8]) -> bool {
    let Some(comma) = f.iter().position(|&b| b == b',') else {
        return false;
    };
    let (maj, min) = (&f[..comma], &f[comma + 1..]);
    !maj.is_empty() && !min.is_empty() && maj.iter().all(u8::is_ascii_digit) && min.iter().all(u8::is_ascii_digit)
}

/// Lines of blkparse's closing summary.
pub(crate) fn is_summary(line: &[u8]) -> bool {
    let trimmed = line.trim_ascii_start();
    let indented = trimmed.len() < line.len();
    let head_of = |p: &[u8]| trimmed.starts_with(p);
    if head_of(b"CPU") || head_of(b"Total (") || head_of(b"Throughput") || head_of(b"Events (") || head_of(b"Skips:") {
        return true;
    }
    // Statistic lines: indented, start with a word, and carry a colon.
    indented && trimmed.first().is_some_and(u8::is_ascii_alphabetic) && trimmed.contains(&b':')
}

/// Whether a line is an event line, and its action letter.
pub(crate) fn event_action(line: &[u8]) -> Option<u8> {
    let mut f = [&b""[..]; 6];
    let n = split_ws(line, &mut f);
    if n >= 7 && is_dev(f[0]) && f[5].len() == 1 { Some(f[5][0]) } else { None }
}

impl LineParser for BlkparseParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 10];
        let n = split_ws(line, &mut f);
        if !is_dev(f[0]) {
            if is_summary(line) {
                return Ok(Parsed::Ignore);
            }
            return Err("not a blkparse event line (expected 'maj,min cpu seq time pid action RWBS ...')".into());
        }
        need_fields(n, 7)?;
        if f[5] != [self.event] {
            return Ok(Parsed::Ignore);
        }
        let rwbs = f[6];
        let has = |c: u8| rwbs.contains(&c);
        let time_ns = scaled("timestamp", f[3], 9)?;
        let op = if has(b'D') {
            Op::Trim
        } else if has(b'W') {
            Op::Write
        } else if has(b'R') {
            Op::Read
        } else if has(b'F') {
            return Ok(Parsed::Cmd(Raw { time_ns, op: Op::Flush, start: 0, sectors: 0 }));
        } else {
            return Ok(Parsed::Ignore);
        };
        // After RWBS: `SECTOR + COUNT [PROCESS]`, or with no range a
        // passthrough's `BYTES (CDB) [PROCESS]` or just `[PROCESS]`.
        let no_range = match (n, f[7].first(), f[8].first()) {
            (10.., _, _) if f[8] == b"+" => {
                let (start, sectors) = sector_range(int("sector", f[7])?, int("sector count", f[9])?)?;
                return Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }));
            }
            (9.., Some(b'0'..=b'9'), Some(b'(')) | (8.., Some(b'['), _) => true,
            (0..=7, ..) => false,
            _ => {
                let got = show(&f[7..n.min(10)].join(&b' '));
                return Err(format!("malformed or truncated sector range '{got}' (expected 'SECTOR + COUNT')"));
            }
        };
        if has(b'F') {
            Ok(Parsed::Cmd(Raw { time_ns, op: Op::Flush, start: 0, sectors: 0 }))
        } else if no_range {
            // No sectors: counted as zero-length.
            Ok(Parsed::Cmd(Raw { time_ns, op, start: 0, sectors: 0 }))
        } else {
            Err("truncated event line: nothing after RWBS (expected 'SECTOR + COUNT [PROCESS]')".into())
        }
    }
}

/// Picks the event letter for a file: `D` if it has any, else `Q` if it has
/// any, else `D` (the file then yields nothing).
pub(crate) fn choose_event(path: &Path) -> Result<u8> {
    let mut input = open_input(path)?;
    let mut buf = Vec::with_capacity(256);
    let mut seen_q = false;
    let io = |e| Error::io(path, e);
    loop {
        match read_line_bounded(input.reader.as_mut(), &mut buf, MAX_LINE_BYTES).map_err(io)? {
            LineRead::End => return Ok(if seen_q { b'Q' } else { b'D' }),
            // The reader reports it with its line number.
            LineRead::TooLong => skip_line(input.reader.as_mut()).map_err(io)?,
            LineRead::Line => {}
        }
        match event_action(&buf) {
            Some(b'D') => return Ok(b'D'),
            Some(b'Q') => seen_q = true,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::read_all;

    const SAMPLE: &[u8] = b"  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]
  8,0    3        2     0.000001000   697  D   W 223490 + 8 [kjournald]
  8,33   4        1     0.000002000  3922  D   N 0 (00 ..) [kworker/u65:0]
  8,0    3        3     0.000003000   697  C   W 223490 + 8 [0]
  8,0    1        4     0.000004500   697  D   R 100 + 16 [cat]
  8,0    1        5     0.000005000   697  D  DS 4096 + 2048 [fstrim]
  8,0    1        6     0.000006000   697  D  FN [kworker]
  8,0    1        7     0.000007000   697  D FWS 10 + 8 [jbd2]
  8,0    1        8     0.000008000   697  m   N cfq697 insert_request

CPU0 (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           0,        0KiB
 Read depth:           165        \t Write depth:           512
Total (8,0):
 IO unplugs:             0        \t Timer unplugs:           0

Throughput (R/W): 0KiB/s / 0KiB/s
Events (8,0): 677 entries
Skips: 0 forward (0 -   0.0%)
";

    #[test]
    fn dispatch_events() {
        let (cmds, _) = read_all("blkparse", SAMPLE, false).unwrap();
        let got: Vec<_> = cmds.iter().map(|c| (c.time.0, c.op, c.start.0, c.sectors)).collect();
        assert_eq!(
            got,
            vec![
                (0, Op::Write, 223490, 8),
                (3500, Op::Read, 100, 16),
                (4000, Op::Trim, 4096, 2048),
                (5000, Op::Flush, 0, 0),
                (6000, Op::Write, 10, 8),
            ]
        );
    }

    #[test]
    fn queue_fallback() {
        let data =
            b"  8,0 3 1 0.5 697 Q W 8 + 8 [a]\n  8,0 3 2 0.6 697 C W 8 + 8 [a]\n  8,0 3 3 0.7 697 Q R 16 + 8 [a]\n";
        let (cmds, _) = read_all("blkparse", data, false).unwrap();
        assert_eq!(cmds.len(), 2);
        assert_eq!(cmds[1].time.0, 200_000_000);
    }

    #[test]
    fn truncated_ranges_are_bad_lines_and_rangeless_data_events_are_counted() {
        for (line, why) in [
            (&b"  8,0 3 2 0.6 697 D W 16 +"[..], "truncated sector range '16 +'"),
            (b"  8,0 3 2 0.6 697 D W 16", "truncated sector range '16'"),
            (b"  8,0 3 2 0.6 697 D W 16 8 [a]", "truncated sector range '16 8 [a]'"),
            (b"  8,0 3 2 0.6 697 D W", "truncated event line: nothing after RWBS"),
        ] {
            let mut data = b"  8,0 3 1 0.5 697 D W 8 + 8 [a]\n".to_vec();
            data.extend_from_slice(line);
            data.extend_from_slice(b"\n  8,0 3 3 0.7 697 D W 24 + 8 [a]\n");
            let err = read_all("blkparse", &data, false).unwrap_err().to_string();
            assert!(err.contains(":2: ") && err.contains(why), "{err}");
            assert_eq!(read_all("blkparse", &data, true).unwrap().1, 1);
        }
        let data =
            b"  8,0 3 1 0.5 697 D W 8 + 8 [a]\n  8,0 3 2 0.6 697 D W [a]\n  8,0 3 3 0.7 697 D WS 0 (2a 00 ..) [sg]\n";
        let t = super::super::input::testutil::write_file("b", data);
        let opts = super::super::OpenOptions { format: Some("blkparse".parse().unwrap()), skip_bad_lines: false };
        let mut o = super::super::open(&t.path, &opts).unwrap();
        let mut n = 0;
        while o.source.next_cmd().unwrap().is_some() {
            n += 1;
        }
        assert_eq!((n, o.source.zero_length()), (1, 2));
    }

    #[test]
    fn bad_lines() {
        let data = b"  8,0 3 1 0.5 697 D W 8 + 8 [a]\nhello world\n  8,0 3 1 x 697 D W 8 + 8 [a]\n  8,0 3 1 0.9 697 D R -8 + 8 [a]\n  8,0 3\n";
        let err = read_all("blkparse", data, false).unwrap_err().to_string();
        assert!(err.contains(":2: not a blkparse event line"), "{err}");
        let (cmds, skipped) = read_all("blkparse", data, true).unwrap();
        assert_eq!((cmds.len(), skipped), (1, 4));
    }
}
