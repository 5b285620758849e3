//! Every reader over sample files: the small ones kept in `tests/traces/`
//! (always), and the real traces in `shared/traces/` beside the repository
//! (when present; see [`crate::testdata`]), with the request counts
//! documented in that folder's README.

use super::{Format, OpenOptions, TraceStats, detect, open, stats};
use crate::testdata::{kept, real};
use std::path::Path;

fn run(path: &Path, skip_bad_lines: bool) -> crate::Result<TraceStats> {
    let mut o = open(path, &OpenOptions { format: None, skip_bad_lines })?;
    assert!(o.detected);
    stats(&mut *o.source)
}

/// (file, format, requests, reads, writes, trims, flushes)
type Case = (&'static str, &'static str, u64, u64, u64, u64, u64);

/// The kept samples, one per text format (blktrace is binary and written by
/// its own tests).
const KEPT: &[Case] = &[
    ("msr_csv/msr-sample.csv", "msr", 6, 2, 4, 0, 0),
    ("ssdsim_ascii/ssdsim-sample.ascii", "ssdsim", 5, 2, 3, 0, 0),
    ("mqsim_ascii/mqsim-sample.trace", "mqsim", 4, 2, 2, 0, 0),
    ("disksim_ascii/disksim-sample.trace", "disksim", 3, 2, 1, 0, 0),
    // D events only: a read, a sync write, a discard, a flush, a write; the
    // Q/C/N events and the closing summary are not requests.
    ("blkparse/blkparse-sample.txt", "blkparse", 5, 1, 2, 1, 1),
    ("fiu/fiu-sample.blkparse", "fiu", 4, 2, 2, 0, 0),
    ("wiscsee_events/wiscsee-sample.txt", "wiscsee", 4, 1, 2, 1, 0),
    ("spc/spc-sample.spc", "spc", 3, 1, 2, 0, 0),
    ("systor17/systor17-sample.csv", "systor17", 3, 2, 1, 0, 0),
    ("tencent/tencent-sample.csv", "tencent", 3, 1, 2, 0, 0),
    ("alibaba/alibaba-sample.csv", "alibaba", 3, 1, 2, 0, 0),
    ("csv/native-sample.csv", "csv", 4, 1, 1, 1, 1),
];

/// The real traces.
const REAL: &[Case] = &[
    ("msr_csv/msr-cambridge1-sample.csv", "msr", 1000, 508, 492, 0, 0),
    ("ssdsim_ascii/ssdsim-example-fin1.ascii", "ssdsim", 10000, 4077, 5923, 0, 0),
    ("mqsim_ascii/mqsim-tpcc-small.trace", "mqsim", 6999, 4381, 2618, 0, 0),
    ("disksim_ascii/disksim-valid-ascii.trace", "disksim", 100000, 79634, 20366, 0, 0),
    ("blkparse/wiscsee-testdata-blkparse-output.txt", "blkparse", 673, 161, 512, 0, 0),
    ("blkparse/msclaudz-ycsb-ext4-blkparse.txt", "blkparse", 9887, 9039, 848, 0, 0),
    ("fiu/fiu-mail-cheetah-110108-113008.2-head10k.blkparse", "fiu", 9998, 8896, 1102, 0, 0),
    ("wiscsee_events/wiscsee-sqlitewal-update-ext4.txt", "wiscsee", 5008, 4, 5003, 1, 0),
];

fn check(path: &Path, &(rel, fmt, requests, reads, writes, trims, flushes): &Case) {
    let want: Format = fmt.parse().unwrap();
    assert_eq!(detect(path).unwrap(), want, "{rel}");
    let s = run(path, false).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!((s.requests, s.reads, s.writes, s.trims, s.flushes), (requests, reads, writes, trims, flushes), "{rel}");
    assert_eq!(s.skipped_lines, 0, "{rel}");
}

#[test]
fn kept_sample_counts_and_detection() {
    for case in KEPT {
        check(&kept(case.0), case);
    }
}

#[test]
fn kept_sample_details() {
    // Units as each layout defines them: MSR bytes and 100 ns ticks, DiskSim
    // milliseconds, SPC bytes and seconds, Alibaba microseconds.
    let msr = run(&kept("msr_csv/msr-sample.csv"), false).unwrap();
    assert_eq!((msr.read_bytes, msr.write_bytes, msr.span_ns), (12288, 4096 + 4096 + 40960 + 512, 4_941_200));
    let disksim = run(&kept("disksim_ascii/disksim-sample.trace"), false).unwrap();
    assert_eq!((disksim.span_ns, disksim.read_bytes), (11_123_644, 24 * 512));
    let spc = run(&kept("spc/spc-sample.spc"), false).unwrap();
    assert_eq!((spc.span_ns, spc.read_bytes), (26_214_000, 8192));
    let ali = run(&kept("alibaba/alibaba-sample.csv"), false).unwrap();
    assert_eq!(ali.span_ns, 153_000);
}

#[test]
fn wiscsee_mkfs_negative_offset() {
    let path = kept("wiscsee_events/wiscsee-mkfs-sample.txt");
    assert_eq!(detect(&path).unwrap(), Format::Wiscsee);
    let err = run(&path, false).unwrap_err().to_string();
    assert!(err.ends_with("wiscsee-mkfs-sample.txt:3: negative offset '-8388608'"), "{err}");
    let s = run(&path, true).unwrap();
    assert_eq!((s.requests, s.reads, s.writes, s.skipped_lines), (3, 2, 1, 1));
}

#[test]
fn gzip_sample_detects_and_counts() {
    let raw = std::fs::read(kept("mqsim_ascii/mqsim-sample.trace")).unwrap();
    let t = super::input::testutil::write_file("no-extension", &super::input::testutil::gzip(&raw));
    let mut o = open(&t.path, &OpenOptions::default()).unwrap();
    // No name hint left: integer 5-column files default to mqsim.
    assert_eq!(o.format, Format::Mqsim);
    let s = stats(&mut *o.source).unwrap();
    assert_eq!(s.requests, 4);
    let p = o.source.progress();
    assert_eq!(Some(p.done), p.total);
}

// ------------------------------------------------ real traces, when present

#[test]
fn real_sample_counts_and_detection() {
    for case in REAL {
        let Some(path) = real(case.0) else { return };
        check(&path, case);
    }
}

#[test]
fn real_sample_details() {
    let Some(msr) = real("msr_csv/msr-cambridge1-sample.csv") else { return };
    // Sizes and offsets against the README's figures.
    let msr = run(&msr, false).unwrap();
    assert_eq!(format!("{:.1}", msr.read_bytes as f64 / 1048576.0), "5.8");
    assert_eq!(format!("{:.1}", msr.write_bytes as f64 / 1048576.0), "3.4");
    assert_eq!(format!("{:.1}", msr.span_ns as f64 * 1e-9), "127.2");
    let ycsb = run(&real("blkparse/msclaudz-ycsb-ext4-blkparse.txt").unwrap(), false).unwrap();
    // The clock glitch survives as a huge arrival time, not an error.
    assert!(ycsb.span_ns > 1_266_874_000 * 1_000_000_000, "{}", ycsb.span_ns);
    assert_eq!(format!("{:.1}", ycsb.read_bytes as f64 / 1048576.0), "999.1");
    let fin = run(&real("ssdsim_ascii/ssdsim-example-fin1.ascii").unwrap(), false).unwrap();
    assert_eq!(format!("{:.1}", fin.span_ns as f64 * 1e-9), "259.6");
    let disksim = run(&real("disksim_ascii/disksim-valid-ascii.trace").unwrap(), false).unwrap();
    assert_eq!(format!("{:.1}", disksim.span_ns as f64 * 1e-9), "1532.9");
}

#[test]
fn real_wiscsee_mkfs_negative_offset() {
    let Some(path) = real("wiscsee_events/wiscsee-sqlitewal-update-ext4-mkfs.txt") else { return };
    let err = run(&path, false).unwrap_err().to_string();
    assert!(err.ends_with("wiscsee-sqlitewal-update-ext4-mkfs.txt:113: negative offset '-8388608'"), "{err}");
    let s = run(&path, true).unwrap();
    // 151 requests in the README, one of which is the unreadable negative one.
    assert_eq!((s.requests, s.reads, s.writes, s.skipped_lines), (150, 44, 106, 1));
}
