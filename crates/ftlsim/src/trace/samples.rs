//! The real sample traces in `shared/traces/` beside the repository root:
//! every reader must parse them, with the request counts documented in that
//! folder's README. The folder is required: a missing folder fails the
//! tests rather than silently skipping them.

use super::{Format, OpenOptions, TraceStats, detect, open, stats};
use std::path::PathBuf;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/traces");

fn sample(rel: &str) -> PathBuf {
    let dir = PathBuf::from(DIR);
    assert!(
        dir.is_dir(),
        "sample trace folder {} is missing: these tests need the shared/traces folder beside the repository root",
        dir.display()
    );
    let p = dir.join(rel);
    assert!(p.is_file(), "sample trace {} is missing", p.display());
    p
}

fn run(rel: &str, skip_bad_lines: bool) -> crate::Result<TraceStats> {
    let path = sample(rel);
    let mut o = open(&path, &OpenOptions { format: None, skip_bad_lines })?;
    assert!(o.detected);
    stats(&mut *o.source)
}

/// (file, format, requests, reads, writes, trims)
const CASES: &[(&str, &str, u64, u64, u64, u64)] = &[
    ("msr_csv/msr-cambridge1-sample.csv", "msr", 1000, 508, 492, 0),
    ("ssdsim_ascii/ssdsim-example-fin1.ascii", "ssdsim", 10000, 4077, 5923, 0),
    ("mqsim_ascii/mqsim-tpcc-small.trace", "mqsim", 6999, 4381, 2618, 0),
    ("disksim_ascii/disksim-valid-ascii.trace", "disksim", 100000, 79634, 20366, 0),
    ("blkparse/wiscsee-testdata-blkparse-output.txt", "blkparse", 673, 161, 512, 0),
    ("blkparse/msclaudz-ycsb-ext4-blkparse.txt", "blkparse", 9887, 9039, 848, 0),
    ("fiu/fiu-mail-cheetah-110108-113008.2-head10k.blkparse", "fiu", 9998, 8896, 1102, 0),
    ("wiscsee_events/wiscsee-sqlitewal-update-ext4.txt", "wiscsee", 5008, 4, 5003, 1),
];

#[test]
fn sample_counts_and_detection() {
    for &(rel, fmt, requests, reads, writes, trims) in CASES {
        let want: Format = fmt.parse().unwrap();
        assert_eq!(detect(&sample(rel)).unwrap(), want, "{rel}");
        let s = run(rel, false).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!((s.requests, s.reads, s.writes, s.trims, s.flushes), (requests, reads, writes, trims, 0), "{rel}");
        assert_eq!(s.skipped_lines, 0, "{rel}");
    }
}

#[test]
fn sample_details() {
    // Sizes and offsets against the README's figures.
    let msr = run("msr_csv/msr-cambridge1-sample.csv", false).unwrap();
    assert_eq!(format!("{:.1}", msr.read_bytes as f64 / 1048576.0), "5.8");
    assert_eq!(format!("{:.1}", msr.write_bytes as f64 / 1048576.0), "3.4");
    assert_eq!(format!("{:.1}", msr.span_ns as f64 * 1e-9), "127.2");
    let ycsb = run("blkparse/msclaudz-ycsb-ext4-blkparse.txt", false).unwrap();
    // The clock glitch survives as a huge arrival time, not an error.
    assert!(ycsb.span_ns > 1_266_874_000 * 1_000_000_000, "{}", ycsb.span_ns);
    assert_eq!(format!("{:.1}", ycsb.read_bytes as f64 / 1048576.0), "999.1");
    let fin = run("ssdsim_ascii/ssdsim-example-fin1.ascii", false).unwrap();
    assert_eq!(format!("{:.1}", fin.span_ns as f64 * 1e-9), "259.6");
    let disksim = run("disksim_ascii/disksim-valid-ascii.trace", false).unwrap();
    assert_eq!(format!("{:.1}", disksim.span_ns as f64 * 1e-9), "1532.9");
}

#[test]
fn wiscsee_mkfs_negative_offset() {
    let rel = "wiscsee_events/wiscsee-sqlitewal-update-ext4-mkfs.txt";
    assert_eq!(detect(&sample(rel)).unwrap(), Format::Wiscsee);
    let err = run(rel, false).unwrap_err().to_string();
    assert!(err.ends_with("wiscsee-sqlitewal-update-ext4-mkfs.txt:113: negative offset '-8388608'"), "{err}");
    let s = run(rel, true).unwrap();
    // 151 requests in the README, one of which is the unreadable negative one.
    assert_eq!((s.requests, s.reads, s.writes, s.skipped_lines), (150, 44, 106, 1));
}

#[test]
fn gzip_sample_detects_and_counts() {
    let raw = std::fs::read(sample("mqsim_ascii/mqsim-tpcc-small.trace")).unwrap();
    let t = super::input::testutil::write_file("no-extension", &super::input::testutil::gzip(&raw));
    let mut o = open(&t.path, &OpenOptions::default()).unwrap();
    // No name hint left: integer 5-column files default to mqsim.
    assert_eq!(o.format, Format::Mqsim);
    let s = stats(&mut *o.source).unwrap();
    assert_eq!(s.requests, 6999);
    let p = o.source.progress();
    assert_eq!(Some(p.done), p.total);
}
