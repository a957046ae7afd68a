//! Changes to flags of one project that arrive together are written together (and so are
//! creations of flags: `Service::create_flags` goes through queues of the same kind).
//!
//! A flag change holds the flag's row lock from its read to its commit, and every transaction
//! costs its own round trips (`BEGIN`, the lock, the read, `COMMIT`) and its own statements to
//! save the flag and append its audit entry. Written one transaction each, changes to one flag
//! waited for each other, and changes to many flags each paid all of it.
//!
//! Here the flags of a project are split into a few lanes (by the key's hash; see
//! `flags::flag_write_lane`), and the changes that arrive at a lane while one of its changes is
//! being written wait in its queue. When that write ends, the first waiting change takes the ones
//! queued behind it and writes them all in one transaction: their flags locked together, each
//! flag's changes applied one after the other in arrival order (each checked against the flag
//! as the ones before it left it, and given its own version, audit entry and answer, as if
//! written alone; changes to different flags are applied flag by flag, in key order, as their
//! callers sent them at the same time), the flags saved together and the entries appended
//! together. A change that is refused (invalid, a failed `test`) leaves its flag as it was and
//! does not stop the others. None is answered before the transaction that holds it has
//! committed. A statement that fails in the store (a deadlock, a row deleted meanwhile: a 409
//! when a change is written alone) ends the transaction: the changes to one flag in it all fail
//! (none may be answered as if the others were written), and changes to several flags are
//! written again one flag at a time, so that the failure stays with its own flag's changes.
//!
//! The queues are per process: changes arriving at two replicas still wait for each other on
//! the row locks, as before (each transaction locks its flags in key order, so two cannot
//! deadlock on them).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::{Detail, ServiceError, ServiceResult};

/// At most this many changes share one transaction (its statements and its audit entries stay
/// bounded; the rest wait for the next).
const MAX_BATCH: usize = 64;

/// The changes queued behind a writer, in arrival order.
type Queue<R, T> = Vec<Arc<Waiter<R, T>>>;

/// Per address (a set of flags, written by one writer at a time), the changes waiting while one
/// is being written (the address is present while a writer is active).
#[derive(Debug)]
pub(crate) struct WriteQueues<A, R, T> {
    waiting: Mutex<HashMap<A, Queue<R, T>>>,
}

impl<A, R, T> Default for WriteQueues<A, R, T> {
    fn default() -> Self {
        Self {
            waiting: Mutex::new(HashMap::new()),
        }
    }
}

#[derive(Debug)]
struct Waiter<R, T> {
    request: R,
    state: Mutex<WaiterState<T>>,
    wake: Condvar,
}

#[derive(Debug)]
enum WaiterState<T> {
    /// Queued behind a writer.
    Waiting,
    /// Its turn: it writes the next batch.
    Writes,
    /// Written (or refused); the outcome is taken by the waiting thread.
    Done(Option<ServiceResult<T>>),
}

fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    // A panicking writer has already been answered for (see `HandOff`): the data stays usable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R, T> Waiter<R, T> {
    fn new(request: R) -> Self {
        Self {
            request,
            state: Mutex::new(WaiterState::Waiting),
            wake: Condvar::new(),
        }
    }

    fn set(&self, state: WaiterState<T>) {
        *lock(&self.state) = state;
        self.wake.notify_one();
    }

    /// Waits until it is this change's turn to write (`None`) or it was written (its outcome).
    fn wait(&self) -> Option<ServiceResult<T>> {
        let mut state = lock(&self.state);
        loop {
            match &mut *state {
                WaiterState::Waiting => {
                    state = self
                        .wake
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                WaiterState::Writes => return None,
                WaiterState::Done(outcome) => {
                    return Some(outcome.take().unwrap_or_else(|| {
                        Err(ServiceError::Internal("a change was answered twice".into()))
                    }))
                }
            }
        }
    }
}

impl<A: Eq + Hash + Clone, R, T> WriteQueues<A, R, T> {
    /// Writes `request` to the flags at `address`, with the changes to them that queued meanwhile:
    /// `write` gets them in arrival order (this one first) and returns one outcome for each.
    /// Returns this request's outcome.
    pub(crate) fn write(
        &self,
        address: A,
        request: R,
        write: impl FnOnce(&[&R]) -> Vec<ServiceResult<T>>,
    ) -> ServiceResult<T> {
        let me = Arc::new(Waiter::new(request));
        let queued = {
            let mut waiting = lock(&self.waiting);
            match waiting.get_mut(&address) {
                Some(queue) => {
                    queue.push(Arc::clone(&me));
                    true
                }
                None => {
                    waiting.insert(address.clone(), Vec::new());
                    false
                }
            }
        };
        if queued {
            if let Some(outcome) = me.wait() {
                return outcome;
            }
        }
        // This change writes: with the ones queued behind it, at most `MAX_BATCH` in all.
        let others: Queue<R, T> = {
            let mut waiting = lock(&self.waiting);
            waiting
                .get_mut(&address)
                .map(|queue| {
                    let n = queue.len().min(MAX_BATCH - 1);
                    queue.drain(..n).collect()
                })
                .unwrap_or_default()
        };
        let hand_off = HandOff {
            queues: self,
            address,
            others: &others,
        };
        let requests: Vec<&R> = std::iter::once(&me.request)
            .chain(others.iter().map(|w| &w.request))
            .collect();
        let mut outcomes = write(&requests).into_iter();
        let mine = outcomes.next().unwrap_or_else(|| {
            Err(ServiceError::Internal(Detail::from(
                "a batched change got no outcome",
            )))
        });
        for (other, outcome) in others.iter().zip(outcomes) {
            other.set(WaiterState::Done(Some(outcome)));
        }
        drop(hand_off);
        mine
    }
}

/// Ends a writer's turn, also when `write` panicked: answers the changes of its batch that got
/// no outcome, then lets the first change still waiting write, or marks the address idle.
struct HandOff<'a, A: Eq + Hash, R, T> {
    queues: &'a WriteQueues<A, R, T>,
    address: A,
    others: &'a [Arc<Waiter<R, T>>],
}

impl<A: Eq + Hash, R, T> Drop for HandOff<'_, A, R, T> {
    fn drop(&mut self) {
        for other in self.others {
            let mut state = lock(&other.state);
            if matches!(*state, WaiterState::Waiting) {
                *state = WaiterState::Done(Some(Err(ServiceError::Internal(
                    "the write of a batch failed".into(),
                ))));
                other.wake.notify_one();
            }
        }
        let mut waiting = lock(&self.queues.waiting);
        let next = match waiting.get_mut(&self.address) {
            Some(queue) if !queue.is_empty() => Some(queue.remove(0)),
            _ => {
                waiting.remove(&self.address);
                None
            }
        };
        drop(waiting);
        if let Some(next) = next {
            next.set(WaiterState::Writes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Changes that arrive while one is written wait, and are written together, in arrival
    /// order, each with its own outcome; the flag is idle afterwards.
    #[test]
    fn waiting_changes_are_written_together_in_order() {
        let queues: WriteQueues<(String, String), usize, usize> = WriteQueues::default();
        let batches = Mutex::new(Vec::<Vec<usize>>::new());
        let address = || ("p".to_owned(), "f".to_owned());
        let entered = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let first = scope.spawn(|| {
                queues.write(address(), 0, |requests| {
                    entered.fetch_add(1, Ordering::SeqCst);
                    // Hold the flag until the others have queued.
                    while lock(&queues.waiting)
                        .get(&address())
                        .is_none_or(|q| q.len() < 5)
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    lock(&batches).push(requests.iter().map(|r| **r).collect());
                    requests.iter().map(|r| Ok(**r * 10)).collect()
                })
            });
            while entered.load(Ordering::SeqCst) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let others: Vec<_> = (1..=5)
                .map(|n| {
                    let (queues, batches) = (&queues, &batches);
                    let handle = scope.spawn(move || {
                        queues.write(address(), n, |requests| {
                            lock(batches).push(requests.iter().map(|r| **r).collect());
                            requests
                                .iter()
                                .map(|r| {
                                    if **r == 3 {
                                        Err(ServiceError::NotFound("refused".into()))
                                    } else {
                                        Ok(**r * 10)
                                    }
                                })
                                .collect()
                        })
                    });
                    // Arrival order is the order of the queue (once the fifth has queued, the
                    // first may end and the rest be written before this looks again).
                    while lock(&queues.waiting)
                        .get(&address())
                        .is_some_and(|q| q.len() < n)
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    handle
                })
                .collect();
            assert_eq!(first.join().unwrap(), Ok(0));
            let outcomes: Vec<_> = others.into_iter().map(|h| h.join().unwrap()).collect();
            assert_eq!(
                outcomes,
                vec![
                    Ok(10),
                    Ok(20),
                    Err(ServiceError::NotFound("refused".into())),
                    Ok(40),
                    Ok(50)
                ]
            );
        });
        assert_eq!(*lock(&batches), vec![vec![0], vec![1, 2, 3, 4, 5]]);
        assert!(lock(&queues.waiting).is_empty());
    }

    /// A writer that panics answers the changes of its batch with an error, and the flag can
    /// be written again.
    #[test]
    fn a_panicking_write_answers_its_batch_and_hands_on() {
        let queues: WriteQueues<(String, String), usize, usize> = WriteQueues::default();
        let address = || ("p".to_owned(), "f".to_owned());
        let queued = |n: usize| {
            while lock(&queues.waiting)
                .get(&address())
                .is_none_or(|q| q.len() < n)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        std::thread::scope(|scope| {
            let first = scope.spawn(|| {
                queues.write(address(), 0, |_| {
                    queued(2);
                    vec![Ok(0)]
                })
            });
            while lock(&queues.waiting).get(&address()).is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Writes the batch [1, 2] after the first, and panics.
            let second = scope.spawn(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    queues.write(address(), 1, |_| panic!("the write failed"))
                }))
            });
            queued(1);
            let third = scope.spawn(|| queues.write(address(), 2, |_| vec![Ok(2)]));
            assert_eq!(first.join().unwrap(), Ok(0));
            assert!(second.join().unwrap().is_err());
            assert!(matches!(
                third.join().unwrap(),
                Err(ServiceError::Internal(_))
            ));
        });
        assert!(lock(&queues.waiting).is_empty());
        assert_eq!(queues.write(address(), 3, |_| vec![Ok(3)]), Ok(3));
    }
}
