//! SSDsim ASCII traces.
//!
//! `time_ns dev lsn size_sectors ope`, whitespace-separated: arrival time in
//! nanoseconds, device, logical sector number, size in 512 B sectors,
//! operation (1 = read, 0 = write). Layout from SSDsim's `ssd.c` trace
//! reader (`sscanf(... "%lld %d %d %d %d")`).
//!
//! The layout coincides with MQSim's ASCII format, so the two parse the same
//! way; see [`detect`](mod@super::detect) for how a file is attributed.
//! Simplification: the device number is ignored.

use super::Op;
use super::num::{int, need_fields, sector_range, show, split_ws};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct SsdsimParser;

impl LineParser for SsdsimParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 5];
        need_fields(split_ws(line, &mut f), 5)?;
        let time_ns = int("time", f[0])?;
        int("device", f[1])?;
        let (start, sectors) = sector_range(int("lsn", f[2])?, int("size", f[3])?)?;
        let op = match f[4] {
            b"1" => Op::Read,
            b"0" => Op::Write,
            other => {
                return Err(format!("unknown operation '{}' (expected 1 = read or 0 = write)", show(other)));
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
        let (cmds, _) = read_all("ssdsim", b"0 0 303567 7 0\n78643005 1 55596 6 1\n", false).unwrap();
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Write, 303567, 7));
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (78_643_005, Op::Read, 55596, 6));
    }

    #[test]
    fn bad_lines() {
        let data = b"0 0 1 8 1\n5 0 1 8 2\n";
        let err = read_all("ssdsim", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: unknown operation '2' (expected 1 = read or 0 = write)"), "{err}");
    }
}
