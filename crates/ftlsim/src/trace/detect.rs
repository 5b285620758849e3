//! Guessing a trace's format from its first bytes.
//!
//! Binary blktrace is recognised by its record magic. Text formats are
//! recognised from up to [`SNIFF_LINES`] non-blank lines at the start of the
//! (decompressed) file: a format is a candidate if every sniffed line fits
//! its layout (field count, separator, op tokens, numeric fields), allowing
//! the header line of formats that have one and blkparse's summary lines.
//! Candidates are tried most specific first. ftlsim's own csv header and the
//! complete SYSTOR '17 header decide alone, so bad lines under them are the
//! reader's to report.
//!
//! When nothing fits, the error quotes the line that stops the format
//! fitting the most lines from the top, with its real line number.
//!
//! DiskSim, SSDsim and MQSim all write five whitespace-separated numbers
//! `time dev sector size op`, so content alone cannot always tell them apart:
//! - a time with a decimal point means DiskSim (milliseconds as decimals);
//!   integer times mean SSDsim or MQSim (nanoseconds);
//! - a file name containing `disksim`, `ssdsim` or `mqsim` decides (so does
//!   an `.ascii` extension, SSDsim's convention) when it is consistent with
//!   the content;
//! - otherwise integer times are taken as MQSim. SSDsim and MQSim have the
//!   same layout and op encoding (1 = read, 0 = write), so that choice does not
//!   change the commands read.
//!
//! A detected format can still be a guess: [`doubts`] names the other
//! layouts the examined lines also fit, and values implausible for the
//! chosen format (five-number sizes that are all multiples of 512, as byte
//! sizes read as sectors would be: a FlashNet/LinnOS trace
//! `ts_ms dev offset_bytes size_bytes op` fits the DiskSim layout).
//!
//! Likewise the comma-separated 5-field formats are told apart by their op
//! column: SPC has `r`/`w` in column 3, Alibaba `R`/`W` in column 1, Tencent
//! `0`/`1` in column 3.

use super::blkparse::{event_action, is_summary};
use super::blktrace::is_blktrace;
use super::csv::NATIVE_HEADER;
use super::format::Format;
use super::input::read_head;
use super::num::{parse_scaled, parse_u64, split_sep, split_ws};
use super::systor17;
use crate::error::{Error, Result};
use std::path::Path;

/// Whether one line fits a format's layout.
type LinePred = fn(&[u8]) -> bool;

/// Lines looked at.
pub const SNIFF_LINES: usize = 20;
const HEAD_BYTES: usize = 64 * 1024;

/// Guesses the format of the trace at `path`.
pub fn detect(path: &Path) -> Result<Format> {
    let head = read_head(path, HEAD_BYTES)?;
    detect_bytes(&head, path)
}

/// Characters of an unrecognised line quoted in the error: enough to
/// recognise it, short enough to keep the message on one screen line.
const QUOTE_CHARS: usize = 60;

/// Detection failures concern the whole file, not one line: `line: 0` makes
/// the message name only the file, and the lines examined are in the reason.
fn fail(path: &Path, examined: Option<u64>, why: &str) -> Error {
    let from = match examined {
        None => String::new(),
        Some(1) => " from its first line".to_string(),
        Some(n) => format!(" from its first {n} lines"),
    };
    Error::Trace {
        file: path.display().to_string(),
        line: 0,
        reason: format!(
            "could not detect the trace format{from}: {why}; pass --format with one of: {} (csv also as csv:MAPPING)",
            super::formats().join(", ")
        ),
    }
}

/// A line as the error message quotes it: lossy UTF-8, shortened, control
/// characters escaped so the message stays on one line.
fn quote(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut out: String = text
        .chars()
        .take(QUOTE_CHARS)
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect();
    if text.chars().nth(QUOTE_CHARS).is_some() {
        out.push_str("...");
    }
    out
}

/// A non-blank line at the start of the file, with its 1-based line number
/// (blank lines are skipped, so the index alone would misname it).
#[derive(Clone, Copy)]
struct Sniffed<'a> {
    no: u64,
    text: &'a [u8],
}

pub(crate) fn detect_bytes(head: &[u8], path: &Path) -> Result<Format> {
    if is_blktrace(head) {
        return Ok(Format::Blktrace);
    }
    if head.is_empty() {
        return Err(fail(path, None, "the file is empty"));
    }
    let complete = if head.len() < HEAD_BYTES {
        head
    } else {
        // Drop the partial last line of a truncated head.
        match memchr::memrchr(b'\n', head) {
            Some(p) => &head[..p],
            None => head,
        }
    };
    let mut physical = 0;
    let sniffed: Vec<Sniffed> = complete
        .split(|&b| b == b'\n')
        .zip(1..)
        .inspect(|&(_, no)| physical = no)
        .map(|(l, no)| Sniffed { no, text: l.strip_suffix(b"\r").unwrap_or(l) })
        .filter(|l| !l.text.trim_ascii().is_empty())
        .take(SNIFF_LINES)
        .collect();
    let Some(last) = sniffed.last() else {
        // A trailing newline splits off one empty piece that is not a line.
        let lines = physical - u64::from(complete.ends_with(b"\n"));
        return Err(fail(path, Some(lines), if lines == 1 { "it is blank" } else { "all are blank" }));
    };
    let examined = Some(last.no);
    if let Some(bin) = sniffed.iter().find(|l| l.text.contains(&0)) {
        let why = format!("line {} holds binary data (a NUL byte) and the file is not blktrace", bin.no);
        return Err(fail(path, examined, &why));
    }
    let lines: Vec<&[u8]> = sniffed.iter().map(|l| l.text).collect();
    let all = |pred: LinePred, skip_header: usize| lines.iter().skip(skip_header).all(|l| pred(l));

    if lines.iter().any(|l| event_action(l).is_some()) && all(blkparse_line, 0) {
        return Ok(Format::Blkparse);
    }
    // The native header is ftlsim's own and nothing else writes it, so it
    // decides alone: requiring the data lines to fit as well would turn one
    // bad line near the top into "format unknown" instead of the csv
    // reader's error naming that line (or skipping it with skip_bad_lines).
    if is_native_header(lines[0]) {
        return Ok(Format::native());
    }
    // The complete SYSTOR '17 header decides alone for the same reason. A
    // first line merely starting with "Timestamp" does not: other CSVs name
    // their first column so, and only data lines that fit make those systor17.
    if systor17::is_full_header(lines[0]) {
        return Ok(Format::Systor17);
    }
    if systor17::is_header(lines[0]) && all(systor_line, 1) {
        return Ok(Format::Systor17);
    }
    for (pred, format) in candidates() {
        if all(pred, 0) {
            if format == Format::Mqsim {
                return Ok(five_column_family(&lines, path));
            }
            return Ok(format);
        }
    }
    Err(fail(path, examined, &no_fit(&sniffed, path)))
}

/// Warnings on a detected `format`: other formats that fit every examined
/// line, and values implausible for `format`. Empty when the guess is sure.
pub fn doubts(path: &Path, format: &Format) -> Result<Vec<String>> {
    if *format == Format::Blktrace {
        return Ok(Vec::new());
    }
    let head = read_head(path, HEAD_BYTES)?;
    let complete = match memchr::memrchr(b'\n', &head) {
        Some(p) if head.len() >= HEAD_BYTES => &head[..p],
        _ => &head[..],
    };
    let lines: Vec<&[u8]> = complete
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.trim_ascii().is_empty())
        .take(SNIFF_LINES)
        .collect();
    let name = path.display();
    let n = lines.len();
    let mut out = Vec::new();
    let five = matches!(format, Format::Disksim | Format::Ssdsim | Format::Mqsim);
    let mut others: Vec<String> = candidates()
        .into_iter()
        .filter(|(pred, f)| *f != Format::Mqsim && f != format && n > 0 && lines.iter().all(|l| pred(l)))
        .map(|(_, f)| f.to_string())
        .collect();
    // SSDsim and MQSim times are integer nanoseconds: a decimal time rules them out.
    let decimal_time = lines.iter().any(|l| l.split(u8::is_ascii_whitespace).next().is_some_and(|t| t.contains(&b'.')));
    if five {
        if !decimal_time {
            let alternatives = ["disksim", "ssdsim", "mqsim"].into_iter().filter(|f| *f != format.to_string());
            others.extend(alternatives.map(String::from));
        }
    } else if n > 0 && lines.iter().all(|l| five_numbers(l)) {
        others.extend(["disksim", "ssdsim", "mqsim"].map(String::from));
    }
    if !others.is_empty() {
        out.push(format!(
            "{name}: format guessed as {format}, but its first {n} lines also fit {}; pass --format to be sure",
            others.join(", ")
        ));
    }
    if five {
        let sizes: Vec<u64> = lines
            .iter()
            .filter_map(|l| {
                let mut f = [&b""[..]; 5];
                (split_ws(l, &mut f) == 5).then(|| parse_u64(f[3]).ok()).flatten()
            })
            .collect();
        if !sizes.is_empty() && sizes.iter().all(|&s| s > 0 && s % 512 == 0) {
            out.push(format!(
                "{name}: read as {format}, every request size in the first {n} lines is a multiple of 512 sectors \
                 (256 KiB): these look like byte sizes (a FlashNet/LinnOS trace, `ts_ms dev offset_bytes size_bytes op`?); \
                 if so, pass --format csv:sep=space,time=0,offset=2,size=3,op=4,time_unit=ms,offset_unit=B,size_unit=B"
            ));
        }
    }
    Ok(out)
}

/// Text layouts tried in turn when no header decides, most specific first.
/// The five-number layout stands for DiskSim, SSDsim and MQSim.
fn candidates() -> [(LinePred, Format); 9] {
    [
        (wiscsee_line, Format::Wiscsee),
        (fiu_line, Format::Fiu),
        (msr_line, Format::Msr),
        (systor_line, Format::Systor17),
        (spc_line, Format::Spc),
        (alibaba_line, Format::Alibaba),
        (tencent_line, Format::Tencent),
        (native_line, Format::native()),
        (five_numbers, Format::Mqsim),
    ]
}

/// Why no format fits, naming the line that defeats the closest one: the
/// format fitting the longest run of lines from the top is most likely the
/// file's own, and the line ending that run is the one to look at.
fn no_fit(sniffed: &[Sniffed], path: &Path) -> String {
    let lines: Vec<&[u8]> = sniffed.iter().map(|l| l.text).collect();
    let run = |pred: LinePred, header: fn(&[u8]) -> bool| {
        let skip = usize::from(header(lines[0]));
        skip + lines[skip..].iter().take_while(|l| pred(l)).count()
    };
    let no_header = |_: &[u8]| false;
    // Summary lines alone are not blkparse: without an event line they
    // could be any indented "key: value" text.
    let blkparse = match run(blkparse_line, no_header) {
        n if lines[..n].iter().any(|l| event_action(l).is_some()) => n,
        _ => 0,
    };
    let mut best = (blkparse, Format::Blkparse);
    for (pred, format) in candidates() {
        let header: fn(&[u8]) -> bool = match format {
            Format::Systor17 => systor17::is_header,
            _ => no_header,
        };
        let n = run(pred, header);
        if n > best.0 {
            best = (n, format);
        }
    }
    let (n, format) = best;
    // Every format fitting all the lines was detected, so `n` ends before
    // the last line; `min` keeps a future slip from panicking here.
    let bad = sniffed[n.min(sniffed.len() - 1)];
    if n == 0 {
        return format!("line {} '{}' matches no known format", bad.no, quote(bad.text));
    }
    let format = if format == Format::Mqsim { five_column_family(&lines[..n], path) } else { format };
    let (first, last) = (sniffed[0].no, sniffed[n - 1].no);
    let fit = if first == last { format!("line {first} looks") } else { format!("lines {first}-{last} look") };
    format!("{fit} like {format} but line {} '{}' does not", bad.no, quote(bad.text))
}

/// The native header, also with blanks or quotes around its names (as a
/// spreadsheet may save it) or with further columns, which the csv reader
/// ignores.
fn is_native_header(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 4];
    split_sep(l, b',', &mut f) >= 4 && NATIVE_HEADER.split(',').zip(f).all(|(want, got)| got == want.as_bytes())
}

fn five_column_family(lines: &[&[u8]], path: &Path) -> Format {
    let decimal_time = lines.iter().any(|l| {
        let mut f = [&b""[..]; 1];
        split_ws(l, &mut f);
        f[0].contains(&b'.')
    });
    let binary_op = lines.iter().all(|l| {
        let mut f = [&b""[..]; 5];
        split_ws(l, &mut f);
        f[4] == b"0" || f[4] == b"1"
    });
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    if decimal_time || name.contains("disksim") || !binary_op {
        return Format::Disksim;
    }
    if name.contains("ssdsim") || (name.ends_with(".ascii") && !name.contains("mqsim")) {
        return Format::Ssdsim;
    }
    Format::Mqsim
}

fn is_int(f: &[u8]) -> bool {
    parse_u64(f).is_ok()
}

fn is_num(f: &[u8]) -> bool {
    parse_scaled(f, 0).is_ok()
}

fn blkparse_line(l: &[u8]) -> bool {
    event_action(l).is_some() || is_summary(l)
}

fn wiscsee_line(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 8];
    split_ws(l, &mut f) == 8
        && matches!(f[1], b"D" | b"C")
        && matches!(f[2], b"read" | b"write" | b"discard")
        && is_num(f[5])
}

fn fiu_line(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 9];
    split_ws(l, &mut f) == 9
        && is_int(f[0])
        && is_int(f[3])
        && is_int(f[4])
        && matches!(f[5], b"R" | b"W" | b"r" | b"w")
        && f[8].iter().all(u8::is_ascii_hexdigit)
}

fn msr_line(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 7];
    split_sep(l, b',', &mut f) == 7
        && is_int(f[0])
        && (f[3].eq_ignore_ascii_case(b"read") || f[3].eq_ignore_ascii_case(b"write"))
}

fn systor_line(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 6];
    split_sep(l, b',', &mut f) == 6 && is_num(f[0]) && matches!(f[2], b"R" | b"W" | b"r" | b"w") && is_int(f[4])
}

fn spc_line(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_sep(l, b',', &mut f) >= 5
        && is_int(f[1])
        && is_int(f[2])
        && matches!(f[3], b"r" | b"R" | b"w" | b"W")
        && is_num(f[4])
}

fn alibaba_line(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_sep(l, b',', &mut f) == 5
        && matches!(f[1], b"R" | b"W" | b"r" | b"w")
        && is_int(f[2])
        && is_int(f[3])
        && is_num(f[4])
}

fn tencent_line(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_sep(l, b',', &mut f) == 5 && is_num(f[0]) && is_int(f[1]) && is_int(f[2]) && matches!(f[3], b"0" | b"1")
}

fn native_line(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 4];
    split_sep(l, b',', &mut f) == 4
        && is_int(f[0])
        && matches!(f[1], b"R" | b"W" | b"T" | b"F")
        && is_int(f[2])
        && is_int(f[3])
}

fn five_numbers(l: &[u8]) -> bool {
    let mut f = [&b""[..]; 5];
    split_ws(l, &mut f) == 5 && is_num(f[0]) && f[1..].iter().all(|x| is_int(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::formats;
    use crate::trace::input::testutil::{gzip, write_file};

    fn det(name: &str, data: &[u8]) -> Result<Format> {
        detect_bytes(data, Path::new(name))
    }

    #[test]
    fn text_formats() {
        let cases: &[(&str, &[u8], Format)] = &[
            ("a", b"0,303567,3584,w,0.0\n1,55590,3072,R,0.01\n", Format::Spc),
            ("a", b"128166385295514663,hm,0,Write,9056014336,2048,2833\n", Format::Msr),
            ("a", b"  8,0    3        1     0.000000000   697  D   W 223490 + 8 [kjournald]\n", Format::Blkparse),
            ("a", b"13.191135\t30\t0\t5\t1\n17.829285\t20\t576560\t6\t1\n", Format::Disksim),
            ("x.ascii", b"0 0 303567 7 0\n26214000 1 55596 6 1\n", Format::Ssdsim),
            ("x.trace", b"938513000 4 264719034 16 0\n", Format::Mqsim),
            ("disksim.trace", b"13 30 0 5 1\n", Format::Disksim),
            ("a", b"89966522969723 4270 rpc.mountd 18579576 8 W 6 0 d6c75ba4\n", Format::Fiu),
            ("a", b"Timestamp,Response,IOType,LUN,Offset,Size\n1.5,0.1,R,3,0,4096\n", Format::Systor17),
            ("a", b"1538323200,12345,8,1,1063\n", Format::Tencent),
            ("a", b"0,W,126703644672,4096,1577808000000047\n", Format::Alibaba),
            ("a", b"39949 D read 299008 4096 0.000000000 0 False\n", Format::Wiscsee),
            ("a", b"time_ns,op,sector,sectors\n1000,W,2048,8\n", Format::native()),
        ];
        for (name, data, want) in cases {
            assert_eq!(&det(name, data).unwrap(), want, "{}", String::from_utf8_lossy(data));
        }
    }

    #[test]
    fn doubts_name_the_alternatives_and_implausible_sizes() {
        // A FlashNet/LinnOS trace: ms times, byte offsets and byte sizes.
        let t = write_file("flashnet.trace", b"0 0 1048576 4096 1\n125 0 8192 8192 0\n1500 0 0 4096 1\n");
        assert_eq!(detect(&t.path).unwrap(), Format::Mqsim);
        let d = doubts(&t.path, &Format::Mqsim).unwrap();
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("also fit disksim, ssdsim"), "{d:?}");
        assert!(d[1].contains("multiple of 512") && d[1].contains("FlashNet"), "{d:?}");
        // Integer times fit all three five-number layouts; decimal times only DiskSim's.
        let t = write_file("ssdsim.trace", b"0 0 303567 8 0\n26214000 1 55590 16 1\n");
        assert_eq!(doubts(&t.path, &Format::Ssdsim).unwrap().len(), 1);
        let t = write_file("disksim.trace", b"13.19\t30\t0\t8\t1\n17.8\t20\t576560\t16\t1\n");
        assert_eq!(doubts(&t.path, &Format::Disksim).unwrap(), Vec::<String>::new());
        // Byte sizes with decimal times: no ambiguity, the sizes alone.
        let t = write_file("f.trace", b"0.5 0 1048576 4096 1\n1.5 0 0 8192 0\n");
        let d = doubts(&t.path, &Format::Disksim).unwrap();
        assert!(d.len() == 1 && d[0].contains("FlashNet"), "{d:?}");
        // An MSR line fits nothing else.
        let t = write_file("m.csv", b"128166385295514663,hm,0,Write,9056014336,2048,2833\n");
        assert_eq!(doubts(&t.path, &Format::Msr).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn gzip_and_binary() {
        let t = write_file("t.gz", &gzip(b"0,303567,3584,w,0.0\n"));
        assert_eq!(detect(&t.path).unwrap(), Format::Spc);
        let mut rec = Vec::new();
        super::super::blktrace::encode(&mut rec, true, 0, 0, 0, 512, 7 | (1 << 16), &[]);
        let t = write_file("sda.blktrace.0", &gzip(&rec));
        assert_eq!(detect(&t.path).unwrap(), Format::Blktrace);
    }

    #[test]
    fn failures_suggest_format() {
        for data in [&b""[..], b"\n\n", b"hello world\n", b"\0\x01\x02"] {
            let msg = det("a", data).unwrap_err().to_string();
            assert!(msg.contains("--format with one of: spc, msr,") && msg.contains("could not detect"), "{msg}");
        }
    }

    /// Detection failures concern the whole file: no `:0:` pseudo line, but
    /// the lines examined and the one that defeats detection.
    #[test]
    fn failures_name_the_lines_examined() {
        let all = formats().join(", ");
        let msg = det("junk.txt", b"hello world\nthis is not a trace\n").unwrap_err().to_string();
        assert_eq!(
            msg,
            format!(
                "junk.txt: could not detect the trace format from its first 2 lines: line 1 'hello world' matches \
                 no known format; pass --format with one of: {all} (csv also as csv:MAPPING)"
            )
        );
        let cases: &[(&[u8], &str)] = &[
            (b"", "a: could not detect the trace format: the file is empty;"),
            (b"\n \n\t\n", "a: could not detect the trace format from its first 3 lines: all are blank;"),
            (b" ", "a: could not detect the trace format from its first line: it is blank;"),
            (
                b"0 1 100 8 1\n\0\x01\n",
                "a: could not detect the trace format from its first 2 lines: line 2 holds binary data (a NUL byte) \
                 and the file is not blktrace;",
            ),
            // A blank line counts in the numbering even though it is not examined.
            (
                b"0 1 100 8 1\n1000 1 200 8 0\n\n2000 1 abc 8 0\n3000 1 300 8 0\n",
                "a: could not detect the trace format from its first 5 lines: lines 1-2 look like mqsim but \
                 line 4 '2000 1 abc 8 0' does not;",
            ),
            (
                b"13.5 30 0 5 1\nx\n",
                "a: could not detect the trace format from its first 2 lines: line 1 looks like disksim but line 2 \
                 'x' does not;",
            ),
            // Without the header (which decides alone) the data lines must fit.
            (
                b"1.5,0.1,R,3,0,4096\n1.5,0.1,X,3,0,4096\n",
                "a: could not detect the trace format from its first 2 lines: line 1 looks like systor17 but \
                 line 2 '1.5,0.1,X,3,0,4096' does not;",
            ),
            // blkparse summary lines without an event line are not blkparse.
            (b"  Reads Queued: 5\nhello\n", "line 1 '  Reads Queued: 5' matches no known format;"),
        ];
        for (data, want) in cases {
            let msg = det("a", data).unwrap_err().to_string();
            assert!(msg.contains(want), "{}:\n{msg}\nwanted: {want}", String::from_utf8_lossy(data));
        }
    }

    #[test]
    fn quoted_line_is_short_and_stays_on_one_line() {
        let long = format!("{}\n", "x".repeat(200));
        let msg = det("a", long.as_bytes()).unwrap_err().to_string();
        assert!(msg.contains(&format!("line 1 '{}...' matches", "x".repeat(QUOTE_CHARS))), "{msg}");
        let msg = det("a", b"a\tb\x1bc\rd\n").unwrap_err().to_string();
        assert!(msg.contains(r"line 1 'a\tb\u{1b}c\rd' matches"), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }

    /// The native header decides alone, so a bad line under it is reported
    /// by the csv reader with its own line number, or skipped on request.
    #[test]
    fn native_header_decides_despite_bad_lines() {
        for data in [
            &b"time_ns,op,sector,sectors\n0,X,8,8\n10,W,16,8\n"[..],
            b"time_ns,op,sector,sectors\r\n10,W,16,8\r\nnonsense\r\n",
            b"time_ns,op,sector,sectors\n",
            b"\"time_ns\", \"op\", \"sector\", \"sectors\", \"latency_us\"\n0,W,8,8,3\n",
        ] {
            assert_eq!(det("a", data).unwrap(), Format::native(), "{}", String::from_utf8_lossy(data));
        }
        // A header with the native names only in part is not the native one.
        assert!(det("a", b"time_ns,op,sector\n0,W,8\n").is_err());
        assert!(det("a", b"time_ns,op,sector,size\n0,W,8,8\n").is_err());

        bad_line_2_is_the_readers(
            b"time_ns,op,sector,sectors\n0,X,8,8\n10,W,16,8\n20,R,0,8\n",
            Format::native(),
            "unknown op 'X' (expected R, W, T or F)",
        );
    }

    /// A file detected by its header whose line 2 is bad: opening names the
    /// format, reading reports `FILE:2: why`, and skipping bad lines reads
    /// the rest (sectors 16 and 0).
    fn bad_line_2_is_the_readers(data: &[u8], format: Format, why: &str) {
        let t = write_file("bad-first.csv", data);
        let mut o = crate::trace::open(&t.path, &Default::default()).unwrap();
        assert!(o.detected && o.format == format);
        let err = o.source.next_cmd().unwrap_err();
        assert!(matches!(err, Error::Trace { line: 2, .. }), "{err:?}");
        assert!(err.to_string().ends_with(&format!("bad-first.csv:2: {why}")), "{err}");

        let opts = crate::trace::OpenOptions { format: None, skip_bad_lines: true };
        let mut o = crate::trace::open(&t.path, &opts).unwrap();
        let mut sectors = Vec::new();
        while let Some(c) = o.source.next_cmd().unwrap() {
            sectors.push(c.start.0);
        }
        assert_eq!((sectors, o.source.skipped_lines()), (vec![16, 0], 1));
    }

    /// The complete SYSTOR '17 header decides alone as well: a bad line under
    /// it is the systor17 reader's to report with its line number, or to skip.
    #[test]
    fn systor17_header_decides_despite_bad_lines() {
        for data in [
            &b"Timestamp,Response,IOType,LUN,Offset,Size\n1.5,0.1,X,3,0,4096\n1.6,0.1,W,3,0,4096\n"[..],
            b"Timestamp,Response,IOType,LUN,Offset,Size\r\nnonsense\r\n",
            b"\n timestamp , \"RESPONSE\",iotype,Lun,OFFSET ,size\n1.5,0.1,R,3\n",
        ] {
            assert_eq!(det("a", data).unwrap(), Format::Systor17, "{}", String::from_utf8_lossy(data));
        }

        bad_line_2_is_the_readers(
            b"Timestamp,Response,IOType,LUN,Offset,Size\n1.5,0.1,X,3,0,4096\n1.6,0.1,W,3,8192,4096\n1.7,0.1,R,3,0,512\n",
            Format::Systor17,
            "unknown IOType 'X' (expected R or W)",
        );
    }

    /// Other CSVs also name their first column "Timestamp": only the whole
    /// SYSTOR '17 header decides, so under any other one a bad line still
    /// defeats detection instead of being handed to the systor17 reader.
    #[test]
    fn a_header_only_starting_like_systor17_does_not_decide() {
        for header in [
            "Timestamp,Response,IOType,LUN,Offset",
            "Timestamp,Response,IOType,LUN,Offset,Size,Volume",
            "Timestamp,Response,IOType,LUN,Offset,Bytes",
            "Timestamp,IOType,Response,LUN,Offset,Size",
            "TimestampUTC,Response,IOType,LUN,Offset,Size",
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
            "Timestamp,Offset,Size,IOType,VolumeID",
        ] {
            let data = format!("{header}\n1.5,0.1,X,3,0,4096\n1.6,0.1,W,3,0,4096\n");
            let msg = det("a", data.as_bytes()).unwrap_err().to_string();
            assert!(
                msg.contains("could not detect") && msg.contains("but line 2 '1.5,0.1,X,3,0,4096' does not"),
                "{header}: {msg}"
            );
        }
    }
}
