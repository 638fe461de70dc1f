//! Memory figures of a process from `/proc/<pid>/status` (Linux).

use std::io;

/// Resident memory of a process, in kibibytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Current resident set size (`VmRSS`).
    pub rss_kb: u64,
    /// Peak resident set size (`VmHWM`).
    pub peak_kb: u64,
}

/// Reads `VmRSS` and `VmHWM` of process `pid`.
pub fn memory(pid: u32) -> io::Result<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    parse_status(&status).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("/proc/{pid}/status has no VmRSS/VmHWM lines"),
        )
    })
}

/// Extracts the memory figures from the text of a `/proc/<pid>/status` file.
///
/// ```
/// use mcp_bench::procfs::{parse_status, Memory};
///
/// let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
/// assert_eq!(parse_status(status), Some(Memory { rss_kb: 1024, peak_kb: 2048 }));
/// ```
pub fn parse_status(status: &str) -> Option<Memory> {
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let value = line.strip_prefix(name)?.strip_prefix(':')?;
            value.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
    };
    Some(Memory {
        rss_kb: field("VmRSS")?,
        peak_kb: field("VmHWM")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_has_memory() {
        let memory = memory(std::process::id()).unwrap();
        assert!(memory.rss_kb > 0);
        assert!(memory.peak_kb >= memory.rss_kb);
    }

    #[test]
    fn malformed_status_is_none() {
        assert_eq!(parse_status("VmRSS: lots\nVmHWM: 1 kB\n"), None);
        assert_eq!(parse_status(""), None);
    }
}
