//! Whether a change is stored or rolled back after every check ran (`dryRun`).

/// How a change ends: stored, or rolled back after every check and write ran (`dryRun=true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    /// Commit the change.
    Commit,
    /// Run the change in full, then roll it back.
    DryRun,
}
