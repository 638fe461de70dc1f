//! A small command-line parser for the harness binaries (no dependency needed for a few flags).

use std::fmt;
use std::str::FromStr;

/// A command-line error: an unknown flag, a missing value or a value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgError {}

impl ArgError {
    /// Reports the error on stderr as `binary: error`; the exit code of a usage error (2).
    pub fn exit(&self, binary: &str) -> std::process::ExitCode {
        eprintln!("{binary}: {self}");
        std::process::ExitCode::from(2)
    }
}

/// Arguments still to be consumed. Flags are taken out one by one; [`Args::finish`] rejects
/// whatever is left and returns the words after `--` (a command to run, for example).
///
/// ```
/// use mcp_bench::args::Args;
///
/// let mut args = Args::from_vec(["--inflight", "32", "--quick", "--", "server", "--stdio"]);
/// assert!(args.flag("--quick"));
/// assert_eq!(args.parsed("--inflight", 1usize).unwrap(), 32);
/// assert_eq!(args.finish().unwrap(), ["server", "--stdio"]);
/// ```
#[derive(Debug, Clone)]
pub struct Args {
    words: Vec<String>,
    rest: Vec<String>,
}

impl Args {
    /// The process's arguments, without the program name.
    pub fn from_env() -> Self {
        Self::from_vec(std::env::args().skip(1))
    }

    /// Arguments from any list of words.
    pub fn from_vec<I, S>(words: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut words: Vec<String> = words.into_iter().map(Into::into).collect();
        let rest = match words.iter().position(|w| w == "--") {
            Some(at) => {
                let rest = words.split_off(at + 1);
                words.pop();
                rest
            }
            None => Vec::new(),
        };
        Self { words, rest }
    }

    /// Whether the flag `name` was given (it is consumed).
    pub fn flag(&mut self, name: &str) -> bool {
        match self.words.iter().position(|w| w == name) {
            Some(at) => {
                self.words.remove(at);
                true
            }
            None => false,
        }
    }

    /// The value following `name` (`--name value` or `--name=value`), if the flag was given.
    pub fn value(&mut self, name: &str) -> Result<Option<String>, ArgError> {
        let prefix = format!("{name}=");
        if let Some(at) = self.words.iter().position(|w| w.starts_with(&prefix)) {
            let word = self.words.remove(at);
            return Ok(Some(word[prefix.len()..].to_owned()));
        }
        let Some(at) = self.words.iter().position(|w| w == name) else {
            return Ok(None);
        };
        if at + 1 >= self.words.len() {
            return Err(ArgError(format!("{name} needs a value")));
        }
        let value = self.words.remove(at + 1);
        self.words.remove(at);
        Ok(Some(value))
    }

    /// The parsed value of `name`, or `default` when the flag is absent.
    pub fn parsed<T: FromStr>(&mut self, name: &str, default: T) -> Result<T, ArgError>
    where
        T::Err: fmt::Display,
    {
        match self.value(name)? {
            Some(text) => text
                .parse()
                .map_err(|e| ArgError(format!("{name} {text:?}: {e}"))),
            None => Ok(default),
        }
    }

    /// The parsed value of `name`, if given.
    pub fn parsed_opt<T: FromStr>(&mut self, name: &str) -> Result<Option<T>, ArgError>
    where
        T::Err: fmt::Display,
    {
        match self.value(name)? {
            Some(text) => text
                .parse()
                .map(Some)
                .map_err(|e| ArgError(format!("{name} {text:?}: {e}"))),
            None => Ok(None),
        }
    }

    /// Fails on any word not consumed yet; returns the words after `--`.
    pub fn finish(self) -> Result<Vec<String>, ArgError> {
        match self.words.first() {
            Some(word) => Err(ArgError(format!("unexpected argument {word:?}"))),
            None => Ok(self.rest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_flags_and_rest() {
        let mut args = Args::from_vec(["--a=1", "--b", "two", "-x", "--", "cmd", "--b", "3"]);
        assert_eq!(args.value("--a").unwrap().as_deref(), Some("1"));
        assert_eq!(args.value("--b").unwrap().as_deref(), Some("two"));
        assert!(args.flag("-x"));
        assert!(!args.flag("-x"));
        assert_eq!(args.finish().unwrap(), ["cmd", "--b", "3"]);
    }

    #[test]
    fn errors_are_precise() {
        let mut args = Args::from_vec(["--n"]);
        assert_eq!(args.value("--n").unwrap_err().0, "--n needs a value");
        let mut args = Args::from_vec(["--n", "x"]);
        assert!(
            args.parsed("--n", 0u32)
                .unwrap_err()
                .0
                .starts_with("--n \"x\"")
        );
        let args = Args::from_vec(["--unknown"]);
        assert_eq!(
            args.finish().unwrap_err().0,
            "unexpected argument \"--unknown\""
        );
    }
}
