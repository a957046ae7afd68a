//! The audit log: every change appends one entry in its own transaction.

use domain::audit::{AuditEntry, AuditPage, AuditQuery, AuditTarget};
use domain::id::AuditEntryId;
use domain::key::{EnvironmentKey, FlagKey, ProjectKey};
use domain::policy::Resource;
use ports::{Changed, Repository, StoreExt};
use serde_json::Value;

use crate::authorize::Decided;
pub(crate) use crate::change::Change;
use crate::{use_case, Caller, Permit, RandomIds, Service, ServiceError, ServiceResult};

/// The audit log: listing and reading its entries. The use cases of `Service::audit_log`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct AuditLog<'a>(&'a Service);

impl Service {
    /// The audit log: listing and reading its entries.
    pub fn audit_log(&self) -> AuditLog<'_> {
        AuditLog(self)
    }
}

impl std::ops::Deref for AuditLog<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// What a change recorded by `entry` does to cached flags (see `crate::read_cache`): a flag's
/// own changes touch that flag; an environment's or a project's, every flag of the project (they
/// show the environments' names); a segment's, the segments of its environment (evaluations
/// read them); a webhook, none; a token or a member, none here
/// (their use cases announce them by `_id`, which the entry does not carry: see
/// [`Changed::Member`]); anything else, everything. A key the current rules would not accept
/// (stored under older ones) cannot be read back safely from the entry's resource, and so
/// touches everything.
fn announced(entry: &AuditEntry) -> Option<Changed> {
    // `proj/{p}`, `proj/{p}:env/{e}`, `proj/{p}:env/{e}:flag/{f}`: with keys of today's rules
    // (no `:`), the number of `:` tells that no key had one.
    let project = |separators: usize| {
        let resource = entry.target.resources.first()?;
        if resource.matches(':').count() != separators {
            return None;
        }
        let key = resource.strip_prefix("proj/")?.split(':').next()?;
        ProjectKey::parse(key).ok().map(ProjectKey::into_string)
    };
    let changed = match entry.kind.as_str() {
        // No kept answer shows these; tokens and members are announced by their use cases
        // (`Changed::Token`, `Changed::Member`: with the `_id`, which entries do not name).
        "token" | "webhook" | "member" => return None,
        // Evaluations read them (see `crate::snapshots`).
        "segment" => project(2)
            .zip(environment_of(entry))
            .map(|(project, environment)| Changed::Segments {
                project,
                environment,
            }),
        "flag" => FlagKey::parse(&entry.name)
            .ok()
            .and(project(2))
            .map(|project| Changed::Flag {
                project,
                flag: entry.name.clone(),
            }),
        "environment" => project(1).map(Changed::Project),
        "project" => project(0).map(Changed::Project),
        _ => None,
    };
    Some(changed.unwrap_or(Changed::Everything))
}

/// The environment key in `entry`'s first resource (`proj/{p}:env/{e}...`), if it is one the
/// current rules accept.
fn environment_of(entry: &AuditEntry) -> Option<String> {
    let resource = entry.target.resources.first()?;
    let key = resource.split(':').nth(1)?.strip_prefix("env/")?;
    EnvironmentKey::parse(key)
        .ok()
        .map(EnvironmentKey::into_string)
}

/// Whether `caller` may read what `entry` is about (it shows the resources' versions): every
/// resource it accessed, by the view action of the resource's kind (`viewProject` on the project
/// of anything in one).
fn may_read_entry(caller: &Caller, entry: &AuditEntry) -> bool {
    let accessed = entry.accesses.iter().map(|access| access.resource.as_str());
    let targets = entry.target.resources.iter().map(String::as_str);
    accessed.chain(targets).all(|spec| {
        let first = spec.split(':').next().unwrap_or(spec);
        let (action, resource) = match first.split_once('/') {
            Some(("proj", key)) => ("viewProject", Resource::project(key)),
            Some(("member", id)) if spec.contains(":token/") => {
                // The token by name, as a lookup of it is decided (a statement may name it).
                let name = spec
                    .split_once(":token/")
                    .map_or("*", |(_, name)| name.split(':').next().unwrap_or(name));
                ("viewAccessTokens", Resource::member(id).token(name))
            }
            Some(("member", id)) => ("viewMembers", Resource::member(id)),
            Some(("webhook", id)) => ("viewWebhooks", Resource::webhook(id)),
            Some(("role", key)) => ("viewRoles", Resource::role(key)),
            Some(("team", key)) => ("viewTeams", Resource::team(key)),
            _ if first == "acct" => ("viewAuditLog", Resource::account()),
            _ => return false,
        };
        caller.require_on(action, &resource).is_ok()
    })
}

/// A model value as JSON for an audit entry (it serialises infallibly).
pub(crate) fn json<T: serde::Serialize>(value: &T) -> Option<Value> {
    serde_json::to_value(value).ok()
}

/// Audit entries of changes written together, appended together when the last is made
/// ([`Service::append_audits`]): one round trip for a batch of flag changes.
#[derive(Debug, Default)]
pub(crate) struct PendingAudits {
    entries: Vec<AuditEntry>,
    /// Per entry, the request that made it (its deliveries carry the id).
    request_ids: Vec<Option<String>>,
}

impl Service {
    /// Appends the audit entry of `change`, made by `caller`, inside the current transaction.
    pub(crate) fn audit(
        &self,
        repo: &mut dyn Repository,
        caller: &Caller,
        change: Decided,
    ) -> ServiceResult<AuditEntry> {
        let entry = self.audit_entry(repo, caller, change)?;
        let webhooks = repo.append_audit_entry(&entry)?;
        // The outbox: deliveries are queued with the change, and sent after it commits.
        self.enqueue_deliveries(repo, &entry, &webhooks, caller.request_id())?;
        Ok(entry)
    }

    /// Makes the audit entry of `change`, made by `caller`, to append with the others of
    /// `pending` ([`Service::append_audits`], before the transaction commits).
    pub(crate) fn audit_later(
        &self,
        repo: &mut dyn Repository,
        caller: &Caller,
        change: Decided,
        pending: &mut PendingAudits,
    ) -> ServiceResult<()> {
        let entry = self.audit_entry(repo, caller, change)?;
        pending.entries.push(entry);
        pending
            .request_ids
            .push(caller.request_id().map(str::to_owned));
        Ok(())
    }

    /// Appends the entries of `pending`, in one round trip where the store can, and queues
    /// their deliveries.
    pub(crate) fn append_audits(
        &self,
        repo: &mut dyn Repository,
        pending: PendingAudits,
    ) -> ServiceResult<()> {
        if pending.entries.is_empty() {
            return Ok(());
        }
        let webhooks = repo.append_audit_entries(&pending.entries)?;
        for (entry, request_id) in pending.entries.iter().zip(&pending.request_ids) {
            self.enqueue_deliveries(repo, entry, &webhooks, request_id.as_deref())?;
        }
        Ok(())
    }

    /// The audit entry of `change`, made by `caller`, with what it changed announced to the
    /// store (sent with the entry). Every change is audited, and only a decided one
    /// ([`Decided`]): what it records was decided once, by authorization.
    fn audit_entry(
        &self,
        repo: &mut dyn Repository,
        caller: &Caller,
        change: Decided,
    ) -> ServiceResult<AuditEntry> {
        let change = change.into_change();
        // The caller as verified: no need to read its member and token again.
        let (member, token) = &*caller.audited_as;
        let actor = &member.email;
        let accesses = domain::audit::accesses_of(&change.accesses);
        let actions: Vec<&str> = accesses.iter().map(|a| a.action.as_str()).collect();
        let description = if actions.is_empty() {
            format!("{actor} {} {} `{}`", change.verb, change.kind, change.name)
        } else {
            format!(
                "{actor} {} {} `{}`: {}",
                change.verb,
                change.kind,
                change.name,
                actions.join(", ")
            )
        };
        let id = AuditEntryId::generate(&mut RandomIds);
        let mut entry = AuditEntry {
            account_id: self.account_id_in(repo)?,
            id,
            date: self.now(),
            kind: change.kind.to_owned(),
            name: change.name.clone(),
            short_description: format!("{} {} {}", change.verb, change.kind, change.name),
            title_verb: String::new(),
            title: String::new(),
            description,
            comment: change.comment.filter(|c| !c.is_empty()),
            accesses,
            member: Some(member.clone()),
            token: token.clone(),
            target: AuditTarget {
                name: change.name,
                resources: change.resources,
                href: change.href,
            },
            delta: change.delta,
            previous_version: change.previous,
            current_version: change.current,
        };
        entry.set_titles(change.verb);
        // Before the entry: PostgreSQL sends the notification with it, in one round trip.
        if let Some(changed) = announced(&entry) {
            repo.announce(&changed)?;
        }
        Ok(entry)
    }

    /// The entries `read` reads in one read transaction, those the caller may read, completed.
    fn list_audit_entries(
        &self,
        caller: &Caller,
        query: &AuditQuery,
        read: impl FnMut(&mut dyn Repository) -> ServiceResult<AuditPage>,
    ) -> ServiceResult<AuditPage> {
        caller.require_on("viewAuditLog", &Resource::account())?;
        let account_id = self.account_id()?;
        let mut page = self.store.read_tx(read)?;
        // A caller with custom roles sees the entries of what it may read (a page may then hold
        // fewer than `limit`, and still say where the next starts); a built-in role reads
        // everything it is shown.
        if !caller.permissions.built_in_only() {
            page.entries.retain(|entry| may_read_entry(caller, entry));
        }
        for entry in &mut page.entries {
            complete_entry(entry, &account_id);
            hide_unseen_members(caller, entry);
        }
        // `q` matched the entry as stored, whose description names who made the change: a
        // caller who may not see that member keeps only entries `q` matches as it sees them,
        // so no search tells it an email.
        if let Some(text) = query.q.as_deref().filter(|_| !caller.sees_every_member()) {
            page.entries.retain(|entry| {
                format!("{}\n{}", entry.name, entry.description)
                    .to_lowercase()
                    .contains(text)
            });
        }
        Ok(page)
    }
}

/// The entry as `caller` may see it: no email, name or role of a member it may not see (who
/// made the change; a flag version's `_maintainer`).
fn hide_unseen_members(caller: &Caller, entry: &mut AuditEntry) {
    if caller.sees_every_member() {
        return;
    }
    if entry
        .member
        .as_ref()
        .is_some_and(|member| !caller.may_view_member(&member.id))
    {
        entry.hide_member();
    }
    entry.hide_maintainers(|id| !caller.may_view_member(id));
}

/// Completes an entry read from the store with the fields of an entry stored before they
/// existed: `_accountId` (there is one account) and `titleVerb`/`title` (from its short
/// description).
fn complete_entry(entry: &mut AuditEntry, account_id: &str) {
    if entry.account_id.is_empty() {
        account_id.clone_into(&mut entry.account_id);
    }
    entry.fill_titles();
}

impl AuditLog<'_> {
    /// Audit entries, newest first (listing view).
    ///
    /// # Errors
    /// `NotPermitted`.
    pub fn list_audit_log(
        &self,
        permit: &Permit<use_case::ReadAuditLog>,
        query: &AuditQuery,
    ) -> ServiceResult<Vec<AuditEntry>> {
        Ok(self.page_audit_log(permit, query)?.entries)
    }

    /// A page of audit entries, newest first (listing view), and where the next one starts:
    /// see [`ports::AuditRepository::page_audit_entries`]. A caller with custom roles gets the
    /// entries it may read of those the store found, so its page may hold fewer than `limit`
    /// (even none) and still have a next one.
    ///
    /// # Errors
    /// `NotPermitted`.
    pub fn page_audit_log(
        &self,
        permit: &Permit<use_case::ReadAuditLog>,
        query: &AuditQuery,
    ) -> ServiceResult<AuditPage> {
        let caller = permit.caller();
        // The store gives the listing view, without reading any entry's detail.
        self.list_audit_entries(caller, query, |repo| Ok(repo.page_audit_entries(query)?))
    }

    /// [`AuditLog::page_audit_log`] with each entry's detail (its versions and delta, as
    /// [`AuditLog::get_audit_entry`] gives it), all read in one transaction: for a page that shows
    /// what each change changed (`query.limit` entries at most).
    ///
    /// # Errors
    /// `NotPermitted`.
    pub fn list_audit_log_in_detail(
        &self,
        permit: &Permit<use_case::ReadAuditLog>,
        query: &AuditQuery,
    ) -> ServiceResult<AuditPage> {
        let caller = permit.caller();
        self.list_audit_entries(caller, query, |repo| {
            let listed = repo.page_audit_entries(query)?;
            let mut detailed = Vec::with_capacity(listed.entries.len());
            for entry in listed.entries {
                // An entry is never deleted: each one listed is there.
                if let Some(entry) = repo.get_audit_entry(&entry.id)? {
                    detailed.push(entry);
                }
            }
            Ok(AuditPage {
                entries: detailed,
                next_before: listed.next_before,
            })
        })
    }

    /// One audit entry with its detail fields.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_audit_entry(
        &self,
        permit: &Permit<use_case::ReadAuditLog>,
        id: &str,
    ) -> ServiceResult<AuditEntry> {
        let caller = permit.caller();
        caller.require_on("viewAuditLog", &Resource::account())?;
        let account_id = self.account_id()?;
        let mut entry = self.store.read_tx(|repo| -> ServiceResult<_> {
            let not_found = || ServiceError::NotFound(format!("no audit entry with id '{id}'"));
            // Text that is not an id names no entry.
            let id = AuditEntryId::parse(id).map_err(|_| not_found())?;
            repo.get_audit_entry(&id)?.ok_or_else(not_found)
        })?;
        if !may_read_entry(caller, &entry) {
            return Err(ServiceError::NotPermitted(
                "the entry is about something the caller may not read".into(),
            ));
        }
        complete_entry(&mut entry, &account_id);
        hide_unseen_members(caller, &mut entry);
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag_wide(project: &str, flag: &str) -> String {
        Resource::project(project)
            .environment("*")
            .flag(flag)
            .to_string()
    }

    fn entry(kind: &str, name: &str, resource: String) -> AuditEntry {
        serde_json::from_value(serde_json::json!({
            "_accountId": "", "_id": "0".repeat(24), "date": 1, "kind": kind, "name": name,
            "shortDescription": "", "description": "", "accesses": [],
            "target": {"name": name, "resources": [resource]},
        }))
        .unwrap()
    }

    #[test]
    fn what_a_change_announces_follows_its_resource() {
        let flag = entry("flag", "f", flag_wide("shop", "f"));
        assert_eq!(
            announced(&flag),
            Some(Changed::Flag {
                project: "shop".into(),
                flag: "f".into()
            })
        );
        let env = entry(
            "environment",
            "e",
            Resource::project("shop").environment("e").to_string(),
        );
        assert_eq!(announced(&env), Some(Changed::Project("shop".into())));
        let project = entry("project", "shop", Resource::project("shop").to_string());
        assert_eq!(announced(&project), Some(Changed::Project("shop".into())));
        let member = entry("member", "m", Resource::member("m").to_string());
        assert_eq!(announced(&member), None);
        let segment = entry(
            "segment",
            "s",
            Resource::project("shop")
                .environment("e")
                .segment("s")
                .to_string(),
        );
        assert_eq!(
            announced(&segment),
            Some(Changed::Segments {
                project: "shop".into(),
                environment: "e".into()
            })
        );
        // Keys from older rules, which the resource cannot be split by safely.
        let loose = entry("flag", "f", flag_wide("sh:op", "f"));
        assert_eq!(announced(&loose), Some(Changed::Everything));
        let loose = entry(
            "environment",
            "e",
            Resource::project("sh:env/x").environment("e").to_string(),
        );
        assert_eq!(announced(&loose), Some(Changed::Everything));
        let loose = entry("project", "s:p", Resource::project("s:p").to_string());
        assert_eq!(announced(&loose), Some(Changed::Everything));
    }
}
