//! The seed inputs each target's corpus starts from, built from the
//! repository's samples: the sample traces (`tests/traces`), a binary
//! blktrace capture, the presets, workload and other spec strings as the
//! README gives them, and NBD client streams as real clients send them
//! (fixed newstyle, GO or EXPORT_NAME, then requests of every kind).
//! `tests/corpus.rs` checks that `fuzz/corpus` holds them, and writes
//! them with `FTLSIM_FUZZ_WRITE_SEEDS=1`.

use ftlsim::trace::{Format, formats};
use ftlsim_nbd::proto::*;
use std::path::Path;

/// One seed: (target, file name, bytes).
pub type Seed = (&'static str, String, Vec<u8>);

/// The repository's root (the fuzz crate lives in `fuzz/`).
pub fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

pub fn all() -> Vec<Seed> {
    let mut v = traces();
    v.extend(specs());
    v.extend(nbd());
    v
}

/// The `traces` selector byte of a format name (see [`crate::traces`]).
fn selector(name: &str) -> u8 {
    1 + formats().iter().position(|&n| n == name).expect("a listed format") as u8
}

fn traces() -> Vec<Seed> {
    let mut v = Vec::new();
    let root = repo_root().join("tests/traces");
    let mut dirs: Vec<_> = std::fs::read_dir(&root).expect("tests/traces").map(|e| e.expect("entry").path()).collect();
    dirs.sort();
    for dir in dirs.into_iter().filter(|d| d.is_dir()) {
        let mut files: Vec<_> =
            std::fs::read_dir(&dir).expect("sample dir").map(|e| e.expect("entry").path()).collect();
        files.sort();
        let dir_name = dir.file_name().expect("name").to_string_lossy().into_owned();
        let format: Format = dir_name.parse().unwrap_or_else(|_| Format::native());
        for file in files {
            let body = std::fs::read(&file).expect("sample trace");
            let stem = file.file_stem().expect("name").to_string_lossy().into_owned();
            let sel = selector(format.name());
            v.push(("traces", format!("seed-{stem}"), [&[sel, 0][..], &body].concat()));
            v.push(("traces", format!("seed-{stem}-detected"), [&[0, 0][..], &body].concat()));
            v.push(("traces", format!("seed-{stem}-gzip-skip"), [&[sel, 3][..], &body].concat()));
        }
    }
    let blk = selector("blktrace");
    let capture = blktrace_capture();
    v.push(("traces", "seed-blktrace".into(), [&[blk, 0][..], &capture].concat()));
    v.push(("traces", "seed-blktrace-detected".into(), [&[0, 0][..], &capture].concat()));
    v.push(("traces", "seed-blktrace-split-gzip".into(), [&[blk, 5][..], &capture].concat()));
    let mapping = b"time=0,op=3,offset=4,size=5,time_unit=s,offset_unit=B,size_unit=B\n\
                    0.0,a,b,W,4096,8192\n0.5,a,b,R,0,512\n1.25,a,b,W,1048576,4096\n";
    v.push(("traces", "seed-csv-mapping".into(), [&[formats().len() as u8 + 1, 0][..], mapping].concat()));
    v
}

/// A small binary blktrace capture, little-endian: queue and issue events
/// for writes, reads, a discard and a flush, and a notify record with a
/// payload (the layout is in `ftlsim::trace::blktrace`).
fn blktrace_capture() -> Vec<u8> {
    const ISSUE: u32 = 7 | (1 << 6) << 16;
    const QUEUE: u32 = 1 | (1 << 4) << 16;
    let (read, write, flush, notify, discard) = (1u32 << 16, 2u32 << 16, 4u32 << 16, 1u32 << 26, 1u32 << 29);
    let records: &[(u64, u64, u32, u32, &[u8])] = &[
        (1_000, 100, 4096, QUEUE | write, b""),
        (2_000, 100, 4096, ISSUE | write, b""),
        (2_500, 0, 0, notify, b"kworker\0"),
        (3_000, 8, 512, ISSUE | read, b""),
        (4_000, 64, 1 << 20, ISSUE | write | discard, b""),
        (5_000, 0, 0, ISSUE | flush | write, b""),
    ];
    let mut v = Vec::new();
    for (seq, &(time, sector, bytes, action, pdu)) in records.iter().enumerate() {
        v.extend_from_slice(&(0x6561_7400u32 | 7).to_le_bytes());
        v.extend_from_slice(&(seq as u32).to_le_bytes());
        v.extend_from_slice(&time.to_le_bytes());
        v.extend_from_slice(&sector.to_le_bytes());
        v.extend_from_slice(&bytes.to_le_bytes());
        v.extend_from_slice(&action.to_le_bytes());
        v.extend_from_slice(&[0; 12]); // pid, device, cpu
        v.extend_from_slice(&0u16.to_le_bytes()); // error
        v.extend_from_slice(&(pdu.len() as u16).to_le_bytes());
        v.extend_from_slice(pdu);
    }
    v
}

fn specs() -> Vec<Seed> {
    let mut v = Vec::new();
    let mut presets: Vec<_> = std::fs::read_dir(repo_root().join("presets"))
        .expect("presets")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    presets.sort();
    for p in presets {
        let stem = p.file_stem().expect("name").to_string_lossy().into_owned();
        v.push(("specs", format!("seed-config-{stem}"), [&[0][..], &std::fs::read(&p).expect("preset")].concat()));
    }
    let mut text =
        |kind: u8, name: &str, s: &str| v.push(("specs", format!("seed-{name}"), [&[kind][..], s.as_bytes()].concat()));
    text(1, "overrides", "nand.store_payloads=true\ngeometry.blocks_per_plane=64\nftl.name=\"dftl\"\ngc.threshold=0.1");
    text(6, "overrides-2", "ftl.name=hat\nhost.queue_depth=32\nseed=7");
    let workloads = [
        "rw=randwrite,bs=4k,ios=1000000,seed=7",
        "rw=randwrite,bs=4k,ios=100000,iodepth=32",
        "rw=randrw,rwmixread=70,bs=4k-64k,size=50%,offset=10%,dist=zipf:1.2,arrival=poisson,rate=1000",
        "rw=write,bs=128k,range=1g,align=4k",
        "rw=randtrim,bssplit=4k/50:64k/50,ios=100",
        "rw=randwrite,trimmix=10,bs=8k,ios=50,dist=pareto:0.9",
        "rw=delete,files=10,filesize=64k",
    ];
    for (i, w) in workloads.iter().enumerate() {
        text(2, &format!("workload-{i}"), w);
    }
    text(7, "workload-tiny", "rw=read,bs=512,ios=10");
    text(3, "precondition", "fill=1.0,overwrite=0.5");
    text(3, "precondition-timed", "fill=0.9,overwrite=1.0,mode=timed");
    text(4, "power-cut-after", "after=30000");
    text(4, "power-cut-at", "at=2s");
    v
}

/// An option: magic, option, length, data.
fn option(option: u32, data: &[u8]) -> Vec<u8> {
    let mut b = IHAVEOPT.to_be_bytes().to_vec();
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    b
}

/// INFO/GO data: the export name and the information items asked for.
fn info(name: &str, items: &[u16]) -> Vec<u8> {
    let mut b = (name.len() as u32).to_be_bytes().to_vec();
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(&(items.len() as u16).to_be_bytes());
    items.iter().for_each(|i| b.extend_from_slice(&i.to_be_bytes()));
    b
}

fn request(kind: u16, flags: u16, cookie: u64, offset: u64, length: u32) -> Vec<u8> {
    Request { magic: REQUEST_MAGIC, flags, kind, cookie, offset, length }.encode().to_vec()
}

fn nbd() -> Vec<Seed> {
    let flags = (CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES).to_be_bytes();
    let go = option(OPT_GO, &info("", &[]));
    // A session of every command: writes (one with FUA), reads of them, an
    // unaligned read, a trim, zeroes, a flush, then a disconnect.
    let mut session = Vec::new();
    session.extend(request(CMD_WRITE, 0, 1, 0, 4096));
    session.extend((0..4096u32).map(|i| (i % 251) as u8));
    session.extend(request(CMD_WRITE, CMD_FLAG_FUA, 2, 1 << 20, 512));
    session.extend([0xcd; 512]);
    session.extend(request(CMD_READ, 0, 3, 0, 4096));
    session.extend(request(CMD_READ, 0, 4, 100, 512));
    session.extend(request(CMD_TRIM, 0, 5, 0, 2048));
    session.extend(request(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE, 6, 8192, 65536));
    session.extend(request(CMD_FLUSH, 0, 7, 0, 0));
    session.extend(request(CMD_READ, 0, 8, 0, 8192));
    session.extend(request(CMD_DISC, 0, 9, 0, 0));
    let mut v = Vec::new();
    for (drive, ftl) in [(0u8, "page"), (1, "dftl"), (2, "fast")] {
        v.push(("nbd", format!("seed-go-session-{ftl}"), [&[drive][..], &flags, &go, &session].concat()));
    }
    let haggle = [
        option(OPT_LIST, &[]),
        option(OPT_INFO, &info("fuzz", &[INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE])),
        option(OPT_INFO, &info("other", &[])),
        option(9, b"structured replies"),
        option(OPT_GO, &[0, 0, 0, 9]),
        option(OPT_GO, &info("fuzz", &[INFO_BLOCK_SIZE])),
    ]
    .concat();
    v.push(("nbd", "seed-haggle-then-go".into(), [&[0][..], &flags, &haggle, &session].concat()));
    let old_client = CLIENT_FIXED_NEWSTYLE.to_be_bytes();
    let export_name = option(OPT_EXPORT_NAME, b"fuzz");
    v.push(("nbd", "seed-export-name".into(), [&[0][..], &old_client, &export_name, &session].concat()));
    v.push(("nbd", "seed-abort".into(), [&[0][..], &flags, &option(OPT_ABORT, &[])].concat()));
    let bad = [
        request(CMD_READ, 0, 1, 1 << 40, 512),
        request(CMD_WRITE, 0, 2, 1 << 40, 512),
        [0x11; 512].to_vec(),
        request(CMD_READ, 1 << 5, 3, 0, 512),
        request(13, 0, 4, 0, 0),
        request(CMD_READ, 0, 5, 0, 0),
        request(CMD_TRIM, CMD_FLAG_FUA, 6, 0, 4096),
        request(CMD_WRITE, 0, 7, 0, 1024),
    ]
    .concat();
    v.push(("nbd", "seed-refused-requests".into(), [&[1][..], &flags, &go, &bad].concat()));
    v
}
