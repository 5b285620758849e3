//! ftlsim-nbd: a simulated SSD served as a network block device.
//!
//! Any NBD client (qemu, libnbd, nbdcopy, a QEMU guest's kernel) can drive
//! any ftlsim FTL: every command goes through the chosen FTL and NAND model
//! with payloads stored, so the data read back is what the mapping points
//! at, and the run ends with the same report as `ftlsim run`.
//!
//! The roles: [`proto`] (wire format), [`handshake`] (newstyle fixed
//! greeting, option haggling), [`transmission`] (requests and simple
//! replies), [`drive`] (NBD commands to host commands, simulated time,
//! metrics, recording), [`server`] (sockets, connection threads, signals),
//! [`state`] (`--state`: a durable drive, journalled by [`journal`] and
//! checkpointed into a checksummed [`image`]) and [`client`] (a minimal
//! client, for tests and tools).
//!
//! ```no_run
//! use ftlsim::{Config, Simulation};
//! use ftlsim_nbd::{Control, Listen, ServeOptions, Server};
//!
//! let cfg = Config::load("k9lag08u0m-4ch", &["nand.store_payloads=true".into()]).unwrap();
//! let server = Server::bind(Simulation::new(cfg).unwrap(), ServeOptions::new(Listen::Tcp("127.0.0.1:10809".into()))).unwrap();
//! let control = Control::default();
//! control.install_signal_handlers().unwrap();
//! let report = server.run(&control).unwrap();
//! println!("{} TRIMs", report.trims);
//! ```
//!
//! Not supported: structured replies, block status, TLS, resizing. Clients
//! negotiating them are answered `NBD_REP_ERR_UNSUP` and fall back.

pub mod client;
pub mod drive;
pub mod handshake;
pub mod image;
pub mod journal;
pub mod proto;
pub mod server;
pub mod state;
pub mod stream;
pub mod transmission;

pub use drive::Pace;
pub use server::{Control, Listen, ServeOptions, Server};
pub use state::{Attach, Durable, StateDir};
