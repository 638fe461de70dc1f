//! The `mcp` command as the tests run it: run with its output captured and a time limit,
//! long-running (`serve`, `proxy`) with the URL it announces, and with a home directory of its
//! own. The binary is this package's (`CARGO_BIN_EXE_mcp`), built by cargo with the tests and
//! with their features (`--features otel` for `tests/otel_cli.rs`).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Longest a single `mcp` run may take.
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

/// The `mcp` binary.
pub fn mcp() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_mcp"))
}

/// What one run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// Standard output, decoded lossily.
    pub stdout: String,
    /// Standard error, decoded lossily.
    pub stderr: String,
}

impl Run {
    /// Standard output as JSON; panics when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// Asserts the exit code.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "exit code: {self:?}");
        self
    }

    /// Asserts that standard output contains `text`.
    #[track_caller]
    pub fn expect_stdout(&self, text: &str) -> &Self {
        assert!(self.stdout.contains(text), "`{text}` in stdout: {self:?}");
        self
    }
}

/// `mcp args...` with stdin closed (so questions are declined), within [`RUN_LIMIT`].
pub fn run(args: &[&str]) -> Run {
    let mut command = Command::new(mcp());
    command.args(args);
    output(&mut command)
}

/// Runs `command` (an `mcp` command line) with stdin closed and its output captured, within
/// [`RUN_LIMIT`]; panics when it takes longer.
pub fn output(command: &mut Command) -> Run {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcp");
    let stdout = reader(child.stdout.take().expect("stdout"));
    let stderr = reader(child.stderr.take().expect("stderr"));
    let status = wait(&mut child, RUN_LIMIT).unwrap_or_else(|| {
        panic!(
            "`mcp {}` did not finish in {RUN_LIMIT:?}",
            command_line(command)
        )
    });
    Run {
        code: status.code(),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// The arguments of `command`, for messages.
fn command_line(command: &Command) -> String {
    let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
    args.join(" ")
}

/// All that `pipe` gives, read on a thread of its own.
fn reader(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Waits for `child` to exit, at most `limit`; past it the child is killed and the answer is
/// `None`.
pub fn wait(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for mcp") {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A long-running `mcp` (serve, proxy) that announces its URL on stderr; killed on drop.
pub struct Listening {
    /// The process.
    pub child: Child,
    /// The URL it announced.
    pub url: String,
}

impl Listening {
    /// Starts `mcp args...`.
    pub fn start(args: &[&str]) -> Listening {
        Listening::spawn(Command::new(mcp()).args(args))
    }

    /// Starts `command` (an `mcp` command line) and waits, at most 30 s, for the `http://`
    /// URL it announces on stderr.
    pub fn spawn(command: &mut Command) -> Listening {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mcp");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("http://").filter(|_| !sent) {
                    let _ = tx.send(line[at..].trim().to_owned());
                    sent = true;
                }
                // Keep draining so the server never blocks on a full stderr pipe.
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                panic!("`mcp {}` announced no URL", command_line(command));
            }
        };
        Listening { child, url }
    }

    /// Ends it as an operator would (SIGTERM), so it exports what it holds; panics when it
    /// has not ended 30 s later.
    #[allow(dead_code)] // only tests/otel_cli.rs stops a server this way
    pub fn terminate(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
        assert!(
            wait(&mut self.child, Duration::from_secs(30)).is_some(),
            "mcp did not end on SIGTERM"
        );
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temporary home directory, `mcp-cli-<tag>-<process id>` in the temporary directory, made
/// afresh with a `project` directory in it; removed on drop.
pub struct Home {
    dir: PathBuf,
}

impl Home {
    /// A fresh home for the test `tag`.
    pub fn new(tag: &str) -> Home {
        let dir = std::env::temp_dir().join(format!("mcp-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("project")).expect("temp home");
        Home {
            dir: dir.canonicalize().expect("canonical temp home"),
        }
    }

    /// Its path (canonical).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Writes `text` to `relative` in it, making the directories; the file's path.
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.dir.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
        std::fs::write(&path, text).expect("write fixture");
        path
    }

    /// `mcp args...` with this home as HOME and its `.config` as XDG_CONFIG_HOME, in its
    /// `project` directory.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(mcp());
        command
            .args(args)
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join(".config"))
            .current_dir(self.dir.join("project"));
        command
    }

    /// Runs [`command`](Self::command) as [`run`] does.
    pub fn run(&self, args: &[&str]) -> Run {
        output(&mut self.command(args))
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
