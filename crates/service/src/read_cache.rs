//! This replica's copies of flags as `GET /flags/{projectKey}/{flagKey}` reads them, and of pages
//! of flags as `GET /flags/{projectKey}` lists them, so that a read can be answered without the
//! database (and without leaving the async thread). A change to a flag drops its copy and every
//! page of its project; a change to a project or an environment drops all of the project's.
//!
//! # The bound
//! - **The replica that wrote never serves the old version**: the store tells this cache of
//!   every change this process commits after the commit and before the writer is answered
//!   ([`ports::ChangeListener`]), and the copy is dropped then.
//! - **Another replica's change is served within [`MAX_LAG`]**: a copy is served only while the
//!   store's change feed has caught up (every change committed anywhere before that moment was
//!   told, see `adapter_sql::feed`) to a moment less than [`MAX_LAG`] ago. A stalled or lost feed
//!   therefore stops every copy from being served within [`MAX_LAG`], and a lost one empties the
//!   cache. A store with no such feed (SQLite, memory) never catches up: nothing is served from
//!   the cache there.
//! - **A read that raced a change does not keep its copy**: every change (and every loss of the
//!   feed) starts a new epoch, and a copy read from the database is kept only if no epoch began
//!   since the read began ([`FlagCache::ticket`]), since the read may have seen the state before
//!   the change.
//!
//! The copies take at most the budget given (measured as their stored JSON); past it, the cache
//! is emptied and fills again with what is read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ports::{ChangeListener, Changed};

use crate::{FlagList, FlagView};

/// The longest a change committed by another replica can go unseen by this one's cache.
pub const MAX_LAG: Duration = Duration::from_millis(100);

/// The epoch a read began in: its copy is kept only if no change began another since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

/// A copy kept, and what it counts against the budget.
#[derive(Debug)]
struct Entry<T> {
    value: Arc<T>,
    weight: usize,
}

/// What is kept of one project.
#[derive(Debug, Default)]
struct ProjectCopies {
    /// Flags by key.
    flags: HashMap<String, Entry<FlagView>>,
    /// Pages of flags by the request that listed them.
    pages: HashMap<String, Entry<FlagList>>,
}

impl ProjectCopies {
    fn weight(&self) -> usize {
        let flags: usize = self.flags.values().map(|e| e.weight).sum();
        flags + self.pages.values().map(|e| e.weight).sum::<usize>()
    }
}

#[derive(Debug, Default)]
struct Copies {
    /// Begins anew with every change told and every loss of the feed.
    epoch: u64,
    /// By project key.
    projects: HashMap<String, ProjectCopies>,
    /// The sum of the entries' weights.
    weight: usize,
}

impl Copies {
    fn clear(&mut self) {
        self.projects.clear();
        self.weight = 0;
    }

    /// Drops every copy, and lets no read begun before keep its own.
    fn forget_all(&mut self) {
        self.epoch += 1;
        self.clear();
    }
}

/// Flags as `GET` reads them, kept until a change to them is told (see the module's
/// documentation).
#[derive(Debug)]
pub(crate) struct FlagCache {
    copies: Mutex<Copies>,
    /// The moment up to which every change committed anywhere has been told, if the feed is
    /// caught up; `None` while it is lost (or was never connected).
    caught_up: Mutex<Option<Instant>>,
    /// The most the copies may weigh, in bytes of stored JSON.
    budget: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock means a panic while holding it; every state it guards is whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FlagCache {
    /// An empty cache whose copies weigh at most `budget` bytes.
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            copies: Mutex::new(Copies::default()),
            caught_up: Mutex::new(None),
            budget,
        }
    }

    /// Whether copies may be served now: the feed has caught up to less than [`MAX_LAG`] ago.
    fn fresh(&self, now: Instant) -> bool {
        lock(&self.caught_up).is_some_and(|at| now.saturating_duration_since(at) < MAX_LAG)
    }

    /// The copy of flag `flag` of project `project`, if it is kept and may be served now.
    pub(crate) fn get(&self, project: &str, flag: &str) -> Option<Arc<FlagView>> {
        if !self.fresh(Instant::now()) {
            return None;
        }
        let copies = lock(&self.copies);
        let entry = copies.projects.get(project)?.flags.get(flag)?;
        Some(Arc::clone(&entry.value))
    }

    /// The copy of the page of project `project`'s flags that `request` (a canonical form of the
    /// list request) listed, if it is kept and may be served now.
    pub(crate) fn get_page(&self, project: &str, request: &str) -> Option<Arc<FlagList>> {
        if !self.fresh(Instant::now()) {
            return None;
        }
        let copies = lock(&self.copies);
        let entry = copies.projects.get(project)?.pages.get(request)?;
        Some(Arc::clone(&entry.value))
    }

    /// Taken before reading from the database, to be given to [`FlagCache::keep`] or
    /// [`FlagCache::keep_page`].
    pub(crate) fn ticket(&self) -> Ticket {
        Ticket(lock(&self.copies).epoch)
    }

    /// Keeps `view`, flag `flag` of project `project` as read since `ticket` was taken, unless a
    /// change was told since (it may not be in `view`) or it alone would take a quarter of the
    /// budget.
    pub(crate) fn keep(&self, ticket: Ticket, project: &str, flag: &str, view: FlagView) {
        let weight = weight_of(std::iter::once(&view));
        self.keep_with(ticket, project, weight, |copies| {
            copies
                .flags
                .insert(
                    flag.to_owned(),
                    Entry {
                        value: Arc::new(view),
                        weight,
                    },
                )
                .map_or(0, |e| e.weight)
        });
    }

    /// Keeps `list`, the page of project `project`'s flags `request` listed, as
    /// [`FlagCache::keep`] keeps a flag.
    pub(crate) fn keep_page(&self, ticket: Ticket, project: &str, request: &str, list: FlagList) {
        let weight = weight_of(&list.items) + request.len();
        self.keep_with(ticket, project, weight, |copies| {
            copies
                .pages
                .insert(
                    request.to_owned(),
                    Entry {
                        value: Arc::new(list),
                        weight,
                    },
                )
                .map_or(0, |e| e.weight)
        });
    }

    /// Adds a copy of `weight` with `insert`, which returns the weight of the copy it replaced.
    fn keep_with(
        &self,
        ticket: Ticket,
        project: &str,
        weight: usize,
        insert: impl FnOnce(&mut ProjectCopies) -> usize,
    ) {
        if weight > self.budget / 4 {
            return;
        }
        let mut copies = lock(&self.copies);
        if copies.epoch != ticket.0 {
            return;
        }
        if copies.weight + weight > self.budget {
            // Emptied rather than sorted by use: a bounded cost, and what is read fills it again.
            copies.clear();
        }
        let replaced = insert(copies.projects.entry(project.to_owned()).or_default());
        copies.weight = copies.weight - replaced + weight;
    }

    /// How many flags are kept (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.copies)
            .projects
            .values()
            .map(|p| p.flags.len() + p.pages.len())
            .sum()
    }
}

/// What flags weigh: their stored JSON's length.
fn weight_of<'a>(views: impl IntoIterator<Item = &'a FlagView>) -> usize {
    views
        .into_iter()
        .map(|view| serde_json::to_vec(&view.flag).map_or(usize::MAX / 2, |json| json.len()))
        .fold(0, usize::saturating_add)
}

impl ChangeListener for FlagCache {
    fn changed(&self, changed: &Changed) {
        let mut copies = lock(&self.copies);
        copies.epoch += 1;
        let dropped = match changed {
            // The flag, and every page of its project: any page may list it, or now should.
            Changed::Flag { project, flag } => match copies.projects.get_mut(project) {
                Some(kept) => {
                    let pages: usize = kept.pages.drain().map(|(_, e)| e.weight).sum();
                    let flag = kept.flags.remove(flag).map_or(0, |e| e.weight);
                    pages + flag
                }
                None => 0,
            },
            Changed::Project(project) => copies
                .projects
                .remove(project)
                .map_or(0, |kept| kept.weight()),
            Changed::Everything => copies.weight,
        };
        if *changed == Changed::Everything {
            copies.projects.clear();
        }
        copies.weight -= dropped;
    }

    fn lost(&self) {
        *lock(&self.caught_up) = None;
        lock(&self.copies).forget_all();
    }

    fn caught_up(&self, as_of: Instant) {
        let mut caught_up = lock(&self.caught_up);
        if caught_up.is_none_or(|at| at < as_of) {
            *caught_up = Some(as_of);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::flag::{Flag, FlagPost};

    fn view(key: &str) -> FlagView {
        let post: FlagPost = serde_json::from_value(serde_json::json!({
            "key": key, "name": key,
            "variations": [{"value": true}, {"value": false}],
        }))
        .unwrap();
        let flag = Flag::create(post.validate().unwrap(), 1, &mut crate::RandomIds).unwrap();
        FlagView {
            flag,
            maintainer: None,
        }
    }

    fn caught_up_cache() -> FlagCache {
        let cache = FlagCache::new(1 << 20);
        cache.caught_up(Instant::now());
        cache
    }

    #[test]
    fn a_copy_is_served_until_a_change_to_it_is_told() {
        let cache = caught_up_cache();
        cache.keep(cache.ticket(), "p", "f", view("f"));
        cache.keep(cache.ticket(), "p", "g", view("g"));
        cache.keep(cache.ticket(), "q", "f", view("f"));
        assert_eq!(cache.get("p", "f").unwrap().flag.key.as_str(), "f");
        let page = |keys: &[&str]| FlagList {
            items: keys.iter().map(|k| view(k)).collect(),
            total: 2,
        };
        cache.keep_page(cache.ticket(), "p", "limit=20", page(&["f", "g"]));
        cache.keep_page(cache.ticket(), "q", "limit=20", page(&["f"]));
        assert_eq!(cache.get_page("p", "limit=20").unwrap().items.len(), 2);
        // A change to flag `g` drops the pages of its project, and only those.
        cache.changed(&Changed::Flag {
            project: "p".into(),
            flag: "g".into(),
        });
        assert!(cache.get_page("p", "limit=20").is_none());
        assert!(cache.get_page("q", "limit=20").is_some());
        assert!(cache.get("p", "f").is_some());
        cache.keep(cache.ticket(), "p", "g", view("g"));
        cache.changed(&Changed::Flag {
            project: "p".into(),
            flag: "f".into(),
        });
        assert!(cache.get("p", "f").is_none());
        assert!(cache.get("p", "g").is_some());
        cache.changed(&Changed::Project("p".into()));
        assert!(cache.get("p", "g").is_none());
        assert!(cache.get("q", "f").is_some());
        cache.changed(&Changed::Everything);
        assert_eq!(cache.len(), 0);
        assert_eq!(lock(&cache.copies).weight, 0);
    }

    #[test]
    fn a_read_that_raced_a_change_is_not_kept() {
        let cache = caught_up_cache();
        let before = cache.ticket();
        // A change to another flag committed while the read ran: the read may predate any change.
        cache.changed(&Changed::Flag {
            project: "p".into(),
            flag: "other".into(),
        });
        cache.keep(before, "p", "f", view("f"));
        assert!(cache.get("p", "f").is_none());
        cache.keep(cache.ticket(), "p", "f", view("f"));
        assert!(cache.get("p", "f").is_some());
    }

    #[test]
    fn nothing_is_served_unless_the_feed_caught_up_within_the_bound() {
        let cache = FlagCache::new(1 << 20);
        cache.keep(cache.ticket(), "p", "f", view("f"));
        assert!(cache.get("p", "f").is_none(), "never caught up");
        cache.caught_up(Instant::now());
        assert!(cache.get("p", "f").is_some());
        let long_ago = Instant::now().checked_sub(MAX_LAG).unwrap();
        assert!(!cache.fresh(long_ago + MAX_LAG + MAX_LAG));
        // An older moment does not move it back.
        cache.caught_up(long_ago);
        assert!(cache.get("p", "f").is_some());
    }

    #[test]
    fn a_lost_feed_empties_the_cache_and_stops_serving() {
        let cache = caught_up_cache();
        let before = cache.ticket();
        cache.keep(cache.ticket(), "p", "f", view("f"));
        cache.lost();
        assert_eq!(cache.len(), 0);
        cache.keep(before, "p", "g", view("g"));
        assert_eq!(cache.len(), 0, "a read from before the loss is not kept");
        cache.keep(cache.ticket(), "p", "f", view("f"));
        assert!(
            cache.get("p", "f").is_none(),
            "not served until caught up again"
        );
        cache.caught_up(Instant::now());
        assert!(cache.get("p", "f").is_some());
    }

    #[test]
    fn the_copies_stay_within_the_budget() {
        let one = serde_json::to_vec(&view("f-000").flag).unwrap().len();
        let cache = FlagCache::new(one * 10);
        cache.caught_up(Instant::now());
        for i in 0..25 {
            let key = format!("f-{i:03}");
            cache.keep(cache.ticket(), "p", &key, view(&key));
            assert!(lock(&cache.copies).weight <= one * 10);
        }
        assert!(cache.len() <= 10);
        assert!(cache.get("p", "f-024").is_some(), "the last read is kept");
    }
}
