//! FIU traces (homes, web-vm, mail; SyLab IODedup collection).
//!
//! `ts_ns pid process lba size_sectors op major minor md5`, whitespace-
//! separated: timestamp in nanoseconds, process id and name, LBA and size in
//! 512 B sectors, `R` or `W`, device major/minor, content hash. Layout from
//! the README of the FIU IODedup traces.
//!
//! Fields are taken counting from the end of the line, so a process name
//! containing blanks does not shift them. Device and hash are ignored.

use super::Op;
use super::num::{int, need_fields, sector_range, show, split_ws};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct FiuParser;

impl LineParser for FiuParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 9];
        let n = split_ws(line, &mut f);
        need_fields(n, 9)?;
        if n > 9 {
            return self.parse_long(line, n);
        }
        Self::fields(f[0], f[3], f[4], f[5])
    }
}

impl FiuParser {
    fn fields(ts: &[u8], lba: &[u8], size: &[u8], op: &[u8]) -> Result<Parsed, String> {
        let time_ns = int("timestamp", ts)?;
        let (start, sectors) = sector_range(int("LBA", lba)?, int("size", size)?)?;
        let op = match op {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            other => {
                return Err(format!("unknown operation '{}' (expected R or W)", show(other)));
            }
        };
        Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }))
    }

    #[cold]
    fn parse_long(&mut self, line: &[u8], n: usize) -> Result<Parsed, String> {
        let mut f = vec![&b""[..]; n];
        split_ws(line, &mut f);
        Self::fields(f[0], f[n - 6], f[n - 5], f[n - 4])
    }
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::read_all;

    #[test]
    fn parses() {
        let data = b"89966522969723 4270 rpc.mountd 18579576 8 W 6 0 d6c7\n89966527950584 4253 my proc 508516672 16 R 6 0 88b9\n";
        let (cmds, _) = read_all("fiu", data, false).unwrap();
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Write, 18579576, 8));
        assert_eq!(
            (cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors),
            (4_980_861, Op::Read, 508516672, 16)
        );
    }

    #[test]
    fn bad_lines() {
        let data = b"1 2 p 3 8 W 6 0 h\n1 2 p 3 8 X 6 0 h\n";
        let err = read_all("fiu", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: unknown operation 'X' (expected R or W)"), "{err}");
    }
}
