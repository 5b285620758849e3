//! Alibaba Cloud block traces (alibaba/block-traces, 2020).
//!
//! `device_id,opcode,offset,length,timestamp`: virtual disk id, `R` or `W`,
//! byte offset, byte length, timestamp in microseconds. Layout from the
//! README of the alibaba/block-traces repository.
//!
//! Simplification: device ids are not separated, so a file mixing virtual
//! disks puts them in one address space; filter beforehand if that matters.

use super::Op;
use super::num::{byte_range, int, need_fields, scaled, show, split_sep};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct AlibabaParser;

impl LineParser for AlibabaParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 5];
        need_fields(split_sep(line, b',', &mut f), 5)?;
        let op = match f[1] {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            other => {
                return Err(format!("unknown opcode '{}' (expected R or W)", show(other)));
            }
        };
        let (start, sectors) = byte_range(int("offset", f[2])?, int("length", f[3])?)?;
        let time_ns = scaled("timestamp", f[4], 3)?;
        Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::read_all;

    #[test]
    fn parses() {
        let data = b"0,W,126703644672,4096,1577808000000047\n0,R,0,512,1577808000000100\n";
        let (cmds, _) = read_all("alibaba", data, false).unwrap();
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Write, 247_468_056, 8));
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (53_000, Op::Read, 0, 1));
    }

    #[test]
    fn bad_lines() {
        let data = b"0,W,0,4096,1\n0,W,0,4096\n";
        let err = read_all("alibaba", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: expected 5 fields, found 4"), "{err}");
    }
}
