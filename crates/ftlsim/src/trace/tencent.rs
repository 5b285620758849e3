//! Tencent Cloud Block Storage traces (SNIA IOTTA, 2018).
//!
//! `Timestamp,Offset,Size,IOType,VolumeID`: timestamp in seconds, offset and
//! size in 512 B sectors, IOType 0 = read / 1 = write, volume id. Layout
//! from the trace release notes (Zhang et al., "OSCA", USENIX ATC '20).
//!
//! Simplification: volumes are not separated, so a file mixing volumes puts
//! them in one address space; filter by volume beforehand if that matters.
//! Whole-second timestamps mean many requests share an arrival time.

use super::Op;
use super::num::{int, need_fields, scaled, sector_range, show, split_sep};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct TencentParser;

impl LineParser for TencentParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 5];
        need_fields(split_sep(line, b',', &mut f), 4)?;
        let time_ns = scaled("timestamp", f[0], 9)?;
        let (start, sectors) = sector_range(int("offset", f[1])?, int("size", f[2])?)?;
        let op = match f[3] {
            b"0" => Op::Read,
            b"1" => Op::Write,
            other => {
                return Err(format!("unknown IOType '{}' (expected 0 = read or 1 = write)", show(other)));
            }
        };
        Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::read_all;

    #[test]
    fn parses() {
        let data = b"1538323200,12345,8,1,1063\n1538323201,999,16,0,1063\n";
        let (cmds, _) = read_all("tencent", data, false).unwrap();
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Write, 12345, 8));
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (1_000_000_000, Op::Read, 999, 16));
    }

    #[test]
    fn bad_lines() {
        let data = b"1,2,8,1,1\n1,2,8,R,1\n";
        let err = read_all("tencent", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: unknown IOType 'R' (expected 0 = read or 1 = write)"), "{err}");
    }
}
