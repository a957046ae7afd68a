//! Changes told to copies kept outside the store (read caches, verified tokens): a write
//! transaction announces
//! what it changed ([`AuditRepository::announce`](crate::AuditRepository::announce)); once it
//! commits, the store tells its [`ChangeListener`]s, in this process before the writer is
//! answered, and in other processes where the store has a way to (PostgreSQL's `NOTIFY`).

use std::time::Instant;

/// What a committed write changed, as far as a copy kept outside the store is concerned (an
/// answer about a flag, a verified access token).
///
/// Keys are carried as the store holds them (text), so that an announcement can cross processes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Changed {
    /// One flag of a project: its row, its configurations, its tags.
    Flag {
        /// The project's key.
        project: String,
        /// The flag's key.
        flag: String,
    },
    /// The segments of one environment of a project (their rules, targets, whether they
    /// exist): what evaluations read besides flags. Nothing else shows them.
    Segments {
        /// The project's key.
        project: String,
        /// The environment's key.
        environment: String,
    },
    /// Anything in a project: its environments (which every flag of it shows), the project
    /// itself, any of its flags.
    Project(String),
    /// An access token (by `_id`): its role, its secret, whether it exists.
    Token(String),
    /// A member (by `_id`): its role, whether it exists, and with them what its tokens may do;
    /// also anything that shows the member (flags show their maintainer).
    Member(String),
    /// Anything at all.
    Everything,
}

/// The longest announcement [`Changed::to_payload`] writes: PostgreSQL refuses a `NOTIFY`
/// payload of 8,000 bytes or more, and keys are far shorter; a longer one is told as
/// [`Changed::Everything`].
pub const MAX_PAYLOAD: usize = 4000;

impl Changed {
    /// The text that carries it between processes (see [`Changed::from_payload`]).
    ///
    /// ```
    /// use ports::Changed;
    /// let flag = Changed::Flag { project: "shop".into(), flag: "new-checkout".into() };
    /// assert_eq!(flag.to_payload(), "f\nshop\nnew-checkout");
    /// assert_eq!(Changed::from_payload(&flag.to_payload()), Some(flag));
    /// assert_eq!(Changed::Project("shop".into()).to_payload(), "p\nshop");
    /// let segments = Changed::Segments { project: "shop".into(), environment: "prod".into() };
    /// assert_eq!(segments.to_payload(), "s\nshop\nprod");
    /// assert_eq!(Changed::from_payload(&segments.to_payload()), Some(segments));
    /// assert_eq!(Changed::Token("65f0".into()).to_payload(), "t\n65f0");
    /// assert_eq!(Changed::Member("64a1".into()).to_payload(), "m\n64a1");
    /// assert_eq!(Changed::Everything.to_payload(), "*");
    /// ```
    pub fn to_payload(&self) -> String {
        let payload = match self {
            Changed::Flag { project, flag } => format!("f\n{project}\n{flag}"),
            Changed::Segments {
                project,
                environment,
            } => format!("s\n{project}\n{environment}"),
            Changed::Project(project) => format!("p\n{project}"),
            Changed::Token(id) => format!("t\n{id}"),
            Changed::Member(id) => format!("m\n{id}"),
            Changed::Everything => "*".to_owned(),
        };
        if payload.len() > MAX_PAYLOAD {
            "*".to_owned()
        } else {
            payload
        }
    }

    /// Reads [`Changed::to_payload`]'s text; `None` for text it never writes (which a listener
    /// must take as [`Changed::Everything`]).
    ///
    /// ```
    /// use ports::Changed;
    /// assert_eq!(Changed::from_payload("p\nshop"), Some(Changed::Project("shop".into())));
    /// assert_eq!(Changed::from_payload("f\nshop"), None);
    /// ```
    pub fn from_payload(payload: &str) -> Option<Self> {
        let mut parts = payload.split('\n');
        let changed = match parts.next()? {
            "*" => Changed::Everything,
            "p" => Changed::Project(parts.next()?.to_owned()),
            "t" => Changed::Token(parts.next()?.to_owned()),
            "m" => Changed::Member(parts.next()?.to_owned()),
            "s" => Changed::Segments {
                project: parts.next()?.to_owned(),
                environment: parts.next()?.to_owned(),
            },
            "f" => Changed::Flag {
                project: parts.next()?.to_owned(),
                flag: parts.next()?.to_owned(),
            },
            _ => return None,
        };
        parts.next().is_none().then_some(changed)
    }
}

/// Told what committed writes changed.
///
/// # Contract
/// A store calls [`ChangeListener::changed`] for every announcement of a write it committed, after
/// the commit and before the write returns. A store that also learns of other processes' commits
/// calls `changed` for theirs, [`ChangeListener::lost`] whenever it may have missed some (its
/// connection to the feed broke, or it is not connected yet), and
/// [`ChangeListener::caught_up`] to say that it has told every change committed anywhere before
/// a moment. A listener that was never told `caught_up` must assume that other processes write
/// without telling it.
pub trait ChangeListener: Send + Sync {
    /// `changed` was committed.
    fn changed(&self, changed: &Changed);
    /// Changes may have been missed: forget whatever was kept.
    fn lost(&self);
    /// Every change committed (by any process) before `as_of` has been told.
    fn caught_up(&self, as_of: Instant);
}

/// The listeners a store tells of its own commits: what every store's
/// [`Store::subscribe`](crate::Store::subscribe) keeps. Held weakly, so that a dropped listener
/// is forgotten. As a [`ChangeListener`] itself it passes everything on to each of them, so that
/// one feed of other processes' commits serves them all.
#[derive(Default)]
pub struct Listeners {
    listeners: std::sync::RwLock<Vec<std::sync::Weak<dyn ChangeListener>>>,
}

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listeners").finish_non_exhaustive()
    }
}

impl Listeners {
    /// Adds `listener` (and forgets those dropped meanwhile).
    pub fn add(&self, listener: std::sync::Weak<dyn ChangeListener>) {
        let mut listeners = self
            .listeners
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        listeners.retain(|l| l.strong_count() > 0);
        listeners.push(listener);
    }

    /// Tells every live listener of `changes`, committed.
    pub fn tell(&self, changes: &[Changed]) {
        if changes.is_empty() {
            return;
        }
        self.each(|listener| {
            for changed in changes {
                listener.changed(changed);
            }
        });
    }

    fn each(&self, tell: impl Fn(&dyn ChangeListener)) {
        let listeners = self
            .listeners
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for listener in listeners.iter().filter_map(std::sync::Weak::upgrade) {
            tell(&*listener);
        }
    }
}

impl ChangeListener for Listeners {
    fn changed(&self, changed: &Changed) {
        self.each(|listener| listener.changed(changed));
    }

    fn lost(&self) {
        self.each(|listener| listener.lost());
    }

    fn caught_up(&self, as_of: Instant) {
        self.each(|listener| listener.caught_up(as_of));
    }
}
