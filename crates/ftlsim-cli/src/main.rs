//! `ftlsim`: the command-line front end. Argument parsing and output only;
//! every simulation decision lives in the `ftlsim` library.

/// mimalloc backs its heap with transparent huge pages (`madvise`), which
/// glibc's malloc does only when `GLIBC_TUNABLES` asks before start: the
/// μ-Tree's tens of megabytes of small node arrays, and the bus calendars'
/// chunks, are read at random, and on 4 KiB pages most such reads also miss
/// the TLB (`bench/mu.sh`'s mu about 4% faster; the page FTL's benchmarks,
/// whose big tables `mem::big_vec` already puts on huge pages, unchanged).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`: its place in `mi_option_e` in the
/// `v3/include/mimalloc.h` of libmimalloc-sys 0.1.49, the version pinned in
/// Cargo.toml (the Rust bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps the memory the simulator frees for its own reuse instead of
/// returning it to the system a second later: a run's heap shrinks and
/// grows again (a μ-FTL run's bus calendars, thousands of chunks, empty
/// and fill as its GC bursts come and go), and each 2 MiB huge page given
/// back was faulted in and zeroed again by the kernel (about 2,500 faults
/// in `bench/mu.sh`'s measured phase instead of under 300; mu about 2%
/// faster in alternating runs). Peak memory, which is what a run costs, is
/// the same: freed memory is reused before more is asked for.
fn keep_freed_memory() {
    // SAFETY: sets an option mimalloc reads at each purge; no memory is
    // touched, and mimalloc allows setting options at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

mod progress;
mod python;

use clap::{ArgGroup, Args, Parser, Subcommand};
use ftlsim::job::{Input, Job};
use ftlsim::report::{render_comparison, render_table};
use ftlsim::trace::{self, Format, OpenOptions};
use ftlsim::workload;
use ftlsim::{Config, Error, Precondition, Report};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "ftlsim", version, about = "Trace-driven SSD simulator for flash translation layer research")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate one FTL on a trace or synthetic workload and print the report.
    Run(RunArgs),
    /// Run several FTLs or config variants on the same input; one table.
    Compare(CompareArgs),
    /// Write a synthetic workload as a trace file.
    Gen(GenArgs),
    /// Inspect or convert trace files.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// List, show or validate device configurations.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// List the FTL schemes.
    Ftls,
    /// Reproduce a paper's experiment: a table, data files and a figure.
    #[command(subcommand)]
    Repro(ReproCommand),
    /// Serve the simulated SSD as a network block device (NBD) until SIGINT/SIGTERM.
    Serve(ServeArgs),
    /// Run a sweep spec (TOML) with the Python package; see `ftlsim sweep --help`.
    #[command(disable_help_flag = true)]
    Sweep {
        /// SPEC.toml [--out PATH] [--backend local|ray] [--address ADDR] [--workers N]
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Plot a JSON report, a sweep table or repro tables to PNG/SVG with the Python package.
    #[command(disable_help_flag = true)]
    Plot {
        /// INPUT -o OUT [--kind auto|wa|timeseries|tail|repro] [--x COL] [--y COL] [--columns ..] [--label ..]
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// FTL scheme (ftl.name): see `ftlsim ftls`.
    #[arg(long)]
    ftl: Option<String>,
    /// TCP address to listen on (default 127.0.0.1:10809).
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "socket")]
    listen: Option<String>,
    /// Unix socket to listen on instead of TCP.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// none: answer at once (closed loop at host.queue_depth in simulated time);
    /// realtime: hold each reply until its simulated completion time.
    #[arg(long, default_value = "none", value_parser = ["none", "realtime"])]
    pace: String,
    /// Write the report as JSON to this path at shutdown.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write the host commands served as a native csv trace.
    #[arg(long, value_name = "PATH")]
    record: Option<PathBuf>,
    /// Print live counters to stderr every SECS seconds (SIGUSR1 prints them too).
    #[arg(long, value_name = "SECS")]
    stats_interval: Option<f64>,
    /// Unmeasured conditioning before serving, e.g. fill=1.0,overwrite=0.5 (mode=fast, the default, fast-forwards the overwrites; mode=timed runs them as host commands; mode=functional builds the page FTL's state without time; docs/preconditioning.md).
    #[arg(long, value_name = "SPEC")]
    precondition: Option<String>,
    /// Connections served at once; further clients are refused with a message.
    #[arg(long, default_value_t = 16)]
    max_connections: usize,
    /// Keep the drive in this directory: load it from there (if saved),
    /// journal every command, sync on FLUSH/FUA, checkpoint; what a client
    /// flushed survives the server being killed. One server per directory.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// With --state: when the journal is damaged, cut it at the damage and
    /// serve the drive as it was just before (saying what was dropped).
    #[arg(long, requires = "state")]
    recover: bool,
    /// With --state: take a checkpoint after this many MiB of journal
    /// (bounds the journal replayed after a kill); also at shutdown.
    #[arg(long, value_name = "MIB", default_value_t = 256, requires = "state")]
    checkpoint_mib: u64,
    /// Microseconds a connection polls for its next request before sleeping:
    /// saves the client a wake-up per request under load, costs that much CPU
    /// after each burst. 0 sleeps at once.
    #[arg(long, value_name = "US", default_value_t = 50)]
    poll_us: u64,
}

#[derive(Subcommand)]
enum ReproCommand {
    /// Hu et al., HAT: page, block, FAST, DFTL and HAT on Table 3-like workloads and Figure 11.
    Hat {
        /// Also replay this trace (after the same fill).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Directory for hat.csv, hat.json, hat.md and hat.svg.
        #[arg(long, default_value = "repro-out")]
        out: PathBuf,
        /// A small drive and short runs (seconds).
        #[arg(long)]
        quick: bool,
        /// Override a key of the hat-table4 preset (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Scatter the synthetic workloads' hot set over the drive in pieces
        /// of this size (e.g. 2k, a page) or of the largest request
        /// (`request`), instead of the first pages of the drive.
        #[arg(long, value_name = "SIZE|request")]
        hot_scatter: Option<String>,
    },
    /// Lee et al., μ-FTL, Figs. 8-10: management overhead of FAST, superblock,
    /// DAC and μ-FTL against extra blocks; μ-FTL's bitmap cache and partition size.
    MuFtl {
        /// Also replay this trace in Fig. 8 (repeatable). Without it, the
        /// SQLite-on-ext4 trace of the real traces folder ($FTLSIM_REAL_TRACES,
        /// else ../shared/traces) is replayed when that folder is present.
        #[arg(long)]
        trace: Vec<PathBuf>,
        /// Replay no trace by default.
        #[arg(long)]
        no_real_trace: bool,
        /// Directory for mu-ftl.{csv,json,md,svg}.
        #[arg(long, default_value = "repro-out")]
        out: PathBuf,
        /// A drive 1/4 the size: faster.
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Son et al., TRIM on SSDs and ext4: TRIM latency against range size,
    /// alignment, contiguity and ranges per command; file deletion with one
    /// range per TRIM against batches of 64, queued and non-queued.
    TrimCost {
        /// Directory for trim-cost.{csv,json,md,svg}.
        #[arg(long, default_value = "repro-out")]
        out: PathBuf,
        /// A drive 1/4 the size and ranges to 64 MiB.
        #[arg(long)]
        quick: bool,
    },
    /// Chang et al., multi-chipped caching FTL, Figs. 7-9 and crash recovery:
    /// COFTL and BL on a desktop-like workload at 97% full against blocks per
    /// virtual block, data-cache size, channels; recovery time against drive size.
    Coftl {
        /// Directory for coftl.{csv,json,md,svg}.
        #[arg(long, default_value = "repro-out")]
        out: PathBuf,
        /// A 1 GiB drive and 1,500 requests a run: seconds.
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Kim et al., "FTL Design for TRIM Command", Tables 2-4: FAST and page
    /// mapping with and without TRIM on an OS install and IOZone phases.
    TrimFtl {
        /// Directory for trim-ftl.{csv,json,md,svg}.
        #[arg(long, default_value = "repro-out")]
        out: PathBuf,
        /// A drive 1/8 the size: seconds instead of minutes.
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

#[derive(Args, Clone)]
struct DriveArgs {
    /// Preset name or path to a TOML config.
    #[arg(long, short = 'c', default_value = "k9lag08u0m-4ch")]
    config: String,
    /// Override a config key, e.g. --set gc.policy=fifo (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Seed for every random choice (config key `seed`).
    #[arg(long)]
    seed: Option<u64>,
}

impl DriveArgs {
    fn overrides(&self, extra: &[String]) -> Vec<String> {
        let mut o = self.set.clone();
        if let Some(seed) = self.seed {
            o.push(format!("seed={seed}"));
        }
        o.extend_from_slice(extra);
        o
    }
}

/// Exactly one input: a trace or a workload. The group, not a `required`
/// on `--trace`, so that giving neither names both.
#[derive(Args, Clone)]
#[command(group(ArgGroup::new("input").args(["trace", "workload"]).required(true).multiple(false)))]
struct InputArgs {
    /// Trace file to replay (.gz accepted).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Trace format (detected when omitted); see `ftlsim trace formats`.
    #[arg(long, requires = "trace")]
    format: Option<String>,
    /// Synthetic workload, e.g. rw=randwrite,bs=4k,ios=100000,iodepth=32.
    #[arg(long)]
    workload: Option<String>,
    /// Skip and count malformed trace lines instead of stopping.
    #[arg(long)]
    skip_bad_lines: bool,
    /// Requests beyond the device: error, wrap or scale (host.out_of_range).
    #[arg(long, value_name = "POLICY")]
    out_of_range: Option<String>,
    /// Unmeasured conditioning first, e.g. fill=1.0,overwrite=1.0 (mode=fast, the default, fast-forwards the overwrites; mode=timed runs them as host commands; mode=functional builds the page FTL's state without time; docs/preconditioning.md).
    #[arg(long, value_name = "SPEC")]
    precondition: Option<String>,
    /// Keep the preconditioned drive here and load it next time instead of
    /// preconditioning again (keyed by config, FTL, seed and SPEC).
    #[arg(long, value_name = "DIR", requires = "precondition")]
    snapshot_dir: Option<PathBuf>,
    /// Host arrival mode for traces: open (timestamps) or closed (host.mode).
    /// A workload's own iodepth= or rate= decides its mode instead.
    #[arg(long, conflicts_with = "workload")]
    mode: Option<String>,
    /// Queue depth in closed-loop trace replay (host.queue_depth); for a
    /// workload, use its iodepth= key.
    #[arg(long, conflicts_with = "workload")]
    qd: Option<u32>,
    /// Multiply trace inter-arrival times (host.time_scale).
    #[arg(long)]
    time_scale: Option<f64>,
    /// Coalesce TRIMs into commands of up to N ranges (host.trim_batch).
    #[arg(long, value_name = "N")]
    trim_batch: Option<u32>,
    /// Batching window, µs of arrival time (host.trim_batch_window_us).
    #[arg(long, value_name = "US")]
    trim_batch_window_us: Option<f64>,
}

impl InputArgs {
    fn overrides(&self) -> Vec<String> {
        let mut o = Vec::new();
        if let Some(p) = &self.out_of_range {
            o.push(format!("host.out_of_range={p}"));
        }
        if let Some(m) = &self.mode {
            o.push(format!("host.mode={m}"));
        }
        if let Some(q) = self.qd {
            o.push(format!("host.queue_depth={q}"));
        }
        if let Some(s) = self.time_scale {
            o.push(format!("host.time_scale={}", toml_float(s)));
        }
        if let Some(n) = self.trim_batch {
            o.push(format!("host.trim_batch={n}"));
        }
        if let Some(w) = self.trim_batch_window_us {
            o.push(format!("host.trim_batch_window_us={}", toml_float(w)));
        }
        o
    }

    fn input(&self) -> Result<Input, Error> {
        match (&self.trace, &self.workload) {
            (Some(path), _) => Ok(Input::Trace {
                path: path.clone(),
                format: self.format.as_deref().map(str::parse).transpose()?,
                skip_bad_lines: self.skip_bad_lines,
            }),
            (None, Some(w)) => Ok(Input::Workload(w.clone())),
            (None, None) => Err(Error::config("input", "give --trace PATH or --workload SPEC")),
        }
    }

    /// The run of this input on `config`.
    fn job(&self, config: Config) -> Result<Job, Error> {
        Ok(Job {
            config,
            input: self.input()?,
            precondition: self.precondition.as_deref().map(str::parse).transpose()?,
            snapshot_dir: self.snapshot_dir.clone(),
        })
    }
}

#[derive(Args)]
struct OutputArgs {
    /// Write the report as JSON to this path ("-" for stdout instead of the table).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write a time series (per report.window_ms window, default 100 ms) as CSV.
    #[arg(long, value_name = "PATH")]
    timeseries: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// FTL scheme (ftl.name): see `ftlsim ftls`.
    #[arg(long)]
    ftl: Option<String>,
    /// Cut the power at a simulated time (at=5ms; ns, us, ms, s) or after
    /// N commands (after=1000), then recover and check that everything
    /// flushed survived (repeatable; host.power_cuts; every FTL).
    #[arg(long = "power-cut", value_name = "at=TIME|after=N")]
    power_cut: Vec<String>,
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Args)]
struct CompareArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// FTLs to compare, comma-separated (default: the config's).
    #[arg(long, value_delimiter = ',')]
    ftl: Vec<String>,
    /// One key with several values to compare, e.g. --vary gc.policy=greedy,fifo
    /// (repeatable: the cross product is run).
    #[arg(long, value_name = "KEY=V1,V2,..")]
    vary: Vec<String>,
    #[command(flatten)]
    input: InputArgs,
    /// Write all reports as a JSON array to this path ("-" for stdout instead of the table).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct GenArgs {
    /// Workload spec, e.g. rw=randwrite,bs=4k,ios=1000000,seed=7.
    #[arg(long)]
    workload: String,
    /// Device whose logical capacity bounds the workload.
    #[command(flatten)]
    drive: DriveArgs,
    /// Output path (".gz" compresses); "-" for stdout.
    #[arg(long, short)]
    out: PathBuf,
    /// Trace format to write.
    #[arg(long, default_value = "csv")]
    format: String,
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Summary statistics of a trace: the read/write/trim/flush mix, a
    /// request-size histogram, working set, sequentiality, inter-arrival times.
    Stats {
        /// Trace file (.gz accepted).
        path: PathBuf,
        /// Trace format (detected when omitted); see `ftlsim trace formats`.
        #[arg(long)]
        format: Option<String>,
        /// Skip and count malformed lines instead of stopping at the first.
        #[arg(long)]
        skip_bad_lines: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite a trace in another format.
    Convert {
        /// Trace file to read (.gz accepted).
        input: PathBuf,
        /// File to write (`-` for stdout; a .gz name is compressed).
        output: PathBuf,
        /// Input format (detected when omitted).
        #[arg(long)]
        from: Option<String>,
        /// Output format; see `ftlsim trace formats`.
        #[arg(long, default_value = "csv")]
        to: String,
        /// Skip and count malformed lines instead of stopping at the first.
        #[arg(long)]
        skip_bad_lines: bool,
        /// Coalesce TRIMs into commands of up to N ranges (host-side batching).
        #[arg(long, value_name = "N")]
        trim_batch: Option<u32>,
        /// Batching window, µs of arrival time.
        #[arg(long, value_name = "US", default_value_t = 1000.0)]
        trim_batch_window_us: f64,
        /// Discard granularity: ranges meeting at a multiple of this many
        /// sectors merge (8 = 4 KiB).
        #[arg(long, value_name = "SECTORS", default_value_t = 8)]
        trim_granularity: u64,
    },
    /// List the supported trace formats.
    Formats,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// List the compiled-in presets.
    List,
    /// Print the resolved config (preset or file plus overrides) as TOML.
    Show {
        config: String,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Check a config file (or preset) and its overrides.
    Validate {
        config: String,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

fn main() -> ExitCode {
    keep_freed_memory();
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        // `ftlsim trace stats F | head` ends quietly, as Unix tools do, not
        // with a panic from printing to a closed pipe. The server keeps
        // Rust's default (ignored), so a vanished client is an error to handle.
        // SAFETY: restores the default disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match cli.command {
        Command::Sweep { args } => return python::delegate("sweep", &args),
        Command::Plot { args } => return python::delegate("plot", &args),
        _ => {}
    }
    match dispatch(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ftlsim: error: {e}");
            ExitCode::from(1)
        }
    }
}

/// `x` as a TOML float literal, for `--set`-style overrides (Rust's `Display`
/// writes 1e20 as a 21-digit integer, which TOML cannot hold).
fn toml_float(x: f64) -> String {
    if x.is_nan() { "nan".into() } else { format!("{x:?}") }
}

fn dispatch(cmd: Command) -> Result<(), Error> {
    match cmd {
        Command::Run(a) => run(a),
        Command::Compare(a) => compare(a),
        Command::Gen(a) => gen_trace(a),
        Command::Trace(t) => trace_cmd(t),
        Command::Config(c) => config_cmd(c),
        Command::Repro(ReproCommand::TrimFtl { out, quick, seed }) => repro_trim_ftl(&out, quick, seed),
        Command::Repro(ReproCommand::TrimCost { out, quick }) => repro_trim_cost(&out, quick),
        Command::Repro(ReproCommand::MuFtl { trace, no_real_trace, out, quick, seed }) => {
            repro_mu_ftl(&out, quick, seed, trace, no_real_trace)
        }
        Command::Repro(ReproCommand::Coftl { out, quick, seed }) => repro_coftl(&out, quick, seed),
        Command::Repro(ReproCommand::Hat { trace, out, quick, set, hot_scatter }) => {
            repro_hat(trace, &out, quick, set, hot_scatter.as_deref())
        }
        Command::Ftls => {
            let width = ftlsim::ftl::FTL_NAMES.iter().map(|n| n.len()).max().unwrap_or(0);
            for name in ftlsim::ftl::FTL_NAMES {
                println!("{name:<width$}  {}", ftlsim::ftl::describe(name));
            }
            Ok(())
        }
        Command::Serve(a) => serve(a),
        Command::Sweep { .. } | Command::Plot { .. } => unreachable!("handed to Python in main"),
    }
}

fn serve(a: ServeArgs) -> Result<(), Error> {
    use ftlsim_nbd::{Control, Listen, Pace, ServeOptions, Server};
    let mut extra = vec!["nand.store_payloads=true".to_string()];
    if let Some(f) = &a.ftl {
        extra.push(format!("ftl.name={f}"));
    }
    let config = load_config(&a.drive, &extra)?;
    let listen = match (a.socket, a.listen) {
        (Some(path), _) => Listen::Unix(path),
        (None, addr) => Listen::Tcp(addr.unwrap_or_else(|| "127.0.0.1:10809".into())),
    };
    let stats_interval = match a.stats_interval {
        Some(s) if s.is_finite() && s > 0.0 => Some(std::time::Duration::from_secs_f64(s)),
        Some(s) => return Err(Error::config("--stats-interval", format!("{s} is not a positive number of seconds"))),
        None => None,
    };
    let mut sim = ftlsim::Simulation::new(config)?;
    let precondition = a.precondition.as_deref().map(str::parse::<Precondition>).transpose()?;
    if a.checkpoint_mib == 0 || a.checkpoint_mib > 1 << 20 {
        return Err(Error::config("--checkpoint-mib", format!("{} is not in 1..=1048576", a.checkpoint_mib)));
    }
    let state = a.state.as_deref().map(ftlsim_nbd::StateDir::open).transpose()?;
    let durable = match state {
        Some(s) => {
            if s.is_saved() {
                if precondition.is_some() {
                    return Err(Error::config(
                        "--precondition",
                        format!(
                            "the drive saved in {} is already conditioned; drop --precondition",
                            s.path().display()
                        ),
                    ));
                }
                eprintln!("ftlsim serve: loading the drive saved in {}", s.path().display());
            } else if let Some(p) = precondition {
                sim.precondition(p)?;
            }
            let started = std::time::Instant::now();
            let mut shown = false;
            let how = ftlsim_nbd::Attach {
                recover: a.recover,
                checkpoint_bytes: a.checkpoint_mib << 20,
                ..ftlsim_nbd::Attach::default()
            };
            let d = s.attach(&mut sim, how, &mut |done, total| {
                if started.elapsed().as_secs() >= 2 {
                    eprint!("\rftlsim serve: replayed {done} of {total} checkpointed commands");
                    shown = true;
                }
            })?;
            if shown {
                eprintln!();
            }
            for n in d.notices() {
                eprintln!("ftlsim serve: {n}");
            }
            eprintln!("ftlsim serve: drive ready in {:.1} s", started.elapsed().as_secs_f64());
            Some(d)
        }
        None => {
            if let Some(p) = precondition {
                sim.precondition(p)?;
            }
            None
        }
    };
    let opts = ServeOptions {
        pace: if a.pace == "realtime" { Pace::Realtime } else { Pace::None },
        stats_interval,
        record: a.record,
        max_connections: a.max_connections.max(1),
        poll: std::time::Duration::from_micros(a.poll_us),
        ..ServeOptions::new(listen)
    };
    let mut server = Server::bind(sim, opts)?;
    if let Some(d) = durable {
        server = server.durable(d);
    }
    let control = Control::default();
    control.install_signal_handlers().map_err(|e| Error::io("signal handlers", e))?;
    let report = server.run(&control)?;
    if let Some(p) = &a.json {
        write_file(p, to_json(&report).as_bytes())?;
    }
    print!("{}", render_table(&report));
    Ok(())
}

fn run(a: RunArgs) -> Result<(), Error> {
    let mut extra = a.input.overrides();
    if let Some(f) = &a.ftl {
        extra.push(format!("ftl.name={f}"));
    }
    if !a.power_cut.is_empty() {
        // The check after each cut compares program sequence numbers.
        extra.push(format!("host.power_cuts={:?}", a.power_cut));
        extra.push("nand.record_sequence=true".into());
    }
    let mut config = load_config(&a.drive, &extra)?;
    if a.output.timeseries.is_some() && config.report.window_ms == 0.0 {
        // The default window, unless the config or a --set chose one.
        config.report.window_ms = 100.0;
    }
    let job = a.input.job(config)?;
    let json_to_stdout = a.output.json.as_deref() == Some(Path::new("-"));
    let mut report = run_with_progress(&job, a.output.quiet || json_to_stdout)?;
    report.overrides = a.drive.overrides(&extra);
    if let Some(path) = &a.output.timeseries {
        write_timeseries(path, &report)?;
    }
    match &a.output.json {
        Some(_) if json_to_stdout => println!("{}", to_json(&report)),
        Some(p) => {
            write_file(p, to_json(&report).as_bytes())?;
            print!("{}", render_table(&report));
        }
        None => print!("{}", render_table(&report)),
    }
    Ok(())
}

fn compare(a: CompareArgs) -> Result<(), Error> {
    let ftls: Vec<Option<String>> =
        if a.ftl.is_empty() { vec![None] } else { a.ftl.iter().cloned().map(Some).collect() };
    let mut variants: Vec<(String, Vec<String>)> = vec![(String::new(), Vec::new())];
    for v in &a.vary {
        let (key, values) = v.split_once('=').ok_or_else(|| Error::config(v, "--vary takes KEY=VALUE1,VALUE2,..."))?;
        variants = variants
            .iter()
            .flat_map(|(label, sets)| {
                values.split(',').map(move |val| {
                    let mut sets = sets.clone();
                    sets.push(format!("{key}={val}"));
                    let label = if label.is_empty() { format!("{key}={val}") } else { format!("{label} {key}={val}") };
                    (label, sets)
                })
            })
            .collect();
    }
    let mut reports = Vec::new();
    let mut labels = Vec::new();
    for ftl in &ftls {
        for (label, sets) in &variants {
            let mut extra = a.input.overrides();
            extra.extend(sets.iter().cloned());
            if let Some(f) = ftl {
                extra.push(format!("ftl.name={f}"));
            }
            let config = load_config(&a.drive, &extra)?;
            let name = config.ftl.name.clone();
            let job = a.input.job(config)?;
            let mut report = run_with_progress(&job, a.quiet)?;
            report.overrides = a.drive.overrides(&extra);
            reports.push(report);
            labels.push(if label.is_empty() { name } else { format!("{name} {label}") });
        }
    }
    let json = serde_json::to_string_pretty(&reports).expect("reports serialize");
    match &a.json {
        Some(p) if p == Path::new("-") => println!("{json}"),
        Some(p) => {
            write_file(p, json.as_bytes())?;
            print!("{}", render_comparison(&reports, &labels));
        }
        None => print!("{}", render_comparison(&reports, &labels)),
    }
    Ok(())
}

fn repro_hat(
    trace: Option<PathBuf>,
    out: &Path,
    quick: bool,
    set: Vec<String>,
    hot_scatter: Option<&str>,
) -> Result<(), Error> {
    use ftlsim::repro::hat;
    let hot_set = hot_scatter.map_or(Ok(hat::HotSet::Prefix), hat::HotSet::parse)?;
    let opts = hat::Options { trace, quick, overrides: set, hot_set };
    let results = hat::run(&opts, &mut |what| eprintln!("ftlsim: repro hat: {what}"))?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let json = serde_json::to_string_pretty(&results).expect("results serialize");
    let md = hat::to_markdown(&results);
    for (name, text) in [
        ("hat.csv", hat::to_csv(&results)),
        ("hat.json", json),
        ("hat.md", md.clone()),
        ("hat.svg", hat::to_svg(&results)),
    ] {
        write_file(&out.join(name), text.as_bytes())?;
    }
    print!("{md}");
    eprintln!("ftlsim: wrote hat.csv, hat.json, hat.md, hat.svg to {}", out.display());
    Ok(())
}

fn gen_trace(a: GenArgs) -> Result<(), Error> {
    let config = load_config(&a.drive, &[])?;
    // As in `run --workload` (Job::prepare): a spec without its own seed
    // follows the config's seed, so `gen` then `run --trace` replays the
    // same commands as `run --workload` with the same --seed; and TRIMs are
    // batched as host.trim_batch asks.
    let (w, _) = workload::open(&a.workload, config.seed, config.logical_sectors())?;
    let mut w = trace::with_trim_batching(w, &config);
    let format: Format = a.format.parse()?;
    let n = with_output(&a.out, |out| trace::write_trace(w.as_mut(), &format, out))?;
    if a.out != Path::new("-") {
        eprintln!("ftlsim: wrote {n} commands to {} ({format})", a.out.display());
    }
    Ok(())
}

fn trace_cmd(t: TraceCommand) -> Result<(), Error> {
    match t {
        TraceCommand::Stats { path, format, skip_bad_lines, json } => {
            let format = format.as_deref().map(str::parse).transpose()?;
            let mut opened = trace::open(&path, &OpenOptions { format, skip_bad_lines })?;
            for w in &opened.warnings {
                eprintln!("ftlsim: warning: {w}");
            }
            let stats = trace::stats(opened.source.as_mut())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&stats).expect("stats serialize"));
            } else {
                let format = format!("{}{}", opened.format, if opened.detected { " (detected)" } else { "" });
                print!("{}", trace::render_stats(&stats, &format));
            }
            Ok(())
        }
        TraceCommand::Convert {
            input,
            output,
            from,
            to,
            skip_bad_lines,
            trim_batch,
            trim_batch_window_us,
            trim_granularity,
        } => {
            let format = from.as_deref().map(str::parse).transpose()?;
            let opened = trace::open(&input, &OpenOptions { format, skip_bad_lines })?;
            let to: Format = to.parse()?;
            if !(trim_batch_window_us.is_finite() && trim_batch_window_us >= 0.0) {
                return Err(Error::config("--trim-batch-window-us", "must be a finite, non-negative time"));
            }
            let mut source = opened.source;
            let mut batched = None;
            if let Some(n) = trim_batch.filter(|&n| n > 1) {
                let window = ftlsim::units::Nanos::from_us_f64(trim_batch_window_us);
                let b = ftlsim::trace::batch::TrimBatcher::new(source, n, window, trim_granularity);
                source = Box::new(b);
                batched = Some(n);
            }
            let n = with_output(&output, |out| trace::write_trace(source.as_mut(), &to, out))?;
            let how = batched.map_or(String::new(), |b| format!(", TRIMs batched up to {b} ranges"));
            eprintln!("ftlsim: converted {n} commands ({} -> {to}{how})", opened.format);
            Ok(())
        }
        TraceCommand::Formats => {
            for f in trace::formats() {
                println!("{f}");
            }
            Ok(())
        }
    }
}

fn config_cmd(c: ConfigCommand) -> Result<(), Error> {
    match c {
        ConfigCommand::List => {
            for name in ftlsim::config::preset_names() {
                let cfg = Config::load(name, &[])?;
                println!("{name:<20} {}", cfg.source);
            }
        }
        ConfigCommand::Show { config, set } => print!("{}", Config::load(&config, &set)?.to_toml_shown()),
        ConfigCommand::Validate { config, set } => {
            let cfg = Config::load(&config, &set)?;
            println!(
                "ok: {} — {} physical pages, {} logical pages ({:.2} GiB logical)",
                if cfg.name.is_empty() { &config } else { &cfg.name },
                cfg.physical_pages(),
                cfg.logical_pages(),
                cfg.logical_sectors() as f64 * 512.0 / (1u64 << 30) as f64
            );
        }
    }
    Ok(())
}

/// Writes a repro's `NAME.{csv,json,md,svg}` into `out` and prints its table.
fn write_repro(out: &Path, name: &str, json: String, csv: String, table: String, svg: String) -> Result<(), Error> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    write_file(&out.join(format!("{name}.csv")), csv.as_bytes())?;
    write_file(&out.join(format!("{name}.json")), json.as_bytes())?;
    write_file(&out.join(format!("{name}.md")), table.as_bytes())?;
    write_file(&out.join(format!("{name}.svg")), svg.as_bytes())?;
    print!("{table}");
    eprintln!("ftlsim: wrote {}/{name}.{{csv,json,md,svg}}", out.display());
    Ok(())
}

fn repro_trim_ftl(out: &Path, quick: bool, seed: u64) -> Result<(), Error> {
    use ftlsim::repro::trim_ftl;
    let rows = trim_ftl::run(quick, seed)?;
    let (csv, md, svg) = (trim_ftl::to_csv(&rows), trim_ftl::to_markdown(&rows), trim_ftl::to_svg(&rows, quick));
    write_repro(out, "trim-ftl", serde_json::to_string_pretty(&rows).expect("rows serialize"), csv, md, svg)
}

fn repro_trim_cost(out: &Path, quick: bool) -> Result<(), Error> {
    use ftlsim::repro::trim_cost;
    let rows = trim_cost::run(quick, &mut |what| eprintln!("ftlsim: repro trim-cost: {what}"))?;
    let (csv, md, svg) = (trim_cost::to_csv(&rows), trim_cost::to_markdown(&rows), trim_cost::to_svg(&rows));
    write_repro(out, "trim-cost", serde_json::to_string_pretty(&rows).expect("rows serialize"), csv, md, svg)
}

fn repro_mu_ftl(out: &Path, quick: bool, seed: u64, mut traces: Vec<PathBuf>, no_real: bool) -> Result<(), Error> {
    use ftlsim::repro::mu_ftl;
    if traces.is_empty() && !no_real {
        let dir =
            std::env::var_os("FTLSIM_REAL_TRACES").map_or_else(|| PathBuf::from("../shared/traces"), PathBuf::from);
        let real = dir.join(mu_ftl::REAL_TRACE);
        if dir.is_dir() {
            if !real.is_file() {
                return Err(Error::config(
                    "--trace",
                    format!("the real traces folder {} lacks {}", dir.display(), mu_ftl::REAL_TRACE),
                ));
            }
            eprintln!("ftlsim: repro mu-ftl: also replaying {}", real.display());
            traces.push(real);
        } else {
            eprintln!("ftlsim: repro mu-ftl: no real traces folder at {}: generators only", dir.display());
        }
    }
    let rows = mu_ftl::run(quick, seed, &traces, &mut |what| eprintln!("ftlsim: repro mu-ftl: {what}"))?;
    let (csv, md, svg) = (mu_ftl::to_csv(&rows), mu_ftl::to_markdown(&rows), mu_ftl::to_svg(&rows, quick));
    write_repro(out, "mu-ftl", serde_json::to_string_pretty(&rows).expect("rows serialize"), csv, md, svg)
}

fn repro_coftl(out: &Path, quick: bool, seed: u64) -> Result<(), Error> {
    use ftlsim::repro::coftl;
    let rows = coftl::run(quick, seed, &mut |what| eprintln!("ftlsim: repro coftl: {what}"))?;
    let (csv, md, svg) = (coftl::to_csv(&rows), coftl::to_markdown(&rows), coftl::to_svg(&rows));
    write_repro(out, "coftl", serde_json::to_string_pretty(&rows).expect("rows serialize"), csv, md, svg)
}

fn load_config(drive: &DriveArgs, extra: &[String]) -> Result<Config, Error> {
    Config::load(&drive.config, &drive.overrides(extra))
}

fn run_with_progress(job: &Job, quiet: bool) -> Result<Report, Error> {
    let mut bar = progress::Bar::new(quiet);
    let report = job.run(&mut |p, n| bar.update(p, n));
    bar.finish();
    report
}

fn to_json(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("report serializes")
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}

fn write_timeseries(path: &Path, r: &Report) -> Result<(), Error> {
    let mut s = String::from(
        "start_s,requests,reads,writes,trims,mean_latency_us,max_latency_us,host_pages_written,flash_pages_programmed,flash_pages_read,blocks_erased\n",
    );
    for w in &r.timeseries {
        s.push_str(&format!(
            "{},{},{},{},{},{:.3},{:.3},{},{},{},{}\n",
            w.start_s,
            w.requests,
            w.reads,
            w.writes,
            w.trims,
            w.mean_latency_us,
            w.max_latency_us,
            w.host_pages_written,
            w.flash_pages_programmed,
            w.flash_pages_read,
            w.blocks_erased
        ));
    }
    write_file(path, s.as_bytes())
}

/// Opens `path` for writing (gzip when it ends in .gz, stdout for "-"),
/// runs `f` on it, and flushes.
fn with_output<T>(path: &Path, f: impl FnOnce(&mut dyn Write) -> Result<T, Error>) -> Result<T, Error> {
    let io = |e| Error::io(path, e);
    if path == Path::new("-") {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        let v = f(&mut out)?;
        out.flush().map_err(io)?;
        return Ok(v);
    }
    let file = std::fs::File::create(path).map_err(io)?;
    let mut buf = std::io::BufWriter::with_capacity(1 << 20, file);
    if path.extension().is_some_and(|e| e == "gz") {
        let mut gz = flate2::write::GzEncoder::new(buf, flate2::Compression::fast());
        let v = f(&mut gz)?;
        gz.finish().map_err(io)?.flush().map_err(io)?;
        Ok(v)
    } else {
        let v = f(&mut buf)?;
        buf.flush().map_err(io)?;
        Ok(v)
    }
}
