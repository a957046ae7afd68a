//! [`TokenCache`]: verified callers by the hash of their secret, told of every committed change
//! that may make one stale. Infrastructure of authentication, with no rule of its own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use domain::id::TokenId;
use ports::{ChangeListener, Changed};

use crate::Caller;

/// How long a verified token is trusted without asking the store again, at most. Changes to
/// tokens and members are announced by the transactions that make them ([`Changed::Token`],
/// [`Changed::Member`]) and evict what they touch, on this replica before the change is
/// answered and on the others as soon as their change feed hears it; this bound is the backstop
/// for changes nobody announced (an operator's SQL, an older release during an upgrade).
const TOKEN_TTL: Duration = Duration::from_secs(10);

/// On a store whose other processes' commits are heard (PostgreSQL), a verified token is
/// trusted only while the feed has proven, less than this ago, that it told every change
/// committed before: a token revoked on another replica is refused here within this bound (plus
/// the time the revoking transaction takes to commit), and a feed that is cut or stalls stops
/// the trust at once rather than after `TOKEN_TTL`.
pub const TOKEN_MAX_LAG: Duration = Duration::from_millis(500);

/// Verified callers by the hash of their secret.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    /// By secret hash: the caller, when it was verified, and (for a secret replaced by a reset)
    /// when it stops being valid.
    entries: Mutex<HashMap<String, CacheEntry>>,
    /// When each token's use was last written to the store.
    recorded_use: Mutex<HashMap<TokenId, i64>>,
    /// Counts the changes told that may make a verification stale (a token's, a member's, or
    /// anything's) and the losses of the feed: a verification that read the store before one of
    /// them is not kept, since what it read may be what the change replaced.
    epoch: AtomicU64,
    /// Whether the store tells of other processes' commits (then [`TOKEN_MAX_LAG`] applies).
    hears_others: AtomicBool,
    /// When the feed last proved it had told every change committed before; `None` while it is
    /// lost (or before it first caught up).
    caught_up: Mutex<Option<Instant>>,
}

type CacheEntry = (Caller, Instant, Option<i64>);

fn lock<V>(mutex: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How often a token's `lastUsed` is written at most.
const USE_RECORD_INTERVAL_MS: i64 = 60_000;

impl TokenCache {
    /// Whether what is kept may be trusted now: always on a store that is the only writer, and
    /// while the feed is caught up on one that hears other processes.
    fn vouched(&self) -> bool {
        !self.hears_others.load(Ordering::Acquire)
            || lock(&self.caught_up).is_some_and(|at| at.elapsed() < TOKEN_MAX_LAG)
    }

    pub(crate) fn get(&self, hash: &str, now: i64) -> Option<Caller> {
        if !self.vouched() {
            return None;
        }
        lock(&self.entries)
            .get(hash)
            .filter(|(_, at, until)| {
                at.elapsed() < TOKEN_TTL && until.is_none_or(|until| now < until)
            })
            .map(|(caller, _, _)| caller.clone())
    }

    /// Taken before a verification reads the store (see [`TokenCache::put`]).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Keeps `caller`, verified by a read of the store that began at `epoch`, unless a change
    /// was told since (it may be what that read missed).
    pub(crate) fn put(&self, epoch: u64, hash: String, caller: Caller, until: Option<i64>) {
        let mut entries = lock(&self.entries);
        // Under the entries' lock: a change told from here on evicts what is put now.
        if self.epoch.load(Ordering::Acquire) != epoch {
            return;
        }
        if entries.len() > 10_000 {
            entries.retain(|_, (_, at, _)| at.elapsed() < TOKEN_TTL);
        }
        entries.insert(hash, (caller, Instant::now(), until));
    }

    /// Forgets the callers `stale` picks, and keeps no verification that began before.
    fn forget(&self, stale: impl Fn(&Caller) -> bool) {
        let mut entries = lock(&self.entries);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        entries.retain(|_, (caller, _, _)| !stale(caller));
    }

    /// Whether the use of `token_id` was written less than a minute before `now`.
    pub(crate) fn use_recorded_recently(&self, token_id: &TokenId, now: i64) -> bool {
        let recorded = lock(&self.recorded_use);
        recorded
            .get(token_id)
            .is_some_and(|last| now - last < USE_RECORD_INTERVAL_MS)
    }

    /// Whether the use of `token_id` at `now` should be written (at most once a minute).
    pub(crate) fn should_record_use(&self, token_id: &TokenId, now: i64) -> bool {
        let mut recorded = lock(&self.recorded_use);
        match recorded.get(token_id) {
            Some(last) if now - last < USE_RECORD_INTERVAL_MS => false,
            _ => {
                if recorded.len() > 10_000 {
                    recorded.retain(|_, last| now - *last < USE_RECORD_INTERVAL_MS);
                }
                recorded.insert(token_id.clone(), now);
                true
            }
        }
    }
}

impl ChangeListener for TokenCache {
    fn changed(&self, changed: &Changed) {
        match changed {
            Changed::Token(id) => {
                self.forget(|caller| caller.token_id().is_some_and(|token| token.as_str() == id))
            }
            // A token acts with at most its member's role, and not at all without its member.
            Changed::Member(id) => self.forget(|caller| caller.member_id.as_str() == id),
            Changed::Everything => self.forget(|_| true),
            Changed::Flag { .. } | Changed::Project(_) | Changed::Segments { .. } => {}
        }
    }

    fn lost(&self) {
        *lock(&self.caught_up) = None;
        self.forget(|_| true);
    }

    fn caught_up(&self, as_of: Instant) {
        let mut caught_up = lock(&self.caught_up);
        if caught_up.is_none_or(|at| at < as_of) {
            *caught_up = Some(as_of);
        }
    }
}

impl TokenCache {
    /// A cache told of the changes `store` commits (and, where it hears them, of other
    /// processes' commits).
    pub(crate) fn on(store: &dyn ports::Store) -> Arc<Self> {
        let cache = Arc::new(Self::default());
        let listener: Arc<dyn ChangeListener> = cache.clone();
        let hears_others = store.subscribe(Arc::downgrade(&listener));
        cache.hears_others.store(hears_others, Ordering::Release);
        cache
    }
}

#[cfg(test)]
mod tests {
    use domain::id::MemberId;
    use domain::member::Member;
    use domain::role::Role;
    use domain::token::Token;
    use domain::version::ApiVersion;

    use super::*;
    use crate::auth::{caller_of, Grants};

    fn caller(token: &str, member: &str) -> Caller {
        let member = Member::owner(
            MemberId::from_stored(member.into()),
            "o@example.com".into(),
            0,
        );
        let token = Token {
            id: TokenId::from_stored(token.into()),
            member_id: member.id.clone(),
            name: String::new(),
            description: String::new(),
            role: Role::Admin,
            service_token: false,
            default_api_version: ApiVersion::CURRENT.date(),
            creation_date: 0,
            last_modified: 0,
            last_used: None,
            ending: String::new(),
            custom_role_ids: Vec::new(),
            inline_role: Vec::new(),
        };
        caller_of(&token, &member, &Grants::default())
    }

    /// A cache on a store that hears other processes, caught up now.
    fn heard() -> TokenCache {
        let cache = TokenCache::default();
        cache.hears_others.store(true, Ordering::Release);
        cache.caught_up(Instant::now());
        cache
    }

    #[test]
    fn a_change_evicts_what_it_touches_and_only_that() {
        let cache = heard();
        for (hash, token, member) in [("h1", "t1", "m1"), ("h2", "t2", "m1"), ("h3", "t3", "m2")] {
            cache.put(cache.epoch(), hash.into(), caller(token, member), None);
        }
        cache.changed(&Changed::Token("t1".into()));
        assert!(cache.get("h1", 0).is_none());
        assert!(cache.get("h2", 0).is_some());
        cache.changed(&Changed::Flag {
            project: "p".into(),
            flag: "f".into(),
        });
        assert!(cache.get("h2", 0).is_some());
        cache.changed(&Changed::Member("m1".into()));
        assert!(cache.get("h2", 0).is_none());
        assert!(cache.get("h3", 0).is_some());
        cache.changed(&Changed::Everything);
        assert!(cache.get("h3", 0).is_none());
    }

    #[test]
    fn a_verification_that_raced_a_change_is_not_kept() {
        let cache = heard();
        // The store was read before the change was told: what it read may be what changed.
        let epoch = cache.epoch();
        cache.changed(&Changed::Token("other".into()));
        cache.put(epoch, "h".into(), caller("t", "m"), None);
        assert!(cache.get("h", 0).is_none());
        cache.put(cache.epoch(), "h".into(), caller("t", "m"), None);
        assert!(cache.get("h", 0).is_some());
    }

    #[test]
    fn nothing_is_trusted_while_the_feed_is_lost_or_behind() {
        let cache = heard();
        cache.put(cache.epoch(), "h".into(), caller("t", "m"), None);
        assert!(cache.get("h", 0).is_some());
        cache.lost();
        assert!(
            cache.get("h", 0).is_none(),
            "forgotten when the feed is lost"
        );
        cache.caught_up(Instant::now());
        cache.put(cache.epoch(), "h".into(), caller("t", "m"), None);
        assert!(cache.get("h", 0).is_some());
        // A feed that last caught up longer ago than the bound vouches for nothing.
        *lock(&cache.caught_up) = Instant::now().checked_sub(TOKEN_MAX_LAG);
        assert!(cache.get("h", 0).is_none());
        // A store that is the only writer needs no feed: the TTL alone bounds what is kept.
        let alone = TokenCache::default();
        alone.put(alone.epoch(), "h".into(), caller("t", "m"), None);
        assert!(alone.get("h", 0).is_some());
    }
}
