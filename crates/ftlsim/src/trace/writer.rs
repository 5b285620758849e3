//! Writing commands out as a trace file (`ftlsim gen`, format conversion).
//!
//! Supported: native csv, spc, msr, blkparse (text), blktrace (binary,
//! little-endian, one CPU), disksim, ssdsim, mqsim, fiu, systor17, tencent,
//! alibaba, wiscsee. Times are written with the full resolution the format
//! allows: ns where it has a decimal fraction or ns integers, 100 ns ticks
//! for MSR (truncated). Fields a format requires but commands do not carry
//! (device, ASU, pid, hash, response time) are written as 0 / `ftlsim`.
//! A command the format cannot represent (a TRIM in SPC, a FLUSH in MQSim,
//! a request over 4 GiB in blktrace) is an error naming the command's
//! position; nothing is dropped silently. Compression is the caller's
//! business: wrap `out` in a gzip encoder.

use super::blktrace::{self, TA_ISSUE, TC_DISCARD, TC_FLUSH, TC_READ, TC_WRITE};
use super::csv::NATIVE_HEADER;
use super::{CmdSource, Format, HostCmd, Op};
use crate::error::{Error, Result};
use crate::units::SECTOR_BYTES;
use std::io::{BufWriter, Write};

/// `BLK_TC_ISSUE`, set on issue records as the kernel does.
const TC_ISSUE: u32 = 1 << 6;

struct Dec(u64, u32);

impl std::fmt::Display for Dec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = 10u64.pow(self.1);
        write!(f, "{}.{:0w$}", self.0 / p, self.0 % p, w = self.1 as usize)
    }
}

/// Writes every command of `src` to `out` in `format`; returns the count
/// of commands. The native csv keeps a multi-range TRIM on one line; the
/// other formats have one range per line, so each range becomes a command.
pub fn write_trace(src: &mut dyn CmdSource, format: &Format, out: &mut dyn Write) -> Result<u64> {
    let name = src.name().to_string();
    let io = |e: std::io::Error| Error::io("<trace output>", e);
    let mut w = BufWriter::with_capacity(256 * 1024, out);
    if let Format::Csv(spec) = format {
        if !spec.is_native() {
            return Err(Error::Unknown {
                what: "trace output format",
                name: format.to_string(),
                available: "csv (native), spc, msr, blkparse, blktrace, disksim, ssdsim, mqsim, fiu, systor17, tencent, alibaba, wiscsee"
                    .into(),
            });
        }
        writeln!(w, "{NATIVE_HEADER}").map_err(io)?;
    }
    if *format == Format::Systor17 {
        writeln!(w, "Timestamp,Response,IOType,LUN,Offset,Size").map_err(io)?;
    }
    let mut n: u64 = 0;
    let mut rec = Vec::with_capacity(blktrace::RECORD_BYTES);
    let native = matches!(format, Format::Csv(_));
    // A native TRIM line still taking ranges.
    let mut open = false;
    while let Some(c) = src.next_cmd()? {
        if native && c.op == Op::Trim && (open || c.continued) {
            if open {
                write!(w, ",{},{}", c.start.0, c.sectors).map_err(io)?;
            } else {
                n += 1;
                write!(w, "{},T,{},{}", c.time.0, c.start.0, c.sectors).map_err(io)?;
            }
            open = c.continued;
            if !open {
                writeln!(w).map_err(io)?;
            }
            continue;
        }
        if open {
            // The source ended a command without clearing `continued`.
            writeln!(w).map_err(io)?;
            open = false;
        }
        n += 1;
        let unsupported = |what: &str| Error::Trace {
            file: name.clone(),
            line: n,
            reason: format!("format '{}' cannot represent {what} (command {n}: {:?})", format.name(), c.op),
        };
        write_one(&mut w, format, &c, n, &mut rec).map_err(|e| match e {
            WriteErr::Io(e) => io(e),
            WriteErr::Unsupported(what) => unsupported(what),
        })?;
    }
    if open {
        writeln!(w).map_err(io)?;
    }
    w.flush().map_err(io)?;
    Ok(n)
}

/// Writes one command as a line of ftlsim's native csv (`time_ns,op,sector,sectors`;
/// the header is [`NATIVE_HEADER`]), for writers that stream commands as they
/// happen rather than from a [`CmdSource`] (the NBD server's `--record`).
pub fn write_native_line(w: &mut impl Write, c: &HostCmd) -> std::io::Result<()> {
    let op = match c.op {
        Op::Read => 'R',
        Op::Write => 'W',
        Op::Trim => 'T',
        Op::Flush => 'F',
    };
    writeln!(w, "{},{op},{},{}", c.time.0, c.start.0, c.sectors)
}

enum WriteErr {
    Io(std::io::Error),
    Unsupported(&'static str),
}

impl From<std::io::Error> for WriteErr {
    fn from(e: std::io::Error) -> Self {
        WriteErr::Io(e)
    }
}

fn write_one(
    w: &mut impl Write,
    format: &Format,
    c: &HostCmd,
    seq: u64,
    rec: &mut Vec<u8>,
) -> std::result::Result<(), WriteErr> {
    use WriteErr::Unsupported as U;
    let t = c.time.0;
    let (s, len) = (c.start.0, c.sectors);
    let bytes = || s.checked_mul(SECTOR_BYTES).ok_or(U("an offset beyond 2^64 bytes"));
    let size = len.checked_mul(SECTOR_BYTES).ok_or(U("a request of 2^64 bytes or more"))?;
    let rw = |read: &'static str, write: &'static str| match c.op {
        Op::Read => Ok(read),
        Op::Write => Ok(write),
        Op::Trim => Err(U("TRIM")),
        Op::Flush => Err(U("FLUSH")),
    };
    match format {
        Format::Csv(_) => write_native_line(w, c)?,
        Format::Spc => writeln!(w, "0,{s},{size},{},{}", rw("r", "w")?, Dec(t, 9))?,
        Format::Msr => writeln!(w, "{},ftlsim,0,{},{},{size},0", t / 100, rw("Read", "Write")?, bytes()?)?,
        Format::Disksim => writeln!(w, "{} 0 {s} {len} {}", Dec(t, 6), rw("1", "0")?)?,
        Format::Ssdsim => writeln!(w, "{t} 0 {s} {len} {}", rw("1", "0")?)?,
        Format::Mqsim => writeln!(w, "{t} 0 {s} {len} {}", rw("1", "0")?)?,
        Format::Fiu => writeln!(w, "{t} 0 ftlsim {s} {len} {} 0 0 0", rw("R", "W")?)?,
        Format::Systor17 => writeln!(w, "{},0,{},0,{},{size}", Dec(t, 9), rw("R", "W")?, bytes()?)?,
        Format::Tencent => writeln!(w, "{},{s},{len},{},0", Dec(t, 9), rw("0", "1")?)?,
        Format::Alibaba => writeln!(w, "0,{},{},{size},{}", rw("R", "W")?, bytes()?, Dec(t, 3))?,
        Format::Wiscsee => {
            let op = match c.op {
                Op::Trim => "discard",
                _ => rw("read", "write")?,
            };
            writeln!(w, "0 D {op} {} {size} {} 0 False", bytes()?, Dec(t, 9))?;
        }
        Format::Blkparse => {
            let head = format!("  8,0    0 {seq:>8} {:>14}     0  D", Dec(t, 9));
            match c.op {
                Op::Flush => writeln!(w, "{head}   F [ftlsim]")?,
                op => {
                    let rwbs = match op {
                        Op::Read => "R",
                        Op::Write => "W",
                        _ => "D",
                    };
                    writeln!(w, "{head} {rwbs:>3} {s} + {len} [ftlsim]")?;
                }
            }
        }
        Format::Blktrace => {
            let cat = match c.op {
                Op::Read => TC_READ,
                Op::Write => TC_WRITE,
                Op::Trim => TC_WRITE | TC_DISCARD,
                Op::Flush => TC_WRITE | TC_FLUSH,
            };
            let nbytes = u32::try_from(size).map_err(|_| U("a request of 4 GiB or more"))?;
            rec.clear();
            blktrace::encode(rec, false, seq as u32, t, s, nbytes, TA_ISSUE | ((TC_ISSUE | cat) << 16), &[]);
            w.write_all(rec)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::input::testutil::read_all;
    use super::super::{CmdSource, HostCmd, Op};
    use super::*;
    use crate::units::{Sector, SimTime};

    struct VecSource(std::vec::IntoIter<HostCmd>);

    impl CmdSource for VecSource {
        fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
            Ok(self.0.next())
        }
        fn name(&self) -> &str {
            "vec"
        }
    }

    fn cmd(t: u64, op: Op, s: u64, n: u64) -> HostCmd {
        HostCmd { time: SimTime(t), op, start: Sector(s), sectors: n, continued: false }
    }

    fn cmds(with_trim: bool, with_flush: bool) -> Vec<HostCmd> {
        let mut v = vec![
            cmd(0, Op::Write, 2048, 8),
            cmd(1_000_100, Op::Read, 0, 1),
            cmd(2_000_000_300, Op::Write, 1 << 33, 256),
            cmd(2_000_000_300, Op::Read, 77, 3),
        ];
        if with_trim {
            v.push(cmd(3_000_000_000, Op::Trim, 4096, 2048));
        }
        if with_flush {
            v.push(cmd(3_000_000_100, Op::Flush, 0, 0));
        }
        v.push(cmd(4_000_000_000, Op::Write, 5, 5));
        v
    }

    #[test]
    fn round_trips() {
        for (fmt, trim, flush) in [
            ("csv", true, true),
            ("spc", false, false),
            ("msr", false, false),
            ("blkparse", true, true),
            ("blktrace", true, true),
            ("disksim", false, false),
            ("ssdsim", false, false),
            ("mqsim", false, false),
            ("fiu", false, false),
            ("systor17", false, false),
            ("tencent", false, false),
            ("alibaba", false, false),
            ("wiscsee", true, false),
        ] {
            let want = cmds(trim, flush);
            let format: Format = fmt.parse().unwrap();
            let mut out = Vec::new();
            let n = write_trace(&mut VecSource(want.clone().into_iter()), &format, &mut out).unwrap();
            assert_eq!(n, want.len() as u64);
            let (got, skipped) = read_all(fmt, &out, false).unwrap();
            assert_eq!((got, skipped), (want, 0), "{fmt}");
            // Detection recognises what the writer produced.
            let t = super::super::input::testutil::write_file(&format!("x.{fmt}"), &out);
            let detected = super::super::detect(&t.path).unwrap();
            let same_family =
                matches!((&detected, &format), (Format::Mqsim, Format::Ssdsim) | (Format::Ssdsim, Format::Mqsim));
            assert!(detected == format || same_family, "{fmt}: detected {detected}");
        }
    }

    #[test]
    fn multi_range_trims_round_trip_in_native_csv_and_split_elsewhere() {
        let range = |t, s, n, more| HostCmd { continued: more, ..cmd(t, Op::Trim, s, n) };
        let want = vec![
            cmd(0, Op::Write, 0, 8),
            range(10, 64, 8, true),
            range(10, 1024, 16, true),
            range(10, 4096, 128, false),
            range(20, 8, 8, false),
            cmd(30, Op::Read, 0, 8),
        ];
        let mut out = Vec::new();
        let n = write_trace(&mut VecSource(want.clone().into_iter()), &"csv".parse().unwrap(), &mut out).unwrap();
        assert_eq!(n, 4, "four commands");
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.contains("\n10,T,64,8,1024,16,4096,128\n20,T,8,8\n"), "{text}");
        assert_eq!(read_all("csv", &out, false).unwrap(), (want.clone(), 0));
        // blkparse has one discard per line: each range its own command.
        let mut out = Vec::new();
        write_trace(&mut VecSource(want.clone().into_iter()), &"blkparse".parse().unwrap(), &mut out).unwrap();
        let (got, _) = read_all("blkparse", &out, false).unwrap();
        assert!(got.iter().all(|c| !c.continued) && got.len() == want.len());
    }

    #[test]
    fn bad_multi_range_lines_are_errors_naming_the_line() {
        for (line, why) in
            [("5,T,0,8,16", "odd"), ("5,T,0,8,x,8", "range 2 sector"), ("5,T,0,8,16,", "range 2 sectors")]
        {
            let data = format!("time_ns,op,sector,sectors\n1,W,0,8\n{line}\n");
            let err = read_all("csv", data.as_bytes(), false).unwrap_err().to_string();
            assert!(err.contains(":3:") && err.contains(why), "{line}: {err}");
        }
        // Zero-length ranges are skipped and counted; the command keeps the others.
        let data = b"0,T,0,0,8,8,16,0,24,8\n";
        let (got, _) = read_all("csv", data, false).unwrap();
        let ranges: Vec<_> = got.iter().map(|c| (c.start.0, c.continued)).collect();
        assert_eq!(ranges, vec![(8, true), (24, false)]);
    }

    #[test]
    fn unrepresentable_ops() {
        for (fmt, op) in [("spc", Op::Trim), ("msr", Op::Flush), ("mqsim", Op::Trim), ("wiscsee", Op::Flush)] {
            let v = vec![cmd(0, Op::Read, 0, 8), cmd(5, op, 0, if op == Op::Flush { 0 } else { 8 })];
            let err = write_trace(&mut VecSource(v.into_iter()), &fmt.parse().unwrap(), &mut Vec::new())
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("format '{fmt}' cannot represent")) && err.contains("command 2"), "{err}");
        }
        let spec: Format = "csv:time=0,op=1,offset=2,size=3,sep=tab".parse().unwrap();
        assert!(write_trace(&mut VecSource(Vec::new().into_iter()), &spec, &mut Vec::new()).is_err());
    }
}
