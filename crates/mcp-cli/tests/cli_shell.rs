//! `mcp shell` through a pseudo-terminal: a scripted session against the bundled example
//! (tab completion, history, call, read, prompt, complete, subscribe, roots, log level), the
//! way a person types it.

#![cfg(unix)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::{Home, wait};

/// How long one step may take to show its output.
const STEP: Duration = Duration::from_secs(30);

/// `mcp` on the slave side of a pseudo-terminal; the test types on the master side.
struct Pty {
    child: Child,
    master: std::fs::File,
    seen: Arc<Mutex<String>>,
}

impl Pty {
    fn spawn(args: &[&str], home: &Home) -> Pty {
        Pty::spawn_with(args, home, &[("NO_COLOR", "1")])
    }

    fn spawn_with(args: &[&str], home: &Home, env: &[(&str, &str)]) -> Pty {
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
        let child = home
            .command(args)
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
        self.until(
            |shown| shown.matches(text).count() >= times,
            &format!("`{text}` shown {times} times"),
        );
    }

    /// Waits for a fresh prompt: the terminal ends with it.
    #[track_caller]
    fn ready(&self, prompt: &str) {
        self.until(|shown| shown.ends_with(prompt), "no prompt");
    }

    /// Waits, at most [`STEP`], until what the terminal shows is `done`.
    #[track_caller]
    fn until(&self, done: impl Fn(&str) -> bool, what: &str) {
        let deadline = Instant::now() + STEP;
        while !done(&self.output()) {
            assert!(
                Instant::now() < deadline,
                "{what}; the terminal shows:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types each line of `exchange` and waits until what it should bring has been shown.
    #[track_caller]
    fn answers(&mut self, exchange: &[(&str, &str)]) {
        for (keys, shows) in exchange {
            self.typed(keys);
            self.expect(shows, 1);
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
    let home = Home::new("shell");
    let root = home.path().join("project");
    let prompt = "mcp-example> ";
    let mut shell = Pty::spawn(&["shell"], &home);
    shell.ready(prompt);

    // Tab completes the command, the tool and the argument name.
    shell.answers(&[
        ("ca\t", "call "),
        ("ec\t", "call echo "),
        ("te\t", "call echo text="),
        ("typed-by-hand\r", "\ntyped-by-hand"),
    ]);
    shell.ready(prompt);

    // History: Up brings the last line back.
    shell.typed("\x1b[A\r");
    shell.expect("\ntyped-by-hand", 2);
    shell.ready(prompt);

    let mut step = |keys: &str, shows: &str| {
        shell.answers(&[(keys, shows)]);
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
    shell.answers(&[
        ("call greet\r", "name: "),
        ("Ada\r", "language (number or value, optional): "),
        ("2\r", "Send? [Y/n]"),
        ("\r", "Bonjour, Ada!"),
    ]);
    shell.ready(prompt);

    // Ctrl-D ends the session.
    shell.typed("\x04");
    let status = wait(&mut shell.child, STEP)
        .unwrap_or_else(|| panic!("the shell did not end: {}", shell.output()));
    assert!(status.success(), "{}", shell.output());

    let history =
        std::fs::read_to_string(home.path().join(".config/mcp/history")).expect("history kept");
    assert!(
        history.contains("call echo text=typed-by-hand\n"),
        "{history}"
    );
    assert!(history.contains("call add a=2 b=40\n"), "{history}");
}

#[test]
fn colour_on_a_terminal_only_and_never_with_no_color() {
    let home = Home::new("colour");
    let coloured = Pty::spawn_with(&["list", "tools"], &home, &[]);
    coloured.expect("\x1b[1madd\x1b[0m(a: \x1b[36mnumber\x1b[0m", 1);
    let plain = Pty::spawn_with(&["list", "tools"], &home, &[("NO_COLOR", "1")]);
    plain.expect("add(a: number, b: number) -> {sum: number}", 1);
    plain.expect("Marks example://readme as updated", 1);
    assert!(!plain.output().contains('\x1b'), "{}", plain.output());
}
