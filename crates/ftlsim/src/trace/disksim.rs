//! DiskSim ASCII input traces.
//!
//! `time_ms devno blkno size_sectors flags`, whitespace-separated: arrival
//! time in milliseconds (decimal), device number, block number in 512 B
//! sectors, size in sectors, flags (bit 0 set = read). Layout from the
//! DiskSim 4.0 user manual, "ascii" trace format.
//!
//! Simplification: the device number is ignored, so all devices share one
//! address space; flag bits other than bit 0 are ignored.

use super::Op;
use super::num::{int, need_fields, scaled, sector_range, split_ws};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct DisksimParser;

impl LineParser for DisksimParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 5];
        need_fields(split_ws(line, &mut f), 5)?;
        let time_ns = scaled("time", f[0], 6)?;
        int("device", f[1])?;
        let (start, sectors) = sector_range(int("block", f[2])?, int("size", f[3])?)?;
        let op = if int("flags", f[4])? & 1 == 1 { Op::Read } else { Op::Write };
        Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::read_all;

    #[test]
    fn parses() {
        let (cmds, _) = read_all("disksim", b"13.191135\t30\t0\t5\t1\n17.829285 20 576560 6 0\n", false).unwrap();
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Read, 0, 5));
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (4_638_150, Op::Write, 576560, 6));
    }

    #[test]
    fn bad_lines() {
        let data = b"1.0 0 0 8 1\n2.0 0 0 8\n3.0 0 zz 8 1\n";
        let err = read_all("disksim", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: expected 5 fields, found 4"), "{err}");
        let (cmds, skipped) = read_all("disksim", data, true).unwrap();
        assert_eq!((cmds.len(), skipped), (1, 2));
    }
}
