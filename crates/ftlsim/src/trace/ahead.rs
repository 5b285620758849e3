//! Reading a trace on a second thread, ahead of the simulation.
//!
//! Reading, decompressing and parsing a text trace is work the simulation
//! never waits on: the commands come out in the same order whichever
//! thread makes them. On the foundation benchmark it was about a twentieth
//! of the run (a page-mapped drive serves a command in under a
//! microsecond), on a single thread that the machine's second core could
//! take. A [`ReadAhead`] runs the source on a thread of its own and hands
//! its commands over in batches; what the simulation sees is the same
//! sequence, the same error at the same place, and the same counts at the
//! end.

use super::{CmdSource, HostCmd, Progress};
use crate::error::Result;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Commands a batch holds: enough that handing one over (a channel message,
/// a wake-up) costs little per command.
const BATCH: usize = 1024;

/// Commands ahead of the one taken whose line is asked for: taking a
/// command the reader's core wrote was 3% of the buffered foundation
/// benchmark's samples, four fifths of it the command's load (a miss per
/// line, 32-byte commands two a line).
const PREFETCH_AHEAD: usize = 8;

/// Batches read but not yet taken: how far the reader may run ahead.
const BATCHES_AHEAD: usize = 4;

/// What the source had counted once it made a batch's last command.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    skipped_lines: u64,
    zero_length: u64,
    clamped_timestamps: u64,
    progress: Progress,
}

impl Counts {
    fn of(src: &dyn CmdSource) -> Counts {
        Counts {
            skipped_lines: src.skipped_lines(),
            zero_length: src.zero_length(),
            clamped_timestamps: src.clamped_timestamps(),
            progress: src.progress(),
        }
    }
}

/// A batch of commands, in order, then how the source stood: `end` is
/// `Some` after its last batch (`Ok` at its end, `Err` at its error).
struct Batch {
    cmds: Vec<HostCmd>,
    counts: Counts,
    end: Option<Result<()>>,
}

/// A [`CmdSource`] run on its own thread (see the [module](self)).
///
/// Dropped before its end, it lets go of the channel, and the reader stops
/// (dropping the source) when it next hands a batch over. It is not waited
/// for: a reader blocked on a slow pipe would hold the caller's error up.
pub struct ReadAhead {
    name: String,
    rx: Receiver<Batch>,
    /// Emptied batches, back to the reader to fill again.
    spare: SyncSender<Vec<HostCmd>>,
    /// The batch being taken, reversed (its next command last).
    cmds: Vec<HostCmd>,
    /// The counts as of the batch being taken.
    counts: Counts,
    /// How the source ended, once its last batch is being taken.
    end: Option<Result<()>>,
    /// Joined only to pass a reader's panic on.
    thread: Option<JoinHandle<()>>,
}

impl ReadAhead {
    pub fn new(mut src: Box<dyn CmdSource>) -> ReadAhead {
        let name = src.name().to_string();
        let (tx, rx) = sync_channel(BATCHES_AHEAD);
        let (spare, spares) = sync_channel::<Vec<HostCmd>>(BATCHES_AHEAD + 2);
        let thread = std::thread::Builder::new()
            .name("ftlsim-trace".into())
            .spawn(move || {
                loop {
                    // A spare comes back empty: every command was taken.
                    let mut cmds = spares.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
                    debug_assert!(cmds.is_empty(), "a batch handed back with commands untaken");
                    let mut end = None;
                    while cmds.len() < BATCH {
                        match src.next_cmd() {
                            Ok(Some(cmd)) => cmds.push(cmd),
                            Ok(None) => end = Some(Ok(())),
                            Err(e) => end = Some(Err(e)),
                        }
                        if end.is_some() {
                            break;
                        }
                    }
                    cmds.reverse();
                    let last = end.is_some();
                    let batch = Batch { cmds, counts: Counts::of(src.as_ref()), end };
                    // The reader stops when the simulation has dropped its end.
                    if tx.send(batch).is_err() || last {
                        return;
                    }
                }
            })
            .expect("spawning the trace reader thread");
        ReadAhead { name, rx, spare, cmds: Vec::new(), counts: Counts::default(), end: None, thread: Some(thread) }
    }
}

impl CmdSource for ReadAhead {
    #[inline]
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        loop {
            if let Some(cmd) = self.cmds.pop() {
                // The batch was written on the reader's core: each line of
                // it is a miss here, unless asked for ahead (commands are
                // taken from the end; none is left that far ahead near the
                // batch's start).
                if let Some(ahead) = self.cmds.len().checked_sub(PREFETCH_AHEAD) {
                    crate::mem::prefetch(&self.cmds, ahead);
                }
                return Ok(Some(cmd));
            }
            if let Some(end) = &mut self.end {
                // An error is told once; the source has ended after it.
                return std::mem::replace(end, Ok(())).map(|()| None);
            }
            let Ok(batch) = self.rx.recv() else {
                // The reader stopped before its last batch: it panicked.
                let thread = self.thread.take().expect("the reader is joined only here, once");
                std::panic::resume_unwind(thread.join().expect_err("the reader stopped early"));
            };
            let emptied = std::mem::replace(&mut self.cmds, batch.cmds);
            let _ = self.spare.try_send(emptied);
            (self.counts, self.end) = (batch.counts, batch.end);
        }
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn skipped_lines(&self) -> u64 {
        self.counts.skipped_lines
    }

    fn zero_length(&self) -> u64 {
        self.counts.zero_length
    }

    fn clamped_timestamps(&self) -> u64 {
        self.counts.clamped_timestamps
    }

    fn progress(&self) -> Progress {
        self.counts.progress
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::trace::Op;
    use crate::units::{Sector, SimTime};
    use proptest::prelude::*;

    /// `n` commands, then an error if `fail`, else the end; it counts the
    /// commands it made as zero-length every third, skipped every fifth
    /// and clamped every seventh (any counts that move as it goes).
    struct Scripted {
        made: u64,
        n: u64,
        fail: bool,
    }

    impl CmdSource for Scripted {
        fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
            if self.made == self.n {
                return match self.fail {
                    true => Err(Error::Trace { file: "t".into(), line: self.n + 1, reason: "bad".into() }),
                    false => Ok(None),
                };
            }
            self.made += 1;
            let op = [Op::Read, Op::Write, Op::Trim][self.made as usize % 3];
            Ok(Some(HostCmd {
                time: SimTime(self.made * 10),
                op,
                start: Sector(self.made * 8),
                sectors: 8,
                continued: false,
            }))
        }
        fn name(&self) -> &str {
            "t"
        }
        fn skipped_lines(&self) -> u64 {
            self.made / 5
        }
        fn zero_length(&self) -> u64 {
            self.made / 3
        }
        fn clamped_timestamps(&self) -> u64 {
            self.made / 7
        }
        fn progress(&self) -> Progress {
            Progress { done: self.made, total: Some(self.n) }
        }
    }

    /// Everything a run reads from a source: its commands, how it ended,
    /// and its counts then.
    fn drain(src: &mut dyn CmdSource) -> (Vec<HostCmd>, String, [u64; 4]) {
        let mut cmds = Vec::new();
        let end = loop {
            match src.next_cmd() {
                Ok(Some(c)) => cmds.push(c),
                Ok(None) => break "end".to_string(),
                Err(e) => break e.to_string(),
            }
        };
        let counts = [src.skipped_lines(), src.zero_length(), src.clamped_timestamps(), src.progress().done];
        (cmds, end, counts)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Read ahead, a source gives the same commands, ends the same way
        /// (an error after the commands before it) and counts the same.
        #[test]
        fn reading_ahead_reads_what_the_source_gives(n in 0u64..5000, fail: bool) {
            let plain = drain(&mut Scripted { made: 0, n, fail });
            let mut ahead = ReadAhead::new(Box::new(Scripted { made: 0, n, fail }));
            prop_assert_eq!(drain(&mut ahead), plain);
            // After its end, or its error, the source stays ended.
            prop_assert!(matches!(ahead.next_cmd(), Ok(None)));
        }
    }

    #[test]
    fn a_source_left_unread_stops_its_reader() {
        /// Endless, and says when the reader has let go of it.
        struct Endless(Scripted, std::sync::mpsc::Sender<()>);
        impl CmdSource for Endless {
            fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
                self.0.next_cmd()
            }
            fn name(&self) -> &str {
                "e"
            }
        }
        impl Drop for Endless {
            fn drop(&mut self) {
                let _ = self.1.send(());
            }
        }
        let (tx, dropped) = std::sync::mpsc::channel();
        let mut ahead = ReadAhead::new(Box::new(Endless(Scripted { made: 0, n: u64::MAX, fail: false }, tx)));
        assert!(ahead.next_cmd().unwrap().is_some());
        // The reader is blocked handing a batch over: dropping its end must
        // stop it, which drops the source.
        drop(ahead);
        assert!(dropped.recv_timeout(std::time::Duration::from_secs(10)).is_ok(), "the reader kept the source");
    }

    #[test]
    #[should_panic(expected = "a parser's bug")]
    fn a_panic_in_the_reader_reaches_the_caller() {
        struct Panics;
        impl CmdSource for Panics {
            fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
                panic!("a parser's bug")
            }
            fn name(&self) -> &str {
                "p"
            }
        }
        let _ = ReadAhead::new(Box::new(Panics)).next_cmd();
    }
}
