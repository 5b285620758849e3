//! How fast commands come in: trace lines parsed per second for each reader
//! (plain and gzip), and commands generated per second for each kind of
//! synthetic workload. Both bound how fast a simulation can run.
//!
//! ```text
//! cargo run --release -p ftlsim --example input_rates            # full sizes
//! cargo run --release -p ftlsim --example input_rates -- --quick # a tenth
//! ```
//!
//! Traces are generated into a temporary directory, then read back through
//! [`ftlsim::trace::open`] exactly as `ftlsim run --trace` reads them.

use ftlsim::trace::{self, CmdSource, OpenOptions};
use ftlsim::workload::{self, WorkloadSpec};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

/// Writes trace line `i` into `s` (with its newline).
type LineGen = fn(u64, &mut String);

/// (format, header line, line generator): one per reader, with offsets
/// scattered over ~50 GiB and reads and writes alternating.
const TRACES: &[(&str, &str, LineGen)] = &[
    ("mqsim", "", |i, s| {
        // time_ns device lba sectors op(1 = read)
        let _ = writeln!(s, "{} 1 {} 8 {}", i * 1000, (i * 7919) % 100_000_000, i & 1);
    }),
    ("csv", "time_ns,op,sector,sectors\n", |i, s| {
        let _ = writeln!(s, "{},{},{},8", i * 1000, if i & 1 == 0 { 'R' } else { 'W' }, (i * 7919) % 100_000_000);
    }),
    ("spc", "", |i, s| {
        // ASU,LBA,Size(bytes),Opcode,Timestamp(s)
        let op = if i & 1 == 0 { 'r' } else { 'w' };
        let _ = writeln!(s, "0,{},4096,{op},{}.{:06}", (i * 7919) % 100_000_000, i / 1000, i % 1000);
    }),
    ("msr", "", |i, s| {
        // Timestamp(FILETIME),Hostname,Disk,Type,Offset(bytes),Size,Response
        let op = if i & 1 == 0 { "Read" } else { "Write" };
        let _ = writeln!(s, "{},hm,0,{op},{},4096,2833", 128166385295514663 + i * 100, (i * 7919) % 100_000_000 * 512);
    }),
    ("blkparse", "", |i, s| {
        let op = if i & 1 == 0 { 'R' } else { 'W' };
        let _ = writeln!(
            s,
            "  8,16   3 {:>8} {:>5}.{:09}  3645  D   {op} {} + 256 [java]",
            i,
            i / 1000,
            i % 1000,
            (i * 7919) % 100_000_000
        );
    }),
    ("disksim", "", |i, s| {
        // time_ms devno blkno sectors flags(1 = read)
        let _ = writeln!(s, "{}.{:06}\t0\t{}\t8\t{}", i / 1000, i % 1000, (i * 7919) % 100_000_000, i & 1);
    }),
    ("ssdsim", "", |i, s| {
        // time_ns device lsn sectors op(1 = read)
        let _ = writeln!(s, "{} 0 {} 8 {}", i * 1000, (i * 7919) % 100_000_000, i & 1);
    }),
    ("fiu", "", |i, s| {
        // ts_ns pid process lba sectors op major minor md5
        let op = if i & 1 == 0 { 'R' } else { 'W' };
        let _ = writeln!(
            s,
            "{} 4270 nfsd {} 8 {op} 6 0 d6c75ba46e82326fefa545b57a12e221",
            89966522969723 + i * 1000,
            (i * 7919) % 100_000_000
        );
    }),
    ("wiscsee", "", |i, s| {
        // pid action op offset(bytes) size(bytes) time(s) delta(s) sync
        let op = if i & 1 == 0 { "read" } else { "write" };
        let _ = writeln!(
            s,
            "39949 D {op} {} 4096 {}.{:09} 0 False",
            (i * 7919) % 100_000_000 * 512,
            i / 1000,
            i % 1000 * 1000
        );
    }),
];

/// (spec, commands at full size)
const WORKLOADS: &[(&str, u64)] = &[
    ("rw=randwrite,bs=4k", 50_000_000),
    ("rw=randrw,rwmixread=70,trimmix=5,bs=4k-64k", 50_000_000),
    ("rw=write,bs=128k", 50_000_000),
    ("rw=randwrite,bs=4k,rate=100k,arrival=poisson", 20_000_000),
    ("rw=randwrite,bs=4k,dist=hotcold:90/10", 20_000_000),
    ("rw=randwrite,bs=4k,dist=zipf:1.2", 10_000_000),
    ("rw=randwrite,bs=4k,dist=zipf:0.9", 10_000_000),
];

/// Trace lines per format at full size.
const LINES: u64 = 5_000_000;

fn main() -> ftlsim::Result<()> {
    let quick = std::env::args().skip(1).any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let dir = std::env::temp_dir().join(format!("ftlsim-input-rates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| ftlsim::Error::io(&dir, e))?;
    let result = run(&dir, scale);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run(dir: &Path, scale: u64) -> ftlsim::Result<()> {
    let lines = LINES / scale;
    println!("trace parsing, {lines} lines per format (trace::open, as `ftlsim run --trace`)");
    for (fmt, header, line) in TRACES {
        let plain = dir.join(format!("{fmt}.trace"));
        let gz = dir.join(format!("{fmt}.trace.gz"));
        let bytes = write_trace(&plain, &gz, header, *line, lines)?;
        for (path, label) in [(&plain, "plain"), (&gz, "gzip")] {
            let mut opened = trace::open(path, &OpenOptions { format: Some(fmt.parse()?), skip_bad_lines: false })?;
            let start = Instant::now();
            let mut n = 0u64;
            let mut acc = 0u64;
            while let Some(c) = opened.source.next_cmd()? {
                acc = acc.wrapping_add(c.start.0 ^ c.sectors);
                n += 1;
            }
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(n, lines, "{fmt} {label}: every generated line is a command");
            std::hint::black_box(acc);
            println!(
                "{fmt:>9} {label:<5}  {:>6.2} M lines/s  {:>6.0} MB/s of text",
                lines as f64 / secs / 1e6,
                bytes as f64 / secs / 1e6
            );
        }
        std::fs::remove_file(&plain).map_err(|e| ftlsim::Error::io(&plain, e))?;
        std::fs::remove_file(&gz).map_err(|e| ftlsim::Error::io(&gz, e))?;
    }

    println!();
    println!("workload generation (workload::generator on a 1 TiB device)");
    for (spec_text, ios) in WORKLOADS {
        let ios = ios / scale;
        let spec = WorkloadSpec::parse(&format!("{spec_text},ios={ios}"))?;
        let mut w = workload::generator(&spec, 1 << 31)?;
        let start = Instant::now();
        let mut acc = 0u64;
        while let Some(c) = w.next_cmd()? {
            acc = acc.wrapping_add(c.start.0 ^ c.time.0);
        }
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(w.issued(), ios);
        std::hint::black_box(acc);
        println!("{:>6.1} M cmds/s  {spec_text} ({ios} commands)", ios as f64 / secs / 1e6);
    }
    Ok(())
}

/// Writes `lines` generated lines to `plain` and a gzip copy (fast
/// compression, as `ftlsim gen -o x.gz` writes) to `gz`; returns the text size.
fn write_trace(plain: &Path, gz: &Path, header: &str, line: LineGen, lines: u64) -> ftlsim::Result<u64> {
    let create = |p: &Path| std::fs::File::create(p).map_err(|e| ftlsim::Error::io(p, e));
    let mut out = std::io::BufWriter::with_capacity(1 << 20, create(plain)?);
    let mut zip = flate2::write::GzEncoder::new(
        std::io::BufWriter::with_capacity(1 << 20, create(gz)?),
        flate2::Compression::fast(),
    );
    let mut s = String::from(header);
    let mut bytes = 0u64;
    for i in 0..lines {
        line(i, &mut s);
        if s.len() >= 1 << 16 || i + 1 == lines {
            out.write_all(s.as_bytes()).map_err(|e| ftlsim::Error::io(plain, e))?;
            zip.write_all(s.as_bytes()).map_err(|e| ftlsim::Error::io(gz, e))?;
            bytes += s.len() as u64;
            s.clear();
        }
    }
    out.flush().map_err(|e| ftlsim::Error::io(plain, e))?;
    zip.finish().and_then(|mut w| w.flush()).map_err(|e| ftlsim::Error::io(gz, e))?;
    Ok(bytes)
}
