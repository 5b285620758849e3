//! The server loop: listen, hand each connection a thread, stop cleanly.
//!
//! Connections are served concurrently, up to `max_connections`; all of
//! them drive the one simulated SSD, one command at a time (a mutex), so
//! the export is safe for multiple connections (NBD_FLAG_CAN_MULTI_CONN).
//! A client beyond the limit completes the greeting and has its export
//! selection refused with `NBD_REP_ERR_SHUTDOWN` and a message saying why.
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
use crate::state::StateDir;
use crate::stream::Stream;
use crate::transmission;
use ftlsim::{Report, Simulation};
use std::io::ErrorKind;
use std::net::{Shutdown, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest READ or WRITE accepted, bytes.
pub const MAX_BLOCK_BYTES: u32 = 32 << 20;
/// How long a client may stay silent during the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
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
    state: Option<StateDir>,
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
                let l = UnixListener::bind(path).map_err(|e| ftlsim::Error::io(path, e))?;
                Listener::Unix(l, path.clone())
            }
        };
        let nonblocking = match &listener {
            Listener::Tcp(l) => l.set_nonblocking(true),
            Listener::Unix(l, _) => l.set_nonblocking(true),
        };
        nonblocking.map_err(|e| ftlsim::Error::io("listener", e))?;
        let export = Export {
            name: opts.export_name.clone(),
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
        };
        Ok(Server { listener, drive: Arc::new(Mutex::new(drive)), export, opts, state: None })
    }

    /// Saves the drive to `state` at clean shutdown (`--state`); the
    /// simulation given to [`bind`](Self::bind) must be the state's
    /// [`restore`](StateDir::restore)d drive, or a new one.
    pub fn save_to(mut self, state: StateDir) -> ftlsim::Result<Server> {
        let log = state.session_log()?;
        self.drive.lock().expect("drive lock").log_commands(log);
        self.state = Some(state);
        Ok(self)
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
                Ok(Some(stream)) => {
                    let refusal = (conns.len() >= self.opts.max_connections)
                        .then(|| format!("server busy: {} connections already (--max-connections)", conns.len()));
                    conns.push(self.spawn(stream, refusal)?);
                }
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
        if let (Some(state), Some(log)) = (&self.state, drive.take_command_log()) {
            state.save(drive.simulation(), log)?;
            eprintln!("ftlsim serve: drive saved to {}", state.path().display());
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

    fn spawn(&self, stream: Stream, refusal: Option<String>) -> ftlsim::Result<Conn> {
        let handle = stream.try_clone().map_err(|e| ftlsim::Error::io("connection", e))?;
        let drive = self.drive.clone();
        let export = self.export.clone();
        let poll = self.opts.poll;
        let thread = std::thread::spawn(move || {
            let id = {
                let mut d = drive.lock().expect("drive lock");
                d.counts.connections += 1;
                d.counts.connections
            };
            let why = connection(stream, &drive, &export, refusal.as_deref(), poll);
            eprintln!("ftlsim serve: connection {id} ended: {why}");
        });
        Ok(Conn { stream: handle, thread })
    }
}

/// One client from greeting to close; returns why it ended.
fn connection(
    mut stream: Stream,
    drive: &Arc<Mutex<Drive>>,
    export: &Export,
    refusal: Option<&str>,
    poll: Duration,
) -> String {
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    match handshake::negotiate(&mut stream, export, refusal) {
        Ok(Outcome::Transmission) => {}
        Ok(Outcome::Closed(why)) => return why,
        Err(e) => return format!("handshake: {e}"),
    }
    if let Err(e) = stream.set_read_timeout(None) {
        return format!("socket: {e}");
    }
    match transmission::serve(stream, drive, export.size, export.max_block, poll) {
        Ok(why) => why,
        Err(e) => format!("transmission: {e}"),
    }
}
