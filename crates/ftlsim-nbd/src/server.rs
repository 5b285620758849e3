//! The server loop: listen, hand each connection a thread, stop cleanly.
//!
//! Connections are served concurrently, up to `max_connections`; all of
//! them drive the one simulated SSD, one command at a time (a mutex), so
//! the export is safe for multiple connections (NBD_FLAG_CAN_MULTI_CONN).
//! A connection takes a slot only once it selects the export (GO or
//! EXPORT_NAME): a client beyond the limit has that selection refused with
//! `NBD_REP_ERR_SHUTDOWN` and a message saying why. Handshakes get a
//! deadline (10 s for the whole haggling) and at most
//! [`MAX_HANDSHAKES`] run at once (further connections are closed at
//! once), so idle half-open connections cannot lock real clients out.
//!
//! A Unix socket file left by a killed server (nothing listens on it) is
//! removed at start; one a live server listens on is refused.
//!
//! Stopping: when the stop flag is raised (SIGINT/SIGTERM through
//! [`Control::install_signal_handlers`]) the server stops accepting, shuts
//! down the read side of every connection (each finishes and answers the
//! request it has read, so every acknowledged write was executed), joins
//! the connection threads and returns the report. The dump flag (SIGUSR1)
//! and the stats interval print live counters to stderr.

use crate::drive::{Drive, Pace};
use crate::handshake::{self, Export, Outcome};
use crate::proto::*;
use crate::state::Durable;
use crate::stream::Stream;
use crate::transmission;
use ftlsim::{Report, Simulation};
use std::io::ErrorKind;
use std::net::{Shutdown, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest READ or WRITE accepted, bytes.
pub const MAX_BLOCK_BYTES: u32 = 32 << 20;
/// Handshakes in progress at once; connections beyond are closed.
pub const MAX_HANDSHAKES: usize = 256;
/// How often the accept loop looks at its flags.
const POLL: Duration = Duration::from_millis(10);

#[derive(Clone, Debug)]
pub enum Listen {
    Tcp(String),
    Unix(PathBuf),
}

#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub listen: Listen,
    pub pace: Pace,
    pub stats_interval: Option<Duration>,
    pub record: Option<PathBuf>,
    pub max_connections: usize,
    pub export_name: String,
    /// How long a connection polls for its next request before sleeping
    /// (see [`crate::transmission`]); zero sleeps at once.
    pub poll: Duration,
    /// How long a client may take from connecting to selecting the export.
    pub handshake_timeout: Duration,
}

impl ServeOptions {
    pub fn new(listen: Listen) -> ServeOptions {
        ServeOptions {
            listen,
            pace: Pace::None,
            stats_interval: None,
            record: None,
            max_connections: 16,
            export_name: "ftlsim".into(),
            poll: Duration::from_micros(50),
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// Flags raised from outside (signal handlers, tests).
#[derive(Clone, Debug, Default)]
pub struct Control {
    pub stop: Arc<AtomicBool>,
    pub dump_stats: Arc<AtomicBool>,
}

impl Control {
    /// SIGINT and SIGTERM raise `stop`; SIGUSR1 raises `dump_stats`.
    pub fn install_signal_handlers(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
        signal_hook::flag::register(SIGINT, self.stop.clone())?;
        signal_hook::flag::register(SIGTERM, self.stop.clone())?;
        signal_hook::flag::register(SIGUSR1, self.dump_stats.clone())?;
        Ok(())
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

pub struct Server {
    listener: Listener,
    drive: Arc<Mutex<Drive>>,
    export: Export,
    opts: ServeOptions,
    /// Connections in the handshake, and past it (holding a slot).
    handshaking: Arc<AtomicUsize>,
    admitted: Arc<AtomicUsize>,
}

struct Conn {
    stream: Stream,
    thread: JoinHandle<()>,
}

impl Server {
    /// Builds the drive and binds the socket.
    pub fn bind(sim: Simulation, opts: ServeOptions) -> ftlsim::Result<Server> {
        let drive = Drive::new(sim, opts.pace, opts.record.as_deref())?;
        let listener = match &opts.listen {
            Listen::Tcp(addr) => {
                let l = TcpListener::bind(addr).map_err(|e| ftlsim::Error::io(addr, e))?;
                Listener::Tcp(l)
            }
            Listen::Unix(path) => {
                remove_stale_socket(path)?;
                let l = UnixListener::bind(path).map_err(|e| ftlsim::Error::io(path, e))?;
                Listener::Unix(l, path.clone())
            }
        };
        let nonblocking = match &listener {
            Listener::Tcp(l) => l.set_nonblocking(true),
            Listener::Unix(l, _) => l.set_nonblocking(true),
        };
        nonblocking.map_err(|e| ftlsim::Error::io("listener", e))?;
        let export = export(&drive, &opts.export_name);
        Ok(Server {
            listener,
            drive: Arc::new(Mutex::new(drive)),
            export,
            opts,
            handshaking: Arc::default(),
            admitted: Arc::default(),
        })
    }

    /// Journals the drive into its state directory (`--state`) and takes
    /// a checkpoint at shutdown; the simulation given to
    /// [`bind`](Self::bind) must be the one `durable` was
    /// [`attach`](crate::StateDir::attach)ed to.
    pub fn durable(self, durable: Durable) -> Server {
        self.drive.lock().expect("drive lock").make_durable(durable);
        self
    }

    /// Where clients connect: `nbd://HOST:PORT` or `nbd+unix:///?socket=PATH`.
    pub fn url(&self) -> String {
        match &self.listener {
            Listener::Tcp(l) => match l.local_addr() {
                Ok(a) => format!("nbd://{a}"),
                Err(_) => "nbd://?".into(),
            },
            Listener::Unix(_, p) => format!("nbd+unix:///?socket={}", p.display()),
        }
    }

    /// Serves until `control.stop` is raised; returns the full report.
    pub fn run(self, control: &Control) -> ftlsim::Result<Report> {
        let url = self.url();
        eprintln!("ftlsim serve: listening on {url} ({} bytes, pace {:?})", self.export.size, self.opts.pace);
        let mut conns: Vec<Conn> = Vec::new();
        let mut next_stats = self.opts.stats_interval.map(|d| Instant::now() + d);
        while !control.stop.load(Ordering::Relaxed) {
            if control.dump_stats.swap(false, Ordering::Relaxed) || next_stats.is_some_and(|t| Instant::now() >= t) {
                eprintln!("{}", self.drive.lock().expect("drive lock").stats_line());
                next_stats = self.opts.stats_interval.map(|d| Instant::now() + d);
            }
            conns.retain(|c| !c.thread.is_finished());
            match self.accept() {
                Ok(Some(stream)) if self.handshaking.load(Ordering::Relaxed) >= MAX_HANDSHAKES => {
                    eprintln!("ftlsim serve: {MAX_HANDSHAKES} handshakes in progress already; connection closed");
                    drop(stream);
                }
                Ok(Some(stream)) => conns.push(self.spawn(stream)?),
                Ok(None) => std::thread::sleep(POLL),
                Err(e) => eprintln!("ftlsim serve: accept failed: {e}"),
            }
        }
        for c in &conns {
            // Each connection finishes the request it has read, then sees EOF.
            let _ = c.stream.shutdown(Shutdown::Read);
        }
        for c in conns {
            let _ = c.thread.join();
        }
        if let Listener::Unix(_, path) = &self.listener {
            let _ = std::fs::remove_file(path);
        }
        let mut drive = self.drive.lock().expect("drive lock");
        drive.finish_record(self.opts.record.as_deref())?;
        eprintln!("{}", drive.stats_line());
        let report = drive.report(&url);
        if let Some(d) = drive.checkpoint_and_detach()? {
            eprintln!("ftlsim serve: drive saved to {}", d.path().display());
        }
        Ok(report)
    }

    fn accept(&self) -> std::io::Result<Option<Stream>> {
        let r = match &self.listener {
            Listener::Tcp(l) => l.accept().map(|(s, _)| {
                let _ = s.set_nodelay(true);
                s.set_nonblocking(false).map(|_| Stream::Tcp(s))
            }),
            Listener::Unix(l, _) => l.accept().map(|(s, _)| s.set_nonblocking(false).map(|_| Stream::Unix(s))),
        };
        match r {
            Ok(s) => s.map(Some),
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn spawn(&self, stream: Stream) -> ftlsim::Result<Conn> {
        let handle = stream.try_clone().map_err(|e| ftlsim::Error::io("connection", e))?;
        let drive = self.drive.clone();
        let export = self.export.clone();
        let (poll, deadline) = (self.opts.poll, Instant::now() + self.opts.handshake_timeout);
        let slots = Slots {
            handshaking: self.handshaking.clone(),
            admitted: self.admitted.clone(),
            max: self.opts.max_connections,
            in_handshake: true,
            holds: false,
        };
        slots.handshaking.fetch_add(1, Ordering::Relaxed);
        let thread = std::thread::spawn(move || {
            let id = {
                let mut d = drive.lock().expect("drive lock");
                d.counts.connections += 1;
                d.counts.connections
            };
            let why = connection(stream, &drive, &export, slots, deadline, poll);
            eprintln!("ftlsim serve: connection {id} ended: {why}");
        });
        Ok(Conn { stream: handle, thread })
    }
}

/// One connection's share of the server's counts: in the handshake until
/// [`admit`](Slots::admit)ted or dropped; holding a slot after.
struct Slots {
    handshaking: Arc<AtomicUsize>,
    admitted: Arc<AtomicUsize>,
    max: usize,
    in_handshake: bool,
    holds: bool,
}

impl Slots {
    /// Takes a slot; says why not when all are taken.
    fn admit(&mut self) -> Option<String> {
        if self.holds {
            return None;
        }
        let max = self.max;
        match self.admitted.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)) {
            Ok(_) => {
                self.holds = true;
                None
            }
            Err(n) => Some(format!("server busy: {n} connections already (--max-connections)")),
        }
    }

    /// The handshake is over, whichever way.
    fn handshake_done(&mut self) {
        if std::mem::take(&mut self.in_handshake) {
            self.handshaking.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        self.handshake_done();
        if self.holds {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// What the server offers for `drive` under `name`: its size, the
/// commands it takes and its block sizes.
pub fn export(drive: &Drive, name: &str) -> Export {
    Export {
        name: name.to_string(),
        description: format!("ftlsim: {} FTL on {}", drive.ftl_name(), drive.config_name()),
        size: drive.size_bytes(),
        transmission_flags: TF_HAS_FLAGS
            | TF_SEND_FLUSH
            | TF_SEND_FUA
            | TF_SEND_TRIM
            | TF_SEND_WRITE_ZEROES
            | TF_CAN_MULTI_CONN,
        min_block: 512,
        preferred_block: drive.page_size().max(4096),
        max_block: MAX_BLOCK_BYTES,
    }
}

/// Removes a Unix socket file nothing listens on (a killed server's);
/// refuses one a server answers on, and anything that is not a socket.
fn remove_stale_socket(path: &std::path::Path) -> ftlsim::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else { return Ok(()) };
    if !meta.file_type().is_socket() {
        return Err(ftlsim::Error::config(
            "--socket",
            format!("{} exists and is not a socket; remove it or choose another path", path.display()),
        ));
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(ftlsim::Error::config(
            "--socket",
            format!("{}: a server is listening there already; stop it or choose another path", path.display()),
        )),
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
            std::fs::remove_file(path).map_err(|e| ftlsim::Error::io(path, e))?;
            eprintln!(
                "ftlsim serve: removed {}, a socket nothing listened on (left by a stopped server)",
                path.display()
            );
            Ok(())
        }
        Err(e) => Err(ftlsim::Error::io(path, e)),
    }
}

/// One client from greeting to close; returns why it ended.
fn connection(
    mut stream: Stream,
    drive: &Arc<Mutex<Drive>>,
    export: &Export,
    mut slots: Slots,
    deadline: Instant,
    poll: Duration,
) -> String {
    let outcome = handshake::negotiate(&mut Timed { stream: &mut stream, deadline }, export, &mut || slots.admit());
    slots.handshake_done();
    match outcome {
        Ok(Outcome::Transmission) => {}
        Ok(Outcome::Closed(why)) => return why,
        Err(e) if e.kind() == ErrorKind::TimedOut => return "handshake: deadline passed".into(),
        Err(e) => return format!("handshake: {e}"),
    }
    if let Err(e) = stream.set_read_timeout(None).and_then(|_| stream.set_write_timeout(None)) {
        return format!("socket: {e}");
    }
    match transmission::serve(stream, drive, export.size, export.max_block, poll) {
        Ok(why) => why,
        Err(e) => format!("transmission: {e}"),
    }
}

/// A stream whose every read and write must end by `deadline`.
struct Timed<'a> {
    stream: &'a mut Stream,
    deadline: Instant,
}

impl Timed<'_> {
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() { Err(ErrorKind::TimedOut.into()) } else { Ok(left) }
    }
}

impl std::io::Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        self.stream.read(buf).map_err(timed_out)
    }
}

impl std::io::Write for Timed<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        self.stream.write(buf).map_err(timed_out)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// A socket timeout reads as WouldBlock on Linux.
fn timed_out(e: std::io::Error) -> std::io::Error {
    if e.kind() == ErrorKind::WouldBlock { ErrorKind::TimedOut.into() } else { e }
}
