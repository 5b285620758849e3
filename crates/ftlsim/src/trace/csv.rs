//! ftlsim's native trace format, and generic delimited text with a column
//! mapping.
//!
//! Native format (`--format csv`): a header line `time_ns,op,sector,sectors`
//! then one request per row, e.g. `1000,W,2048,8`: arrival time in ns, op
//! `R`/`W`/`T`/`F` (read, write, trim, flush), start sector and length in
//! 512 B sectors. This is what `ftlsim gen` writes. A TRIM carrying several
//! LBA ranges (one ATA DSM / NVMe Deallocate command) lists them on its
//! line as further `sector,sectors` pairs: `2000,T,64,64,1024,8,4096,128`
//! is one command of three ranges.
//!
//! Generic mapping (`--format csv:KEY=VALUE,...`), e.g.
//! `csv:time=0,op=3,offset=4,size=5,time_unit=s,offset_unit=B,size_unit=B,header=1,sep=,`
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `time`, `op`, `offset`, `size` | 0-based column of each field (all four required) | - |
//! | `time_unit` | `ns`, `us`, `ms`, `s`, or `filetime` (100 ns ticks); decimals allowed | `ns` |
//! | `offset_unit`, `size_unit` | `B`, `sector` (512 B), `KiB`, `4KiB`, or a byte count | `sector` |
//! | `header` | lines to skip at the top, or `auto`: skip the first line if its time field is not a number | `auto` |
//! | `sep` | one character, or `comma`, `tab`, `semicolon`, `space`, `ws` (runs of blanks) | `comma` |
//! | `read`, `write`, `trim`, `flush` | extra op token meaning that operation, matched exactly (case-insensitive), e.g. `read=0,write=1` | - |
//!
//! Op tokens always understood (case-insensitive): `R`, `read`, `W`,
//! `write`, `T`, `trim`, `D`, `discard`, `F`, `flush`. Numeric op codes have
//! no universal meaning (0 is a read in one format, a write in another), so
//! they need `read=`/`write=`. `sep=,` may be written literally as the last
//! key. Byte ranges are widened to whole sectors.

use super::Op;
use super::num::{NumErr, byte_range, int, need_fields, num_err, parse_scaled, show, split_sep, split_ws};
use super::text::{LineParser, Parsed, Raw};
use crate::error::{Error, Result};
use crate::units::SECTOR_BYTES;
use std::fmt;

/// Columns a mapping may reference (fields are split into a fixed array).
const MAX_COLUMNS: usize = 64;

/// The native header, written by the trace writer.
pub const NATIVE_HEADER: &str = "time_ns,op,sector,sectors";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Ns,
    Us,
    Ms,
    S,
    /// Windows FILETIME: 100 ns ticks.
    Filetime,
}

impl TimeUnit {
    fn pow10(self) -> u32 {
        match self {
            TimeUnit::Ns => 0,
            TimeUnit::Filetime => 2,
            TimeUnit::Us => 3,
            TimeUnit::Ms => 6,
            TimeUnit::S => 9,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "us",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
            TimeUnit::Filetime => "filetime",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    Auto,
    Lines(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sep {
    Char(u8),
    /// Runs of spaces and tabs.
    Whitespace,
}

/// A column mapping for delimited text; [`Default`] is the native format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvSpec {
    pub time: usize,
    pub op: usize,
    pub offset: usize,
    pub size: usize,
    pub time_unit: TimeUnit,
    /// Bytes per unit of the offset column.
    pub offset_unit: u64,
    /// Bytes per unit of the size column.
    pub size_unit: u64,
    pub header: Header,
    pub sep: Sep,
    /// Extra op tokens, checked before the built-in ones.
    pub op_tokens: Vec<(String, Op)>,
}

impl Default for CsvSpec {
    fn default() -> Self {
        CsvSpec {
            time: 0,
            op: 1,
            offset: 2,
            size: 3,
            time_unit: TimeUnit::Ns,
            offset_unit: 512,
            size_unit: 512,
            header: Header::Auto,
            sep: Sep::Char(b','),
            op_tokens: Vec::new(),
        }
    }
}

impl CsvSpec {
    pub fn is_native(&self) -> bool {
        *self == CsvSpec::default()
    }

    /// Parses the part after `csv:`.
    pub fn parse(spec: &str) -> Result<CsvSpec> {
        let bad = |key: &str, reason: String| Error::config(format!("csv mapping '{spec}': {key}"), reason);
        // `sep=,` collides with the key separator: cut it out first.
        let mut rest = spec.to_string();
        let mut sep = None;
        if let Some(pos) = find_key(&rest, "sep=") {
            let after = &rest[pos + 4..];
            let (value, len) = if after.starts_with(',') {
                (",".to_string(), 1)
            } else {
                let v = after.split(',').next().unwrap_or("");
                (v.to_string(), v.len())
            };
            sep = Some(parse_sep(&value).map_err(|r| bad("sep", r))?);
            let end = (pos + 4 + len).min(rest.len());
            rest.replace_range(pos..end, "");
        }
        let mut s = CsvSpec { sep: sep.unwrap_or(Sep::Char(b',')), ..CsvSpec::default() };
        let mut cols: [Option<usize>; 4] = [None; 4];
        for item in rest.split(',').filter(|i| !i.trim().is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(bad(item, "expected KEY=VALUE".into()));
            };
            let (key, value) = (key.trim(), value.trim());
            let col = |v: &str| -> Result<usize> {
                match v.parse::<usize>() {
                    Ok(c) if c < MAX_COLUMNS => Ok(c),
                    _ => Err(bad(key, format!("'{v}' is not a column number (0..{})", MAX_COLUMNS - 1))),
                }
            };
            match key {
                "time" => cols[0] = Some(col(value)?),
                "op" => cols[1] = Some(col(value)?),
                "offset" => cols[2] = Some(col(value)?),
                "size" => cols[3] = Some(col(value)?),
                "time_unit" => {
                    s.time_unit = match value.to_ascii_lowercase().as_str() {
                        "ns" => TimeUnit::Ns,
                        "us" => TimeUnit::Us,
                        "ms" => TimeUnit::Ms,
                        "s" => TimeUnit::S,
                        "filetime" => TimeUnit::Filetime,
                        _ => {
                            return Err(bad(key, format!("'{value}' is not one of ns, us, ms, s, filetime")));
                        }
                    }
                }
                "offset_unit" => s.offset_unit = parse_unit(value).map_err(|r| bad(key, r))?,
                "size_unit" => s.size_unit = parse_unit(value).map_err(|r| bad(key, r))?,
                "header" => {
                    s.header = if value == "auto" {
                        Header::Auto
                    } else {
                        Header::Lines(
                            value.parse().map_err(|_| bad(key, format!("'{value}' is not 'auto' or a line count")))?,
                        )
                    }
                }
                "read" | "write" | "trim" | "flush" => {
                    if value.is_empty() {
                        return Err(bad(key, "empty op token".into()));
                    }
                    let op = match key {
                        "read" => Op::Read,
                        "write" => Op::Write,
                        "trim" => Op::Trim,
                        _ => Op::Flush,
                    };
                    s.op_tokens.push((value.to_string(), op));
                }
                _ => {
                    return Err(bad(
                        key,
                        "unknown key; known: time, op, offset, size, time_unit, offset_unit, size_unit, header, sep, read, write, trim, flush".into(),
                    ));
                }
            }
        }
        let names = ["time", "op", "offset", "size"];
        let [Some(time), Some(op), Some(offset), Some(size)] = cols else {
            let missing = cols.iter().position(Option::is_none).map_or("?", |i| names[i]);
            return Err(bad(missing, "column not given (time, op, offset and size are all required)".into()));
        };
        for i in 0..4 {
            for j in i + 1..4 {
                if cols[i] == cols[j] {
                    return Err(bad(names[j], format!("same column as {}", names[i])));
                }
            }
        }
        (s.time, s.op, s.offset, s.size) = (time, op, offset, size);
        Ok(s)
    }
}

fn find_key(s: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = s[from..].find(key) {
        let pos = from + p;
        if pos == 0 || s.as_bytes()[pos - 1] == b',' {
            return Some(pos);
        }
        from = pos + key.len();
    }
    None
}

fn parse_sep(v: &str) -> std::result::Result<Sep, String> {
    Ok(match v {
        "comma" | "," => Sep::Char(b','),
        "tab" | "\\t" | "\t" => Sep::Char(b'\t'),
        "semicolon" | ";" => Sep::Char(b';'),
        "space" | "ws" | " " => Sep::Whitespace,
        "pipe" | "|" => Sep::Char(b'|'),
        _ if v.len() == 1 && v.is_ascii() => Sep::Char(v.as_bytes()[0]),
        _ => {
            return Err(format!("'{v}' is not a single ASCII character or comma/tab/semicolon/space/ws/pipe"));
        }
    })
}

fn parse_unit(v: &str) -> std::result::Result<u64, String> {
    match v.to_ascii_lowercase().as_str() {
        "b" | "byte" | "bytes" => Ok(1),
        "sector" | "sectors" => Ok(512),
        "kib" | "k" => Ok(1024),
        "4kib" | "page" => Ok(4096),
        n => match n.parse::<u64>() {
            Ok(b) if b > 0 => Ok(b),
            _ => Err(format!("'{v}' is not B, sector, KiB, 4KiB or a positive byte count")),
        },
    }
}

impl fmt::Display for CsvSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = |u: u64| match u {
            1 => "B".to_string(),
            512 => "sector".to_string(),
            n => n.to_string(),
        };
        let sep = match self.sep {
            Sep::Whitespace => "ws".to_string(),
            Sep::Char(b',') => "comma".to_string(),
            Sep::Char(b'\t') => "tab".to_string(),
            Sep::Char(b';') => "semicolon".to_string(),
            Sep::Char(c) => (c as char).to_string(),
        };
        let header = match self.header {
            Header::Auto => "auto".to_string(),
            Header::Lines(n) => n.to_string(),
        };
        write!(
            f,
            "time={},op={},offset={},size={},time_unit={},offset_unit={},size_unit={},header={},sep={}",
            self.time,
            self.op,
            self.offset,
            self.size,
            self.time_unit.name(),
            unit(self.offset_unit),
            unit(self.size_unit),
            header,
            sep
        )?;
        for (token, op) in &self.op_tokens {
            let key = match op {
                Op::Read => "read",
                Op::Write => "write",
                Op::Trim => "trim",
                Op::Flush => "flush",
            };
            write!(f, ",{key}={token}")?;
        }
        Ok(())
    }
}

pub(crate) struct CsvParser {
    spec: CsvSpec,
    need: usize,
    lines_seen: u32,
    native: bool,
    /// The further ranges of the TRIM line just parsed (native format).
    ranges: Vec<(u64, u64)>,
}

impl CsvParser {
    pub fn new(spec: CsvSpec) -> Self {
        let need = 1 + spec.time.max(spec.op).max(spec.offset).max(spec.size);
        let native = spec.is_native();
        CsvParser { spec, need, lines_seen: 0, native, ranges: Vec::new() }
    }

    fn op(&self, token: &[u8]) -> std::result::Result<Op, String> {
        for (t, op) in &self.spec.op_tokens {
            if token.eq_ignore_ascii_case(t.as_bytes()) {
                return Ok(*op);
            }
        }
        let lower = |s: &[u8]| token.eq_ignore_ascii_case(s);
        Ok(match token {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            b"T" | b"t" | b"D" | b"d" => Op::Trim,
            b"F" | b"f" => Op::Flush,
            _ if lower(b"read") => Op::Read,
            _ if lower(b"write") => Op::Write,
            _ if lower(b"trim") || lower(b"discard") => Op::Trim,
            _ if lower(b"flush") => Op::Flush,
            _ => {
                return Err(format!("unknown op '{}' (expected R, W, T or F)", show(token)));
            }
        })
    }
}

impl LineParser for CsvParser {
    fn parse(&mut self, line: &[u8]) -> std::result::Result<Parsed, String> {
        if self.need > MAX_COLUMNS {
            // Only reachable with a hand-built spec: `CsvSpec::parse` refuses it.
            return Err(format!(
                "the mapping references column {}, beyond the last supported ({})",
                self.need - 1,
                MAX_COLUMNS - 1
            ));
        }
        // Past a possible header, the native format's common line is read
        // in one pass; anything else (and every error) takes the general path.
        if self.native && self.lines_seen > 0 {
            if let Some(raw) = native_line(line) {
                self.lines_seen = self.lines_seen.saturating_add(1);
                self.ranges.clear();
                return Ok(Parsed::Cmd(raw));
            }
        }
        // Most mappings use the first few columns: a short array of fields
        // is set up per line then, not all the columns a mapping may name.
        if self.need <= FEW_COLUMNS {
            self.parse_fields(line, &mut [&b""[..]; FEW_COLUMNS])
        } else {
            self.parse_fields(line, &mut [&b""[..]; MAX_COLUMNS])
        }
    }

    fn take_ranges(&mut self, into: &mut Vec<(u64, u64)>) {
        into.append(&mut self.ranges);
    }
}

/// Columns a line is split into when the mapping uses no more.
const FEW_COLUMNS: usize = 8;

/// The native format's common line, `time_ns,op,sector,sectors` with a
/// one-letter op and plain decimal numbers of up to 19 digits (which cannot
/// overflow), parsed in one pass over its bytes: as the general path would
/// parse it, or `None` for any other line (blanks, quotes, signs, more
/// fields, long numbers, ranges that overflow), which the general path then
/// parses or explains. Splitting into fields first cost about 500
/// instructions a line, a tenth of a steady-state run's.
#[inline]
fn native_line(line: &[u8]) -> Option<Raw> {
    /// Digits up to `end` (or the line's end when `end` is `None`).
    fn number(line: &[u8], at: &mut usize, end: Option<u8>) -> Option<u64> {
        let (start, mut v) = (*at, 0u64);
        while let Some(&b) = line.get(*at) {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            // Wraps past 19 digits, a number refused below.
            v = v.wrapping_mul(10).wrapping_add(d as u64);
            *at += 1;
        }
        let digits = *at - start;
        if digits == 0 || digits > 19 || line.get(*at).copied() != end {
            return None;
        }
        *at += 1;
        Some(v)
    }
    let mut at = 0;
    let time_ns = number(line, &mut at, Some(b','))?;
    let op = match line.get(at..at + 2)? {
        [b'R' | b'r', b','] => Op::Read,
        [b'W' | b'w', b','] => Op::Write,
        [b'T' | b't' | b'D' | b'd', b','] => Op::Trim,
        [b'F' | b'f', b','] => Op::Flush,
        _ => return None,
    };
    at += 2;
    let sector = number(line, &mut at, Some(b','))?;
    let sectors = number(line, &mut at, None)?;
    // The general path's checks: byte offsets and their sum fit in 64 bits.
    let start_b = sector.checked_mul(SECTOR_BYTES)?;
    start_b.checked_add(sectors.checked_mul(SECTOR_BYTES)?)?;
    Some(match op {
        Op::Flush => Raw { time_ns, op, start: 0, sectors: 0 },
        _ => Raw { time_ns, op, start: sector, sectors },
    })
}

impl CsvParser {
    /// Parses `line` split into `f` (at least `need` fields long).
    #[inline]
    fn parse_fields<'a>(&mut self, line: &'a [u8], f: &mut [&'a [u8]]) -> std::result::Result<Parsed, String> {
        let n = match self.spec.sep {
            Sep::Char(c) => split_sep(line, c, f),
            Sep::Whitespace => split_ws(line, f),
        };
        let s = &self.spec;
        self.lines_seen = self.lines_seen.saturating_add(1);
        match s.header {
            Header::Lines(h) if self.lines_seen <= h => return Ok(Parsed::Ignore),
            Header::Auto if self.lines_seen == 1 && matches!(parse_scaled(f[s.time], 0), Err(NumErr::Invalid)) => {
                return Ok(Parsed::Ignore);
            }
            _ => {}
        }
        need_fields(n, self.need)?;
        let time_ns = parse_scaled(f[s.time], s.time_unit.pow10()).map_err(|e| num_err("time", f[s.time], e))?;
        let op = self.op(f[s.op])?;
        let offset = int("offset", f[s.offset])?;
        let size = int("size", f[s.size])?;
        let overflow = || format!("offset/size {} + {} overflows", show(f[s.offset]), show(f[s.size]));
        let offset_b = offset.checked_mul(s.offset_unit).ok_or_else(overflow)?;
        let size_b = size.checked_mul(s.size_unit).ok_or_else(overflow)?;
        let (start, sectors) = byte_range(offset_b, size_b)?;
        if op == Op::Flush {
            return Ok(Parsed::Cmd(Raw { time_ns, op, start: 0, sectors: 0 }));
        }
        self.ranges.clear();
        if self.native && op == Op::Trim && n > 4 {
            self.more_ranges(line, n)?;
        }
        Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }))
    }
    /// The `sector,sectors` pairs after a native TRIM line's first range
    /// (any number: the line is split again, past the column limit).
    fn more_ranges(&mut self, line: &[u8], fields: usize) -> std::result::Result<(), String> {
        if (fields - 4) % 2 != 0 {
            return Err(format!(
                "a TRIM lists further ranges as sector,sectors pairs after its first; {} extra fields is odd",
                fields - 4
            ));
        }
        let mut rest = line.split(|&b| b == b',').skip(4);
        let mut i = 2;
        while let (Some(s), Some(n)) = (rest.next(), rest.next()) {
            let what = |f: &str| format!("range {i} {f}");
            let start = int(&what("sector"), s.trim_ascii())?;
            let sectors = int(&what("sectors"), n.trim_ascii())?;
            start.checked_add(sectors).ok_or_else(|| format!("range {i}: {start} + {sectors} sectors overflows"))?;
            self.ranges.push((start, sectors));
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::input::testutil::read_all;
    use super::super::{Format, Op};
    use super::*;

    #[test]
    fn native() {
        let data = b"time_ns,op,sector,sectors\n1000,W,2048,8\n1500,R,0,1\n2000,T,64,64\n2500,F,0,0\n";
        let (cmds, _) = read_all("csv", data, false).unwrap();
        let got: Vec<_> = cmds.iter().map(|c| (c.time.0, c.op, c.start.0, c.sectors)).collect();
        assert_eq!(
            got,
            vec![(0, Op::Write, 2048, 8), (500, Op::Read, 0, 1), (1000, Op::Trim, 64, 64), (1500, Op::Flush, 0, 0)]
        );
    }

    #[test]
    fn mapping() {
        let f: Format =
            "csv:time=0,op=3,offset=4,size=5,time_unit=s,offset_unit=B,size_unit=B,header=1,sep=,".parse().unwrap();
        let Format::Csv(spec) = &f else { panic!("not csv") };
        assert_eq!((spec.time, spec.op, spec.offset, spec.size), (0, 3, 4, 5));
        assert_eq!(spec.sep, Sep::Char(b','));
        assert_eq!(spec.header, Header::Lines(1));
        // Display round-trips.
        assert_eq!(f.to_string().parse::<Format>().unwrap(), f);
        let data = b"Timestamp,a,b,IOType,Offset,Size\n1.5,x,y,Read,4096,4096\n2.5,x,y,write,0,100\n";
        let (cmds, _) = read_all(&f.to_string(), data, false).unwrap();
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (1_000_000_000, Op::Write, 0, 1));
        assert_eq!((cmds[0].start.0, cmds[0].sectors), (8, 8));
    }

    #[test]
    fn custom_tokens_and_whitespace() {
        let spec = "csv:time=4,op=3,offset=1,size=2,time_unit=us,sep=ws,read=0,write=1,header=0";
        let (cmds, _) = read_all(spec, b"x 10 8 0 5\nx 20 8 1 7.5\n", false).unwrap();
        assert_eq!((cmds[0].op, cmds[1].op, cmds[1].time.0), (Op::Read, Op::Write, 2500));
    }

    #[test]
    fn bad_mappings() {
        for (spec, needle) in [
            ("csv:time=0,op=1,offset=2", "size: column not given"),
            ("csv:time=0,op=1,offset=2,size=2", "size: same column as offset"),
            ("csv:time=0,op=1,offset=2,size=x", "'x' is not a column number"),
            ("csv:time=0,op=1,offset=2,size=3,time_unit=h", "not one of ns, us, ms, s, filetime"),
            ("csv:time=0,op=1,offset=2,size=3,colour=red", "colour: unknown key"),
            ("csv:time=0,op=1,offset=2,size=3,offset_unit=0", "positive byte count"),
            ("csv:time=0,op=1,offset=2,size=3,sep=ab", "single ASCII character"),
            ("csv:time", "expected KEY=VALUE"),
        ] {
            let err = spec.parse::<Format>().unwrap_err().to_string();
            assert!(err.contains(needle), "{spec}: {err}");
        }
    }

    /// The general path's reading of a native line past the header.
    fn general(line: &[u8]) -> std::result::Result<Parsed, String> {
        let mut parser = CsvParser::new(CsvSpec::default());
        parser.lines_seen = 1;
        parser.parse_fields(line, &mut [&b""[..]; FEW_COLUMNS])
    }

    proptest::proptest! {
        /// The native format's one-pass reader agrees with the general path
        /// on every line it takes (any other it leaves to that path), and
        /// takes every plain line whose numbers fit.
        #[test]
        fn the_native_fast_path_reads_as_the_general_path(
            noise in "[0-9,RWTFDrwx +\"-]{0,24}",
            long in "[0-9]{17,40}",
            (time, op, sector, sectors) in (
                proptest::prop_oneof![0u64..1_000_000, proptest::num::u64::ANY],
                proptest::sample::select(vec!["R", "W", "t", "D", "F", "X", "WW", ""]),
                proptest::prop_oneof![0u64..1_000_000, proptest::num::u64::ANY],
                proptest::prop_oneof![0u64..1_000, proptest::num::u64::ANY],
            ),
        ) {
            let plain = format!("{time},{op},{sector},{sectors}");
            // Numbers too long for 64 bits, in each field.
            let longs = [format!("{long},W,0,8"), format!("0,R,{long},8"), format!("0,T,8,{long}")];
            let lines = [noise.as_bytes(), plain.as_bytes()].into_iter().chain(longs.iter().map(|l| l.as_bytes()));
            for line in lines {
                let general = general(line);
                match native_line(line) {
                    Some(raw) => proptest::prop_assert!(
                        matches!(general, Ok(Parsed::Cmd(g)) if g == raw),
                        "{}: fast path took it, the general path disagrees",
                        String::from_utf8_lossy(line)
                    ),
                    None => proptest::prop_assert!(
                        line != plain.as_bytes() || general.is_err() || op.len() != 1
                            || [time, sector, sectors].iter().any(|&v| v >= 10u64.pow(19)),
                        "{plain}: a plain line the fast path left"
                    ),
                }
            }
        }
    }

    #[test]
    fn bad_lines() {
        let data = b"time_ns,op,sector,sectors\n1,W,0,8\n2,X,0,8\n3,W,-1,8\n4,W,0\n";
        let err = read_all("csv", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":3: unknown op 'X' (expected R, W, T or F)"), "{err}");
        let (cmds, skipped) = read_all("csv", data, true).unwrap();
        assert_eq!((cmds.len(), skipped), (1, 3));
    }
}
