//! CPU time and memory of processes, read from `/proc` (Linux only).
//!
//! CPU time is counted in clock ticks (`utime` + `stime` of `/proc/PID/stat`, which cover all of
//! a process's threads); the difference between two samples over a window, divided by the
//! requests answered in it, is the CPU a request cost.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

/// The fields of `/proc/PID/stat` the bench reads.
#[derive(Debug, Clone, Copy, Default)]
struct Stat {
    parent_pid: u32,
    /// utime + stime: the process's own CPU.
    own_ticks: u64,
    /// cutime + cstime: the CPU of children it has waited for.
    reaped_children_ticks: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: fields are counted after the
    // last `)`, where field 3 (state) comes first.
    let (_, after_name) = text.rsplit_once(')')?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |number: usize| fields.get(number - 3)?.parse::<u64>().ok();
    Some(Stat {
        parent_pid: u32::try_from(field(4)?).ok()?,
        own_ticks: field(14)? + field(15)?,
        reaped_children_ticks: field(16)? + field(17)?,
    })
}

/// Clock ticks per second (`getconf CLK_TCK`, almost always 100).
pub fn clock_ticks_per_second() -> Result<f64> {
    let output = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .context("running getconf CLK_TCK")?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.trim()
        .parse()
        .with_context(|| format!("getconf CLK_TCK printed {text:?}"))
}

/// CPU ticks a process has used so far, all threads together.
pub fn process_ticks(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.own_ticks)
}

/// CPU ticks this process (the bench's own load generator) has used so far.
pub fn own_ticks() -> Option<u64> {
    process_ticks(std::process::id())
}

/// CPU ticks of a PostgreSQL server: the postmaster itself, the backends and helpers that have
/// exited (its cutime + cstime), and those alive now (every process whose parent it is). Over a
/// window, a backend that exits in it is counted once: alive at the start with what it had used,
/// in the postmaster's reaped total at the end with all it used.
pub fn postgres_ticks(postmaster_pid: u32) -> Option<u64> {
    let postmaster = stat(postmaster_pid)?;
    let mut ticks = postmaster.own_ticks + postmaster.reaped_children_ticks;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(child) = stat(pid).filter(|s| s.parent_pid == postmaster_pid) {
            ticks += child.own_ticks;
        }
    }
    Some(ticks)
}

/// CPU ticks the whole machine has spent busy so far (every core, every process: the first
/// line of `/proc/stat` less idle and iowait).
pub fn machine_busy_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4)?;
    Some(total - idle)
}

/// The postmaster's pid: the first line of `postmaster.pid` in the data directory.
pub fn postmaster_pid(data_dir: &Path) -> Result<u32> {
    let file = data_dir.join("postmaster.pid");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    text.lines()
        .next()
        .and_then(|line| line.trim().parse().ok())
        .with_context(|| format!("{} does not start with a pid", file.display()))
}

/// A process's peak resident memory so far (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A process's resident memory now (`VmRSS`), in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
