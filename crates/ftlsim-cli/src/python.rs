//! `ftlsim sweep` and `ftlsim plot`: handed to the Python package
//! (`python -m ftlsim sweep|plot ...`), where sweeps and plots live, so the
//! shell and Python share one implementation. The interpreter is
//! `$FTLSIM_PYTHON`, or `python3`.

use std::process::{Command, ExitCode, Stdio};

const INSTALL_HINT: &str = "install it with `pip install .` at the repository root (or run ./scripts/test, which \
                            builds it into .venv), or point FTLSIM_PYTHON at an interpreter that has it";

/// Runs `python -m ftlsim <sub> <args>` with inherited stdio and returns its
/// exit status; the child prints its own one-line errors.
pub fn delegate(sub: &str, args: &[String]) -> ExitCode {
    let python = std::env::var("FTLSIM_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe =
        Command::new(&python).args(["-c", "import ftlsim"]).stdout(Stdio::null()).stderr(Stdio::piped()).output();
    let fail = |reason: String| {
        eprintln!("ftlsim: error: {reason}");
        ExitCode::from(1)
    };
    match probe {
        Err(e) => return fail(format!("cannot start Python interpreter '{python}' ({e}); {INSTALL_HINT}")),
        Ok(out) if !out.status.success() => {
            let why = String::from_utf8_lossy(&out.stderr);
            let last = why.lines().last().unwrap_or("import failed");
            return fail(format!("the Python package ftlsim is not importable by '{python}' ({last}); {INSTALL_HINT}"));
        }
        Ok(_) => {}
    }
    match Command::new(&python).args(["-m", "ftlsim", sub]).args(args).status() {
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        Err(e) => fail(format!("cannot start Python interpreter '{python}' ({e})")),
    }
}
