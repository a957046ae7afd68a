//! [`Service`]: the use cases wired to a store, a clock, caches and write queues.

use std::sync::Arc;

use ports::{Clock, Store, StoreExt};

use crate::{known_secrets, read_cache, Caller, Representations, ServiceResult, WebhookSettings};
use crate::{CachedAnswer, LastReadiness, NotReady, ReadTicket, Service, StreamLimits};

/// How many bytes of environments' flag data a service keeps for evaluations unless told
/// otherwise ([`Service::with_snapshot_budget`]).
pub const DEFAULT_SNAPSHOT_BUDGET: usize = 256 << 20;

impl Service {
    /// A service over `store` telling time by `clock`, recording resources in audit entries
    /// (and webhook payloads) as `representations` show them: the HTTP adapter's
    /// (`adapter_http::ApiRepresentations`) in a deployment, so that an entry holds what the API
    /// showed; [`PlainRepresentations`](crate::PlainRepresentations) only where nothing reads the entries as the API would.
    /// There is no default: an entry point that forgot would store entries without links, for good.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        representations: Arc<dyn Representations>,
    ) -> Self {
        let snapshots = crate::snapshots::Snapshots::on(&*store, DEFAULT_SNAPSHOT_BUDGET);
        let delivery = Arc::new(crate::delivery::Delivery::new(StreamLimits::default()));
        let follower: Arc<dyn ports::ChangeListener> = delivery.clone();
        snapshots.follow(Arc::downgrade(&follower));
        Self {
            tokens: crate::token_cache::TokenCache::on(&*store),
            snapshots,
            delivery,
            known_secrets: known_secrets::KnownSecrets::default(),
            store,
            clock,
            webhooks: WebhookSettings::default(),
            shown: representations,
            account_id: std::sync::OnceLock::new(),
            flag_writes: Arc::default(),
            flag_creates: Arc::default(),
            read_cache: None,
            readiness: std::sync::Mutex::default(),
        }
    }

    /// The same service, keeping environments' flag data for evaluations within `budget` bytes
    /// of memory (estimated from the size of the projected flags' and segments' JSON; see
    /// `snapshots`).
    /// [`DEFAULT_SNAPSHOT_BUDGET`] otherwise.
    pub fn with_snapshot_budget(mut self, budget: usize) -> Self {
        self.snapshots = crate::snapshots::Snapshots::on(&*self.store, budget);
        let follower: Arc<dyn ports::ChangeListener> = self.delivery.clone();
        self.snapshots.follow(Arc::downgrade(&follower));
        self
    }

    /// The same service, streaming to SDKs within `limits` (see `delivery`).
    /// [`StreamLimits::default`] otherwise.
    pub fn with_stream_limits(mut self, limits: StreamLimits) -> Self {
        self.delivery = Arc::new(crate::delivery::Delivery::new(limits));
        let follower: Arc<dyn ports::ChangeListener> = self.delivery.clone();
        self.snapshots.follow(Arc::downgrade(&follower));
        self
    }

    /// The same service, keeping up to `budget` bytes of answers to reads (as the driving
    /// adapter rendered them) to serve them again from memory ([`Service::cached_answer`])
    /// while the store vouches that no change to what they show was missed: never an answer
    /// older than a change this replica committed, nor one older than a change another replica
    /// committed more than [`READ_CACHE_MAX_LAG`](crate::READ_CACHE_MAX_LAG) ago (see `read_cache`). Only a store that hears
    /// other processes' commits (PostgreSQL) ever vouches; elsewhere nothing is served from the
    /// cache. `budget` 0 keeps none.
    pub fn with_read_cache(mut self, budget: usize) -> Self {
        if budget == 0 {
            self.read_cache = None;
            return self;
        }
        let cache = Arc::new(read_cache::ReadCache::new(budget));
        let listener: Arc<dyn ports::ChangeListener> = cache.clone();
        // A store that cannot vouch for other processes' commits would never let it serve.
        self.read_cache = self
            .store
            .subscribe(Arc::downgrade(&listener))
            .then_some(cache);
        self
    }

    /// Tells `listener` what every committed write changes, for as long as the listener lives
    /// (it is held weakly): writes of this process before they are answered, and, where the
    /// store has a feed of them (PostgreSQL's `NOTIFY`), those of other replicas. The way for an
    /// adapter (the console, an SDK stream) to hear of changes, without reaching into caches.
    /// A listener is called on the writer's thread (or the feed's), while the writer may still
    /// hold the store's write lock (SQLite, memory) and its connection: it must not block, nor
    /// call the service or the store (hand the news to a thread of its own). It may be told of
    /// a write whose commit then failed: what it hears may have changed, and is to be read again.
    ///
    /// Returns whether the listener will also hear other replicas' commits; without that, it
    /// hears only this process's.
    pub fn subscribe(&self, listener: std::sync::Weak<dyn ports::ChangeListener>) -> bool {
        self.store.subscribe(listener)
    }

    /// Taken before a read whose answer about `answer` is to be kept
    /// ([`Service::keep_answer`]); `None` without a read cache.
    pub fn read_ticket(&self, answer: &CachedAnswer<'_>) -> Option<ReadTicket> {
        self.read_cache.as_ref().map(|cache| cache.ticket(answer))
    }

    /// The answer kept for `request` (the whole request as the adapter tells requests apart)
    /// about `answer`, if the read cache holds one and may serve it now; `None` otherwise (then
    /// read as usual, with a [`Service::read_ticket`] taken before, and keep the answer). An
    /// answer is served to any caller who may read resources, whom it is refused to otherwise:
    /// only answers that do not depend on who asked may be kept.
    pub fn cached_answer(
        &self,
        caller: &Caller,
        answer: &CachedAnswer<'_>,
        request: &str,
    ) -> Option<ServiceResult<Arc<[u8]>>> {
        let cache = self.read_cache.as_ref()?;
        // A background job reads through its use cases, which admit it or not.
        if matches!(caller.principal(), crate::Principal::Job { .. }) {
            return None;
        }
        if let Err(refused) = caller.require_view(answer.project()) {
            return Some(Err(refused));
        }
        cache.get(answer, request).map(Ok)
    }

    /// Keeps `body`, the answer to `request` about `answer` read since `ticket` was taken, to
    /// be served by [`Service::cached_answer`] until a change to what it shows (or told since
    /// the ticket: then it is not kept). The keys in `answer` must be the resources' keys as
    /// stored (a request names them so when it finds them).
    pub fn keep_answer(
        &self,
        ticket: ReadTicket,
        answer: &CachedAnswer<'_>,
        request: &str,
        body: Arc<[u8]>,
    ) {
        if let Some(cache) = &self.read_cache {
            cache.keep(ticket, answer, request, body);
        }
    }

    /// Whether the store can serve now (see [`ports::Store::check_ready`]): the database
    /// answers, on a connection of its own, and its schema has every migration of this release.
    ///
    /// # Errors
    /// [`NotReady`], saying what is missing (fit to show; not a request's error).
    pub fn check_ready(&self) -> Result<(), NotReady> {
        self.store.check_ready().map_err(|err| {
            NotReady(match err {
                ports::StoreError::Unavailable(reason) => reason,
                other => other.to_string(),
            })
        })
    }

    /// Checks whether the store can serve now ([`Service::check_ready`]) and keeps the outcome
    /// for [`Service::last_readiness`]: what the background job that watches the database does,
    /// so that a flood of readiness probes costs the database nothing more.
    ///
    /// # Errors
    /// [`NotReady`], as [`Service::check_ready`].
    pub fn refresh_readiness(&self) -> Result<(), NotReady> {
        let outcome = self.check_ready();
        *self
            .readiness
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((std::time::Instant::now(), outcome.clone()));
        outcome
    }

    /// The outcome of the last [`Service::refresh_readiness`], and when it ended; `None` before
    /// the first.
    pub fn last_readiness(&self) -> Option<LastReadiness> {
        self.readiness
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The same service, delivering webhooks as `settings` say.
    pub fn with_webhook_settings(mut self, settings: WebhookSettings) -> Self {
        self.webhooks = settings;
        self
    }

    /// The `_id` of the account this deployment serves (24 hex, stored, never changes).
    ///
    /// # Errors
    /// Storage errors.
    pub fn account_id(&self) -> ServiceResult<String> {
        if let Some(id) = self.account_id.get() {
            return Ok(id.clone());
        }
        if let Some(id) = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { Ok(repo.account_id()?) })?
        {
            return Ok(self.account_id.get_or_init(|| id).clone());
        }
        self.store
            .write_tx(|repo| -> ServiceResult<_> { self.account_id_in(repo) })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use adapter_memory::MemoryStore;
    use ports::{ChangeListener, Changed};
    use serde_json::json;

    use crate::{use_case, PlainRepresentations, Service, SystemClock};

    /// Records what it is told in a list that outlives it.
    struct Heard(Arc<Mutex<Vec<Changed>>>);

    impl ChangeListener for Heard {
        fn changed(&self, changed: &Changed) {
            self.0.lock().unwrap().push(changed.clone());
        }
        fn lost(&self) {}
        fn caught_up(&self, _: std::time::Instant) {}
    }

    #[test]
    fn a_subscriber_hears_each_committed_change_until_it_is_dropped() {
        let service = Service::new(
            Arc::new(MemoryStore::new()),
            Arc::new(SystemClock::default()),
            Arc::new(PlainRepresentations),
        );
        service
            .authentication()
            .bootstrap(Some("owner-secret"), "o@example.com")
            .unwrap();
        let owner = service
            .authentication()
            .authenticate("owner-secret")
            .unwrap();
        let told = Arc::new(Mutex::new(Vec::new()));
        let listener: Arc<dyn ChangeListener> = Arc::new(Heard(told.clone()));
        // One process in memory: nobody else's commits to hear.
        assert!(!service.subscribe(Arc::downgrade(&listener)));
        let post = serde_json::from_value(json!({"key": "shop", "name": "Shop"})).unwrap();
        let permit = owner.may(use_case::CreateProject).unwrap();
        service.projects().create_project(&permit, post).unwrap();
        let flag = serde_json::from_value(json!({"key": "f", "name": "F"})).unwrap();
        let permit = owner.may(use_case::CreateFlag).unwrap();
        service.flags().create_flag(&permit, "shop", flag).unwrap();
        let heard = told.lock().unwrap().clone();
        assert_eq!(
            heard,
            [
                Changed::Project("shop".into()),
                Changed::Flag {
                    project: "shop".into(),
                    flag: "f".into()
                }
            ]
        );
        // Dropped: told nothing more.
        drop(listener);
        let flag = serde_json::from_value(json!({"key": "g", "name": "G"})).unwrap();
        service.flags().create_flag(&permit, "shop", flag).unwrap();
        assert_eq!(*told.lock().unwrap(), heard);
    }
}
