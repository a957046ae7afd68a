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
//! A change waits for its turn either on its thread ([`WriteQueues::write`]) or as a future
//! ([`QueuedWrite`]), which holds no thread while it waits: a driving adapter that runs use
//! cases on a pool of blocking threads sends only the writer of a batch there, so that changes
//! queued behind it do not take the threads that the next batch's writer and the reads need
//! (with a thread per waiting change, batches were as small as the pool).
//!
//! The queues are per process: changes arriving at two replicas still wait for each other on
//! the row locks, as before (each transaction locks its flags in key order, so two cannot
//! deadlock on them).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

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
    slot: Mutex<Slot<T>>,
    wake: Condvar,
}

/// Where a waiting change stands, and the task to wake when that changes (a [`Ticket`]'s).
#[derive(Debug)]
struct Slot<T> {
    state: WaiterState<T>,
    waker: Option<Waker>,
}

#[derive(Debug)]
enum WaiterState<T> {
    /// Queued behind a writer.
    Waiting,
    /// Its turn: it writes the next batch (the address's turn is its own until it hands it on).
    Writes,
    /// Written (or refused); the outcome is taken by the one waiting for it.
    Done(Option<ServiceResult<T>>),
}

fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    // A panicking writer has already been answered for (see `Turn::write`): the data stays usable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R, T> Waiter<R, T> {
    fn new(request: R) -> Self {
        Self {
            request,
            slot: Mutex::new(Slot {
                state: WaiterState::Waiting,
                waker: None,
            }),
            wake: Condvar::new(),
        }
    }

    fn set(&self, state: WaiterState<T>) {
        let waker = {
            let mut slot = lock(&self.slot);
            slot.state = state;
            slot.waker.take()
        };
        self.wake.notify_one();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Its outcome when it is done, `None` when it is its turn to write.
    fn settled(state: &mut WaiterState<T>) -> Option<Option<ServiceResult<T>>> {
        match state {
            WaiterState::Waiting => None,
            WaiterState::Writes => Some(None),
            WaiterState::Done(outcome) => Some(Some(outcome.take().unwrap_or_else(|| {
                Err(ServiceError::Internal("a change was answered twice".into()))
            }))),
        }
    }

    /// Waits on this thread until it is this change's turn to write (`None`) or it was written
    /// (its outcome).
    fn wait(&self) -> Option<ServiceResult<T>> {
        let mut slot = lock(&self.slot);
        loop {
            if let Some(settled) = Self::settled(&mut slot.state) {
                return settled;
            }
            slot = self.wake.wait(slot).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// As [`Waiter::wait`], without holding the thread: pending until then.
    fn poll_settled(&self, cx: &Context<'_>) -> Poll<Option<ServiceResult<T>>> {
        let mut slot = lock(&self.slot);
        match Self::settled(&mut slot.state) {
            Some(settled) => Poll::Ready(settled),
            None => {
                if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    slot.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl<A: Eq + Hash + Clone, R, T> WriteQueues<A, R, T> {
    /// Writes `request` to the flags at `address`, with the changes to them that queued meanwhile,
    /// waiting for its turn on this thread: `write` gets them in arrival order (this one first)
    /// and returns one outcome for each. Returns this request's outcome.
    pub(crate) fn write(
        self: &Arc<Self>,
        address: A,
        request: R,
        write: impl FnOnce(&A, &[&R]) -> Vec<ServiceResult<T>>,
    ) -> ServiceResult<T> {
        let me = Arc::new(Waiter::new(request));
        if self.join(&address, &me) {
            if let Some(outcome) = me.wait() {
                return outcome;
            }
        }
        Turn {
            queues: Arc::clone(self),
            address,
            me,
        }
        .write(write)
    }

    /// Queues `request` for the flags at `address`: the ticket resolves to its outcome when
    /// another change's writer wrote it, or to its turn to write.
    pub(crate) fn queue(self: &Arc<Self>, address: A, request: R) -> Ticket<A, R, T> {
        let me = Arc::new(Waiter::new(request));
        if !self.join(&address, &me) {
            me.set(WaiterState::Writes);
        }
        Ticket {
            queues: Arc::clone(self),
            address: Some(address),
            me,
        }
    }

    /// Queues `me` behind the active writer of `address` (`true`), or makes it the writer.
    fn join(&self, address: &A, me: &Arc<Waiter<R, T>>) -> bool {
        let mut waiting = lock(&self.waiting);
        match waiting.get_mut(address) {
            Some(queue) => {
                queue.push(Arc::clone(me));
                true
            }
            None => {
                waiting.insert(address.clone(), Vec::new());
                false
            }
        }
    }

    /// The changes a writer takes along: the first ones queued, `MAX_BATCH` with its own.
    fn batch(&self, address: &A) -> Queue<R, T> {
        lock(&self.waiting)
            .get_mut(address)
            .map(|queue| {
                let n = queue.len().min(MAX_BATCH - 1);
                queue.drain(..n).collect()
            })
            .unwrap_or_default()
    }

    /// Ends a writer's turn: the first change still waiting writes next, or the address is idle.
    fn hand_on(&self, address: &A) {
        let mut waiting = lock(&self.waiting);
        match waiting.get_mut(address) {
            // Told while the queues are held, so that a ticket dropped meanwhile
            // (`WriteQueues::abandon`) sees either its place in the queue or its turn.
            Some(queue) if !queue.is_empty() => queue.remove(0).set(WaiterState::Writes),
            _ => {
                waiting.remove(address);
            }
        }
    }

    /// `me`, whose ticket was dropped, will not write: taken out of its queue if it is still
    /// there (it is not written), its turn handed on if it had come (a change already taken
    /// into a batch is written all the same; nobody reads its outcome).
    fn abandon(&self, address: &A, me: &Arc<Waiter<R, T>>) {
        let mut waiting = lock(&self.waiting);
        let writes = matches!(lock(&me.slot).state, WaiterState::Writes);
        if writes {
            drop(waiting);
            self.hand_on(address);
        } else if let Some(queue) = waiting.get_mut(address) {
            queue.retain(|other| !Arc::ptr_eq(other, me));
        }
    }
}

/// A change waiting for its turn without holding a thread: resolves to its outcome (`Ok`) when
/// a batch it was taken into was written, or to its turn (`Err`) to write a batch. Dropped
/// before then, it gives its place up (see [`WriteQueues::abandon`]).
#[derive(Debug)]
pub(crate) struct Ticket<A: Eq + Hash + Clone, R, T> {
    queues: Arc<WriteQueues<A, R, T>>,
    /// `None` once resolved.
    address: Option<A>,
    me: Arc<Waiter<R, T>>,
}

// Nothing of a ticket is pinned: it only holds `Arc`s and the address.
impl<A: Eq + Hash + Clone, R, T> Unpin for Ticket<A, R, T> {}

impl<A: Eq + Hash + Clone, R, T> Future for Ticket<A, R, T> {
    type Output = Result<ServiceResult<T>, Turn<A, R, T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Poll::Ready(settled) = this.me.poll_settled(cx) else {
            return Poll::Pending;
        };
        let Some(address) = this.address.take() else {
            return Poll::Ready(Ok(Err(ServiceError::Internal(
                "a change's ticket was polled after it resolved".into(),
            ))));
        };
        Poll::Ready(match settled {
            Some(outcome) => Ok(outcome),
            None => Err(Turn {
                queues: Arc::clone(&this.queues),
                address,
                me: Arc::clone(&this.me),
            }),
        })
    }
}

impl<A: Eq + Hash + Clone, R, T> Drop for Ticket<A, R, T> {
    fn drop(&mut self) {
        if let Some(address) = self.address.take() {
            self.queues.abandon(&address, &self.me);
        }
    }
}

/// A change's turn to write the next batch at its address. Dropped, written or not, it hands
/// the turn on (a turn dropped unwritten leaves its own change unwritten: nobody waits for it).
#[derive(Debug)]
pub(crate) struct Turn<A: Eq + Hash + Clone, R, T> {
    queues: Arc<WriteQueues<A, R, T>>,
    address: A,
    me: Arc<Waiter<R, T>>,
}

impl<A: Eq + Hash + Clone, R, T> Turn<A, R, T> {
    /// Writes this change with the ones queued behind it: `write` gets the address and them in
    /// arrival order (this one first) and returns one outcome for each. Returns this change's.
    pub(crate) fn write(
        self,
        write: impl FnOnce(&A, &[&R]) -> Vec<ServiceResult<T>>,
    ) -> ServiceResult<T> {
        let others = self.queues.batch(&self.address);
        let answered = Unanswered(&others);
        let requests: Vec<&R> = std::iter::once(&self.me.request)
            .chain(others.iter().map(|w| &w.request))
            .collect();
        let mut outcomes = write(&self.address, &requests).into_iter();
        let mine = outcomes.next().unwrap_or_else(|| {
            Err(ServiceError::Internal(Detail::from(
                "a batched change got no outcome",
            )))
        });
        for (other, outcome) in others.iter().zip(outcomes) {
            other.set(WaiterState::Done(Some(outcome)));
        }
        drop(answered);
        mine
        // `self` dropped: the turn is handed on.
    }
}

impl<A: Eq + Hash + Clone, R, T> Drop for Turn<A, R, T> {
    fn drop(&mut self) {
        self.queues.hand_on(&self.address);
    }
}

/// Answers the changes of a batch that got no outcome (its `write` panicked, or returned too few).
struct Unanswered<'a, R, T>(&'a [Arc<Waiter<R, T>>]);

impl<R, T> Drop for Unanswered<'_, R, T> {
    fn drop(&mut self) {
        for other in self.0 {
            let slot = lock(&other.slot);
            if matches!(slot.state, WaiterState::Waiting) {
                drop(slot);
                other.set(WaiterState::Done(Some(Err(ServiceError::Internal(
                    "the write of a batch failed".into(),
                )))));
            }
        }
    }
}

/// A use case's write that may wait for its turn (see the module's documentation): awaited, it
/// holds no thread until it is answered or its turn comes; its turn ([`WriteTurn`]) is the
/// blocking part, for the caller to run where it runs blocking work.
pub struct QueuedWrite<T> {
    waiting: Pin<Box<dyn Future<Output = Queued<T>> + Send>>,
}

impl<T> std::fmt::Debug for QueuedWrite<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueuedWrite").finish_non_exhaustive()
    }
}

/// What a [`QueuedWrite`] comes to.
#[derive(Debug)]
pub enum Queued<T> {
    /// Written (or refused) in another change's batch, or refused before it queued.
    Answered(ServiceResult<T>),
    /// Its turn to write: [`WriteTurn::write`] blocks on the store.
    Writes(WriteTurn<T>),
}

/// The blocking part of a [`QueuedWrite`]: a transaction, with the changes queued behind this
/// one. Dropped unwritten, it hands the turn on to them.
pub struct WriteTurn<T> {
    write: Box<dyn FnOnce() -> ServiceResult<T> + Send>,
}

impl<T> std::fmt::Debug for WriteTurn<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTurn").finish_non_exhaustive()
    }
}

impl<T> WriteTurn<T> {
    /// Writes, blocking on the store; this change's outcome.
    ///
    /// # Errors
    /// Those of the use case that queued it.
    pub fn write(self) -> ServiceResult<T> {
        (self.write)()
    }
}

impl<T: Send + 'static> QueuedWrite<T> {
    /// Answered already (refused before it queued).
    pub(crate) fn answered(outcome: ServiceResult<T>) -> Self {
        Self::ready(Queued::Answered(outcome))
    }

    /// A write that waits for nobody: its turn is at once.
    pub(crate) fn at_once(write: impl FnOnce() -> ServiceResult<T> + Send + 'static) -> Self {
        Self::ready(Queued::Writes(WriteTurn {
            write: Box::new(write),
        }))
    }

    fn ready(queued: Queued<T>) -> Self {
        Self {
            waiting: Box::pin(std::future::ready(queued)),
        }
    }

    /// Waits with `ticket`; its turn writes with `write`.
    pub(crate) fn on<A, R>(
        ticket: Ticket<A, R, T>,
        write: impl FnOnce(&A, &[&R]) -> Vec<ServiceResult<T>> + Send + 'static,
    ) -> Self
    where
        A: Eq + Hash + Clone + Send + Sync + 'static,
        R: Send + Sync + 'static,
    {
        Self {
            waiting: Box::pin(async move {
                match ticket.await {
                    Ok(outcome) => Queued::Answered(outcome),
                    Err(turn) => Queued::Writes(WriteTurn {
                        write: Box::new(move || turn.write(write)),
                    }),
                }
            }),
        }
    }
}

impl<T> Future for QueuedWrite<T> {
    type Output = Queued<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Queued<T>> {
        self.waiting.as_mut().poll(cx)
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
        let queues: Arc<WriteQueues<(String, String), usize, usize>> = Arc::default();
        let batches = Mutex::new(Vec::<Vec<usize>>::new());
        let address = || ("p".to_owned(), "f".to_owned());
        let entered = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let first = scope.spawn(|| {
                queues.write(address(), 0, |_, requests| {
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
                        queues.write(address(), n, |_, requests| {
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
        let queues: Arc<WriteQueues<(String, String), usize, usize>> = Arc::default();
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
                queues.write(address(), 0, |_, _| {
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
                    queues.write(address(), 1, |_, _| panic!("the write failed"))
                }))
            });
            queued(1);
            let third = scope.spawn(|| queues.write(address(), 2, |_, _| vec![Ok(2)]));
            assert_eq!(first.join().unwrap(), Ok(0));
            assert!(second.join().unwrap().is_err());
            assert!(matches!(
                third.join().unwrap(),
                Err(ServiceError::Internal(_))
            ));
        });
        assert!(lock(&queues.waiting).is_empty());
        assert_eq!(queues.write(address(), 3, |_, _| vec![Ok(3)]), Ok(3));
    }

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Woken(AtomicUsize);

    impl std::task::Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    type Queues = Arc<WriteQueues<&'static str, usize, usize>>;
    type TestTicket = Ticket<&'static str, usize, usize>;

    fn poll_ticket(
        ticket: &mut TestTicket,
        woken: &Arc<Woken>,
    ) -> Poll<<TestTicket as Future>::Output> {
        let waker = Waker::from(Arc::clone(woken));
        Pin::new(ticket).poll(&mut Context::from_waker(&waker))
    }

    fn turn_of(
        ticket: &mut Ticket<&'static str, usize, usize>,
    ) -> Turn<&'static str, usize, usize> {
        match poll_ticket(ticket, &Arc::default()) {
            Poll::Ready(Err(turn)) => turn,
            other => panic!("expected the turn, got {:?}", other.map(|r| r.ok())),
        }
    }

    fn tenfold(
        batches: &Mutex<Vec<Vec<usize>>>,
    ) -> impl FnOnce(&&str, &[&usize]) -> Vec<ServiceResult<usize>> + '_ {
        move |_, requests| {
            lock(batches).push(requests.iter().map(|r| **r).collect());
            requests.iter().map(|r| Ok(**r * 10)).collect()
        }
    }

    /// Tickets wait without a thread of their own: on this one thread, the first gets the turn,
    /// the others stay pending until its write answers them (and wakes their tasks).
    #[test]
    fn tickets_wait_without_a_thread_and_are_answered_by_the_writer() {
        let queues: Queues = Arc::default();
        let batches = Mutex::new(Vec::new());
        let mut first = queues.queue("f", 0);
        let turn = turn_of(&mut first);
        let woken: Vec<Arc<Woken>> = (0..3).map(|_| Arc::default()).collect();
        let mut others: Vec<_> = (1..=3).map(|n| queues.queue("f", n)).collect();
        for (ticket, woken) in others.iter_mut().zip(&woken) {
            assert!(poll_ticket(ticket, woken).is_pending());
        }
        assert_eq!(turn.write(tenfold(&batches)), Ok(0));
        for (n, (ticket, woken)) in others.iter_mut().zip(&woken).enumerate() {
            assert_eq!(woken.0.load(Ordering::SeqCst), 1);
            assert!(
                matches!(poll_ticket(ticket, woken), Poll::Ready(Ok(Ok(v))) if v == (n + 1) * 10)
            );
        }
        assert_eq!(*lock(&batches), vec![vec![0, 1, 2, 3]]);
        assert!(lock(&queues.waiting).is_empty());
    }

    /// A ticket dropped while it waits (its request gone) gives up its place: its change is not
    /// written, the ones behind it are.
    #[test]
    fn a_ticket_dropped_while_waiting_gives_up_its_place() {
        let queues: Queues = Arc::default();
        let batches = Mutex::new(Vec::new());
        let mut first = queues.queue("f", 0);
        let turn = turn_of(&mut first);
        let mut second = queues.queue("f", 1);
        assert!(poll_ticket(&mut second, &Arc::default()).is_pending());
        drop(second);
        let mut third = queues.queue("f", 2);
        assert_eq!(turn.write(tenfold(&batches)), Ok(0));
        assert!(matches!(
            poll_ticket(&mut third, &Arc::default()),
            Poll::Ready(Ok(Ok(20)))
        ));
        assert_eq!(*lock(&batches), vec![vec![0, 2]]);
        assert!(lock(&queues.waiting).is_empty());
    }

    /// A turn dropped unwritten, and a ticket dropped when its turn had come, hand the turn on:
    /// the address is never left with nobody to write it.
    #[test]
    fn a_turn_given_up_is_handed_on() {
        let queues: Queues = Arc::default();
        let batches = Mutex::new(Vec::new());
        let mut first = queues.queue("f", 0);
        let turn = turn_of(&mut first);
        let mut second = queues.queue("f", 1);
        let mut third = queues.queue("f", 2);
        let woken = Arc::default();
        assert!(poll_ticket(&mut second, &woken).is_pending());
        drop(turn);
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            1,
            "the second's task is woken: its turn"
        );
        // Dropped with its turn come, before it was polled again.
        drop(second);
        let turn = turn_of(&mut third);
        assert_eq!(turn.write(tenfold(&batches)), Ok(20));
        assert_eq!(*lock(&batches), vec![vec![2]]);
        assert!(lock(&queues.waiting).is_empty());
        // A ticket and a blocking writer share the queue.
        let mut fourth = queues.queue("f", 4);
        let turn = turn_of(&mut fourth);
        std::thread::scope(|scope| {
            let blocked = scope.spawn(|| queues.write("f", 5, tenfold(&batches)));
            while lock(&queues.waiting).get("f").is_none_or(Vec::is_empty) {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(turn.write(tenfold(&batches)), Ok(40));
            assert_eq!(blocked.join().unwrap(), Ok(50));
        });
        assert_eq!(*lock(&batches), vec![vec![2], vec![4, 5]]);
        assert!(lock(&queues.waiting).is_empty());
    }
}
