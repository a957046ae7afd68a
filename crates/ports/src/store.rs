//! Transactions: a [`Store`] opens them, [`StoreExt`] runs typed units of work in them (retrying
//! writes on conflicts), and inside one a [`Repository`] reads and writes aggregates. Everything a
//! use case does happens in one transaction: all of it or none of it.

use crate::{ChangeListener, Repository, StoreError, StoreResult};

/// Work done inside one transaction.
pub type UnitOfWork<'a> = dyn FnMut(&mut dyn Repository) -> StoreResult<()> + 'a;

/// Opens transactions.
///
/// # Contract
/// `read` and `write` run `work` inside one transaction and commit when it returns `Ok`; on
/// `Err` they roll back and return that error. Locks taken by the `lock_*` methods of
/// [`Repository`] are held until the end, so two writers never lose each other's change.
/// Neither retries: [`StoreExt::write_tx`] does.
pub trait Store: Send + Sync {
    /// Runs `work` in a read-only transaction.
    ///
    /// # Errors
    /// The error `work` returned, or [`StoreError::Unavailable`] when no connection can be had.
    fn read(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()>;

    /// Runs `work` in a read-write transaction.
    ///
    /// # Errors
    /// As [`Store::read`]; [`StoreError::Conflict`] when the engine aborted the transaction
    /// because of a concurrent one.
    fn write(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()>;

    /// Tells `listener` of the changes write transactions announce (see
    /// [`ChangeListener`]'s contract) until the listener is dropped: the store holds it weakly.
    /// A store that learns of other processes' commits (PostgreSQL) starts doing so here, and
    /// returns `true`: only then will it ever tell [`ChangeListener::caught_up`].
    fn subscribe(&self, listener: std::sync::Weak<dyn ChangeListener>) -> bool;

    /// Whether the store can serve requests now: the database answers, and its schema has every
    /// migration this release knows (a readiness probe). It asks on a connection of its own,
    /// not one of the pool's: a replica whose pool is busy is slow, not unready. The error's
    /// text is fit to show to anyone (no host, database or driver detail; the store logs that).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] saying what is missing.
    fn check_ready(&self) -> StoreResult<()>;
}

/// How many times a write transaction is attempted when the engine reports a conflict.
pub const WRITE_ATTEMPTS: usize = 5;

/// Typed transactions over any [`Store`]: the unit of work returns a value or the caller's own
/// error, and a write that meets a [`StoreError::Conflict`] is retried.
pub trait StoreExt {
    /// Runs `work` in a read transaction.
    ///
    /// # Errors
    /// `work`'s error, or the store's converted into `E`.
    fn read_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E>;

    /// Runs `work` in a write transaction, retrying it on conflicts up to [`WRITE_ATTEMPTS`] times.
    ///
    /// # Errors
    /// `work`'s error, or the store's converted into `E`.
    fn write_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E>;

    /// A dry run: runs `work` exactly as [`StoreExt::write_tx`] does (same transaction, same
    /// locks, same retries), then rolls the transaction back even when `work` succeeds, and
    /// returns what `work` returned. Nothing `work` wrote is kept: no version, audit entry or
    /// queued delivery outlives the call.
    ///
    /// # Errors
    /// As [`StoreExt::write_tx`].
    fn dry_run_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E>;
}

/// Whether a unit of work that succeeds is committed or rolled back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Commit,
    RollBack,
}

fn write_with<S: Store + ?Sized, T, E: From<StoreError>>(
    store: &S,
    ending: Ending,
    mut work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        let mut conflict = false;
        let result = run(
            |w| {
                let status = store.write(w);
                conflict = matches!(status, Err(StoreError::Conflict(_)));
                status
            },
            ending,
            &mut work,
        );
        if conflict {
            metrics::counter!("flagsvc_db_conflicts_total").increment(1);
        }
        if !conflict || attempt >= WRITE_ATTEMPTS {
            return result;
        }
        metrics::counter!("flagsvc_db_transaction_retries_total").increment(1);
        attempt += 1;
    }
}

fn run<T, E: From<StoreError>>(
    mut mode: impl FnMut(&mut UnitOfWork<'_>) -> StoreResult<()>,
    ending: Ending,
    mut work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
) -> Result<T, E> {
    let mut outcome: Option<Result<T, E>> = None;
    let status = mode(&mut |repo: &mut dyn Repository| match work(repo) {
        Ok(value) => {
            outcome = Some(Ok(value));
            match ending {
                Ending::Commit => Ok(()),
                // The store rolls back on any error; `Aborted` is the one that means "on purpose".
                Ending::RollBack => Err(StoreError::Aborted),
            }
        }
        Err(err) => {
            outcome = Some(Err(err));
            Err(StoreError::Aborted)
        }
    });
    match (status, outcome) {
        (Err(StoreError::Aborted), Some(Err(err))) => Err(err),
        (Err(StoreError::Aborted), Some(Ok(value))) if ending == Ending::RollBack => Ok(value),
        (Err(store), _) => Err(E::from(store)),
        (Ok(()), Some(result)) => result,
        (Ok(()), None) => Err(E::from(StoreError::Other(
            "the transaction ran no work".into(),
        ))),
    }
}

impl<S: Store + ?Sized> StoreExt for S {
    fn read_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E> {
        run(|w| self.read(w), Ending::Commit, work)
    }

    fn write_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E> {
        write_with(self, Ending::Commit, work)
    }

    fn dry_run_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E> {
        write_with(self, Ending::RollBack, work)
    }
}
