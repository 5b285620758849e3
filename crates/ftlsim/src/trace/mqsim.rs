//! MQSim ASCII traces.
//!
//! `time_ns device lba size_sectors type`, whitespace-separated: arrival
//! time in nanoseconds, device number, start LBA in 512 B sectors, size in
//! sectors, type (0 = write, 1 = read). Layout from MQSim's
//! `ASCII_Trace_Definition.h` and the traces shipped with it.
//!
//! Simplification: the device number is ignored, so all devices share one
//! address space (the TPC-C example uses several).

use super::Op;
use super::num::{int, need_fields, sector_range, show, split_ws};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct MqsimParser;

impl LineParser for MqsimParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 5];
        need_fields(split_ws(line, &mut f), 5)?;
        let time_ns = int("time", f[0])?;
        int("device", f[1])?;
        let (start, sectors) = sector_range(int("LBA", f[2])?, int("size", f[3])?)?;
        let op = match f[4] {
            b"0" => Op::Write,
            b"1" => Op::Read,
            other => {
                return Err(format!("unknown type '{}' (expected 0 = write or 1 = read)", show(other)));
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
        let (cmds, _) = read_all("mqsim", b"938513000 4 264719034 16 0\n938828000 3 197570570 16 1\n", false).unwrap();
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Write, 264719034, 16));
        assert_eq!((cmds[1].time.0, cmds[1].op), (315_000, Op::Read));
    }

    #[test]
    fn bad_lines() {
        let data = b"0 0 1 8 1\n5 0 1 -8 1\n6 0 1 8 1\n";
        let err = read_all("mqsim", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: negative size '-8'"), "{err}");
        let (cmds, skipped) = read_all("mqsim", data, true).unwrap();
        assert_eq!((cmds.len(), skipped), (2, 1));
    }
}
