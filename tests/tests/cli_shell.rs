//! `mcp shell` through a pseudo-terminal: a scripted session against the bundled example
//! (tab completion, history, call, read, prompt, complete, subscribe, roots, log level), the
//! way a person types it.

#![cfg(unix)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long one step may take to show its output.
const STEP: Duration = Duration::from_secs(30);

/// Builds `mcp` (as `cli_e2e.rs` does: this test binary's profile and target directory).
fn mcp() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary sits in <profile>/deps");
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev",
            Some(other) => other,
            None => panic!("a profile directory"),
        };
        let target_dir = profile_dir.parent().expect("a target directory");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace");
        let status = Command::new(cargo)
            .current_dir(workspace)
            .args([
                "build",
                "--quiet",
                "-p",
                "mcp-cli",
                "--bin",
                "mcp",
                "--profile",
            ])
            .arg(profile)
            .arg("--target-dir")
            .arg(target_dir)
            .status()
            .expect("run cargo to build mcp");
        assert!(status.success(), "building mcp failed: {status}");
        profile_dir.join(format!("mcp{}", std::env::consts::EXE_SUFFIX))
    })
}

/// `mcp` on the slave side of a pseudo-terminal; the test types on the master side.
struct Pty {
    child: Child,
    master: std::fs::File,
    seen: Arc<Mutex<String>>,
}

impl Pty {
    fn spawn(args: &[&str], home: &Path) -> Pty {
        Pty::spawn_with(args, home, &[("NO_COLOR", "1")])
    }

    fn spawn_with(args: &[&str], home: &Path, env: &[(&str, &str)]) -> Pty {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave_path = PathBuf::from(name.to_string_lossy().into_owned());
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&slave_path)
            .expect("open the slave side");
        let child = Command::new(mcp())
            .args(args)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env_remove("NO_COLOR")
            .envs(env.iter().copied())
            .stdin(Stdio::from(slave.try_clone().expect("slave")))
            .stdout(Stdio::from(slave.try_clone().expect("slave")))
            .stderr(Stdio::from(slave))
            .spawn()
            .expect("start mcp shell");
        let master = std::fs::File::from(master);
        let mut reader = master.try_clone().expect("master");
        let seen = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // EIO once the child is gone.
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("output")
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Pty {
            child,
            master,
            seen,
        }
    }

    fn output(&self) -> String {
        self.seen.lock().expect("output").clone()
    }

    /// Waits until `text` has been shown `times` times in all.
    #[track_caller]
    fn expect(&self, text: &str, times: usize) {
        let deadline = Instant::now() + STEP;
        while self.output().matches(text).count() < times {
            assert!(
                Instant::now() < deadline,
                "`{text}` shown {times} times; the terminal shows:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for a fresh prompt: the terminal ends with it.
    #[track_caller]
    fn ready(&self, prompt: &str) {
        let deadline = Instant::now() + STEP;
        while !self.output().ends_with(prompt) {
            assert!(
                Instant::now() < deadline,
                "no prompt; the terminal shows:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn typed(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).expect("type");
        self.master.flush().expect("flush");
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_shell_session_through_a_terminal() {
    let home = std::env::temp_dir().join(format!("mcp-cli-shell-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let root = home.join("project");
    std::fs::create_dir_all(&root).expect("temp home");
    let root = root.canonicalize().expect("canonical root");
    let prompt = "mcp-example> ";
    let mut shell = Pty::spawn(&["shell"], &home);
    shell.ready(prompt);

    // Tab completes the command, the tool and the argument name.
    shell.typed("ca\t");
    shell.expect("call ", 1);
    shell.typed("ec\t");
    shell.expect("call echo ", 1);
    shell.typed("te\t");
    shell.expect("call echo text=", 1);
    shell.typed("typed-by-hand\r");
    shell.expect("\ntyped-by-hand", 1);
    shell.ready(prompt);

    // History: Up brings the last line back.
    shell.typed("\x1b[A\r");
    shell.expect("\ntyped-by-hand", 2);
    shell.ready(prompt);

    let mut step = |keys: &str, shows: &str| {
        shell.typed(keys);
        shell.expect(shows, 1);
        shell.ready(prompt);
    };
    step("call add a=2 b=40\r", "42");
    step("call ech\r", "did you mean `echo`?");
    step("read example://items/7\r", "\"id\":\"7\"");
    step("prompt greeting name=Grace\r", "Grace");
    step("complete prompt greeting name Al\r", "Alan");
    step("log debug\r", "log level debug");
    step(
        "subscribe example://readme\r",
        "subscribed to example://readme",
    );
    step("call touch\r", "(resource updated: example://readme)");
    let root_line = format!("roots add {}\r", root.display());
    step(&root_line, &format!("added file://{}", root.display()));
    step("call list_roots\r", &format!("file://{}", root.display()));
    step("frobnicate\r", "unknown command `frobnicate`");

    // The elicitation prompts of the other commands, inside the shell.
    shell.typed("call greet\r");
    shell.expect("name: ", 1);
    shell.typed("Ada\r");
    shell.expect("language (number or value, optional): ", 1);
    shell.typed("2\r");
    shell.expect("Send? [Y/n]", 1);
    shell.typed("\r");
    shell.expect("Bonjour, Ada!", 1);
    shell.ready(prompt);

    // Ctrl-D ends the session.
    shell.typed("\x04");
    let deadline = Instant::now() + STEP;
    let status = loop {
        if let Some(status) = shell.child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the shell did not end: {}",
            shell.output()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{}", shell.output());

    let history = std::fs::read_to_string(home.join(".config/mcp/history")).expect("history kept");
    assert!(
        history.contains("call echo text=typed-by-hand\n"),
        "{history}"
    );
    assert!(history.contains("call add a=2 b=40\n"), "{history}");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn colour_on_a_terminal_only_and_never_with_no_color() {
    let home = std::env::temp_dir().join(format!("mcp-cli-colour-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("temp home");
    let coloured = Pty::spawn_with(&["list", "tools"], &home, &[]);
    coloured.expect("\x1b[1madd\x1b[0m(a: \x1b[36mnumber\x1b[0m", 1);
    let plain = Pty::spawn_with(&["list", "tools"], &home, &[("NO_COLOR", "1")]);
    plain.expect("add(a: number, b: number) -> {sum: number}", 1);
    plain.expect("Marks example://readme as updated", 1);
    assert!(!plain.output().contains('\x1b'), "{}", plain.output());
    let _ = std::fs::remove_dir_all(&home);
}
