//! What applications read with an environment's SDK key: that environment's flag data, as an
//! [`EnvironmentSnapshot`] to evaluate (OFREP, and the SDK routes to come).
//!
//! An SDK key is not an access token: it never makes a [`Caller`](crate::Caller), and it opens
//! the flag data of its own environment and nothing else. [`SdkAccess`] is what opening one
//! proves; only [`Sdk::open`] (or [`Sdk::open_remembered`]) makes one, and the snapshot use
//! cases take it as the management use cases take a `Permit`. A key replaced by a reset with an
//! expiry opens its environment until then; a mobile key or a client-side ID opens nothing here.

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use ports::{SdkKeyHolder, StoreExt};

use crate::environments::load_environment;
use crate::projects::load_project;
use crate::snapshot::EnvironmentSnapshot;
use crate::{Service, ServiceError, ServiceResult};

/// Proof that an SDK key opened an environment: the one whose flag data it may read.
#[derive(Clone, PartialEq, Eq)]
pub struct SdkAccess {
    project_key: String,
    environment_key: String,
    /// When the key stops opening the environment (a key replaced with an expiry), in
    /// milliseconds since the epoch.
    expires_at: Option<i64>,
    /// The key itself (streams opened with it end when it stops opening the environment).
    key: Arc<str>,
}

impl std::fmt::Debug for SdkAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key: debug output ends up in logs.
        f.debug_struct("SdkAccess")
            .field("project_key", &self.project_key)
            .field("environment_key", &self.environment_key)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl SdkAccess {
    /// The key of the environment's project.
    pub fn project_key(&self) -> &str {
        &self.project_key
    }

    /// The environment's key.
    pub fn environment_key(&self) -> &str {
        &self.environment_key
    }

    /// When the key stops opening the environment, if it was replaced with an expiry
    /// (milliseconds since the epoch).
    pub fn expires_at(&self) -> Option<i64> {
        self.expires_at
    }
}

/// The use cases of SDK-key holders (`Service::sdk`).
#[derive(Debug, Clone, Copy)]
pub struct Sdk<'a>(&'a Service);

impl Service {
    /// What applications read with an environment's SDK key.
    pub fn sdk(&self) -> Sdk<'_> {
        Sdk(self)
    }

    /// Steps the SDK streams' channels that changes made due (at most `batch` of them), and
    /// sends the heartbeats that are due: the work of the SDK delivery job. How many channels
    /// it stepped.
    ///
    /// # Errors
    /// The store's (the channels it could not step stay due).
    pub fn deliver_due(&self, batch: usize) -> ServiceResult<usize> {
        self.delivery.run_due(self, batch)
    }

    /// Has `wake` called whenever SDK streams' channels become due ([`Service::deliver_due`]):
    /// how the delivery job is woken at once.
    pub fn wake_delivery_with(&self, wake: Box<dyn Fn() + Send + Sync>) {
        self.delivery.wake_with(wake);
    }

    /// Ends every SDK stream of this replica and refuses new ones (503): what a replica that
    /// is stopping does, so that SDKs reconnect to another at once.
    pub fn close_streams(&self) {
        self.delivery.close_all();
    }

    /// How many environments' snapshots this replica keeps, and the bytes they count.
    pub fn kept_snapshots(&self) -> (usize, usize) {
        self.snapshots.kept()
    }

    /// The snapshot of environment `environment` of project `project` (keys as a request names
    /// them): the one kept if it may be used now, else read from the store (once, however many
    /// ask at the same time) and kept (see `crate::snapshots`).
    pub(crate) fn environment_snapshot(
        &self,
        project: &str,
        environment: &str,
    ) -> ServiceResult<Arc<EnvironmentSnapshot>> {
        if let Some(kept) = self.snapshots.get(project, environment) {
            return Ok(kept);
        }
        let arrived = Instant::now();
        let building = self.snapshots.build_lock(project, environment);
        let mut last_build = building.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kept) = self.snapshots.get(project, environment) {
            return Ok(kept);
        }
        // One that was not kept (too heavy, the feed behind, a raced change), read after this
        // request arrived: as current as a read of its own.
        if let Some((read_at, built)) = last_build.as_ref() {
            if *read_at >= arrived {
                return Ok(built.clone());
            }
        }
        let ticket = self.snapshots.ticket(Some(project));
        // Flags changed since it was read: read those again, share the rest.
        if let Some((kept, stale, read_at)) = self.snapshots.stale(project, environment) {
            let refreshed = self.store.read_tx(|repo| kept.with_flags(repo, &stale))?;
            let refreshed = Arc::new(refreshed.read_since(ticket.read_at()));
            self.snapshots.keep_refreshed(ticket, &refreshed, read_at);
            *last_build = Some((ticket.read_at(), refreshed.clone()));
            return Ok(refreshed);
        }
        let snapshot = self.read_environment_snapshot(ticket, project, environment)?;
        *last_build = Some((ticket.read_at(), snapshot.clone()));
        Ok(snapshot)
    }

    /// The snapshot of environment `environment` of project `project`, read from the store
    /// now (whatever is kept), and kept.
    pub(crate) fn environment_snapshot_read_now(
        &self,
        project: &str,
        environment: &str,
    ) -> ServiceResult<Arc<EnvironmentSnapshot>> {
        let ticket = self.snapshots.ticket(Some(project));
        self.read_environment_snapshot(ticket, project, environment)
    }

    fn read_environment_snapshot(
        &self,
        ticket: crate::snapshots::Ticket,
        project: &str,
        environment: &str,
    ) -> ServiceResult<Arc<EnvironmentSnapshot>> {
        let snapshot = self.store.read_tx(|repo| -> ServiceResult<_> {
            let found = load_project(repo, project)?;
            let env = load_environment(repo, &found.id, project, environment)?;
            EnvironmentSnapshot::read(repo, &found, &env)
        })?;
        let snapshot = Arc::new(snapshot.read_since(ticket.read_at()));
        self.snapshots.keep(ticket, &snapshot);
        Ok(snapshot)
    }
}

impl crate::delivery::Snapshots for Service {
    fn key_standing(
        &self,
        key: &str,
        (project, environment): &(String, String),
    ) -> ServiceResult<crate::delivery::KeyStanding> {
        use crate::delivery::KeyStanding;
        Ok(match self.sdk().open(key) {
            Ok(access)
                if access.project_key == *project && access.environment_key == *environment =>
            {
                access
                    .expires_at
                    .map_or(KeyStanding::Opens, KeyStanding::Until)
            }
            Ok(_) | Err(ServiceError::Unauthenticated(_)) => KeyStanding::Refused,
            Err(other) => return Err(other),
        })
    }

    fn snapshot(
        &self,
        project: &str,
        environment: &str,
    ) -> ServiceResult<Arc<EnvironmentSnapshot>> {
        self.environment_snapshot(project, environment)
    }

    fn snapshot_read_now(
        &self,
        project: &str,
        environment: &str,
    ) -> ServiceResult<Arc<EnvironmentSnapshot>> {
        self.environment_snapshot_read_now(project, environment)
    }
}

/// Whether `secret` has the form of a generated SDK key (`sdk-` and a UUID: 122 random bits, so
/// admitting one to a lookup tells a guesser nothing). A client address throttled for others'
/// failed keys still opens its environment with one.
///
/// ```
/// assert!(service::is_generated_sdk_key("sdk-0f8a2c1e-5b3d-4e6f-8a9b-0c1d2e3f4a5b"));
/// assert!(!service::is_generated_sdk_key("sdk-guess"));
/// assert!(!service::is_generated_sdk_key("api-0f8a2c1e-5b3d-4e6f-8a9b-0c1d2e3f4a5b"));
/// ```
pub fn is_generated_sdk_key(secret: &str) -> bool {
    secret
        .strip_prefix("sdk-")
        .is_some_and(|rest| rest.len() == 36 && uuid::Uuid::try_parse(rest).is_ok())
}

/// The error for a secret that opens no environment here.
fn not_an_sdk_key() -> ServiceError {
    ServiceError::Unauthenticated(
        "an environment's server-side SDK key is required (Authorization or X-API-Key)".into(),
    )
}

impl Sdk<'_> {
    /// Whether `holder` of `secret` may open its environment now (a replaced key only until
    /// its expiry).
    fn admit(&self, secret: &str, holder: SdkKeyHolder) -> ServiceResult<SdkAccess> {
        if holder.expires_at.is_some_and(|at| at <= self.0.now()) {
            return Err(not_an_sdk_key());
        }
        Ok(SdkAccess {
            project_key: holder.project_key,
            environment_key: holder.environment_key,
            expires_at: holder.expires_at,
            key: Arc::from(secret),
        })
    }

    /// The environment SDK key `secret` opens, if this replica remembers the key and may trust
    /// that now: `None` when the store must be asked ([`Sdk::open`]). Never touches the store.
    pub fn open_remembered(&self, secret: &str) -> Option<ServiceResult<SdkAccess>> {
        self.0
            .snapshots
            .key(secret)
            .map(|holder| self.admit(secret, holder))
    }

    /// The environment SDK key `secret` opens.
    ///
    /// # Errors
    /// `Unauthenticated` for anything but an environment's current SDK key or one replaced by
    /// a reset before its expiry; the store's.
    pub fn open(&self, secret: &str) -> ServiceResult<SdkAccess> {
        if let Some(remembered) = self.open_remembered(secret) {
            return remembered;
        }
        let ticket = self.0.snapshots.ticket(None);
        let holder = self
            .0
            .store
            .read_tx(|repo| repo.environment_of_sdk_key(secret))?
            .ok_or_else(not_an_sdk_key)?;
        self.0.snapshots.keep_key(ticket, secret, &holder);
        self.admit(secret, holder)
    }

    /// The flag data `access` opens, if a snapshot of it is kept and may be used now: `None`
    /// when the store must be read ([`Sdk::snapshot`]). Never touches the store.
    pub fn snapshot_kept(&self, access: &SdkAccess) -> Option<Arc<EnvironmentSnapshot>> {
        self.0
            .snapshots
            .get(&access.project_key, &access.environment_key)
    }

    /// A new stream of the flag data `access` opens: its `put`, then every change.
    ///
    /// # Errors
    /// `Unavailable` when this replica streams to as many SDKs as its limits allow (overall
    /// or for the environment); `NotFound` when the environment is gone; the store's.
    pub fn stream(&self, access: &SdkAccess) -> ServiceResult<crate::Subscription> {
        self.0.delivery.subscribe(
            self.0,
            (&access.project_key, &access.environment_key),
            &access.key,
        )
    }

    /// The flag data `access` opens.
    ///
    /// # Errors
    /// `NotFound` when the environment is gone since the key opened it; the store's.
    pub fn snapshot(&self, access: &SdkAccess) -> ServiceResult<Arc<EnvironmentSnapshot>> {
        self.0
            .environment_snapshot(&access.project_key, &access.environment_key)
    }
}
