//! The process's memory allocator, set up before any thread starts.
//!
//! glibc's malloc gives each thread that meets contention an arena of its own, up to eight per
//! core, and an arena keeps the pages of its peak. The server's blocking pool has four threads
//! per core, each of which builds whole batches of flags, pages and audit entries in turn, so
//! the process's peak memory grew with the threads rather than with the work: the SQLite bench
//! peaked at 66.7 MiB with glibc's default, 64.8 MiB with eight arenas, 57.4 with four, at CPU
//! costs per request within the run-to-run noise there; the whole PostgreSQL bench peaked at
//! 64.2 MiB with the default. Four arenas cost PostgreSQL's writes some 8 % more of the
//! server's CPU (toggle-spread 0.291 against 0.269 ms per request in the same minutes):
//! `MALLOC_ARENA_MAX` gives a server that has memory to spare more (docs/benchmarks.md).

/// How many malloc arenas the process uses, unless the environment says otherwise.
const ARENAS: i32 = 4;

/// Limits glibc's malloc to [`ARENAS`] arenas, unless `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES`
/// (which glibc reads itself) chooses. Call it in `main` while the process has one thread.
/// Elsewhere than on glibc, it does nothing.
pub fn limit_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some()
        || std::env::var_os("GLIBC_TUNABLES").is_some()
    {
        return;
    }
    set_arena_max(ARENAS);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn set_arena_max(arenas: i32) {
    // SAFETY: `mallopt` takes two integers and touches only malloc's own settings; it is not
    // safe to call while other threads allocate, and `limit_arenas` is called in `main` before
    // the process starts a thread. A refusal (0) leaves glibc's default, which works.
    let _accepted = unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_arenas: i32) {}
