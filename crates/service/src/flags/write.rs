//! Changing flags: a patch in any of its three forms, written in arrival order per flag through
//! the lanes of [`crate::flag_writes`], in batches of changes that commit together.

use super::*;
use crate::authorize::Authorized;
use ports::TombstoneOf;

/// What a batch of flag changes writes once they are all applied: the flags they changed (each
/// with the flag as it was locked) and their audit entries.
#[derive(Default)]
pub(super) struct BatchWrites {
    flags: Vec<(Locked<Flag>, Flag)>,
    audits: PendingAudits,
}

impl BatchWrites {
    /// Saves the flags changed so far: at the end, and before a change reads other flags of the
    /// project from the store (prerequisites, dependents), which must see them as changed.
    pub(super) fn save_flags(
        &mut self,
        repo: &mut dyn Repository,
        project_id: &ProjectId,
    ) -> ServiceResult<()> {
        if !self.flags.is_empty() {
            let flags: Vec<(&Locked<Flag>, &Flag)> =
                self.flags.iter().map(|(f, p)| (f, p)).collect();
            repo.update_flags(project_id, &flags)?;
            self.flags.clear();
        }
        Ok(())
    }
}

/// What one change did to a flag.
pub(super) enum FlagChanged {
    /// The flag as the change left it (unchanged when it changed nothing).
    To(FlagView),
    /// The change deleted the flag; the flag as the change showed it last.
    Deleted(FlagView),
}

impl Service {
    pub(super) fn patch_flag_as(
        &self,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: &FlagChange,
        write: Write,
    ) -> ServiceResult<FlagView> {
        // A patch answers the flag even when it changes nothing (or fails a `test`): only a
        // caller who may read it gets that far.
        permit.caller().require_view(project_key)?;
        let request = FlagWrite::new(permit, key, change.clone());
        match write {
            // A dry run writes nothing: it neither waits for other changes nor holds them up.
            Write::DryRun => self
                .write_flag_changes(Write::DryRun, project_key, &[&request])
                .pop()
                .unwrap_or_else(|| Err(ServiceError::Internal("no outcome".into()))),
            Write::Commit => self.flag_writes.write(
                flag_write_lane(project_key, key),
                request,
                |(project_key, _), requests| {
                    self.write_flag_changes(Write::Commit, project_key, requests)
                },
            ),
        }
    }

    /// Writes `requests`, changes to flags of one project, in one transaction: the flags are
    /// locked together (in the store's key order), then, flag after flag in that order, each
    /// flag's changes are applied one after the other in arrival order, each checked against the
    /// flag as the ones before left it, with its own outcome (see [`crate::flag_writes`]). The
    /// changed flags are saved together at the end, and before a change reads other flags
    /// (prerequisites, dependents), so that it reads them as changed. A refused change leaves its
    /// flag as it was; a storage failure fails the transaction, whose changes are then written
    /// again one flag at a time.
    pub(super) fn write_flag_changes(
        &self,
        write: Write,
        project_key: &str,
        requests: &[&FlagWrite],
    ) -> Vec<ServiceResult<FlagView>> {
        let mut keys: Vec<FlagKey> = Vec::with_capacity(requests.len());
        for request in requests {
            let key = FlagKey::lookup(&request.key);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let written = self.write(write, |repo| -> ServiceResult<_> {
            let project_key = ProjectKey::lookup(project_key);
            let (project, held) = match repo.lock_flags_by_keys(&project_key, &keys)? {
                Some((id, held)) => (
                    FlagProject {
                        id,
                        key: project_key,
                    },
                    held,
                ),
                // Only on the way to `NotFound`: say which of the two is missing.
                None => {
                    load_project(repo, project_key.as_str())?;
                    return Ok(requests
                        .iter()
                        .map(|r| Err(flag_not_found(project_key.as_str(), &r.key)))
                        .collect());
                }
            };
            let mut outcomes: Vec<Option<ServiceResult<FlagView>>> =
                requests.iter().map(|_| None).collect();
            // The flags and every change's entry, written once all are applied.
            let mut writes = BatchWrites::default();
            for held in held {
                let mine: Vec<usize> = (0..requests.len())
                    .filter(|&i| requests[i].key == held.key.as_str())
                    .collect();
                let written = self.write_one_flag(
                    repo,
                    &project,
                    held,
                    mine.iter().map(|&i| requests[i]),
                    &mut writes,
                )?;
                for (i, outcome) in mine.into_iter().zip(written) {
                    outcomes[i] = Some(outcome);
                }
            }
            writes.save_flags(repo, &project.id)?;
            self.append_audits(repo, writes.audits)?;
            Ok(outcomes
                .into_iter()
                .zip(requests)
                .map(|(outcome, request)| {
                    outcome
                        .unwrap_or_else(|| Err(flag_not_found(project.key.as_str(), &request.key)))
                })
                .collect())
        });
        match written {
            Ok(outcomes) => outcomes,
            // A statement failed (a deadlock with another writer, say): the transaction is gone,
            // and with it every change in it. Changes to several flags are written again, one
            // flag's in a transaction of their own, so that what failed fails only its own flag's
            // changes (nothing was written: none was answered). Not when the store is away.
            Err(err)
                if keys.len() > 1
                    && write == Write::Commit
                    && err.is_storage_failure()
                    && !matches!(err, ServiceError::Unavailable(_)) =>
            {
                let mut outcomes: Vec<Option<ServiceResult<FlagView>>> =
                    requests.iter().map(|_| None).collect();
                for key in &keys {
                    let mine: Vec<usize> = (0..requests.len())
                        .filter(|&i| requests[i].key == key.as_str())
                        .collect();
                    let alone: Vec<&FlagWrite> = mine.iter().map(|&i| requests[i]).collect();
                    let written = self.write_flag_changes(write, project_key, &alone);
                    for (i, outcome) in mine.into_iter().zip(written) {
                        outcomes[i] = Some(outcome);
                    }
                }
                outcomes
                    .into_iter()
                    .map(|outcome| outcome.unwrap_or_else(|| Err(err.clone())))
                    .collect()
            }
            Err(err) => requests.iter().map(|_| Err(err.clone())).collect(),
        }
    }

    /// Applies `requests`, changes to the flag `held`, one after the other, and leaves the flag
    /// to save in `writes` if they changed it. Returns an outcome per change; `Err` only for a
    /// storage failure, which ends the transaction.
    pub(super) fn write_one_flag<'r>(
        &self,
        repo: &mut dyn Repository,
        project: &FlagProject,
        mut held: Locked<Flag>,
        requests: impl Iterator<Item = &'r FlagWrite>,
        writes: &mut BatchWrites,
    ) -> ServiceResult<Vec<ServiceResult<FlagView>>> {
        // What GET shows of it: a patch reads `_maintainer` too, and the audit records it.
        let mut current = FlagView {
            maintainers: maintainers_of(repo, &held)?,
            flag: (*held).clone(),
        };
        let mut outcomes = Vec::new();
        let mut deleted = false;
        for request in requests {
            if deleted {
                outcomes.push(Err(flag_not_found(project.key.as_str(), &request.key)));
                continue;
            }
            match self.change_flag(repo, project, &held, &current, request, writes) {
                Ok(FlagChanged::To(next)) => {
                    outcomes.push(Ok(next.clone()));
                    current = next;
                }
                Ok(FlagChanged::Deleted(last)) => {
                    outcomes.push(Ok(last));
                    deleted = true;
                }
                // A failed statement (a deadlock, say, which is a 409 as a refusal is) ends
                // the transaction, and with it every change in it: none may be answered as
                // if the others were written.
                Err(err) if err.is_storage_failure() => return Err(err),
                Err(refused) => outcomes.push(Err(refused)),
            }
        }
        if !deleted && current.flag.version != held.version {
            let previous = held.replace(current.flag);
            writes.flags.push((held, previous));
        }
        Ok(outcomes)
    }

    /// Applies one change to `current` (the flag `held` as the changes before this one left
    /// it), and makes its audit entry (appended with the batch's; for a delete, deletes it). The
    /// flag itself is saved by the caller with the batch's (`writes`). In steps: apply, authorize,
    /// check the project's rules, find the maintainers, record.
    pub(super) fn change_flag(
        &self,
        repo: &mut dyn Repository,
        project: &FlagProject,
        held: &Locked<Flag>,
        current: &FlagView,
        request: &FlagWrite,
        writes: &mut BatchWrites,
    ) -> ServiceResult<FlagChanged> {
        let FlagWrite {
            caller,
            change,
            expected,
            ..
        } = request;
        let flag = &current.flag;
        if let Some(expected) = expected {
            expected.check(flag)?;
        }
        let applied = self.apply_change(repo, project, current, change, writes)?;
        // Decided before anything of this change is written: a refusal leaves the flag, and
        // the other changes of the batch, as they were.
        let (authorized, requests) =
            authorize_change(caller, &project.key, flag, &applied, change)?;
        check_project_rules(repo, project, flag, &applied, change, writes)?;
        let next_maintainers = next_maintainers(repo, current, &applied.next, change)?;
        self.record_change(
            repo,
            project,
            held,
            caller,
            current,
            (&applied, &next_maintainers),
            (change, &authorized, requests),
            writes,
        )?;
        let view = FlagView {
            flag: applied.next,
            maintainers: next_maintainers,
        };
        Ok(if applied.delete {
            FlagChanged::Deleted(view)
        } else {
            FlagChanged::To(view)
        })
    }

    /// The flag as `change` leaves it. A change that reads the project's other flags first saves
    /// the batch's flags changed before it, so that it reads them as changed.
    fn apply_change(
        &self,
        repo: &mut dyn Repository,
        project: &FlagProject,
        current: &FlagView,
        change: &FlagChange,
        writes: &mut BatchWrites,
    ) -> ServiceResult<AppliedChange> {
        let (flag, maintainers) = (&current.flag, &current.maintainers);
        let now = self.now();
        let involves_others = match change {
            FlagChange::Semantic(patch) => {
                patch.instructions.iter().any(|i| i.involves_other_flags())
            }
            FlagChange::JsonPatch(_) | FlagChange::MergePatch { .. } => false,
        };
        let others = if involves_others {
            writes.save_flags(repo, &project.id)?;
            project_flags(repo, &project.key, &project.id, &flag.key)?
        } else {
            ProjectFlags::default()
        };
        let (next, delete) = match change {
            FlagChange::JsonPatch(patch) => {
                let shown = self.shown.flag_document(&project.key, flag, maintainers);
                let next =
                    flag.apply_patch_as_shown(&shown, &patch.operations, now, &mut RandomIds)?;
                (next, false)
            }
            FlagChange::MergePatch { merge, .. } => {
                let shown = self.shown.flag_document(&project.key, flag, maintainers);
                let next = flag.apply_merge_as_shown(&shown, merge, now, &mut RandomIds)?;
                (next, false)
            }
            FlagChange::Semantic(patch) => {
                let outcome = flag.apply_instructions(patch, now, &mut RandomIds, &others)?;
                (outcome.flag, outcome.delete)
            }
        };
        Ok(AppliedChange {
            next,
            delete,
            project_checked: involves_others,
        })
    }

    /// Deletes the flag, or records its change, as one audit entry appended with the batch's.
    #[allow(clippy::too_many_arguments)]
    fn record_change(
        &self,
        repo: &mut dyn Repository,
        project: &FlagProject,
        held: &Locked<Flag>,
        caller: &Caller,
        current: &FlagView,
        (applied, next_maintainers): (&AppliedChange, &Maintainers),
        (change, authorized, requests): (&FlagChange, &Authorized, Vec<Request>),
        writes: &mut BatchWrites,
    ) -> ServiceResult<()> {
        let (flag, maintainers, next) = (&current.flag, &current.maintainers, &applied.next);
        let key = held.key.as_str();
        let flag_wide = flag_wide(&project.key, key, &flag.tags);
        let (comment, delta) = match change {
            FlagChange::JsonPatch(patch) => (patch.comment.clone(), json(&patch.operations)),
            FlagChange::MergePatch { comment, merge } => (comment.clone(), Some(merge.clone())),
            FlagChange::Semantic(patch) => (patch.comment.clone(), Some(semantic_delta(patch))),
        };
        if applied.delete {
            writes.save_flags(repo, &project.id)?;
            refuse_if_depended_on(repo, &project.key, &project.id, &held.key)?;
            repo.keep_tombstone(
                &project.id,
                TombstoneOf::Flag,
                key,
                flag.tombstone_version(),
            )?;
            repo.delete_flag(&project.id, held)?;
            let change = Change::new("flag", key, "deleted", "deleteFlag", flag_wide)
                .comment(comment)
                .delta(delta)
                .shown_versions(Some(self.shown.flag(&project.key, flag, maintainers)), None);
            self.audit_later(repo, caller, authorized.record(change)?, &mut writes.audits)?;
        } else if next.version != flag.version {
            let mut audit = Change::new("flag", key, "updated", "updateFlag", flag_wide)
                .href(self.shown.href(ApiResource::Flag {
                    project_key: &project.key,
                    key,
                }))
                .comment(comment)
                .delta(delta)
                .shown_versions(
                    Some(self.shown.flag(&project.key, flag, maintainers)),
                    Some(self.shown.flag(&project.key, next, next_maintainers)),
                );
            let accesses = domain::audit::accesses_of(&requests);
            audit.resources = resources_of(&accesses);
            audit.verb = switch_verb(flag, next, &accesses);
            audit.accesses = requests;
            self.audit_later(repo, caller, authorized.record(audit)?, &mut writes.audits)?;
        }
        Ok(())
    }
}

/// A change applied to a flag, not yet checked against the project or stored.
struct AppliedChange {
    next: Flag,
    /// A `deleteFlag` instruction asked to delete it.
    delete: bool,
    /// The project's rules were checked while applying (an instruction read the other flags).
    project_checked: bool,
}

/// The resource of a flag in every environment of its project.
fn flag_wide(project_key: &str, key: &str, tags: &[String]) -> Resource {
    Resource::project(project_key)
        .environment("*")
        .flag(key)
        .with_tags(tags)
}

/// Asks the caller's permission for everything the change does, and for what each semantic
/// instruction asks for, whether it changed anything or not: what was decided, and the requests
/// of what it does, for its audit entry (decided among them).
fn authorize_change(
    caller: &Caller,
    project_key: &str,
    flag: &Flag,
    applied: &AppliedChange,
    change: &FlagChange,
) -> ServiceResult<(Authorized, Vec<Request>)> {
    let project_resource = Resource::project(project_key);
    let flag_wide = flag_wide(project_key, &flag.key, &flag.tags);
    let requests = if applied.delete {
        vec![Request::new("deleteFlag", flag_wide.clone())]
    } else {
        domain::audit::flag_requests(&project_resource, flag, &applied.next)
    };
    let mut decided = requests.clone();
    if let FlagChange::Semantic(patch) = change {
        let in_environment = project_resource
            .environment(patch.environment_key.as_deref().unwrap_or("*"))
            .flag(&flag.key)
            .with_tags(&flag.tags);
        for instruction in &patch.instructions {
            let resource = if instruction.is_environment_scoped() {
                &in_environment
            } else {
                &flag_wide
            };
            decided.push(Request::new(instruction.action(), resource.clone()));
        }
    }
    let authorized = caller.authorize(in_every_environment(&decided, flag))?;
    Ok((authorized, requests))
}

/// The project's rules (prerequisites, variations in use, segments that exist), in the error
/// form of the change's kind.
fn check_project_rules(
    repo: &mut dyn Repository,
    project: &FlagProject,
    flag: &Flag,
    applied: &AppliedChange,
    change: &FlagChange,
    writes: &mut BatchWrites,
) -> ServiceResult<()> {
    let next = &applied.next;
    if !applied.project_checked && next.needs_project_check(flag) {
        writes.save_flags(repo, &project.id)?;
        let others = project_flags(repo, &project.key, &project.id, &flag.key)?;
        next.validate_in_project(flag, &others)
            .map_err(ServiceError::patched_flag)?;
    }
    if !matches!(change, FlagChange::Semantic(_)) {
        next.check_variation_moves(flag)?;
    }
    if let Some(missing) = crate::segments::missing_segments(repo, &project.id, Some(flag), next)? {
        return Err(match change {
            FlagChange::Semantic(_) => ServiceError::invalid(missing),
            FlagChange::JsonPatch(_) | FlagChange::MergePatch { .. } => {
                ServiceError::PatchFailed(missing.into())
            }
        });
    }
    Ok(())
}

/// Who maintains the flag after the change (read again only when it changed), checked when a
/// team newly maintains it.
fn next_maintainers(
    repo: &mut dyn Repository,
    current: &FlagView,
    next: &Flag,
    change: &FlagChange,
) -> ServiceResult<Maintainers> {
    let flag = &current.flag;
    if next.maintainer_id == flag.maintainer_id
        && next.maintainer_team_key == flag.maintainer_team_key
    {
        return Ok(current.maintainers.clone());
    }
    let next_maintainers = maintainers_of(repo, next)?;
    if next.maintainer_team_key != flag.maintainer_team_key {
        check_maintaining_team(next, &next_maintainers).map_err(|reason| match change {
            FlagChange::Semantic(_) => ValidationError::single("maintainerTeamKey", reason).into(),
            _ => ServiceError::PatchFailed(format!("maintainerTeamKey: {reason}").into()),
        })?;
    }
    Ok(next_maintainers)
}

impl Flags<'_> {
    /// Changes a flag by JSON Patch, merge patch or semantic patch; returns the new flag.
    ///
    /// It waits for its turn on the calling thread. A caller that runs use cases on a bounded
    /// pool of threads should use the queued form ([`Service::queue_patch_flag`]) for every
    /// such write, not mix the two: threads waiting here could fill the pool while the turn
    /// belongs to a queued write that needs a thread of it to write.
    ///
    /// # Errors
    /// `Invalid` for a malformed body or an invalid instruction, `NotFound`,
    /// `VersionConflict` for a failed `test`, `PatchFailed` for a patch that cannot be applied.
    pub fn patch_flag(
        &self,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: &FlagChange,
    ) -> ServiceResult<FlagView> {
        self.patch_flag_as(permit, project_key, key, change, Write::Commit)
    }

    /// A dry run of [`Flags::patch_flag`]: the same checks, locks and writes in one
    /// transaction, which is then rolled back. Returns the flag as the change would make it
    /// (`_version` and environment versions included); nothing is stored, audited or queued for
    /// webhooks.
    ///
    /// # Errors
    /// Exactly those of [`Flags::patch_flag`].
    pub fn dry_run_patch_flag(
        &self,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: &FlagChange,
    ) -> ServiceResult<FlagView> {
        self.patch_flag_as(permit, project_key, key, change, Write::DryRun)
    }
}

impl Service {
    /// [`Flags::patch_flag`], waiting for its turn without holding a thread (see
    /// [`QueuedWrite`]).
    pub fn queue_patch_flag(
        self: &Arc<Self>,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: FlagChange,
    ) -> QueuedWrite<FlagView> {
        self.queue_patch_flag_at(permit, project_key, key, change, None)
    }
}

impl Service {
    /// [`Service::queue_patch_flag`], applied only if the flag still has the version `expected`
    /// (else [`ServiceError::VersionConflict`]): a change made from what a page showed.
    pub fn queue_patch_flag_at(
        self: &Arc<Self>,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: FlagChange,
        expected: Option<ExpectedVersion>,
    ) -> QueuedWrite<FlagView> {
        if let Err(refused) = permit.caller().require_view(project_key) {
            return QueuedWrite::answered(Err(refused));
        }
        let mut request = FlagWrite::new(permit, key, change);
        request.expected = expected;
        let service = Arc::clone(self);
        QueuedWrite::on(
            self.flag_writes
                .queue(flag_write_lane(project_key, key), request),
            move |(project_key, _), requests| {
                service.write_flag_changes(Write::Commit, project_key, requests)
            },
        )
    }
}
