//! This replica's evaluation snapshots ([`EnvironmentSnapshot`]) and the SDK keys that open
//! them, kept in memory so that an evaluation needs no database: infrastructure of the SDK-facing
//! use cases (`crate::sdk`) and of the management API's evaluation, with no rule of its own.
//!
//! # Kept current
//! - **Built on first use**, in one read transaction (every flag of the environment with its
//!   configuration there, and every segment of the environment), and kept until a change
//!   touches it.
//! - **This replica's changes**: the store tells the snapshots of every change this process
//!   commits before the writer is answered ([`ports::ChangeListener`]); a flag's change marks
//!   that flag stale in the project's snapshots (the next evaluation reads that flag again and
//!   shares the rest; past [`MAX_STALE_FLAGS`] the snapshot is dropped), a project's change
//!   drops the project's snapshots, a segment's its environment's (the next evaluation builds
//!   them again). A snapshot with a stale flag is never evaluated: the replica that wrote
//!   never evaluates the old version.
//! - **Other replicas' changes**: where the store hears them (PostgreSQL's feed), a snapshot is
//!   served only while the feed has caught up to a moment less than [`MAX_LAG`] ago; when it is
//!   behind, evaluations read the store instead (a snapshot built for the request, not kept),
//!   as the read cache does.
//! - **A store with no such feed** (SQLite, memory) is taken to be written by this process
//!   alone (SQLite is embedded): its snapshots are trusted until a change is told, for at most
//!   [`MAX_AGE`] (the bound for a change nobody announced: an operator's SQL).
//! - **A build that raced a change is not kept**: a change to a project starts a new epoch of
//!   its stripe (one of [`STRIPES`], shared by hash of the project's key), a change to
//!   everything and every loss of the feed a new global one; a snapshot is kept only if neither
//!   began anew since its read began. It still answers the request that read it.
//!
//! # The bound
//! Snapshots take at most the budget given, in bytes of memory estimated from the size of their
//! projected flags' and segments' JSON (five bytes per byte of JSON: the model and its serialised payload). Past it, the least recently used environments are dropped; an environment
//! heavier than the whole budget is read for each evaluation and never kept. SDK keys: at most
//! [`MAX_KEYS`] are remembered (past it, all are forgotten), each for at most [`MAX_AGE`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ports::{ChangeListener, Changed, SdkKeyHolder};

use crate::snapshot::EnvironmentSnapshot;

/// The longest a change committed by another replica can go unseen by this one's evaluations
/// (on a store whose feed tells of them).
pub const MAX_LAG: Duration = Duration::from_millis(100);

/// The longest a snapshot or a remembered SDK key is used after it was read, whatever was
/// announced: the bound for changes no replica announced.
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// How many flags of a snapshot may be stale (changed since it was read) before it is dropped
/// and read whole again rather than flag by flag.
pub const MAX_STALE_FLAGS: usize = 64;

/// How many SDK keys are remembered at most.
pub const MAX_KEYS: usize = 10_000;

/// How many epoch counters the projects share (by the hash of their key).
pub const STRIPES: usize = 32;

/// The epochs a read began in (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    epoch: u64,
    /// A project's stripe and its epoch; for an SDK key's read, `None` and the keys' epoch.
    stripe: Option<(usize, u64)>,
    key_epoch: u64,
    at: Instant,
}

impl Ticket {
    /// When the read it was taken for began.
    pub(crate) fn read_at(&self) -> Instant {
        self.at
    }
}

fn stripe_of(project: &str) -> usize {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    project.hash(&mut hasher);
    usize::try_from(hasher.finish() % STRIPES as u64).unwrap_or(0)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A snapshot kept, and when it was last used (for eviction).
#[derive(Debug)]
struct Kept {
    snapshot: Arc<EnvironmentSnapshot>,
    read_at: Instant,
    last_used: AtomicU64,
    /// Flags changed since it was read: it is not evaluated until they are read again.
    stale: Vec<String>,
}

/// The lock builds of one environment take, with the last build and when its read began.
pub(crate) type BuildSlot = Mutex<Option<(Instant, Arc<EnvironmentSnapshot>)>>;

/// (project key, environment key), as stored.
type EnvironmentName = (String, String);

#[derive(Debug, Default)]
struct State {
    epoch: u64,
    stripes: [u64; STRIPES],
    /// Begins anew with every change to a project (an SDK key's reset is one).
    key_epoch: u64,
    kept: HashMap<EnvironmentName, Kept>,
    weight: usize,
    /// SDK keys by secret: the environment, and when it was read.
    keys: HashMap<String, (SdkKeyHolder, Instant)>,
}

impl State {
    fn drop_where(&mut self, mut which: impl FnMut(&EnvironmentName) -> bool) {
        self.drop_where_kept(|name, _| which(name));
    }

    fn drop_where_kept(&mut self, mut which: impl FnMut(&EnvironmentName, &Kept) -> bool) {
        let mut freed = 0;
        self.kept.retain(|name, kept| {
            let drop = which(name, kept);
            if drop {
                freed += kept.snapshot.weight();
            }
            !drop
        });
        self.weight = self.weight.saturating_sub(freed);
        self.publish();
    }

    /// Tells `/metrics` how many snapshots are kept and what they weigh.
    fn publish(&self) {
        metrics::gauge!("flagsvc_evaluation_snapshots").set(self.kept.len() as f64);
        metrics::gauge!("flagsvc_evaluation_snapshot_bytes").set(self.weight as f64);
    }

    fn forget_all(&mut self) {
        self.epoch += 1;
        self.kept.clear();
        self.weight = 0;
        self.keys.clear();
        self.publish();
    }
}

/// This replica's snapshots and SDK keys.
#[derive(Debug)]
pub(crate) struct Snapshots {
    budget: usize,
    state: Mutex<State>,
    /// Whether the store tells of other processes' commits (then [`MAX_LAG`] applies).
    hears_others: AtomicBool,
    /// When the feed last proved it had told every change committed before.
    caught_up: Mutex<Option<Instant>>,
    /// Counts uses, for least-recently-used eviction.
    clock: AtomicU64,
    /// One lock per environment being built, so that concurrent evaluations build it once,
    /// holding the last build and when its read began (for those who waited, when it was not
    /// kept).
    building: Mutex<HashMap<EnvironmentName, Arc<BuildSlot>>>,
    /// Told of every change once the snapshots have dropped what it made stale (the SDK
    /// streams, which read snapshots when told).
    followers: ports::Listeners,
}

impl Snapshots {
    /// Snapshots within `budget` bytes, told of `store`'s changes.
    pub(crate) fn on(store: &dyn ports::Store, budget: usize) -> Arc<Self> {
        let snapshots = Arc::new(Self {
            budget,
            state: Mutex::default(),
            hears_others: AtomicBool::new(false),
            caught_up: Mutex::new(None),
            clock: AtomicU64::new(0),
            building: Mutex::default(),
            followers: ports::Listeners::default(),
        });
        let listener: Arc<dyn ChangeListener> = snapshots.clone();
        let hears_others = store.subscribe(Arc::downgrade(&listener));
        snapshots
            .hears_others
            .store(hears_others, Ordering::Release);
        snapshots
    }

    /// Whether what was read at `read_at` may be used now.
    fn fresh(&self, read_at: Instant, now: Instant) -> bool {
        if now.saturating_duration_since(read_at) >= MAX_AGE {
            return false;
        }
        !self.hears_others.load(Ordering::Acquire)
            || lock(&self.caught_up).is_some_and(|at| now.saturating_duration_since(at) < MAX_LAG)
    }

    /// The snapshot of (`project`, `environment`) (keys as stored), if one is kept and may be
    /// used now.
    pub(crate) fn get(&self, project: &str, environment: &str) -> Option<Arc<EnvironmentSnapshot>> {
        let now = Instant::now();
        let state = lock(&self.state);
        let kept = state
            .kept
            .get(&(project.to_owned(), environment.to_owned()))?;
        if !kept.stale.is_empty() || !self.fresh(kept.read_at, now) {
            return None;
        }
        kept.last_used.store(
            self.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        Some(kept.snapshot.clone())
    }

    /// The snapshot of (`project`, `environment`) kept with stale flags, the flags to read
    /// again, and when it was read: when it may be refreshed flag by flag rather than read
    /// whole ([`Snapshots::keep_refreshed`]).
    pub(crate) fn stale(
        &self,
        project: &str,
        environment: &str,
    ) -> Option<(Arc<EnvironmentSnapshot>, Vec<String>, Instant)> {
        let now = Instant::now();
        let state = lock(&self.state);
        let kept = state
            .kept
            .get(&(project.to_owned(), environment.to_owned()))?;
        (!kept.stale.is_empty() && self.fresh(kept.read_at, now))
            .then(|| (kept.snapshot.clone(), kept.stale.clone(), kept.read_at))
    }

    /// The lock that builds of (`project`, `environment`) take, so that one builds while the
    /// others wait for it.
    pub(crate) fn build_lock(&self, project: &str, environment: &str) -> Arc<BuildSlot> {
        let mut building = lock(&self.building);
        // Forget the locks nobody holds, so the map stays as small as the builds under way.
        building.retain(|_, held| Arc::strong_count(held) > 1);
        building
            .entry((project.to_owned(), environment.to_owned()))
            .or_default()
            .clone()
    }

    /// Taken before a read of project `project`'s data (`None`: a read of an SDK key, whose
    /// project is not known yet: any project's change then counts).
    pub(crate) fn ticket(&self, project: Option<&str>) -> Ticket {
        let state = lock(&self.state);
        Ticket {
            epoch: state.epoch,
            stripe: project.map(|p| {
                let stripe = stripe_of(p);
                (stripe, state.stripes[stripe])
            }),
            key_epoch: state.key_epoch,
            at: Instant::now(),
        }
    }

    fn still_current(state: &State, ticket: Ticket) -> bool {
        state.epoch == ticket.epoch
            && match ticket.stripe {
                Some((stripe, epoch)) => state.stripes[stripe] == epoch,
                None => state.key_epoch == ticket.key_epoch,
            }
    }

    /// Keeps `snapshot`, read since `ticket` was taken, unless a change since may have made it
    /// stale or it alone is heavier than the budget; drops the least recently used others
    /// until it fits.
    pub(crate) fn keep(&self, ticket: Ticket, snapshot: &Arc<EnvironmentSnapshot>) {
        self.keep_read_at(ticket, snapshot, ticket.at);
    }

    /// As [`Snapshots::keep`] for a snapshot refreshed flag by flag since `ticket` from one
    /// read at `read_at` (which still bounds its age: most of it was read then).
    pub(crate) fn keep_refreshed(
        &self,
        ticket: Ticket,
        snapshot: &Arc<EnvironmentSnapshot>,
        read_at: Instant,
    ) {
        self.keep_read_at(ticket, snapshot, read_at);
    }

    fn keep_read_at(&self, ticket: Ticket, snapshot: &Arc<EnvironmentSnapshot>, read_at: Instant) {
        let weight = snapshot.weight();
        if weight > self.budget {
            return;
        }
        let mut state = lock(&self.state);
        if !Self::still_current(&state, ticket) {
            return;
        }
        let name = (
            snapshot.project_key().to_owned(),
            snapshot.environment_key().to_owned(),
        );
        state.drop_where(|kept| *kept == name);
        while state.weight + weight > self.budget {
            let Some(oldest) = state
                .kept
                .iter()
                .min_by_key(|(_, kept)| kept.last_used.load(Ordering::Relaxed))
                .map(|(name, _)| name.clone())
            else {
                break;
            };
            state.drop_where(|kept| *kept == oldest);
        }
        state.weight += weight;
        state.kept.insert(
            name,
            Kept {
                snapshot: snapshot.clone(),
                read_at,
                last_used: AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed)),
                stale: Vec::new(),
            },
        );
        state.publish();
    }

    /// The environment SDK key `secret` opens, if it is remembered and may be used now.
    pub(crate) fn key(&self, secret: &str) -> Option<SdkKeyHolder> {
        let now = Instant::now();
        let state = lock(&self.state);
        let (holder, read_at) = state.keys.get(secret)?;
        self.fresh(*read_at, now).then(|| holder.clone())
    }

    /// Remembers that `secret` opens `holder`'s environment (read since `ticket`).
    pub(crate) fn keep_key(&self, ticket: Ticket, secret: &str, holder: &SdkKeyHolder) {
        let mut state = lock(&self.state);
        if !Self::still_current(&state, ticket) {
            return;
        }
        if state.keys.len() >= MAX_KEYS {
            state.keys.clear();
        }
        state
            .keys
            .insert(secret.to_owned(), (holder.clone(), ticket.at));
    }

    /// Tells `listener` of every change after the snapshots have taken it in (held weakly).
    pub(crate) fn follow(&self, listener: std::sync::Weak<dyn ChangeListener>) {
        self.followers.add(listener);
    }

    /// How many snapshots are kept, and their weight.
    pub(crate) fn kept(&self) -> (usize, usize) {
        let state = lock(&self.state);
        (state.kept.len(), state.weight)
    }
}

impl ChangeListener for Snapshots {
    fn changed(&self, changed: &Changed) {
        let mut state = lock(&self.state);
        match changed {
            Changed::Flag { project, flag } => {
                state.stripes[stripe_of(project)] += 1;
                for ((p, _), kept) in &mut state.kept {
                    if p == project && !kept.stale.contains(flag) {
                        kept.stale.push(flag.clone());
                    }
                }
                state.drop_where_kept(|(p, _), kept| {
                    p == project && kept.stale.len() > MAX_STALE_FLAGS
                });
            }
            Changed::Project(project) => {
                state.stripes[stripe_of(project)] += 1;
                state.drop_where(|(p, _)| p == project);
                // A key read before the change may be the one a reset replaced.
                state.key_epoch += 1;
                state
                    .keys
                    .retain(|_, (holder, _)| holder.project_key != *project);
            }
            Changed::Segments {
                project,
                environment,
            } => {
                state.stripes[stripe_of(project)] += 1;
                state.drop_where(|(p, e)| p == project && e == environment);
            }
            // Nothing an evaluation reads.
            Changed::Token(_) | Changed::Member(_) => {}
            Changed::Everything => state.forget_all(),
        }
        drop(state);
        self.followers.changed(changed);
    }

    fn lost(&self) {
        *lock(&self.caught_up) = None;
        lock(&self.state).forget_all();
        self.followers.lost();
    }

    fn caught_up(&self, as_of: Instant) {
        let mut caught_up = lock(&self.caught_up);
        if caught_up.is_none_or(|at| at < as_of) {
            *caught_up = Some(as_of);
        }
        drop(caught_up);
        self.followers.caught_up(as_of);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store whose feed is told by hand (`hears_others` as given).
    struct Feed(bool, Mutex<Vec<std::sync::Weak<dyn ChangeListener>>>);

    impl ports::Store for Feed {
        fn read(&self, _: &mut ports::UnitOfWork<'_>) -> ports::StoreResult<()> {
            Ok(())
        }
        fn write(&self, _: &mut ports::UnitOfWork<'_>) -> ports::StoreResult<()> {
            Ok(())
        }
        fn subscribe(&self, listener: std::sync::Weak<dyn ChangeListener>) -> bool {
            lock(&self.1).push(listener);
            self.0
        }
        fn check_ready(&self) -> ports::StoreResult<()> {
            Ok(())
        }
    }

    fn snapshot(project: &str, environment: &str, weight: usize) -> Arc<EnvironmentSnapshot> {
        Arc::new(EnvironmentSnapshot::empty(project, environment, weight))
    }

    fn kept(snapshots: &Snapshots, project: &str, environment: &str, weight: usize) {
        let ticket = snapshots.ticket(Some(project));
        snapshots.keep(ticket, &snapshot(project, environment, weight));
    }

    fn holder(project: &str) -> SdkKeyHolder {
        SdkKeyHolder {
            project_key: project.into(),
            environment_key: "prod".into(),
            expires_at: None,
        }
    }

    #[test]
    fn a_change_drops_what_it_touches_and_nothing_else() {
        let snapshots = Snapshots::on(&Feed(false, Mutex::default()), 1_000);
        for (project, environment) in [("p", "a"), ("p", "b"), ("q", "a")] {
            kept(&snapshots, project, environment, 10);
        }
        assert_eq!(snapshots.kept(), (3, 30));
        snapshots.changed(&Changed::Segments {
            project: "p".into(),
            environment: "a".into(),
        });
        assert!(snapshots.get("p", "a").is_none());
        assert!(snapshots.get("p", "b").is_some());
        snapshots.changed(&Changed::Flag {
            project: "p".into(),
            flag: "f".into(),
        });
        assert!(snapshots.get("p", "b").is_none());
        assert!(snapshots.get("q", "a").is_some());
        snapshots.changed(&Changed::Token("t".into()));
        snapshots.changed(&Changed::Member("m".into()));
        assert!(
            snapshots.get("q", "a").is_some(),
            "nothing evaluated changed"
        );
        snapshots.changed(&Changed::Everything);
        assert_eq!(snapshots.kept(), (0, 0));
    }

    #[test]
    fn a_changed_flag_is_read_again_alone_until_too_many_are() {
        let snapshots = Snapshots::on(&Feed(false, Mutex::default()), 1_000);
        kept(&snapshots, "p", "a", 10);
        let flag = |key: &str| Changed::Flag {
            project: "p".into(),
            flag: key.into(),
        };
        snapshots.changed(&flag("f"));
        snapshots.changed(&flag("f"));
        snapshots.changed(&flag("g"));
        assert!(snapshots.get("p", "a").is_none(), "never evaluated stale");
        let (old, stale, read_at) = snapshots.stale("p", "a").unwrap();
        assert_eq!(stale, ["f", "g"]);
        // Refreshed since a ticket taken after the changes: kept, stale no more, as old.
        let ticket = snapshots.ticket(Some("p"));
        snapshots.keep_refreshed(ticket, &old, read_at);
        assert!(snapshots.get("p", "a").is_some());
        assert!(snapshots.stale("p", "a").is_none());
        // A refresh that raced another change is not kept: the flag stays stale.
        let ticket = snapshots.ticket(Some("p"));
        snapshots.changed(&flag("h"));
        snapshots.keep_refreshed(ticket, &old, read_at);
        assert_eq!(snapshots.stale("p", "a").unwrap().1, ["h"]);
        // Past the limit, the snapshot is read whole again.
        for n in 0..MAX_STALE_FLAGS {
            snapshots.changed(&flag(&format!("x{n}")));
        }
        assert!(snapshots.stale("p", "a").is_none());
        assert_eq!(snapshots.kept(), (0, 0));
    }

    #[test]
    fn a_read_that_raced_a_change_is_not_kept() {
        let snapshots = Snapshots::on(&Feed(false, Mutex::default()), 1_000);
        let ticket = snapshots.ticket(Some("p"));
        snapshots.changed(&Changed::Flag {
            project: "p".into(),
            flag: "f".into(),
        });
        snapshots.keep(ticket, &snapshot("p", "a", 10));
        assert!(snapshots.get("p", "a").is_none());
        // A change to another project (of another stripe) does not stop it.
        let other = (0..100)
            .map(|n| format!("other-{n}"))
            .find(|key| stripe_of(key) != stripe_of("p"))
            .unwrap();
        let ticket = snapshots.ticket(Some("p"));
        snapshots.changed(&Changed::Project(other));
        snapshots.keep(ticket, &snapshot("p", "a", 10));
        assert!(snapshots.get("p", "a").is_some());
        // A key read before any project changed (a reset is one) is not kept either.
        let ticket = snapshots.ticket(None);
        snapshots.changed(&Changed::Project("q".into()));
        snapshots.keep_key(ticket, "sdk-1", &holder("p"));
        assert_eq!(snapshots.key("sdk-1"), None);
    }

    #[test]
    fn the_budget_drops_the_least_recently_used() {
        let snapshots = Snapshots::on(&Feed(false, Mutex::default()), 100);
        kept(&snapshots, "p", "a", 40);
        kept(&snapshots, "p", "b", 40);
        assert!(
            snapshots.get("p", "a").is_some(),
            "a is now the most recent"
        );
        kept(&snapshots, "p", "c", 40);
        assert!(snapshots.get("p", "b").is_none());
        assert!(snapshots.get("p", "a").is_some());
        assert_eq!(snapshots.kept(), (2, 80));
        kept(&snapshots, "p", "huge", 101);
        assert!(
            snapshots.get("p", "huge").is_none(),
            "heavier than the budget"
        );
        assert_eq!(snapshots.kept(), (2, 80));
        // Kept again: replaced, not counted twice.
        kept(&snapshots, "p", "a", 30);
        assert_eq!(snapshots.kept(), (2, 70));
    }

    #[test]
    fn with_a_feed_only_a_caught_up_one_lets_them_serve() {
        let snapshots = Snapshots::on(&Feed(true, Mutex::default()), 1_000);
        kept(&snapshots, "p", "a", 10);
        let ticket = snapshots.ticket(None);
        snapshots.keep_key(ticket, "sdk-1", &holder("p"));
        assert!(snapshots.get("p", "a").is_none(), "never caught up");
        assert_eq!(snapshots.key("sdk-1"), None);
        snapshots.caught_up(Instant::now());
        assert!(snapshots.get("p", "a").is_some());
        assert_eq!(snapshots.key("sdk-1"), Some(holder("p")));
        snapshots.caught_up(Instant::now() - MAX_LAG * 2);
        assert!(
            snapshots.get("p", "a").is_some(),
            "an older moment is ignored"
        );
        snapshots.lost();
        assert_eq!(snapshots.kept(), (0, 0));
        assert_eq!(snapshots.key("sdk-1"), None);
    }

    #[test]
    fn a_project_change_forgets_its_keys() {
        let snapshots = Snapshots::on(&Feed(false, Mutex::default()), 1_000);
        for (secret, project) in [("sdk-p", "p"), ("sdk-q", "q")] {
            let ticket = snapshots.ticket(None);
            snapshots.keep_key(ticket, secret, &holder(project));
        }
        snapshots.changed(&Changed::Flag {
            project: "p".into(),
            flag: "f".into(),
        });
        assert!(
            snapshots.key("sdk-p").is_some(),
            "a flag's change resets no key"
        );
        snapshots.changed(&Changed::Project("p".into()));
        assert_eq!(snapshots.key("sdk-p"), None);
        assert_eq!(snapshots.key("sdk-q"), Some(holder("q")));
    }
}
