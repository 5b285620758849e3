//! MSR Cambridge block traces (SNIA IOTTA), CSV without a header.
//!
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`: Windows
//! FILETIME (100 ns ticks since 1601), host name, disk number, `Read` or
//! `Write`, byte offset, byte size, response time in ticks. Layout from the
//! SNIA IOTTA repository description of the traces.
//!
//! Simplifications: hostname and disk number are ignored (a file normally
//! holds one volume; concatenated volumes would share one address space),
//! and so is the recorded response time. Byte ranges are widened to whole
//! sectors.

use super::Op;
use super::num::{byte_range, int, int_times, need_fields, show, split_sep};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct MsrParser;

impl LineParser for MsrParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 7];
        // The response time is not needed; older excerpts sometimes drop it.
        need_fields(split_sep(line, b',', &mut f), 6)?;
        let op = if f[3].eq_ignore_ascii_case(b"read") {
            Op::Read
        } else if f[3].eq_ignore_ascii_case(b"write") {
            Op::Write
        } else {
            return Err(format!("unknown type '{}' (expected Read or Write)", show(f[3])));
        };
        let time_ns = int_times("timestamp", f[0], 100)?;
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
        let data = b"128166385295514663,hm,0,Write,9056014336,2048,2833\n128166385295514878,hm,0,Read,512,512,2617\n";
        let (cmds, _) = read_all("msr", data, false).unwrap();
        assert_eq!((cmds[0].time.0, cmds[0].op, cmds[0].start.0, cmds[0].sectors), (0, Op::Write, 17_687_528, 4));
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (21_500, Op::Read, 1, 1));
    }

    #[test]
    fn bad_lines() {
        let data = b"1,hm,0,Write,0,512,1\n2,hm,0,Write,-4096,512,1\n3,hm,0,Erase,0,512,1\n";
        let err = read_all("msr", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: negative offset '-4096'"), "{err}");
        let (cmds, skipped) = read_all("msr", data, true).unwrap();
        assert_eq!((cmds.len(), skipped), (1, 2));
    }
}
