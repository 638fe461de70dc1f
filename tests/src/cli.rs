//! The `mcp` command (package `mcp-cli`) as the tests run it: built once per test process,
//! run with its output captured and a time limit, long-running (`serve`, `proxy`) with the URL
//! it announces, and with a home directory of its own.
//!
//! The binary lives in another package, so `CARGO_BIN_EXE_mcp` is not available to these
//! tests. They build it the way `escargot` would: one `cargo build -p mcp-cli --bin mcp` with
//! the test binary's profile and target directory (read off the test binary's own path), then
//! run `<target>/<profile>/mcp`. That always tests the current sources, also under
//! `cargo test -p mcp-tests`, which by itself builds no binaries of other packages.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Longest a single `mcp` run may take.
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

/// `mcp`, built once per test process; its path.
pub fn mcp() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| build(None))
}

/// `mcp` with telemetry (`--features otel`), built once per test process and copied to
/// `mcp-otel` beside it: another test may rebuild `mcp` without the feature.
pub fn mcp_with_otel() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let built = build(Some("otel"));
        let copy = built.with_file_name(format!("mcp-otel{}", std::env::consts::EXE_SUFFIX));
        std::fs::copy(&built, &copy).expect("copy mcp");
        copy
    })
}

/// `cargo build -p mcp-cli --bin mcp` into this test binary's profile and target directory.
fn build(features: Option<&str>) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // <target>/[<triple>/]<profile>/deps/<test>-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in <profile>/deps");
    let dir_name = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a profile directory");
    let profile = match dir_name {
        "debug" => "dev",
        other => other,
    };
    let mut target_dir = profile_dir.parent().expect("a target directory");
    let mut triple = None;
    // Cargo marks the root of a target dir it created with CACHEDIR.TAG, and keeps its rustc
    // cache there (a target dir that existed before cargo first ran lacks the tag).
    let is_root = |d: &Path| d.join("CACHEDIR.TAG").exists() || d.join(".rustc_info.json").exists();
    if !is_root(target_dir) && target_dir.parent().is_some_and(is_root) {
        // A cross build: <target>/<triple>/<profile>.
        triple = target_dir.file_name().and_then(|n| n.to_str());
        target_dir = target_dir.parent().expect("a target directory");
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace");
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args(["build", "--quiet", "-p", "mcp-cli", "--bin", "mcp"])
        .args(["--profile", profile])
        .arg("--target-dir")
        .arg(target_dir);
    if let Some(features) = features {
        command.args(["--features", features]);
    }
    if let Some(triple) = triple {
        command.args(["--target", triple]);
    }
    let status = command.status().expect("run cargo to build mcp");
    assert!(status.success(), "building mcp failed: {status}");
    let binary = profile_dir.join(format!("mcp{}", std::env::consts::EXE_SUFFIX));
    assert!(binary.is_file(), "{} was not built", binary.display());
    binary
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
