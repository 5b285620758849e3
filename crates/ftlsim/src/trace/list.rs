//! A command source over commands built in memory (experiments, tests).

use super::{CmdSource, HostCmd, Progress};
use crate::error::Result;

pub struct CmdList {
    name: String,
    cmds: std::vec::IntoIter<HostCmd>,
    total: u64,
}

impl CmdList {
    pub fn new(name: impl Into<String>, cmds: Vec<HostCmd>) -> CmdList {
        CmdList { name: name.into(), total: cmds.len() as u64, cmds: cmds.into_iter() }
    }
}

impl CmdSource for CmdList {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        Ok(self.cmds.next())
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn progress(&self) -> Progress {
        Progress { done: self.total - self.cmds.len() as u64, total: Some(self.total) }
    }
}
