//! Streaming flag data to the server-side SDKs (`GET /all`): one channel per environment with
//! open streams on this replica, fed by the committed-change feed.
//!
//! # How a change reaches the streams
//! The store tells the snapshots (`crate::snapshots`) of every committed change, theirs and
//! other replicas'; they pass it on to [`Delivery`] once they have dropped what it made stale.
//! `Delivery` only notes which channels are due and wakes its job (`background::SdkDelivery`,
//! one thread). The job reads each due environment's snapshot (from memory where it may, a
//! changed flag alone where only that changed), computes the events that bring the SDKs from
//! the snapshot they hold to this one ([`events::step`]), serialises each event once and hands
//! the same bytes to every stream of the environment. Events of one environment are computed
//! by one thread, one step after the other, so they reach every stream in commit order.
//!
//! A new stream gets the channel's last snapshot as a `put` (serialised once per snapshot) and
//! every event after it: the two are taken under the channel's lock, which every step holds.
//!
//! # Faults
//! - A snapshot older than the one the streams hold is never stepped to: the environment is
//!   read again from the store.
//! - While the feed of other replicas' commits is down, changes may be missed: once it is back
//!   and has caught up, every stream gets a fresh `put` (never a silent gap).
//! - An environment that is gone closes its streams (the SDKs reconnect and are refused).
//!
//! # Bounds
//! Each channel keeps at most [`STREAM_BUFFER`] events for its slowest stream; a stream
//! further behind is ended ([`Subscription`] says so) and its SDK reconnects to a fresh `put`.
//! A step of more than [`events::MAX_EVENTS_PER_STEP`] events sends one `put` instead. Streams
//! are limited overall and per environment ([`StreamLimits`]).

mod events;
mod subscription;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use async_broadcast::{InactiveReceiver, Sender};
use bytes::Bytes;
use ports::{ChangeListener, Changed};

use crate::snapshot::EnvironmentSnapshot;
use crate::{ServiceError, ServiceResult};

pub use events::{HEARTBEAT, MAX_EVENTS_PER_STEP};
pub use subscription::{StreamEnd, StreamItem, Subscription};

use subscription::{Message, Release};

/// How many events a channel keeps for its slowest stream: a stream further behind is ended.
pub const STREAM_BUFFER: usize = 32;

/// How often an idle stream gets a heartbeat unless configured otherwise.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(60);

/// How many streams a replica serves at once, and for one environment, and how often idle
/// streams get a heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Streams open at once on this replica.
    pub max_streams: usize,
    /// Streams open at once for one environment on this replica.
    pub max_streams_per_environment: usize,
    /// The pause between heartbeats.
    pub heartbeat: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_streams: 20_000,
            max_streams_per_environment: 10_000,
            heartbeat: DEFAULT_HEARTBEAT,
        }
    }
}

/// (project key, environment key), as stored.
type EnvironmentName = (String, String);

/// Whether an SDK key still opens an environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyStanding {
    /// It does.
    Opens,
    /// It does until then (milliseconds since the epoch): it was replaced with an expiry.
    Until(i64),
    /// It does not.
    Refused,
}

/// Where the channels read environments' snapshots and SDK keys (the service).
pub(crate) trait Snapshots {
    /// Whether SDK `key` opens environment `name` (keys as stored), asked of the store.
    fn key_standing(&self, key: &str, name: &(String, String)) -> ServiceResult<KeyStanding>;

    /// The snapshot of an environment (keys as stored), from memory where it may be used.
    fn snapshot(&self, project: &str, environment: &str)
        -> ServiceResult<Arc<EnvironmentSnapshot>>;

    /// The snapshot of an environment, read from the store now.
    fn snapshot_read_now(
        &self,
        project: &str,
        environment: &str,
    ) -> ServiceResult<Arc<EnvironmentSnapshot>>;
}

/// The refusal of a stream by a replica that is stopping.
fn stopping() -> ServiceError {
    ServiceError::Unavailable("this server is stopping; connect to another".into())
}

/// Now, in milliseconds since the epoch (as key expiries are).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One environment's streams on this replica.
#[derive(Debug)]
struct Channel {
    name: EnvironmentName,
    state: Mutex<ChannelState>,
    /// Streams open.
    streams: AtomicUsize,
}

#[derive(Debug)]
struct ChannelState {
    /// What every stream holds once it has read every event sent.
    last: Arc<EnvironmentSnapshot>,
    /// The `put` of `last`, once made.
    put: Option<Bytes>,
    sender: Sender<Message>,
    /// Keeps the channel open while no stream listens.
    _open: InactiveReceiver<Message>,
    /// The SDK keys its streams were opened with, and how many streams each.
    keys: HashMap<Arc<str>, usize>,
    /// Keys its streams were told end (now, or at an expiry), so that a stream joining later
    /// with one ends too.
    ended_keys: HashMap<Arc<str>, Option<i64>>,
}

impl Channel {
    fn new(name: EnvironmentName, last: Arc<EnvironmentSnapshot>) -> Self {
        let (mut sender, receiver) = async_broadcast::broadcast(STREAM_BUFFER);
        // Past the buffer the oldest event goes, and the stream that had not read it is ended.
        sender.set_overflow(true);
        sender.set_await_active(false);
        Self {
            name,
            state: Mutex::new(ChannelState {
                last,
                put: None,
                sender,
                _open: receiver.deactivate(),
                keys: HashMap::new(),
                ended_keys: HashMap::new(),
            }),
            streams: AtomicUsize::new(0),
        }
    }
}

impl ChannelState {
    /// Sends `event` to every stream; how many streams it went to.
    fn send(&self, event: Bytes) -> usize {
        self.send_message(Message::Event(event))
    }

    fn send_message(&self, message: Message) -> usize {
        let streams = self.sender.receiver_count();
        // With overflow on and no wait for receivers, a send fails only on a closed channel.
        let _ = self.sender.try_broadcast(message);
        streams
    }
}

/// Why the feed of other replicas' commits asks for every stream to be sent a `put`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Resync {
    #[default]
    No,
    /// The feed was lost: once it has caught up again.
    AwaitingFeed,
    /// Now.
    Due,
}

#[derive(Debug, Default)]
struct State {
    channels: HashMap<EnvironmentName, Arc<Channel>>,
    /// Channels to step, with when their first change since the last step was told.
    due: HashMap<EnvironmentName, Instant>,
    /// Channels whose streams' keys are to be checked again (their project changed: an SDK
    /// key may have been replaced).
    recheck_keys: std::collections::HashSet<EnvironmentName>,
    resync: Resync,
    last_heartbeat: Option<Instant>,
}

impl State {
    fn mark_due(&mut self, which: impl Fn(&EnvironmentName) -> bool, told: Instant) {
        for name in self.channels.keys().filter(|name| which(name)) {
            self.due.entry(name.clone()).or_insert(told);
        }
    }
}

/// This replica's SDK streams.
pub(crate) struct Delivery {
    limits: StreamLimits,
    state: Mutex<State>,
    /// Wakes the job that steps the channels.
    wake: OnceLock<Box<dyn Fn() + Send + Sync>>,
    open: AtomicUsize,
    /// Set once the replica stops: no new stream.
    closed: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("limits", &self.limits)
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

/// A stream's place in the limits and its channel's keys, given back when it ends.
#[derive(Debug)]
struct Place {
    delivery: Arc<Delivery>,
    channel: Arc<Channel>,
}

impl Release for Place {
    fn release(&self, key: &Arc<str>) {
        {
            let mut state = lock(&self.channel.state);
            if let Some(count) = state.keys.get_mut(key) {
                *count -= 1;
                if *count == 0 {
                    state.keys.remove(key);
                }
            }
        }
        self.channel.streams.fetch_sub(1, Ordering::AcqRel);
        self.delivery.open.fetch_sub(1, Ordering::AcqRel);
        self.delivery.publish_streams(&self.channel);
    }
}

impl Delivery {
    pub(crate) fn new(limits: StreamLimits) -> Self {
        Self {
            limits,
            state: Mutex::default(),
            wake: OnceLock::new(),
            open: AtomicUsize::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn publish_streams(&self, channel: &Channel) {
        metrics::gauge!(
            "flagsvc_sdk_streams",
            "project" => channel.name.0.clone(),
            "environment" => channel.name.1.clone()
        )
        .set(channel.streams.load(Ordering::Acquire) as f64);
    }

    /// Has `wake` called when channels are due (once; later calls are ignored).
    pub(crate) fn wake_with(&self, wake: Box<dyn Fn() + Send + Sync>) {
        let _ = self.wake.set(wake);
    }

    fn wake(&self) {
        if let Some(wake) = self.wake.get() {
            wake();
        }
    }

    /// A new stream of environment `environment` of project `project` (keys as stored),
    /// opened with SDK key `key`: its `put`, and every event after it.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        service: &dyn Snapshots,
        (project, environment): (&str, &str),
        key: &str,
    ) -> ServiceResult<Subscription> {
        if self.closed.load(Ordering::Acquire) {
            return Err(stopping());
        }
        if self.open.load(Ordering::Acquire) >= self.limits.max_streams {
            return Err(ServiceError::Unavailable(
                format!(
                    "this server streams to {} SDKs already; retry later",
                    self.limits.max_streams
                )
                .into(),
            ));
        }
        let name = (project.to_owned(), environment.to_owned());
        // A channel forgotten between its lookup and the join is looked up (or made) again.
        for _ in 0..3 {
            let channel = match self.channel(&name) {
                Some(channel) => channel,
                None => self.open_channel(service, &name)?,
            };
            if let Some(subscription) = self.join(channel, key)? {
                return Ok(subscription);
            }
        }
        Err(ServiceError::Unavailable(
            "this server is changing its streams of this environment; retry".into(),
        ))
    }

    /// A new channel of `name`, from its snapshot (or the one another stream made meanwhile).
    fn open_channel(
        &self,
        service: &dyn Snapshots,
        name: &EnvironmentName,
    ) -> ServiceResult<Arc<Channel>> {
        let snapshot = service.snapshot(&name.0, &name.1)?;
        let mut state = lock(&self.state);
        if self.closed.load(Ordering::Acquire) {
            return Err(stopping());
        }
        let channel = state
            .channels
            .entry(name.clone())
            .or_insert_with(|| Arc::new(Channel::new(name.clone(), snapshot)))
            .clone();
        // A change told while the snapshot was read went to no channel (an SDK key replaced
        // meanwhile among them): step it now, and check its keys.
        state.due.entry(name.clone()).or_insert_with(Instant::now);
        state.recheck_keys.insert(name.clone());
        drop(state);
        self.wake();
        Ok(channel)
    }

    fn channel(&self, name: &EnvironmentName) -> Option<Arc<Channel>> {
        lock(&self.state).channels.get(name).cloned()
    }

    /// Joins `channel` with `key`; `None` when the channel was closed or forgotten since it
    /// was looked up (look again).
    fn join(
        self: &Arc<Self>,
        channel: Arc<Channel>,
        key: &str,
    ) -> ServiceResult<Option<Subscription>> {
        let mut state = lock(&channel.state);
        // Closed, or forgotten for want of streams, since it was looked up: streams joining it
        // would hear nothing; the SDK retries.
        let current = lock(&self.state)
            .channels
            .get(&channel.name)
            .is_some_and(|kept| Arc::ptr_eq(kept, &channel));
        if self.closed.load(Ordering::Acquire) {
            return Err(stopping());
        }
        if !current {
            return Ok(None);
        }
        // A key this channel's streams were told has ended (replaced before it joined).
        if let Some(ended) = state.ended_keys.get(key) {
            if ended.is_none_or(|at| at <= now_ms()) {
                return Err(ServiceError::Unauthenticated(
                    "this SDK key was replaced".into(),
                ));
            }
        }
        if channel.streams.load(Ordering::Acquire) >= self.limits.max_streams_per_environment {
            return Err(ServiceError::Unavailable(
                format!(
                    "this server streams this environment to {} SDKs already; retry later",
                    self.limits.max_streams_per_environment
                )
                .into(),
            ));
        }
        let put = match &state.put {
            Some(put) => put.clone(),
            None => {
                let put = events::put_event(&state.last);
                state.put = Some(put.clone());
                put
            }
        };
        let events = state.sender.new_receiver();
        let key: Arc<str> = Arc::from(key);
        let entry = state.keys.entry(key.clone()).or_insert(0);
        if *entry == 0 {
            // A key new to the channel may have been replaced since the last check.
            lock(&self.state).recheck_keys.insert(channel.name.clone());
            self.wake();
        }
        *entry += 1;
        channel.streams.fetch_add(1, Ordering::AcqRel);
        self.open.fetch_add(1, Ordering::AcqRel);
        drop(state);
        self.publish_streams(&channel);
        Ok(Some(Subscription {
            put,
            events,
            key,
            place: Arc::new(Place {
                delivery: self.clone(),
                channel,
            }),
        }))
    }

    /// Steps the due channels (at most `batch`; all of them for a resync), and sends the
    /// heartbeats that are due. How many channels it stepped.
    ///
    /// # Errors
    /// The first store error met (the channels it could not step stay due).
    pub(crate) fn run_due(&self, service: &dyn Snapshots, batch: usize) -> ServiceResult<usize> {
        let (work, put) = self.take_due(batch);
        let mut failed = None;
        for (name, told) in &work {
            let recheck = lock(&self.state).recheck_keys.remove(name);
            let stepped = self.step(service, name, put, *told).and_then(|()| {
                if recheck {
                    self.recheck_keys(service, name)?;
                }
                Ok(())
            });
            if let Err(err) = stepped {
                let mut state = lock(&self.state);
                state.due.entry(name.clone()).or_insert(*told);
                if recheck {
                    state.recheck_keys.insert(name.clone());
                }
                failed.get_or_insert(err);
            }
        }
        self.heartbeat_if_due();
        match failed {
            Some(err) => Err(err),
            None => Ok(work.len()),
        }
    }

    /// The channels to step now, and whether each gets a `put`.
    fn take_due(&self, batch: usize) -> (Vec<(EnvironmentName, Instant)>, bool) {
        let mut state = lock(&self.state);
        if state.resync == Resync::Due {
            state.resync = Resync::No;
            state.due.clear();
            let now = Instant::now();
            let all = state.channels.keys().map(|name| (name.clone(), now));
            return (all.collect(), true);
        }
        // Oldest first: a channel due again soon never keeps another waiting.
        let mut due: Vec<(EnvironmentName, Instant)> =
            state.due.iter().map(|(n, t)| (n.clone(), *t)).collect();
        due.sort_by_key(|(_, told)| *told);
        due.truncate(batch);
        for (name, _) in &due {
            state.due.remove(name);
        }
        (due, false)
    }

    /// Brings the streams of `name` to its current snapshot (a `put` if `put`).
    fn step(
        &self,
        service: &dyn Snapshots,
        name: &EnvironmentName,
        put: bool,
        told: Instant,
    ) -> ServiceResult<()> {
        let Some(channel) = self.channel(name) else {
            return Ok(());
        };
        let (project, environment) = (name.0.as_str(), name.1.as_str());
        let held = lock(&channel.state).last.read_at();
        let mut next = match service.snapshot(project, environment) {
            Ok(next) => next,
            Err(ServiceError::NotFound(_)) => {
                self.close(name);
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        if put || next.read_at() < held {
            // A resync reads the store; so does a step that was handed an older read than
            // the streams hold.
            next = service.snapshot_read_now(project, environment)?;
        }
        let mut state = lock(&channel.state);
        if next.environment_id() != state.last.environment_id() {
            // The environment was deleted and another created with its key: its streams were
            // opened with the deleted one's key.
            drop(state);
            self.close(name);
            return Ok(());
        }
        if next.read_at() < state.last.read_at() {
            // Another step got further meanwhile (never: one job steps).
            return Ok(());
        }
        let step = if put {
            events::Step::Put
        } else {
            events::step(&state.last, &next)
        };
        state.last = next;
        let sent = match step {
            events::Step::Nothing => return Ok(()),
            events::Step::Events(events) => {
                state.put = None;
                let count = events.len();
                let streams = events
                    .into_iter()
                    .map(|event| state.send(event))
                    .sum::<usize>();
                metrics::counter!("flagsvc_sdk_events_total", "kind" => "change")
                    .increment(streams as u64);
                count
            }
            events::Step::Put => {
                let put = events::put_event(&state.last);
                state.put = Some(put.clone());
                let streams = state.send(put);
                metrics::counter!("flagsvc_sdk_events_total", "kind" => "put")
                    .increment(streams as u64);
                1
            }
        };
        drop(state);
        if sent > 0 {
            metrics::histogram!("flagsvc_sdk_propagation_seconds")
                .record(told.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// Tells the streams of `name` opened with a key that no longer opens the environment to
    /// end now, and those opened with a key replaced with an expiry, when.
    fn recheck_keys(&self, service: &dyn Snapshots, name: &EnvironmentName) -> ServiceResult<()> {
        let Some(channel) = self.channel(name) else {
            return Ok(());
        };
        let keys: Vec<Arc<str>> = lock(&channel.state).keys.keys().cloned().collect();
        for key in keys {
            let at = match service.key_standing(&key, name)? {
                KeyStanding::Opens => continue,
                KeyStanding::Until(at) => Some(at),
                KeyStanding::Refused => None,
            };
            let mut state = lock(&channel.state);
            state.ended_keys.insert(key.clone(), at);
            state.send_message(Message::KeyEnds { key, at });
        }
        Ok(())
    }

    /// Ends every stream and refuses new ones.
    pub(crate) fn close_all(&self) {
        self.closed.store(true, Ordering::Release);
        let channels: Vec<Arc<Channel>> =
            lock(&self.state).channels.drain().map(|(_, c)| c).collect();
        for channel in channels {
            lock(&channel.state).sender.close();
        }
    }

    /// Closes the channel of `name`: its streams end.
    fn close(&self, name: &EnvironmentName) {
        let removed = lock(&self.state).channels.remove(name);
        if let Some(channel) = removed {
            lock(&channel.state).sender.close();
        }
    }

    /// Sends every channel a heartbeat if one is due, and forgets channels nobody listens to.
    fn heartbeat_if_due(&self) {
        let mut state = lock(&self.state);
        let now = Instant::now();
        let last = *state.last_heartbeat.get_or_insert(now);
        if now.saturating_duration_since(last) < self.limits.heartbeat {
            return;
        }
        state.last_heartbeat = Some(now);
        state
            .channels
            .retain(|_, channel| channel.streams.load(Ordering::Acquire) > 0);
        let channels: Vec<Arc<Channel>> = state.channels.values().cloned().collect();
        drop(state);
        let heartbeat = Bytes::from_static(HEARTBEAT);
        let streams = channels
            .iter()
            .map(|channel| lock(&channel.state).send(heartbeat.clone()))
            .sum::<usize>();
        metrics::counter!("flagsvc_sdk_events_total", "kind" => "heartbeat")
            .increment(streams as u64);
    }
}

impl ChangeListener for Delivery {
    fn changed(&self, changed: &Changed) {
        let told = Instant::now();
        let mut state = lock(&self.state);
        if state.channels.is_empty() {
            return;
        }
        match changed {
            Changed::Flag { project, .. } => state.mark_due(|(p, _)| p == project, told),
            Changed::Project(project) => {
                state.mark_due(|(p, _)| p == project, told);
                let names: Vec<EnvironmentName> = state
                    .channels
                    .keys()
                    .filter(|(p, _)| p == project)
                    .cloned()
                    .collect();
                state.recheck_keys.extend(names);
            }
            Changed::Segments {
                project,
                environment,
            } => state.mark_due(|(p, e)| p == project && e == environment, told),
            Changed::Token(_) | Changed::Member(_) => return,
            Changed::Everything => {
                state.mark_due(|_| true, told);
                let names: Vec<EnvironmentName> = state.channels.keys().cloned().collect();
                state.recheck_keys.extend(names);
            }
        }
        drop(state);
        self.wake();
    }

    fn lost(&self) {
        let mut state = lock(&self.state);
        if !state.channels.is_empty() {
            state.resync = Resync::AwaitingFeed;
        }
    }

    fn caught_up(&self, _: Instant) {
        let mut state = lock(&self.state);
        if state.resync == Resync::AwaitingFeed {
            state.resync = Resync::Due;
            drop(state);
            self.wake();
        }
    }
}
