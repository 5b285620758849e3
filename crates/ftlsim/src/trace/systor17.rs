//! SYSTOR '17 enterprise VDI traces (SNIA IOTTA).
//!
//! Header `Timestamp,Response,IOType,LUN,Offset,Size`, then rows: timestamp
//! in seconds (decimal), response time in seconds, `R` or `W`, LUN, byte
//! offset, byte size. Layout from the trace's own header and the SNIA
//! description. The header is optional (excerpts often lack it).
//!
//! Simplification: the LUN is ignored, so all LUNs share one address space;
//! the recorded response time is ignored.

use super::Op;
use super::num::{byte_range, int, need_fields, scaled, show, split_sep};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct Systor17Parser {
    seen_first: bool,
}

/// The header the SYSTOR '17 files carry.
pub(crate) const HEADER: &str = "Timestamp,Response,IOType,LUN,Offset,Size";

pub(crate) fn is_header(line: &[u8]) -> bool {
    line.len() >= 9 && line[..9].eq_ignore_ascii_case(b"timestamp")
}

/// Whether `line` is [`HEADER`] itself, ignoring case and blanks or quotes
/// around the names. Unlike [`is_header`], which only needs to skip a first
/// line that cannot be data, this must not match other CSVs whose first
/// column is also called "timestamp": format detection trusts it alone.
pub(crate) fn is_full_header(line: &[u8]) -> bool {
    let mut f = [&b""[..]; 6];
    split_sep(line, b',', &mut f) == 6
        && HEADER.split(',').zip(f).all(|(want, got)| got.eq_ignore_ascii_case(want.as_bytes()))
}

impl LineParser for Systor17Parser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        if !self.seen_first {
            self.seen_first = true;
            // `is_full_header` too: detection accepts the header with quotes
            // or blanks around its names, so the reader must skip it then.
            if is_header(line) || is_full_header(line) {
                return Ok(Parsed::Ignore);
            }
        }
        let mut f = [&b""[..]; 6];
        need_fields(split_sep(line, b',', &mut f), 6)?;
        let time_ns = scaled("timestamp", f[0], 9)?;
        let op = match f[2] {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            other => {
                return Err(format!("unknown IOType '{}' (expected R or W)", show(other)));
            }
        };
        let (start, sectors) = byte_range(int("offset", f[4])?, int("size", f[5])?)?;
        Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::read_all;

    #[test]
    fn parses() {
        let data = b"Timestamp,Response,IOType,LUN,Offset,Size\n1487145600.026409,0.000128,R,3,1024,4096\n1487145600.1,0.0001,W,3,8192,512\n";
        let (cmds, _) = read_all("systor17", data, false).unwrap();
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Read, 2, 8));
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (73_591_000, Op::Write, 16, 1));
    }

    /// A header as a spreadsheet may save it is skipped, not read as data.
    #[test]
    fn quoted_header() {
        let data = b"\n\"timestamp\", \"response\" ,IOTYPE,LUN,Offset,Size\n1.0,0.1,W,3,1024,4096\n";
        let (cmds, _) = read_all("systor17", data, false).unwrap();
        assert_eq!((cmds.len(), cmds[0].op, cmds[0].start.0, cmds[0].sectors), (1, Op::Write, 2, 8));
    }

    #[test]
    fn bad_lines() {
        let data = b"Timestamp,Response,IOType,LUN,Offset,Size\n1.0,0.1,R,3,1024,4096\nTimestamp,Response,IOType,LUN,Offset,Size\n";
        let err = read_all("systor17", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":3: timestamp 'Timestamp' is not a number"), "{err}");
    }
}
