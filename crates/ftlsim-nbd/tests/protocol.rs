//! The NBD server spoken to in raw protocol bytes over real sockets:
//! handshake and options, data round trips, huge TRIMs, bad input of every
//! kind, connection limits, realtime pacing and clean shutdown.

use ftlsim::{Config, Report, Simulation};
use ftlsim_nbd::proto::*;
use ftlsim_nbd::{Attach, Control, Listen, Pace, ServeOptions, Server, StateDir};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Running {
    addr: String,
    control: Control,
    thread: Option<JoinHandle<Report>>,
}

impl Running {
    fn stop(mut self) -> Report {
        self.control.stop.store(true, Ordering::Relaxed);
        self.thread.take().expect("running").join().expect("server thread")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.control.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A server on 127.0.0.1 with an ephemeral port; `sets` override the small test drive.
fn start(sets: &[&str], f: impl FnOnce(&mut ServeOptions)) -> Running {
    start_with_state(sets, f, None)
}

/// [`start`], loading the drive from and saving it to `state` (`--state`).
fn start_with_state(sets: &[&str], f: impl FnOnce(&mut ServeOptions), state: Option<&Path>) -> Running {
    let mut o: Vec<String> = vec!["nand.store_payloads=true".into(), "geometry.blocks_per_plane=64".into()];
    o.extend(sets.iter().map(|s| s.to_string()));
    let mut sim = Simulation::new(Config::load("k9lag08u0m-4ch", &o).unwrap()).unwrap();
    let durable =
        state.map(|p| StateDir::open(p).unwrap().attach(&mut sim, Attach::default(), &mut |_, _| {}).unwrap());
    let mut opts = ServeOptions::new(Listen::Tcp("127.0.0.1:0".into()));
    f(&mut opts);
    let mut server = Server::bind(sim, opts).unwrap();
    if let Some(d) = durable {
        server = server.durable(d);
    }
    let addr = server.url().trim_start_matches("nbd://").to_string();
    let control = Control::default();
    let c = control.clone();
    let thread = std::thread::spawn(move || server.run(&c).unwrap());
    Running { addr, control, thread: Some(thread) }
}

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

fn read_n(s: &mut impl Read, n: usize) -> Vec<u8> {
    let mut b = vec![0; n];
    s.read_exact(&mut b).unwrap();
    b
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

/// Reads the greeting and sends client flags.
fn greet(s: &mut TcpStream) {
    let g = read_n(s, 18);
    assert_eq!(be64(&g), NBDMAGIC);
    assert_eq!(be64(&g[8..]), IHAVEOPT);
    assert_eq!(u16::from_be_bytes([g[16], g[17]]), FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
    s.write_all(&(CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES).to_be_bytes()).unwrap();
}

fn send_option(s: &mut TcpStream, option: u32, data: &[u8]) {
    let mut b = IHAVEOPT.to_be_bytes().to_vec();
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).unwrap();
}

/// One option reply: (type, payload).
fn option_reply(s: &mut TcpStream, option: u32) -> (u32, Vec<u8>) {
    let h = read_n(s, 20);
    assert_eq!(be64(&h), OPT_REPLY_MAGIC);
    assert_eq!(be32(&h[8..]), option);
    let len = be32(&h[16..]) as usize;
    (be32(&h[12..]), read_n(s, len))
}

fn info_data(name: &str, items: &[u16]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(items.len() as u16).to_be_bytes());
    for i in items {
        d.extend_from_slice(&i.to_be_bytes());
    }
    d
}

/// GO on the default export; returns the export size.
fn go(s: &mut TcpStream) -> u64 {
    send_option(s, OPT_GO, &info_data("", &[INFO_BLOCK_SIZE]));
    let mut size = None;
    loop {
        let (kind, payload) = option_reply(s, OPT_GO);
        match kind {
            REP_INFO if u16::from_be_bytes([payload[0], payload[1]]) == INFO_EXPORT => size = Some(be64(&payload[2..])),
            REP_INFO => {}
            REP_ACK => return size.expect("NBD_INFO_EXPORT before ACK"),
            other => panic!("GO failed with reply {other:#x}: {}", String::from_utf8_lossy(&payload)),
        }
    }
}

fn open(addr: &str) -> (TcpStream, u64) {
    let mut s = connect(addr);
    greet(&mut s);
    let size = go(&mut s);
    (s, size)
}

fn request(s: &mut TcpStream, kind: u16, flags: u16, offset: u64, length: u32, cookie: u64) {
    let r = Request { magic: REQUEST_MAGIC, flags, kind, cookie, offset, length };
    s.write_all(&r.encode()).unwrap();
}

/// Reads a simple reply; returns its error.
fn reply(s: &mut TcpStream, cookie: u64) -> u32 {
    let h = read_n(s, 16);
    assert_eq!(be32(&h), SIMPLE_REPLY_MAGIC);
    assert_eq!(be64(&h[8..]), cookie);
    be32(&h[4..])
}

fn write(s: &mut TcpStream, offset: u64, data: &[u8], flags: u16) -> u32 {
    request(s, CMD_WRITE, flags, offset, data.len() as u32, 7);
    s.write_all(data).unwrap();
    reply(s, 7)
}

fn read(s: &mut TcpStream, offset: u64, len: u32) -> Vec<u8> {
    request(s, CMD_READ, 0, offset, len, 8);
    assert_eq!(reply(s, 8), 0, "read at {offset}");
    read_n(s, len as usize)
}

fn simple(s: &mut TcpStream, kind: u16, flags: u16, offset: u64, len: u32) -> u32 {
    request(s, kind, flags, offset, len, 9);
    reply(s, 9)
}

/// True when the server has closed the connection (EOF or reset).
fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(s.read(&mut b), Ok(0) | Err(_))
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

mod handshake {
    use super::*;

    #[test]
    fn list_info_unknown_and_malformed_options_then_go() {
        let srv = start(&[], |_| {});
        let mut s = connect(&srv.addr);
        greet(&mut s);
        send_option(&mut s, OPT_LIST, &[]);
        let (kind, p) = option_reply(&mut s, OPT_LIST);
        assert_eq!(kind, REP_SERVER);
        assert_eq!(&p[4..4 + be32(&p) as usize], b"ftlsim");
        assert_eq!(option_reply(&mut s, OPT_LIST).0, REP_ACK);
        send_option(&mut s, OPT_LIST, b"x");
        assert_eq!(option_reply(&mut s, OPT_LIST).0, REP_ERR_INVALID);
        send_option(&mut s, 8, &[]); // STRUCTURED_REPLY: optional, refused
        assert_eq!(option_reply(&mut s, 8).0, REP_ERR_UNSUP);
        send_option(&mut s, 0x7777, b"abc");
        assert_eq!(option_reply(&mut s, 0x7777).0, REP_ERR_UNSUP);
        send_option(&mut s, OPT_GO, &[0, 0, 0, 9, b'x']);
        assert_eq!(option_reply(&mut s, OPT_GO).0, REP_ERR_INVALID);
        send_option(&mut s, OPT_INFO, &info_data("nope", &[]));
        assert_eq!(option_reply(&mut s, OPT_INFO).0, REP_ERR_UNKNOWN);
        send_option(&mut s, OPT_INFO, &info_data("ftlsim", &[INFO_NAME, INFO_BLOCK_SIZE]));
        let mut seen = Vec::new();
        loop {
            let (kind, p) = option_reply(&mut s, OPT_INFO);
            if kind == REP_ACK {
                break;
            }
            assert_eq!(kind, REP_INFO);
            let item = u16::from_be_bytes([p[0], p[1]]);
            if item == INFO_BLOCK_SIZE {
                assert_eq!((be32(&p[2..]), be32(&p[10..])), (512, 32 << 20));
            }
            if item == INFO_EXPORT {
                let flags = u16::from_be_bytes([p[10], p[11]]);
                assert_ne!(flags & TF_SEND_TRIM, 0);
                assert_ne!(flags & TF_SEND_WRITE_ZEROES, 0);
            }
            seen.push(item);
        }
        assert_eq!(seen, [INFO_EXPORT, INFO_NAME, INFO_BLOCK_SIZE]);
        let size = go(&mut s);
        assert!(size > 0 && size % 512 == 0);
        assert_eq!(simple(&mut s, CMD_FLUSH, 0, 0, 0), 0);
        request(&mut s, CMD_DISC, 0, 0, 0, 1);
        assert!(closed(&mut s));
    }

    #[test]
    fn export_name_and_abort() {
        let srv = start(&[], |_| {});
        let mut s = connect(&srv.addr);
        greet(&mut s);
        send_option(&mut s, OPT_EXPORT_NAME, b"ftlsim");
        let b = read_n(&mut s, 10); // size + flags, no zeroes (negotiated)
        assert!(be64(&b) > 0);
        assert_eq!(write(&mut s, 0, &[1u8; 512], 0), 0);
        let mut a = connect(&srv.addr);
        greet(&mut a);
        send_option(&mut a, OPT_ABORT, &[]);
        assert_eq!(option_reply(&mut a, OPT_ABORT).0, REP_ACK);
        assert!(closed(&mut a));
    }

    #[test]
    fn malformed_handshakes_close_and_the_next_client_is_served() {
        let srv = start(&[], |_| {});
        let mut bad_flags = connect(&srv.addr);
        read_n(&mut bad_flags, 18);
        bad_flags.write_all(&0x8000_0000u32.to_be_bytes()).unwrap();
        assert!(closed(&mut bad_flags));
        let mut bad_magic = connect(&srv.addr);
        greet(&mut bad_magic);
        bad_magic.write_all(&[0xAB; 16]).unwrap();
        assert!(closed(&mut bad_magic));
        let mut huge = connect(&srv.addr);
        greet(&mut huge);
        let mut h = IHAVEOPT.to_be_bytes().to_vec();
        h.extend_from_slice(&OPT_GO.to_be_bytes());
        h.extend_from_slice(&u32::MAX.to_be_bytes());
        huge.write_all(&h).unwrap();
        assert!(closed(&mut huge));
        let mut unknown_name = connect(&srv.addr);
        greet(&mut unknown_name);
        send_option(&mut unknown_name, OPT_EXPORT_NAME, b"nope");
        assert!(closed(&mut unknown_name));
        let mut vanished = connect(&srv.addr);
        read_n(&mut vanished, 18);
        vanished.write_all(&[0, 0]).unwrap();
        drop(vanished);
        let (mut s, _) = open(&srv.addr);
        assert_eq!(write(&mut s, 0, &[2u8; 4096], 0), 0);
        assert_eq!(read(&mut s, 0, 4096), vec![2u8; 4096]);
    }
}

mod data {
    use super::*;

    #[test]
    fn write_read_trim_zeroes_fua_flush() {
        let srv = start(&[], |_| {});
        let (mut s, size) = open(&srv.addr);
        let data = pattern(3, 300 * 512);
        // 512 B aligned but not page aligned (2 KiB pages): read-modify-write edges.
        assert_eq!(write(&mut s, 1536, &data, 0), 0);
        assert_eq!(read(&mut s, 1536, data.len() as u32), data);
        assert_eq!(read(&mut s, 1024, 512), vec![0; 512], "never written reads zeros");
        assert_eq!(write(&mut s, size - 4096, &pattern(9, 4096), CMD_FLAG_FUA), 0);
        assert_eq!(read(&mut s, size - 4096, 4096), pattern(9, 4096));
        // WRITE_ZEROES, holes allowed, over unaligned edges: zeros exactly there.
        assert_eq!(simple(&mut s, CMD_WRITE_ZEROES, 0, 2048 + 512, 10 * 2048), 0);
        let mut expect = data.clone();
        expect[1024..1024 + 10 * 2048].fill(0);
        assert_eq!(read(&mut s, 1536, data.len() as u32), expect);
        assert_eq!(simple(&mut s, CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 1536, 512), 0);
        expect[..512].fill(0);
        assert_eq!(read(&mut s, 1536, data.len() as u32), expect);
        assert_eq!(simple(&mut s, CMD_TRIM, 0, 0, 1 << 20), 0);
        assert_eq!(simple(&mut s, CMD_FLUSH, 0, 0, 0), 0);
        drop(s);
        let r = srv.stop();
        assert!(r.trims >= 2 && r.trimmed_pages > 0 && r.flushes >= 3, "{r:?}");
        assert!(r.host_pages_written > 0);
    }

    /// The connection polls for input before sleeping (`poll`); whether it
    /// never polls, or polls longer than the client pauses, requests sent
    /// one by one and in pipelined bursts get their replies, in order.
    #[test]
    fn served_alike_whether_polling_or_sleeping() {
        for poll in [Duration::ZERO, Duration::from_millis(200)] {
            let srv = start(&[], |o| o.poll = poll);
            let (mut s, _) = open(&srv.addr);
            for i in 0..16u8 {
                assert_eq!(write(&mut s, i as u64 * 4096, &pattern(i, 4096), 0), 0, "{poll:?}");
            }
            std::thread::sleep(Duration::from_millis(5)); // the server polls, or sleeps
            for i in (0..16u8).rev() {
                request(&mut s, CMD_READ, 0, i as u64 * 4096, 4096, 100 + i as u64);
            }
            for i in (0..16u8).rev() {
                assert_eq!(reply(&mut s, 100 + i as u64), 0);
                assert_eq!(read_n(&mut s, 4096), pattern(i, 4096), "{poll:?}");
            }
            drop(s);
            assert_eq!(srv.stop().host_pages_read, 32, "{poll:?}");
        }
    }

    /// `--state`: what a client wrote (and trimmed) is there after a
    /// restart, across two restarts.
    /// A guest's TRIMs go through the TRIM cost model: the report shows
    /// their latency and the controller time they took, as a run's would.
    #[test]
    fn trims_are_timed_by_the_cost_model_and_reported() {
        let srv = start(&["trim.command_us=50", "trim.range_us=5"], |_| {});
        let (mut s, _) = open(&srv.addr);
        for i in 0..8u8 {
            assert_eq!(write(&mut s, i as u64 * 65536, &pattern(i, 65536), 0), 0);
        }
        for i in 0..4u64 {
            assert_eq!(simple(&mut s, CMD_TRIM, 0, i * 131072, 65536), 0);
        }
        assert_eq!(read(&mut s, 0, 65536), vec![0; 65536]);
        drop(s);
        let r = srv.stop();
        assert_eq!((r.trims, r.trim_ranges, r.trim.commands), (4, 4, 4));
        // Each TRIM: 50 µs per command, 5 µs per range, map work on top.
        assert!((r.trim.controller_ms - 4.0 * 0.055).abs() < 1e-9, "{:?}", r.trim);
        assert!(r.trim.mapping_ram_ms > 0.0 && r.latency_us.trim.count == 4);
        assert!(r.latency_us.trim.mean >= 55.0, "{:?}", r.latency_us.trim);
    }

    #[test]
    fn state_survives_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("drive");
        let srv = start_with_state(&[], |_| {}, Some(&state));
        let (mut s, _) = open(&srv.addr);
        for i in 0..64u8 {
            assert_eq!(write(&mut s, i as u64 * 65536, &pattern(i, 65536), 0), 0);
        }
        assert_eq!(simple(&mut s, CMD_TRIM, 0, 65536, 65536), 0);
        drop(s);
        let first = srv.stop();
        for round in 0..2u8 {
            let srv = start_with_state(&[], |_| {}, Some(&state));
            let (mut s, _) = open(&srv.addr);
            assert_eq!(read(&mut s, 0, 65536), pattern(0, 65536), "round {round}");
            assert_eq!(read(&mut s, 65536, 65536), vec![0; 65536], "trimmed, round {round}");
            for i in 2..64u8 {
                let expect = if i == 2 && round > 0 { pattern(200, 65536) } else { pattern(i, 65536) };
                assert_eq!(read(&mut s, i as u64 * 65536, 65536), expect, "round {round}, chunk {i}");
            }
            assert_eq!(write(&mut s, 2 * 65536, &pattern(200, 65536), 0), 0);
            drop(s);
            let r = srv.stop();
            assert_eq!(r.host_pages_written, 32, "a session reports its own commands");
        }
        assert!(first.host_pages_written > 0);
    }

    #[test]
    fn trims_of_gigabytes_in_one_command() {
        let srv = start(&["geometry.blocks_per_plane=2048"], |_| {});
        let (mut s, size) = open(&srv.addr);
        assert!(size > 3 << 30);
        let mark = pattern(5, 8192);
        assert_eq!(write(&mut s, (2 << 30) + 4096, &mark, 0), 0);
        assert_eq!(write(&mut s, 512, &mark, 0), 0);
        let t = Instant::now();
        assert_eq!(simple(&mut s, CMD_TRIM, 0, 512, (u32::MAX / 512) * 512), 0);
        assert_eq!(simple(&mut s, CMD_WRITE_ZEROES, 0, 1 << 30, 1 << 30), 0);
        assert!(t.elapsed() < Duration::from_secs(20));
        assert_eq!(read(&mut s, (2 << 30) + 4096, 8192), vec![0; 8192]);
        drop(s);
        let r = srv.stop();
        assert!(r.trimmed_pages >= 8, "{r:?}");
    }
}

mod bad_input {
    use super::*;

    #[test]
    fn error_replies_keep_the_connection() {
        let srv = start(&[], |_| {});
        let (mut s, size) = open(&srv.addr);
        assert_eq!(write(&mut s, 0, &pattern(1, 4096), 0), 0);
        assert_eq!(simple(&mut s, 42, 0, 0, 0), EINVAL, "unknown command");
        assert_eq!(simple(&mut s, 5, 0, 0, 4096), EINVAL, "CACHE was not advertised");
        assert_eq!(simple(&mut s, CMD_READ, 0, size, 512), EINVAL, "read past the end");
        assert_eq!(simple(&mut s, CMD_READ, 0, u64::MAX - 511, 1024), EINVAL, "offset overflow");
        assert_eq!(simple(&mut s, CMD_TRIM, 0, size - 512, 1024), EINVAL, "trim past the end");
        assert_eq!(simple(&mut s, CMD_WRITE_ZEROES, 0, size, 512), ENOSPC, "zeroes past the end");
        assert_eq!(write(&mut s, size - 512, &[1; 1024], 0), ENOSPC, "write past the end");
        assert_eq!(simple(&mut s, CMD_READ, 0, 100, 512), EINVAL, "misaligned offset");
        assert_eq!(simple(&mut s, CMD_READ, 0, 0, 100), EINVAL, "misaligned length");
        assert_eq!(simple(&mut s, CMD_READ, 0, 0, 64 << 20), EINVAL, "read over the maximum");
        assert_eq!(simple(&mut s, CMD_READ, 1 << 9, 0, 512), EINVAL, "unknown flag");
        assert_eq!(write(&mut s, 100, &[1; 512], 0), EINVAL, "misaligned write, payload consumed");
        assert_eq!(read(&mut s, 0, 4096), pattern(1, 4096), "still in step");
        drop(s);
        let r = srv.stop();
        assert_eq!(r.writes, 1, "no refused command reached the drive");
    }

    #[test]
    fn fatal_requests_close_and_acknowledged_writes_survive() {
        let srv = start(&[], |_| {});
        let (mut s, _) = open(&srv.addr);
        assert_eq!(write(&mut s, 8192, &pattern(4, 8192), 0), 0);
        s.write_all(&[0xEE; 28]).unwrap(); // bad request magic
        assert!(closed(&mut s));
        let (mut s, _) = open(&srv.addr);
        request(&mut s, CMD_WRITE, 0, 0, 64 << 20, 1); // over the maximum, with payload
        assert!(closed(&mut s));
        let (mut s, _) = open(&srv.addr);
        request(&mut s, CMD_WRITE, 0, 8192, 8192, 1);
        s.write_all(&[0xFF; 5000]).unwrap(); // vanishes mid-payload
        drop(s);
        let (mut s, _) = open(&srv.addr);
        s.write_all(&[0x25, 0x60]).unwrap(); // vanishes mid-header
        drop(s);
        let (mut s, _) = open(&srv.addr);
        assert_eq!(read(&mut s, 8192, 8192), pattern(4, 8192), "partial write not applied");
    }

    #[test]
    fn connections_beyond_the_limit_are_refused_with_a_reason() {
        let srv = start(&[], |o| o.max_connections = 1);
        let (mut first, _) = open(&srv.addr);
        let mut second = connect(&srv.addr);
        greet(&mut second);
        send_option(&mut second, OPT_GO, &info_data("", &[]));
        let (kind, msg) = option_reply(&mut second, OPT_GO);
        assert_eq!(kind, REP_ERR_SHUTDOWN);
        assert!(String::from_utf8_lossy(&msg).contains("busy"));
        drop(second);
        assert_eq!(write(&mut first, 0, &[3; 512], 0), 0);
        request(&mut first, CMD_DISC, 0, 0, 0, 1);
        assert!(closed(&mut first));
        // The slot frees once the first thread has finished; bounded retries.
        for attempt in 0..100 {
            let mut s = connect(&srv.addr);
            greet(&mut s);
            send_option(&mut s, OPT_GO, &info_data("", &[]));
            let (kind, _) = option_reply(&mut s, OPT_GO);
            if kind == REP_ERR_SHUTDOWN && attempt < 99 {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            assert_ne!(kind & (1 << 31), 1 << 31, "still refused");
            while option_reply(&mut s, OPT_GO).0 != REP_ACK {}
            assert_eq!(read(&mut s, 0, 512), vec![3; 512]);
            return;
        }
    }
    #[test]
    fn idle_handshakes_hold_no_slot_and_meet_a_deadline() {
        let srv = start(&[], |o| {
            o.max_connections = 2;
            o.handshake_timeout = Duration::from_millis(800);
        });
        // Eight clients connect and say nothing; one greets and stalls.
        let mut idle: Vec<TcpStream> = (0..8).map(|_| connect(&srv.addr)).collect();
        let mut stalled = connect(&srv.addr);
        greet(&mut stalled);
        // Real clients still get both slots.
        let (mut a, _) = open(&srv.addr);
        let mut b = ftlsim_nbd::client::Client::connect_tcp(&srv.addr).unwrap();
        b.write(0, &[9; 4096], false).unwrap();
        assert_eq!(read(&mut a, 0, 4096), vec![9; 4096]);
        // A third is refused: the slots are the two real clients'.
        let mut third = connect(&srv.addr);
        greet(&mut third);
        send_option(&mut third, OPT_GO, &info_data("", &[]));
        let (kind, msg) = option_reply(&mut third, OPT_GO);
        assert_eq!(kind, REP_ERR_SHUTDOWN, "{}", String::from_utf8_lossy(&msg));
        // Past the deadline the server has closed the silent ones.
        let started = Instant::now();
        for s in idle.iter_mut().chain([&mut stalled]) {
            let mut greeting = [0u8; 18];
            let _ = s.read_exact(&mut greeting);
            assert!(closed(s), "an idle handshake is still open");
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        drop(third);
        b.flush().unwrap();
    }

    #[test]
    fn stale_unix_socket_is_removed_and_a_live_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("nbd.sock");
        let sim = || {
            let o = ["nand.store_payloads=true".into(), "geometry.blocks_per_plane=64".into()];
            Simulation::new(Config::load("k9lag08u0m-4ch", &o).unwrap()).unwrap()
        };
        // A killed server's socket file: nothing listens on it.
        drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
        assert!(sock.exists());
        let server = Server::bind(sim(), ServeOptions::new(Listen::Unix(sock.clone()))).unwrap();
        let e = Server::bind(sim(), ServeOptions::new(Listen::Unix(sock.clone()))).err().unwrap().to_string();
        assert!(e.contains("nbd.sock") && e.contains("a server is listening there already"), "{e}");
        let control = Control::default();
        let c = control.clone();
        let t = std::thread::spawn(move || server.run(&c).unwrap());
        let mut client = ftlsim_nbd::client::Client::connect_unix(&sock).unwrap();
        client.write(4096, &[5; 4096], true).unwrap();
        assert_eq!(client.read(4096, 4096).unwrap(), vec![5; 4096]);
        client.disconnect().unwrap();
        control.stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
        std::fs::write(&sock, "not a socket").unwrap();
        let e = Server::bind(sim(), ServeOptions::new(Listen::Unix(sock.clone()))).err().unwrap().to_string();
        assert!(e.contains("exists and is not a socket"), "{e}");
    }
}

mod serving {
    use super::*;

    /// What one pipelined request expects back.
    enum Expect {
        Done,
        Data(Vec<u8>),
        Error(u32),
    }

    #[test]
    fn a_thousand_requests_in_flight_are_answered_by_handle() {
        let srv = start(&[], |_| {});
        let (mut s, size) = open(&srv.addr);
        // Requests are sent by another thread while replies are read here,
        // so neither side's socket buffer can stall the other.
        let mut requests: Vec<(Request, Option<Vec<u8>>)> = Vec::new();
        let mut expect: Vec<(u64, Expect)> = Vec::new();
        let mut contents = vec![0u8; 1 << 20];
        let mut cookie = 0x1000_0000_0000_0000u64;
        let mut push = |r: Request, data: Option<Vec<u8>>, e: Expect, expect: &mut Vec<(u64, Expect)>| {
            expect.push((r.cookie, e));
            requests.push((r, data));
        };
        // First, with no other reply pending: a READ over the reply buffer.
        let first = Request { magic: REQUEST_MAGIC, flags: 0, kind: CMD_READ, cookie: 1, offset: 0, length: 1 << 20 };
        push(first, None, Expect::Data(contents.clone()), &mut expect);
        for i in 0..1000u64 {
            cookie += 0x1_0001;
            let offset = (i * 7919 % 240) * 4096;
            let req = |kind, length| Request { magic: REQUEST_MAGIC, flags: 0, kind, cookie, offset, length };
            match i % 10 {
                0..=2 => {
                    let data = pattern(i as u8, 4096);
                    contents[offset as usize..offset as usize + 4096].copy_from_slice(&data);
                    push(req(CMD_WRITE, 4096), Some(data), Expect::Done, &mut expect);
                }
                3..=6 => {
                    let want = contents[offset as usize..offset as usize + 8192].to_vec();
                    push(req(CMD_READ, 8192), None, Expect::Data(want), &mut expect);
                }
                7 => push(req(CMD_FLUSH, 0), None, Expect::Done, &mut expect),
                8 if i % 100 == 8 => {
                    // Larger than the server's reply buffer: sent on its own.
                    let whole = Request { offset: 0, ..req(CMD_READ, 1 << 20) };
                    push(whole, None, Expect::Data(contents.clone()), &mut expect);
                }
                8 => {
                    let past = Request { offset: size, ..req(CMD_READ, 4096) };
                    push(past, None, Expect::Error(EINVAL), &mut expect);
                }
                _ => {
                    contents[offset as usize..offset as usize + 4096].fill(0);
                    push(req(CMD_TRIM, 4096), None, Expect::Done, &mut expect);
                }
            }
        }
        let mut w = s.try_clone().unwrap();
        let sender = std::thread::spawn(move || {
            for (r, data) in &requests {
                w.write_all(&r.encode()).unwrap();
                if let Some(d) = data {
                    w.write_all(d).unwrap();
                }
            }
        });
        let mut pending: std::collections::HashMap<u64, Expect> = expect.into_iter().collect();
        while !pending.is_empty() {
            let h = read_n(&mut s, 16);
            assert_eq!(be32(&h), SIMPLE_REPLY_MAGIC);
            let c = be64(&h[8..]);
            let error = be32(&h[4..]);
            match pending.remove(&c).unwrap_or_else(|| panic!("reply to unknown or repeated handle {c:#x}")) {
                Expect::Done => assert_eq!(error, 0, "handle {c:#x}"),
                Expect::Error(e) => assert_eq!(error, e, "handle {c:#x}"),
                Expect::Data(want) => {
                    assert_eq!(error, 0, "handle {c:#x}");
                    assert!(read_n(&mut s, want.len()) == want, "data of handle {c:#x}");
                }
            }
        }
        sender.join().unwrap();
        drop(s);
        let r = srv.stop();
        assert_eq!((r.writes, r.trims), (300, 100), "{r:?}");
    }

    #[test]
    fn realtime_pace_holds_replies_until_simulated_completion() {
        let srv = start(&[], |o| o.pace = Pace::Realtime);
        let (mut s, _) = open(&srv.addr);
        // One 2 KiB page program takes tPROG = 800 us plus transfers.
        let t = Instant::now();
        assert_eq!(write(&mut s, 0, &[1; 2048], 0), 0);
        assert!(t.elapsed() >= Duration::from_micros(800), "{:?}", t.elapsed());
        drop(s);
        let r = srv.stop();
        assert!(r.latency_us.write.max >= 800.0);
        assert_eq!(r.input.host_mode, "open");
    }

    #[test]
    fn unix_socket_record_and_shutdown_with_a_client_connected() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("nbd.sock");
        let trace = dir.path().join("rec.csv");
        let sim = Simulation::new(
            Config::load("k9lag08u0m-4ch", &["nand.store_payloads=true".into(), "geometry.blocks_per_plane=64".into()])
                .unwrap(),
        )
        .unwrap();
        let mut opts = ServeOptions::new(Listen::Unix(sock.clone()));
        opts.record = Some(trace.clone());
        let server = Server::bind(sim, opts).unwrap();
        let control = Control::default();
        let c = control.clone();
        let t = std::thread::spawn(move || server.run(&c).unwrap());
        let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        read_n(&mut s, 18);
        s.write_all(&(CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES).to_be_bytes()).unwrap();
        let mut o = IHAVEOPT.to_be_bytes().to_vec();
        o.extend_from_slice(&OPT_EXPORT_NAME.to_be_bytes());
        o.extend_from_slice(&0u32.to_be_bytes());
        s.write_all(&o).unwrap();
        read_n(&mut s, 10);
        for (i, kind) in [CMD_WRITE, CMD_TRIM, CMD_FLUSH].into_iter().enumerate() {
            let len = if kind == CMD_FLUSH { 0 } else { 4096 };
            let r = Request { magic: REQUEST_MAGIC, flags: 0, kind, cookie: i as u64, offset: 0, length: len };
            s.write_all(&r.encode()).unwrap();
            if kind == CMD_WRITE {
                s.write_all(&[7; 4096]).unwrap();
            }
            let h = read_n(&mut s, 16);
            assert_eq!(be32(&h[4..]), 0);
        }
        control.stop.store(true, Ordering::Relaxed);
        let report = t.join().unwrap();
        assert_eq!((report.writes, report.trims, report.flushes), (1, 1, 1));
        assert!(!sock.exists(), "socket file removed");
        let text = std::fs::read_to_string(&trace).unwrap();
        let ops: Vec<&str> = text.lines().skip(1).map(|l| l.split(',').nth(1).unwrap()).collect();
        assert_eq!(text.lines().next(), Some("time_ns,op,sector,sectors"));
        assert_eq!(ops, ["W", "T", "F"]);
    }
}
