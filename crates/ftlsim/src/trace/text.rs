//! The line loop shared by every text reader.
//!
//! A format only says how one line becomes a command ([`LineParser`]); this
//! module owns the rest so every format behaves the same: one reused line
//! buffer, lines of at most [`MAX_LINE_BYTES`], 1-based line numbers in
//! errors, blank lines ignored, bad lines
//! either reported or skipped and counted, zero-length requests skipped and
//! counted (they move no data, and some real traces contain them), and times
//! rebased so the first command arrives at zero.

use super::input::{ByteCounter, Input, LineRead, read_line_bounded, skip_line};
use super::{CmdSource, HostCmd, Op, Progress};
use crate::error::{Error, Result};
use crate::limits::MAX_LINE_BYTES;
use crate::units::{Sector, SimTime};
use std::io::BufRead;

/// One command as a format states it, before rebasing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Raw {
    /// Absolute time in the trace's own epoch, converted to ns.
    pub time_ns: u64,
    pub op: Op,
    pub start: u64,
    pub sectors: u64,
}

pub(crate) enum Parsed {
    Cmd(Raw),
    /// A line that carries no command: a header, another event type, a
    /// summary line.
    Ignore,
}

pub(crate) trait LineParser: Send {
    /// Parses one line, without its line terminator and never blank.
    fn parse(&mut self, line: &[u8]) -> std::result::Result<Parsed, String>;

    /// Moves the further LBA ranges of the multi-range TRIM just parsed
    /// (`(sector, sectors)`) into `into`; formats with one range per line
    /// have none.
    fn take_ranges(&mut self, _into: &mut Vec<(u64, u64)>) {}
}

/// Turns absolute trace times into times relative to the first command.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rebase {
    first: Option<u64>,
    last: SimTime,
    /// Times earlier than the first command's (see [`Rebase::apply`]).
    pub clamped: u64,
}

impl Rebase {
    /// A time earlier than the first command's cannot be made relative to
    /// it: it is replayed at its predecessor's time and counted here. Other
    /// times going backwards are the host layer's to clamp and count.
    #[inline]
    pub fn apply(&mut self, t: u64) -> SimTime {
        let first = *self.first.get_or_insert(t);
        match t.checked_sub(first) {
            Some(rel) => self.last = SimTime(rel),
            None => self.clamped += 1,
        }
        self.last
    }
}

/// Shared counters and the skip policy, used by text and binary readers.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub skip_bad: bool,
    pub skipped: u64,
    pub zero_length: u64,
}

pub(crate) struct TextSource<P> {
    name: String,
    reader: Box<dyn BufRead + Send>,
    counter: ByteCounter,
    buf: Vec<u8>,
    line: u64,
    parser: P,
    tally: Tally,
    rebase: Rebase,
    /// Ranges of a multi-range TRIM line not yet returned, in order.
    pending: std::collections::VecDeque<HostCmd>,
    ranges: Vec<(u64, u64)>,
}

impl<P: LineParser> TextSource<P> {
    pub fn new(input: Input, parser: P, skip_bad: bool) -> Self {
        TextSource {
            name: input.path.display().to_string(),
            reader: input.reader,
            counter: input.counter,
            buf: Vec::with_capacity(256),
            line: 0,
            parser,
            tally: Tally { skip_bad, ..Tally::default() },
            rebase: Rebase::default(),
            pending: std::collections::VecDeque::new(),
            ranges: Vec::new(),
        }
    }
}

#[inline]
fn trim_end(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r' | b' ' | b'\t'] = line {
        line = rest;
    }
    line
}

impl<P: LineParser> TextSource<P> {
    /// Hands the next line to `f`, parsed in place in the reader's buffer
    /// when it lies whole inside it (the common case: no copy), else
    /// assembled in `self.buf`. `Ok(None)` at the end of the input.
    #[inline]
    fn with_next_line(
        &mut self,
        f: impl FnOnce(&mut P, &[u8]) -> std::result::Result<Parsed, String>,
    ) -> Result<Option<std::result::Result<Parsed, String>>> {
        self.line += 1;
        let avail = self.reader.fill_buf().map_err(|e| Error::io(&self.name, e))?;
        if let Some(pos) = memchr::memchr(b'\n', avail) {
            let out = f(&mut self.parser, &avail[..pos]);
            self.reader.consume(pos + 1);
            return Ok(Some(out));
        }
        // The line straddles buffer refills (or is the last, unterminated one).
        let io = |e| Error::io(&self.name, e);
        match read_line_bounded(self.reader.as_mut(), &mut self.buf, MAX_LINE_BYTES).map_err(io)? {
            LineRead::End => Ok(None),
            LineRead::Line => Ok(Some(f(&mut self.parser, &self.buf))),
            LineRead::TooLong => {
                skip_line(self.reader.as_mut()).map_err(|e| Error::io(&self.name, e))?;
                Ok(Some(Err(format!("line longer than {MAX_LINE_BYTES} bytes: not a trace line"))))
            }
        }
    }
}

impl<P: LineParser> TextSource<P> {
    /// Queues the ranges of a multi-range TRIM line (zero-length ones
    /// skipped and counted) and returns the first.
    fn multi_range(&mut self, time: SimTime, first: Raw) -> Option<HostCmd> {
        let ranges = std::iter::once((first.start, first.sectors)).chain(self.ranges.drain(..));
        for (start, sectors) in ranges {
            if sectors == 0 {
                self.tally.zero_length += 1;
                continue;
            }
            let start = Sector(start);
            self.pending.push_back(HostCmd { time, op: Op::Trim, start, sectors, continued: true });
        }
        if let Some(last) = self.pending.back_mut() {
            last.continued = false;
        }
        self.pending.pop_front()
    }
}

impl<P: LineParser> CmdSource for TextSource<P> {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        if let Some(c) = self.pending.pop_front() {
            return Ok(Some(c));
        }
        loop {
            let parsed = self.with_next_line(|parser, line| {
                let line = trim_end(line);
                if line.is_empty() || line.iter().all(|b| b.is_ascii_whitespace()) {
                    return Ok(Parsed::Ignore);
                }
                parser.parse(line)
            })?;
            match parsed {
                None => return Ok(None),
                Some(Ok(Parsed::Ignore)) => {}
                Some(Ok(Parsed::Cmd(raw))) => {
                    if raw.op == Op::Trim {
                        self.parser.take_ranges(&mut self.ranges);
                        if !self.ranges.is_empty() {
                            let time = self.rebase.apply(raw.time_ns);
                            if let Some(first) = self.multi_range(time, raw) {
                                return Ok(Some(first));
                            }
                            continue;
                        }
                    }
                    if raw.sectors == 0 && raw.op != Op::Flush {
                        self.tally.zero_length += 1;
                        continue;
                    }
                    let time = self.rebase.apply(raw.time_ns);
                    return Ok(Some(HostCmd {
                        time,
                        op: raw.op,
                        start: Sector(raw.start),
                        sectors: raw.sectors,
                        continued: false,
                    }));
                }
                Some(Err(reason)) => {
                    if self.tally.skip_bad {
                        self.tally.skipped += 1;
                    } else {
                        return Err(Error::Trace { file: self.name.clone(), line: self.line, reason });
                    }
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::super::formats;
    use super::super::input::testutil::{gzip, read_all, write_file};
    use proptest::prelude::*;

    /// Lines made of the characters trace fields are built from, so random
    /// input gets deep into the parsers rather than failing at the first byte.
    fn lines() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                Just(b'0'),
                Just(b'1'),
                Just(b'9'),
                Just(b','),
                Just(b' '),
                Just(b'\t'),
                Just(b'\n'),
                Just(b'\r'),
                Just(b'.'),
                Just(b'-'),
                Just(b'+'),
                Just(b'e'),
                Just(b'R'),
                Just(b'W'),
                Just(b'D'),
                Just(b'F'),
                any::<u8>(),
            ],
            0..300,
        )
    }

    #[test]
    fn a_trace_without_requests_is_an_error_unless_lines_were_skipped() {
        for data in [&b""[..], b"\n\n", b"time_ns,op,sector,sectors\n", b"time_ns,op,sector,sectors\n0,W,8,0\n"] {
            let err = read_all("csv", data, false).unwrap_err().to_string();
            assert!(err.contains(": no requests"), "{err}");
        }
        let err = read_all("csv", b"0,W,8,0\n", false).unwrap_err().to_string();
        assert!(err.ends_with(": no requests: only 1 zero-length"), "{err}");
        let err = read_all("blktrace", b"", false).unwrap_err().to_string();
        assert!(err.ends_with(": no requests"), "{err}");
        let (cmds, skipped) = read_all("csv", b"time_ns,op,sector,sectors\nbad\n", true).unwrap();
        assert_eq!((cmds.len(), skipped), (0, 1));
    }

    #[test]
    fn a_line_beyond_the_limit_is_refused_before_it_is_held() {
        let long = crate::limits::MAX_LINE_BYTES + 10;
        let mut data = b"0,W,0,8\n".to_vec();
        data.extend(std::iter::repeat_n(b'1', long));
        data.extend_from_slice(b"\n10,W,8,8\n");
        for input in [data.clone(), gzip(&data)] {
            let err = read_all("csv", &input, false).unwrap_err().to_string();
            assert!(err.contains(":2: line longer than 1048576 bytes"), "{err}");
            let (cmds, skipped) = read_all("csv", &input, true).unwrap();
            assert_eq!((cmds.len(), skipped), (2, 1), "the rest of the long line is skipped with it");
        }
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_field() {
        let data = b"\xef\xbb\xbftime_ns,op,sector,sectors\n5,W,8,8\n";
        for input in [data.to_vec(), gzip(data)] {
            let (cmds, _) = read_all("csv", &input, false).unwrap();
            assert_eq!(cmds.len(), 1);
        }
        let t = write_file("bom.csv", data);
        assert!(matches!(crate::trace::detect(&t.path).unwrap(), crate::trace::Format::Csv(_)));
    }

    #[test]
    fn timestamps_before_the_first_are_replayed_at_their_predecessors_time_and_counted() {
        let t = write_file("t.csv", b"100,W,0,8\n300,W,8,8\n50,W,16,8\n400,W,24,8\n");
        let opts = crate::trace::OpenOptions { format: Some("csv".parse().unwrap()), skip_bad_lines: false };
        let mut o = crate::trace::open(&t.path, &opts).unwrap();
        let mut times = Vec::new();
        while let Some(c) = o.source.next_cmd().unwrap() {
            times.push(c.time.0);
        }
        assert_eq!((times, o.source.clamped_timestamps()), (vec![0, 200, 200, 300], 1));
        // A box reports its source's count to generic code too (method
        // syntax would reach the source itself through `Deref`).
        fn count<S: crate::trace::CmdSource>(s: &S) -> u64 {
            s.clamped_timestamps()
        }
        assert_eq!(count(&o.source), 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn no_panic_on_any_input(data in lines(), head in 0usize..3) {
            let prefixes: [&[u8]; 3] = [b"", b"  8,0 1 1 0.1 5 D W 8 + 8 [x]\n", b"\x07\x74\x61\x65"];
            let mut input = prefixes[head].to_vec();
            input.extend_from_slice(&data);
            for name in formats() {
                for skip in [false, true] {
                    let _ = read_all(name, &input, skip);
                }
            }
            let _ = read_all("csv:time=2,op=0,offset=1,size=3,sep=ws,header=auto,time_unit=filetime", &input, true);
            let _ = super::super::detect::detect_bytes(&input, std::path::Path::new("x"));
        }
    }
}
