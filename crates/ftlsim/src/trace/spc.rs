//! UMass Trace Repository SPC format (Financial1/2, WebSearch1/2/3).
//!
//! `ASU,LBA,Size,Opcode,Timestamp`: application storage unit, LBA in 512 B
//! sectors, size in bytes, opcode `r`/`R`/`w`/`W`, timestamp in seconds
//! (decimal). Layout from the SPC trace specification distributed with the
//! UMass traces. Extra trailing fields are ignored.
//!
//! Simplification: the ASUs are separate volumes in the original system,
//! but their LBAs are kept as-is here, so all ASUs share one address space
//! and may overlap. That matches what SSDsim and MQSim do with these traces.

use super::Op;
use super::num::{byte_range, int, need_fields, scaled, sector_range, show, split_sep};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct SpcParser;

impl LineParser for SpcParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 5];
        need_fields(split_sep(line, b',', &mut f), 5)?;
        let op = match f[3] {
            b"r" | b"R" => Op::Read,
            b"w" | b"W" => Op::Write,
            other => {
                return Err(format!("unknown opcode '{}' (expected r or w)", show(other)));
            }
        };
        let lba = int("LBA", f[1])?;
        let bytes = int("size", f[2])?;
        let time_ns = scaled("timestamp", f[4], 9)?;
        // Size is in bytes but the LBA is a sector: round the size up.
        let (_, sectors) = byte_range(0, bytes)?;
        let (start, sectors) = sector_range(lba, sectors)?;
        Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::read_all;

    #[test]
    fn parses_and_rebases() {
        let (cmds, _) = read_all("spc", b"0,303567,3584,w,1.5\n1,55590,3072,R,1.500001\n\n", false).unwrap();
        assert_eq!(cmds.len(), 2);
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Write, 303567, 7));
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (1000, Op::Read, 55590, 6));
    }

    #[test]
    fn bad_lines() {
        let data = b"0,1,512,w,0.0\n0,1,512,x,0.1\n0,-1,512,r,0.2\n0,1,512\n0,1,abc,r,0.3\n0,2,512,r,0.4\n";
        let err = read_all("spc", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: unknown opcode 'x' (expected r or w)"), "{err}");
        let (cmds, skipped) = read_all("spc", data, true).unwrap();
        assert_eq!((cmds.len(), skipped), (2, 4));
    }
}
