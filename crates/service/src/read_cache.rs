//! This replica's read cache: answers to reads (as the driving adapter rendered them: opaque
//! bytes) of one flag, or of a page of a project's flags or environments, so that the read can
//! be answered again without the database (and, in the HTTP adapter, without leaving the async
//! thread). A change to a flag drops the answers about it and every page of its project; a change
//! to a project or an environment drops everything of that project; a change to anything else
//! that a flag shows (a member, its maintainer) drops everything.
//!
//! # The bound
//! - **The replica that wrote never serves the old version**: the store tells this cache of
//!   every change this process commits after the commit and before the writer is answered
//!   ([`ports::ChangeListener`]), and the answers it touches are dropped then.
//! - **Another replica's change is served within [`MAX_LAG`]**: an answer is served only while
//!   the store's change feed has caught up (every change committed anywhere before that moment
//!   was told, see `adapter_sql::feed`) to a moment less than [`MAX_LAG`] ago. A stalled or lost
//!   feed therefore stops every answer from being served within [`MAX_LAG`], and a lost one
//!   empties the cache. A store with no such feed (SQLite, memory) never catches up: nothing is
//!   served from the cache there.
//! - **A read that raced a change does not keep its answer**: a change to a project starts a
//!   new epoch of that project's stripe (one of [`STRIPES`] counters that projects share by
//!   the hash of their key), a change to everything and every loss of the feed a new global
//!   epoch; an answer read from the database is kept only if neither its project's stripe nor the
//!   global epoch began anew since the read began ([`Ticket`]), since the read may have seen the
//!   state before the change. Changes in other projects (of other stripes) do not stop it.
//! - **A change no replica announced** (a replica of an older release during a rolling upgrade,
//!   an operator's SQL) is served within [`MAX_AGE`]: no answer is served longer than that after
//!   it was read.
//!
//! The answers take at most the budget given (their bytes and request keys; the structures around
//! them add some): half for answers about one flag, half for pages, so that many distinct list
//! requests cannot push the flags out. Past its half, a kind drops answers of that kind (of some
//! project or flag, whichever comes first) until the new one fits; one flag keeps at most
//! [`ANSWERS_PER_FLAG`] answers (one per distinct request: `env` filters, say).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ports::{ChangeListener, Changed};

/// The longest a change committed by another replica can go unseen by this one's cache.
pub const MAX_LAG: Duration = Duration::from_millis(100);

/// The longest an answer is served after it was read, whatever was announced: the bound for
/// changes that no replica announced.
pub const MAX_AGE: Duration = Duration::from_secs(5);

/// The most answers kept about one flag (distinct requests for it); a new one past it drops the
/// others.
pub const ANSWERS_PER_FLAG: usize = 8;

/// How many epoch counters the projects share (by the hash of their key).
pub const STRIPES: usize = 32;

/// The epochs a read began in: its answer is kept only if no change to its project's stripe,
/// nor to everything, began another since. Taken with
/// [`Service::read_ticket`](crate::Service::read_ticket) before the read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// The global epoch.
    epoch: u64,
    /// Which stripe, and its epoch.
    stripe: usize,
    stripe_epoch: u64,
    /// When the read began.
    at: Instant,
}

/// The stripe of project `project`.
fn stripe_of(project: &str) -> usize {
    use std::hash::{Hash, Hasher};
    // A fixed hasher: the same stripe for a project at ticket and at keep.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    project.hash(&mut hasher);
    usize::try_from(hasher.finish() % STRIPES as u64).unwrap_or(0)
}

/// What a kept answer depends on, and so which changes drop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer<'a> {
    /// One flag of a project (dropped by a change to it, or to its project).
    Flag {
        /// The project's key.
        project: &'a str,
        /// The flag's key.
        flag: &'a str,
    },
    /// Anything else of one project: a page of its flags or environments (dropped by a change
    /// to any flag of it, or to it).
    Project(&'a str),
}

impl Answer<'_> {
    /// The key of the project the answer is about.
    pub(crate) fn project(&self) -> &str {
        match self {
            Answer::Flag { project, .. } | Answer::Project(project) => project,
        }
    }
}

/// An answer kept, and what it counts against the budget.
#[derive(Debug)]
struct Entry {
    body: Arc<[u8]>,
    weight: usize,
    /// When the read began (its ticket was taken): served until [`MAX_AGE`] after.
    read_at: Instant,
}

/// Answers by the request that asked.
type Answers = HashMap<String, Entry>;

/// What is kept of one project.
#[derive(Debug, Default)]
struct ProjectCopies {
    /// Answers about one flag, by the flag's key.
    flags: HashMap<String, Answers>,
    /// Pages of the project's flags or environments.
    pages: Answers,
}

fn weight_of(answers: &Answers) -> usize {
    answers.values().map(|e| e.weight).sum()
}

impl ProjectCopies {
    fn answers(&mut self, answer: &Answer<'_>) -> &mut Answers {
        match answer {
            Answer::Flag { flag, .. } => self.flags.entry((*flag).to_owned()).or_default(),
            Answer::Project(_) => &mut self.pages,
        }
    }
}

/// Which half of the budget an answer counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Flag,
    Page,
}

impl Answer<'_> {
    fn kind(&self) -> Kind {
        match self {
            Answer::Flag { .. } => Kind::Flag,
            Answer::Project(_) => Kind::Page,
        }
    }
}

#[derive(Debug, Default)]
struct Copies {
    /// Begins anew with every change to everything and every loss of the feed.
    epoch: u64,
    /// Each begins anew with every change to a project of its stripe.
    stripes: [u64; STRIPES],
    /// By project key.
    projects: HashMap<String, ProjectCopies>,
    /// The sum of the weights of the answers about one flag.
    flag_weight: usize,
    /// The sum of the weights of the pages.
    page_weight: usize,
}

impl Copies {
    /// Drops every answer, and lets no read begun before keep its own.
    fn forget_all(&mut self) {
        self.epoch += 1;
        self.projects.clear();
        self.flag_weight = 0;
        self.page_weight = 0;
    }

    fn weight_mut(&mut self, kind: Kind) -> &mut usize {
        match kind {
            Kind::Flag => &mut self.flag_weight,
            Kind::Page => &mut self.page_weight,
        }
    }

    /// Drops answers of `kind` (pages one by one, or a flag's answers together; of whichever
    /// project and flag come first) until `needed` more fit in `limit`, in one pass over the
    /// projects. A project left with nothing is dropped from the map, so that no pass walks
    /// past emptied ones.
    fn make_room(&mut self, kind: Kind, needed: usize, limit: usize) {
        let mut weight = *self.weight_mut(kind);
        if weight.saturating_add(needed) <= limit {
            return;
        }
        let mut emptied = Vec::new();
        for (key, project) in &mut self.projects {
            while weight.saturating_add(needed) > limit {
                let dropped = match kind {
                    Kind::Flag => {
                        let Some(flag) = project.flags.keys().next().cloned() else {
                            break;
                        };
                        project
                            .flags
                            .remove(&flag)
                            .map_or(0, |answers| weight_of(&answers))
                    }
                    Kind::Page => {
                        let Some(request) = project.pages.keys().next().cloned() else {
                            break;
                        };
                        project
                            .pages
                            .remove(&request)
                            .map_or(0, |entry| entry.weight)
                    }
                };
                weight = weight.saturating_sub(dropped);
            }
            if project.flags.is_empty() && project.pages.is_empty() {
                emptied.push(key.clone());
            }
            if weight.saturating_add(needed) <= limit {
                break;
            }
        }
        for key in emptied {
            self.projects.remove(&key);
        }
        *self.weight_mut(kind) = weight;
    }
}

/// Answers to reads, kept until a change to what they show is told (see the module's
/// documentation).
#[derive(Debug)]
pub(crate) struct ReadCache {
    copies: Mutex<Copies>,
    /// The moment up to which every change committed anywhere has been told, if the feed is
    /// caught up; `None` while it is lost (or was never connected).
    caught_up: Mutex<Option<Instant>>,
    /// The most the answers may weigh, in bytes.
    budget: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock means a panic while holding it; every state it guards is whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ReadCache {
    /// An empty cache whose answers weigh at most `budget` bytes.
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            copies: Mutex::new(Copies::default()),
            caught_up: Mutex::new(None),
            budget,
        }
    }

    /// Whether answers may be served now: the feed has caught up to less than [`MAX_LAG`] ago.
    fn fresh(&self, now: Instant) -> bool {
        lock(&self.caught_up).is_some_and(|at| now.saturating_duration_since(at) < MAX_LAG)
    }

    /// The answer kept for `request` about `answer`, if there is one and it may be served now.
    pub(crate) fn get(&self, answer: &Answer<'_>, request: &str) -> Option<Arc<[u8]>> {
        let now = Instant::now();
        if !self.fresh(now) {
            return None;
        }
        let copies = lock(&self.copies);
        let project = copies.projects.get(answer.project())?;
        let answers = match answer {
            Answer::Flag { flag, .. } => project.flags.get(*flag)?,
            Answer::Project(_) => &project.pages,
        };
        let entry = answers.get(request)?;
        (now.saturating_duration_since(entry.read_at) < MAX_AGE).then(|| Arc::clone(&entry.body))
    }

    /// Taken before reading from the database, to be given to [`ReadCache::keep`].
    pub(crate) fn ticket(&self, answer: &Answer<'_>) -> Ticket {
        let stripe = stripe_of(answer.project());
        let copies = lock(&self.copies);
        Ticket {
            epoch: copies.epoch,
            stripe,
            stripe_epoch: copies.stripes[stripe],
            at: Instant::now(),
        }
    }

    /// Keeps `body`, the answer to `request` about `answer` as read since `ticket` was taken,
    /// unless a change was told since (it may not be in `body`) or it alone would take an eighth
    /// of the budget.
    pub(crate) fn keep(&self, ticket: Ticket, answer: &Answer<'_>, request: &str, body: Arc<[u8]>) {
        let weight = body.len().saturating_add(request.len());
        if weight > self.budget / 8 {
            return;
        }
        let stripe = stripe_of(answer.project());
        let mut copies = lock(&self.copies);
        if copies.epoch != ticket.epoch
            || stripe != ticket.stripe
            || copies.stripes[stripe] != ticket.stripe_epoch
        {
            return;
        }
        let kind = answer.kind();
        if let Answer::Flag { project, flag } = answer {
            // One flag's answers are bounded in number, whatever the requests for it.
            let full = copies
                .projects
                .get_mut(*project)
                .and_then(|p| p.flags.get_mut(*flag))
                .filter(|answers| {
                    answers.len() >= ANSWERS_PER_FLAG && !answers.contains_key(request)
                })
                .map(|answers| {
                    let dropped = weight_of(answers);
                    answers.clear();
                    dropped
                });
            if let Some(dropped) = full {
                copies.flag_weight = copies.flag_weight.saturating_sub(dropped);
            }
        }
        copies.make_room(kind, weight, self.budget / 2);
        let answers = copies
            .projects
            .entry(answer.project().to_owned())
            .or_default()
            .answers(answer);
        let entry = Entry {
            body,
            weight,
            read_at: ticket.at,
        };
        let replaced = answers
            .insert(request.to_owned(), entry)
            .map_or(0, |e| e.weight);
        let total = copies.weight_mut(kind);
        *total = total.saturating_sub(replaced).saturating_add(weight);
    }

    /// How many answers are kept (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.copies)
            .projects
            .values()
            .map(|p| p.flags.values().map(HashMap::len).sum::<usize>() + p.pages.len())
            .sum()
    }
}

impl ChangeListener for ReadCache {
    fn changed(&self, changed: &Changed) {
        let changed = match changed {
            // No kept answer shows a token or a segment.
            Changed::Token(_) | Changed::Segments { .. } => return,
            // Flags show their maintainer, a member: any flag may show this one.
            Changed::Member(_) => &Changed::Everything,
            changed => changed,
        };
        let mut copies = lock(&self.copies);
        match changed {
            Changed::Flag { project, .. } | Changed::Project(project) => {
                copies.stripes[stripe_of(project)] += 1;
            }
            Changed::Everything
            | Changed::Token(_)
            | Changed::Member(_)
            | Changed::Segments { .. } => copies.epoch += 1,
        }
        match changed {
            // The flag, and every page of its project: any page may list it, or now should.
            Changed::Flag { project, flag } => {
                let (pages, flags, emptied) = match copies.projects.get_mut(project) {
                    Some(kept) => {
                        let pages = weight_of(&kept.pages);
                        kept.pages.clear();
                        let flags = kept.flags.remove(flag).as_ref().map_or(0, weight_of);
                        (pages, flags, kept.flags.is_empty())
                    }
                    None => (0, 0, false),
                };
                if emptied {
                    copies.projects.remove(project);
                }
                copies.page_weight = copies.page_weight.saturating_sub(pages);
                copies.flag_weight = copies.flag_weight.saturating_sub(flags);
            }
            Changed::Project(project) => {
                if let Some(kept) = copies.projects.remove(project) {
                    let flags: usize = kept.flags.values().map(weight_of).sum();
                    copies.flag_weight = copies.flag_weight.saturating_sub(flags);
                    copies.page_weight = copies.page_weight.saturating_sub(weight_of(&kept.pages));
                }
            }
            // Segments and tokens returned above.
            Changed::Everything
            | Changed::Token(_)
            | Changed::Member(_)
            | Changed::Segments { .. } => {
                copies.projects.clear();
                copies.flag_weight = 0;
                copies.page_weight = 0;
            }
        }
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

    const F: Answer<'static> = Answer::Flag {
        project: "p",
        flag: "f",
    };
    const G: Answer<'static> = Answer::Flag {
        project: "p",
        flag: "g",
    };
    const QF: Answer<'static> = Answer::Flag {
        project: "q",
        flag: "f",
    };
    const P: Answer<'static> = Answer::Project("p");
    const Q: Answer<'static> = Answer::Project("q");

    fn body(text: &str) -> Arc<[u8]> {
        Arc::from(text.as_bytes())
    }

    fn caught_up_cache() -> ReadCache {
        let cache = ReadCache::new(1 << 20);
        cache.caught_up(Instant::now());
        cache
    }

    fn flag_changed(project: &str, flag: &str) -> Changed {
        Changed::Flag {
            project: project.into(),
            flag: flag.into(),
        }
    }

    #[test]
    fn an_answer_is_served_until_a_change_to_what_it_shows_is_told() {
        let cache = caught_up_cache();
        for (answer, request) in [(F, "/f"), (F, "/f?env=a"), (G, "/g"), (QF, "/f"), (P, "/")] {
            cache.keep(cache.ticket(&answer), &answer, request, body(request));
        }
        cache.keep(cache.ticket(&Q), &Q, "/", body("q"));
        assert_eq!(&*cache.get(&F, "/f?env=a").unwrap(), b"/f?env=a");
        assert!(cache.get(&F, "/g").is_none(), "kept by request");
        // A change to flag `f` drops its answers and the pages of its project, and only those.
        cache.changed(&flag_changed("p", "f"));
        assert!(cache.get(&F, "/f").is_none());
        assert!(cache.get(&F, "/f?env=a").is_none());
        assert!(cache.get(&P, "/").is_none());
        assert!(cache.get(&G, "/g").is_some());
        assert!(cache.get(&QF, "/f").is_some());
        assert!(cache.get(&Q, "/").is_some());
        cache.changed(&Changed::Project("p".into()));
        assert!(cache.get(&G, "/g").is_none());
        assert!(cache.get(&QF, "/f").is_some());
        cache.changed(&Changed::Everything);
        assert_eq!(cache.len(), 0);
        assert_eq!(weight(&cache), 0);
    }

    #[test]
    fn a_read_that_raced_a_change_is_not_kept() {
        let cache = caught_up_cache();
        let before = cache.ticket(&F);
        // A change to another flag committed while the read ran: the read may predate any change.
        cache.changed(&flag_changed("p", "other"));
        cache.keep(before, &F, "/f", body("old"));
        assert!(cache.get(&F, "/f").is_none());
        cache.keep(cache.ticket(&F), &F, "/f", body("new"));
        assert_eq!(&*cache.get(&F, "/f").unwrap(), b"new");
    }

    #[test]
    fn a_change_to_another_stripe_does_not_stop_a_read_from_keeping_its_answer() {
        let cache = caught_up_cache();
        let other = (0..1000)
            .map(|i| format!("other-{i}"))
            .find(|project| stripe_of(project) != stripe_of("p"))
            .unwrap();
        let before = cache.ticket(&F);
        cache.changed(&flag_changed(&other, "f"));
        cache.changed(&Changed::Project(other.clone()));
        cache.keep(before, &F, "/f", body("f"));
        assert!(cache.get(&F, "/f").is_some());
        // A change to everything stops it, as one to its own project does.
        let before = cache.ticket(&F);
        cache.changed(&Changed::Everything);
        cache.keep(before, &F, "/f", body("f"));
        assert!(cache.get(&F, "/f").is_none());
        let before = cache.ticket(&F);
        cache.changed(&Changed::Project("p".into()));
        cache.keep(before, &F, "/f", body("f"));
        assert!(cache.get(&F, "/f").is_none());
        // A ticket is for one project's answers.
        let for_other = cache.ticket(&Answer::Project(&other));
        cache.keep(for_other, &F, "/f", body("f"));
        assert!(cache.get(&F, "/f").is_none());
    }

    #[test]
    fn nothing_is_served_unless_the_feed_caught_up_within_the_bound() {
        let cache = ReadCache::new(1 << 20);
        cache.keep(cache.ticket(&F), &F, "/f", body("f"));
        assert!(cache.get(&F, "/f").is_none(), "never caught up");
        cache.caught_up(Instant::now());
        assert!(cache.get(&F, "/f").is_some());
        let long_ago = Instant::now().checked_sub(MAX_LAG).unwrap();
        assert!(!cache.fresh(long_ago + MAX_LAG + MAX_LAG));
        // An older moment does not move it back.
        cache.caught_up(long_ago);
        assert!(cache.get(&F, "/f").is_some());
    }

    #[test]
    fn a_lost_feed_empties_the_cache_and_stops_serving() {
        let cache = caught_up_cache();
        let before = cache.ticket(&F);
        cache.keep(cache.ticket(&F), &F, "/f", body("f"));
        cache.lost();
        assert_eq!(cache.len(), 0);
        cache.keep(before, &G, "/g", body("g"));
        assert_eq!(cache.len(), 0, "a read from before the loss is not kept");
        cache.keep(cache.ticket(&F), &F, "/f", body("f"));
        assert!(
            cache.get(&F, "/f").is_none(),
            "not served until caught up again"
        );
        cache.caught_up(Instant::now());
        assert!(cache.get(&F, "/f").is_some());
    }

    fn weight(cache: &ReadCache) -> usize {
        let copies = lock(&cache.copies);
        copies.flag_weight + copies.page_weight
    }

    #[test]
    fn the_answers_stay_within_the_budget_and_pages_never_push_out_flags() {
        let cache = ReadCache::new(2000);
        cache.caught_up(Instant::now());
        cache.keep(cache.ticket(&F), &F, "/big", body(&"x".repeat(300)));
        assert_eq!(cache.len(), 0, "more than an eighth of the budget");
        cache.keep(cache.ticket(&G), &G, "/g", body(&"x".repeat(98)));
        for i in 0..25 {
            let request = format!("/f-{i:03}");
            cache.keep(cache.ticket(&P), &P, &request, body(&"x".repeat(94)));
            assert!(lock(&cache.copies).page_weight <= 1000);
        }
        assert!(cache.get(&P, "/f-024").is_some(), "the last read is kept");
        assert!(
            cache.get(&G, "/g").is_some(),
            "pages do not push out a flag"
        );
        // Replacing an answer counts it once.
        cache.keep(cache.ticket(&P), &P, "/f-024", body(&"x".repeat(94)));
        assert_eq!(weight(&cache), (cache.len() - 1) * 100 + 100);
        // One flag keeps a bounded number of answers.
        for i in 0..20 {
            cache.keep(cache.ticket(&F), &F, &format!("/f?env={i}"), body("f"));
        }
        let copies = lock(&cache.copies);
        assert!(copies.projects["p"].flags["f"].len() <= ANSWERS_PER_FLAG);
        assert!(copies.flag_weight <= 1000);
    }

    #[test]
    fn emptied_projects_leave_the_map() {
        let cache = ReadCache::new(1 << 20);
        cache.caught_up(Instant::now());
        for i in 0..100 {
            let project = format!("p{i}");
            let answer = Answer::Flag {
                project: &project,
                flag: "f",
            };
            cache.keep(cache.ticket(&answer), &answer, "/f", body("f"));
            cache.keep(
                cache.ticket(&Answer::Project(&project)),
                &Answer::Project(&project),
                "/",
                body("page"),
            );
            cache.changed(&flag_changed(&project, "f"));
        }
        assert!(lock(&cache.copies).projects.is_empty());
        // Eviction drops what it empties too.
        let small = ReadCache::new(800);
        small.caught_up(Instant::now());
        for i in 0..100 {
            let project = format!("p{i}");
            small.keep(
                small.ticket(&Answer::Project(&project)),
                &Answer::Project(&project),
                "/",
                body(&"x".repeat(40)),
            );
        }
        let copies = lock(&small.copies);
        assert!(copies.page_weight <= 400);
        assert_eq!(
            copies.projects.len(),
            copies
                .projects
                .values()
                .map(|p| p.pages.len())
                .sum::<usize>()
        );
    }

    #[test]
    fn no_answer_is_served_past_its_age() {
        let cache = caught_up_cache();
        let mut ticket = cache.ticket(&F);
        ticket.at = Instant::now().checked_sub(MAX_AGE).unwrap();
        cache.keep(ticket, &F, "/f", body("f"));
        assert!(cache.get(&F, "/f").is_none());
    }
}
