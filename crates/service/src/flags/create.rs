//! Creating flags: alone (with initial prerequisites), in batches of one lane, and as clones;
//! what a new flag sets in each environment beyond a new flag's defaults is decided there.

use super::*;
use crate::authorize::Authorized;
use crate::sizes::check_new_size;
use ports::TombstoneOf;

/// A flag to create from `post`, checked on its own, and its initial prerequisites (checked
/// against the project when it is created).
pub(super) fn new_flag(
    caller: &Caller,
    project_key: &str,
    post: FlagPost,
    now: i64,
) -> ServiceResult<(FlagCreate, Vec<InitialPrerequisite>)> {
    let new = post.validate()?;
    let turn_on = new.post.is_flag_on.unwrap_or(false);
    let prerequisites = new.post.initial_prerequisites.clone().unwrap_or_default();
    let flag = Flag::create(new, now, &mut RandomIds)?;
    // Decided before the flag joins a batch: a refusal there would fail the others with it.
    let authorized = caller.authorize(vec![Request::new(
        "createFlag",
        created_flag(project_key, &flag),
    )])?;
    Ok((
        FlagCreate {
            caller: caller.clone(),
            authorized,
            flag,
            turn_on,
        },
        prerequisites,
    ))
}

/// `flag` with a configuration in each of `environments`, targeting on when `turn_on`.
pub(super) fn configured(
    flag: &Flag,
    environments: &[ProjectEnvironment],
    turn_on: bool,
    now: i64,
) -> Flag {
    let mut flag = flag.clone();
    for ProjectEnvironment { environment, .. } in environments {
        let mut config = flag.new_config(&environment.name, now, &mut RandomIds);
        config.on = turn_on;
        flag.environments
            .insert(environment.key.to_string(), config);
    }
    flag
}

/// What creating `flag` (configured in `environments`) sets in each environment beyond what a
/// new flag has there (targeting on, prerequisites, a clone's targets and rules...): requests
/// decided, and recorded, per environment, as a change to an existing flag's would be.
pub(super) fn configured_beyond_defaults(
    project_key: &str,
    flag: &Flag,
    environments: &[ProjectEnvironment],
) -> Vec<Request> {
    let mut bare = flag.clone();
    bare.environments.clear();
    let defaults = configured(&bare, environments, false, flag.creation_date);
    domain::audit::flag_requests(&Resource::project(project_key), &defaults, flag)
}

/// At most this many flag configurations (flags × the project's environments) are created in
/// one transaction: a batch of creations holds its flags, and what the API shows of each for
/// its audit entry, until it commits, and the allocator keeps the peak of the thread that wrote
/// it (measured: creations in a project of 50 environments, 32 clients, peak RSS 88 MiB
/// unbounded, 53 MiB with this bound, at the same rate). In a project of a few environments the
/// whole batch is one transaction.
pub(super) const MAX_CREATED_CONFIGS: usize = 256;

impl Service {
    /// Creates a flag with initial prerequisites, alone.
    pub(super) fn create_flag_with_prerequisites(
        &self,
        project_key: &str,
        request: FlagCreate,
        prerequisites: &[InitialPrerequisite],
    ) -> ServiceResult<FlagView> {
        let FlagCreate {
            caller,
            authorized,
            flag,
            turn_on,
        } = request;
        let now = flag.creation_date;
        self.store
            .write_tx(|repo| -> ServiceResult<_> {
                // Held alone so that the flags the prerequisites name stay as they are until it
                // commits (and no environment is created meanwhile without this flag's config,
                // nor the project changed or deleted).
                let project = lock_project(repo, project_key)?.into_inner();
                let environments = repo.environments_of(std::slice::from_ref(&project.id))?;
                let mut flag = configured(&flag, &environments, turn_on, now);
                project.check_flag_key(&flag.key)?;
                start_above_tombstones(repo, &project.id, std::slice::from_mut(&mut flag))?;
                let others = ProjectFlags::new(repo.flag_facts(&project.id)?);
                flag.add_initial_prerequisites(prerequisites, &others)?;
                flag.validate()?;
                flag.validate_in_project(&flag, &others)?;
                let beyond = configured_beyond_defaults(&project.key, &flag, &environments);
                let authorized = authorized.clone().and(&caller, &beyond)?;
                let (view, shown) = self.new_flag_view(repo, &project.key, flag)?;
                repo.insert_flag(&project.id, &view.flag)?;
                let change = self.created(&project.key, &view.flag, shown, beyond);
                self.audit(repo, &caller, authorized.record(change)?)?;
                Ok(view)
            })
            .map_err(|e| {
                e.key_taken(|| {
                    format!(
                        "a flag with key '{}' already exists in project '{project_key}'",
                        flag.key
                    )
                })
            })
    }

    /// Creates the flags of `requests` (without prerequisites) in project `project_key`, in as
    /// few transactions as [`MAX_CREATED_CONFIGS`] allows; each gets its own outcome and audit
    /// entry, as if created alone. A refused one (a key against the naming convention, too
    /// large, a key taken) does not stop the others; a transaction that fails in the store is
    /// followed by one for its first flag alone, so that the failure stays with its own flag.
    pub(super) fn create_flags(
        &self,
        project_key: &str,
        requests: &[&FlagCreate],
    ) -> Vec<ServiceResult<FlagView>> {
        let mut outcomes = Vec::with_capacity(requests.len());
        while outcomes.len() < requests.len() {
            let rest = &requests[outcomes.len()..];
            match self.create_first_flags(project_key, rest) {
                Ok(created) => outcomes.extend(created),
                // As for changes: a failed statement fails the transaction, and none of its
                // flags was created (none was answered).
                Err(err)
                    if rest.len() > 1
                        && err.is_storage_failure()
                        && !matches!(err, ServiceError::Unavailable(_)) =>
                {
                    let alone = self.create_first_flags(project_key, &rest[..1]);
                    outcomes.push(match alone {
                        Ok(mut created) => created
                            .pop()
                            .unwrap_or_else(|| Err(ServiceError::Internal("no outcome".into()))),
                        Err(err) => Err(err),
                    });
                }
                Err(err) => outcomes.extend(rest.iter().map(|_| Err(err.clone()))),
            }
        }
        outcomes
    }

    /// Creates the first flags of `requests` (at least one) in one transaction: as many as have
    /// at most [`MAX_CREATED_CONFIGS`] configurations in all. Their outcomes, or the failure of
    /// the transaction.
    pub(super) fn create_first_flags(
        &self,
        project_key: &str,
        requests: &[&FlagCreate],
    ) -> ServiceResult<Vec<ServiceResult<FlagView>>> {
        self.store.write_tx(|repo| -> ServiceResult<_> {
            // Held shared so that no environment is created meanwhile without these flags'
            // configs (nor the project changed or deleted); other creations run side by side.
            let project = repo
                .share_project(&ProjectKey::lookup(project_key))?
                .ok_or_else(|| crate::projects::project_not_found(project_key))?;
            let environments = repo.environments_of(std::slice::from_ref(&project.id))?;
            let take = (MAX_CREATED_CONFIGS / environments.len().max(1)).clamp(1, requests.len());
            let requests = &requests[..take];
            let mut outcomes: Vec<Option<ServiceResult<FlagView>>> =
                requests.iter().map(|_| None).collect();
            let keys: Vec<&str> = requests.iter().map(|r| r.flag.key.as_str()).collect();
            let tombstones = repo.tombstones(&project.id, TombstoneOf::Flag, &keys)?;
            let mut made: Vec<(usize, FlagView, ShownVersion, Vec<Request>, Authorized)> =
                Vec::with_capacity(requests.len());
            for (i, request) in requests.iter().enumerate() {
                let mut flag = configured(
                    &request.flag,
                    &environments,
                    request.turn_on,
                    request.flag.creation_date,
                );
                if let Some(tombstone) = tombstones.get(flag.key.as_str()) {
                    flag.start_above(*tombstone);
                }
                let beyond = configured_beyond_defaults(&project.key, &flag, &environments);
                let view = project
                    .check_flag_key(&flag.key)
                    .map_err(ServiceError::from)
                    .and_then(|()| request.authorized.clone().and(&request.caller, &beyond))
                    .and_then(|authorized| {
                        let (view, shown) = self.new_flag_view(repo, &project.key, flag)?;
                        Ok((view, shown, authorized))
                    });
                match view {
                    Ok((view, shown, authorized)) => {
                        made.push((i, view, shown, beyond, authorized))
                    }
                    Err(err) if err.is_storage_failure() => return Err(err),
                    Err(refused) => outcomes[i] = Some(Err(refused)),
                }
            }
            let flags: Vec<&Flag> = made.iter().map(|(_, view, ..)| &view.flag).collect();
            let stored = repo.insert_new_flags(&project.id, &flags)?;
            let mut audits = PendingAudits::default();
            for ((i, view, shown, beyond, authorized), stored) in made.into_iter().zip(stored) {
                outcomes[i] = Some(if stored {
                    let change = self.created(&project.key, &view.flag, shown, beyond);
                    let decided = authorized.record(change)?;
                    self.audit_later(repo, &requests[i].caller, decided, &mut audits)?;
                    Ok(view)
                } else {
                    Err(ServiceError::KeyTaken(Detail::from(format!(
                        "a flag with key '{}' already exists in project '{project_key}'",
                        view.flag.key
                    ))))
                });
            }
            self.append_audits(repo, audits)?;
            Ok(outcomes
                .into_iter()
                .map(|o| o.unwrap_or_else(|| Err(ServiceError::Internal("no outcome".into()))))
                .collect::<Vec<_>>())
        })
    }

    /// A new flag as the use case answers it (with its maintaining member), and as the API
    /// shows it, which must be within the resource size limit.
    pub(super) fn new_flag_view(
        &self,
        repo: &mut dyn Repository,
        project_key: &ProjectKey,
        flag: Flag,
    ) -> ServiceResult<(FlagView, ShownVersion)> {
        let view = with_maintainer(repo, flag)?;
        check_maintaining_team(&view.flag, &view.maintainers)
            .map_err(|reason| ValidationError::single("maintainerTeamKey", reason))?;
        // Measured as the API shows it (`_maintainer` counts; derived links do not).
        let shown = self.shown.flag(project_key, &view.flag, &view.maintainers);
        check_new_size("the new flag", &shown)?;
        Ok((view, shown))
    }

    /// The audit change of creating `flag`, shown as `shown`, setting `configured` beyond a
    /// new flag's defaults (see [`configured_beyond_defaults`]).
    pub(super) fn created(
        &self,
        project_key: &ProjectKey,
        flag: &Flag,
        shown: ShownVersion,
        configured: Vec<Request>,
    ) -> Change {
        let mut change = Change::new(
            "flag",
            &flag.key,
            "created",
            "createFlag",
            created_flag(project_key, flag),
        )
        .href(self.shown.href(ApiResource::Flag {
            project_key,
            key: &flag.key,
        }))
        .shown_versions(None, Some(shown));
        change.accesses.extend(configured);
        change
    }
}

impl Flags<'_> {
    /// Creates a flag; it appears in every environment of the project, with targeting off
    /// unless `isFlagOn`, and with `initialPrerequisites` if given. Its key must follow the
    /// project's naming convention.
    ///
    /// It waits for its turn on the calling thread. A caller that runs use cases on a bounded
    /// pool of threads should use the queued form ([`Service::queue_create_flag`]) for every
    /// such write, not mix the two: threads waiting here could fill the pool while the turn
    /// belongs to a queued write that needs a thread of it to write.
    ///
    /// # Errors
    /// `Invalid` (also for a flag larger than the resource size limit, a key against the naming
    /// convention, or a prerequisite that does not exist), `NotFound` for an
    /// unknown project, `KeyTaken` for a taken key.
    pub fn create_flag(
        &self,
        permit: &Permit<use_case::CreateFlag>,
        project_key: &str,
        post: FlagPost,
    ) -> ServiceResult<FlagView> {
        let (request, prerequisites) = new_flag(permit.caller(), project_key, post, self.now())?;
        if prerequisites.is_empty() {
            // Created with the others that arrive meanwhile, in one transaction.
            let lane = flag_write_lane(project_key, &request.flag.key);
            return self
                .flag_creates
                .write(lane, request, |(project_key, _), requests| {
                    self.create_flags(project_key, requests)
                });
        }
        self.create_flag_with_prerequisites(project_key, request, &prerequisites)
    }

    /// Creates flag `post.key` as a clone of flag `source`: its variations and its targeting in
    /// every environment.
    ///
    /// # Errors
    /// `Invalid` (also for a clone larger than the resource size limit or a key against the naming
    /// convention), `NotFound` for an unknown project or source flag, `KeyTaken`
    /// for a taken key.
    pub fn clone_flag(
        &self,
        permit: &Permit<use_case::CloneFlag>,
        project_key: &str,
        source: &str,
        post: FlagPost,
    ) -> ServiceResult<FlagView> {
        let caller = permit.caller();
        let new = post.validate()?;
        let key = new.key.to_string();
        let now = self.now();
        self.store
            .write_tx(|repo| -> ServiceResult<_> {
                // Held so that no environment is created meanwhile without the clone's config.
                let project = lock_project(repo, project_key)?;
                project.check_flag_key(new.key.as_str())?;
                let original = load_flag(repo, &project.id, project_key, source)?;
                let mut clone = original.clone_as(new.clone(), now, &mut RandomIds)?;
                start_above_tombstones(repo, &project.id, std::slice::from_mut(&mut clone))?;
                let clone = with_maintainer(repo, clone)?;
                // A team the request names must exist (one copied from the source may be gone).
                if new.post.maintainer_team_key.is_some() {
                    check_maintaining_team(&clone.flag, &clone.maintainers)
                        .map_err(|reason| ValidationError::single("maintainerTeamKey", reason))?;
                }
                let shown = self
                    .shown
                    .flag(&project.key, &clone.flag, &clone.maintainers);
                check_new_size("the clone", &shown)?;
                repo.insert_flag(&project.id, &clone.flag)?;
                let mut change = Change::new(
                    "flag",
                    &clone.flag.key,
                    "cloned",
                    "createFlag",
                    created_flag(&project.key, &clone.flag),
                )
                .href(self.shown.href(ApiResource::Flag {
                    project_key: &project.key,
                    key: &clone.flag.key,
                }))
                .shown_versions(None, Some(shown));
                change.accesses.push(Request::new(
                    "cloneFlag",
                    created_flag(&project.key, &original),
                ));
                // What the clone carries into each environment is decided there.
                let environments = repo.environments_of(std::slice::from_ref(&project.id))?;
                change.accesses.extend(configured_beyond_defaults(
                    &project.key,
                    &clone.flag,
                    &environments,
                ));
                self.audit(repo, caller, change.authorize(caller)?)?;
                Ok(clone)
            })
            .map_err(|e| {
                e.key_taken(|| {
                    format!("a flag with key '{key}' already exists in project '{project_key}'")
                })
            })
    }
}

impl Service {
    /// [`Flags::create_flag`], waiting for its turn without holding a thread (see
    /// [`QueuedWrite`]).
    pub fn queue_create_flag(
        self: &Arc<Self>,
        permit: &Permit<use_case::CreateFlag>,
        project_key: &str,
        post: FlagPost,
    ) -> QueuedWrite<FlagView> {
        let (request, prerequisites) =
            match new_flag(permit.caller(), project_key, post, self.now()) {
                Ok(new) => new,
                Err(refused) => return QueuedWrite::answered(Err(refused)),
            };
        let service = Arc::clone(self);
        if prerequisites.is_empty() {
            let lane = flag_write_lane(project_key, &request.flag.key);
            return QueuedWrite::on(
                self.flag_creates.queue(lane, request),
                move |(project_key, _), requests| service.create_flags(project_key, requests),
            );
        }
        let project_key = project_key.to_owned();
        QueuedWrite::at_once(move || {
            service.create_flag_with_prerequisites(&project_key, request, &prerequisites)
        })
    }
}

/// Starts each of `flags` above the tombstone a deleted flag of its key left in project
/// `project_id`, if any (see [`Flag::start_above`]): one read.
fn start_above_tombstones(
    repo: &mut dyn Repository,
    project_id: &ProjectId,
    flags: &mut [Flag],
) -> ServiceResult<()> {
    let keys: Vec<&str> = flags.iter().map(|flag| flag.key.as_str()).collect();
    let tombstones = repo.tombstones(project_id, TombstoneOf::Flag, &keys)?;
    for flag in flags {
        if let Some(tombstone) = tombstones.get(flag.key.as_str()) {
            flag.start_above(*tombstone);
        }
    }
    Ok(())
}
