//! WiscSee pre-processed blkparse event files (`blkparse-events-for-ftlsim*.txt`).
//!
//! `pid action op offset_bytes size_bytes timestamp_s delta_s sync`,
//! whitespace-separated: action `D` (dispatch) or `C` (complete), op `read`,
//! `write` or `discard`, byte offset and size, absolute and delta time in
//! seconds, `True`/`False`. Layout from WiscSee's `blkparse` post-processing
//! (junhe/wiscsee). Only `D` events are requests; `C` events are ignored.
//!
//! WiscSee rebases offsets by its partition padding, so mkfs traces can hold
//! a negative offset (a read before the partition start): that is a bad line
//! like any other, reported, or skipped and counted with `skip_bad_lines`.

use super::Op;
use super::num::{byte_range, int, need_fields, scaled, show, split_ws};
use super::text::{LineParser, Parsed, Raw};

#[derive(Default)]
pub(crate) struct WiscseeParser;

impl LineParser for WiscseeParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut f = [&b""[..]; 6];
        need_fields(split_ws(line, &mut f), 6)?;
        match f[1] {
            b"D" => {}
            b"C" => return Ok(Parsed::Ignore),
            other => {
                return Err(format!("unknown action '{}' (expected D or C)", show(other)));
            }
        }
        let op = match f[2] {
            b"read" => Op::Read,
            b"write" => Op::Write,
            b"discard" => Op::Trim,
            other => {
                return Err(format!("unknown operation '{}' (expected read, write or discard)", show(other)));
            }
        };
        let (start, sectors) = byte_range(int("offset", f[3])?, int("size", f[4])?)?;
        let time_ns = scaled("timestamp", f[5], 9)?;
        Ok(Parsed::Cmd(Raw { time_ns, op, start, sectors }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::super::input::testutil::read_all;

    #[test]
    fn parses() {
        let data = b"39949 D read 299008 4096 0.000000000 0 False\n0 C read 299008 4096 0.000122793 0.000122793 False\n39949 D discard 331776 8192 0.000196695 7.3902e-05 False\n";
        let (cmds, _) = read_all("wiscsee", data, false).unwrap();
        assert_eq!(cmds.len(), 2);
        assert_eq!((cmds[1].time.0, cmds[1].op, cmds[1].start.0, cmds[1].sectors), (196_695, Op::Trim, 648, 16));
    }

    #[test]
    fn negative_offset() {
        let data = b"699 D read 0 4096 0.0 0 False\n1326 D read -8388608 4096 0.134961957 0.000221927 False\n";
        let err = read_all("wiscsee", data, false).unwrap_err().to_string();
        assert!(err.ends_with(":2: negative offset '-8388608'"), "{err}");
        let (cmds, skipped) = read_all("wiscsee", data, true).unwrap();
        assert_eq!((cmds.len(), skipped), (1, 1));
    }
}
