//! Guessing a trace's format from its first bytes.
//!
//! Binary blktrace is recognised by its record magic. Text formats are
//! recognised from up to [`SNIFF_LINES`] non-blank lines at the start of the
//! (decompressed) file: a format is a candidate if every sniffed line fits
//! its layout (field count, separator, op tokens, numeric fields), allowing
//! the header line of formats that have one and blkparse's summary lines.
//! Candidates are tried most specific first.
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

fn fail(path: &Path, why: &str) -> Error {
    Error::Trace {
        file: path.display().to_string(),
        line: 0,
        reason: format!(
            "cannot detect the trace format ({why}); pass --format with one of: {}",
            super::formats().join(", ")
        ),
    }
}

pub(crate) fn detect_bytes(head: &[u8], path: &Path) -> Result<Format> {
    if is_blktrace(head) {
        return Ok(Format::Blktrace);
    }
    if head.is_empty() {
        return Err(fail(path, "the file is empty"));
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
    let lines: Vec<&[u8]> = complete
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.trim_ascii().is_empty())
        .take(SNIFF_LINES)
        .collect();
    if lines.is_empty() {
        return Err(fail(path, "no non-blank line at the start"));
    }
    if lines.iter().any(|l| l.contains(&0)) {
        return Err(fail(path, "binary data that is not a blktrace file"));
    }
    let all = |pred: LinePred, skip_header: usize| lines.iter().skip(skip_header).all(|l| pred(l));

    if lines.iter().any(|l| event_action(l).is_some()) && all(blkparse_line, 0) {
        return Ok(Format::Blkparse);
    }
    if lines[0].starts_with(NATIVE_HEADER.as_bytes()) && all(native_line, 1) {
        return Ok(Format::native());
    }
    if systor17::is_header(lines[0]) && all(systor_line, 1) {
        return Ok(Format::Systor17);
    }
    let candidates: [(LinePred, Format); 9] = [
        (wiscsee_line, Format::Wiscsee),
        (fiu_line, Format::Fiu),
        (msr_line, Format::Msr),
        (systor_line, Format::Systor17),
        (spc_line, Format::Spc),
        (alibaba_line, Format::Alibaba),
        (tencent_line, Format::Tencent),
        (native_line, Format::native()),
        (five_numbers, Format::Mqsim),
    ];
    for (pred, format) in candidates {
        if all(pred, 0) {
            if format == Format::Mqsim {
                return Ok(five_column_family(&lines, path));
            }
            return Ok(format);
        }
    }
    let first = String::from_utf8_lossy(&lines[0][..lines[0].len().min(80)]).into_owned();
    Err(fail(path, &format!("first line '{first}' matches no known layout")))
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
            assert!(msg.contains("--format") && msg.contains("cannot detect"), "{msg}");
        }
    }
}
