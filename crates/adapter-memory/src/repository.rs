//! [`Repository`] over the in-memory tables of one transaction. The work itself is done by the
//! tables, one module per aggregate; this only adapts it to the port.

use domain::audit::{AuditEntry, AuditPage, AuditQuery};
use domain::custom_role::CustomRole;
use domain::environment::Environment;
use domain::flag::{Flag, FlagFacts};
use domain::id::{AuditEntryId, EnvironmentId, MemberId, ProjectId, TokenId, WebhookId};
use domain::key::{CustomRoleKey, EnvironmentKey, FlagKey, ProjectKey, SegmentKey, TeamKey};
use domain::member::Member;
use domain::project::Project;
use domain::query::{
    CustomRoleQuery, EnvironmentQuery, FlagQuery, MemberQuery, Page, ProjectQuery, SegmentQuery,
    TeamQuery,
};
use domain::segment::Segment;
use domain::team::{MembershipStep, Team};
use domain::token::{EnvironmentCredential, Token};
use domain::webhook::{DeliveryAttempt, Webhook};
use ports::{
    AccountRepository, AuditRepository, Changed, ClaimedDelivery, CustomRoleRepository,
    DeliveryOutcome, EnvironmentRepository, FlagDefaults, FlagDependent, FlagEnvironmentFacts,
    FlagRepository, KeyedFlagConfig, Listed, Locked, MemberRepository, ProjectEnvironment,
    ProjectRepository, QueuedDelivery, SdkKeyHolder, SegmentRepository, SegmentUser, StoreResult,
    TeamRepository, TokenMatch, TokenRepository, WebhookRepository,
};

use crate::Tables;

/// A [`Repository`] inside one transaction of a [`crate::MemoryStore`]: it reads and writes the
/// transaction's own copy of the tables. Objects need no row locks: write transactions run one
/// at a time, so what one reads stays as it is until it ends.
#[derive(Debug)]
pub struct MemoryRepository<'t> {
    pub(crate) tables: &'t mut Tables,
    /// What this transaction announced, told once it commits.
    pub(crate) announced: Vec<Changed>,
}

impl<'t> MemoryRepository<'t> {
    pub(crate) fn new(tables: &'t mut Tables) -> Self {
        Self {
            tables,
            announced: Vec::new(),
        }
    }
}

/// Every item held, as a write transaction holds everything it reads.
fn locked<T>(items: Vec<T>) -> Vec<Locked<T>> {
    items.into_iter().map(Locked::assume_locked).collect()
}

impl AccountRepository for MemoryRepository<'_> {
    fn account_id(&mut self) -> StoreResult<Option<String>> {
        Ok(self.tables.account_id())
    }

    fn create_account(&mut self, id: &str) -> StoreResult<()> {
        self.tables.create_account(id);
        Ok(())
    }
}

impl MemberRepository for MemoryRepository<'_> {
    fn find_owner(&mut self) -> StoreResult<Option<Member>> {
        Ok(self.tables.find_owner())
    }

    fn insert_member(&mut self, member: &Member) -> StoreResult<()> {
        self.tables.insert_member(member)
    }

    fn get_member(&mut self, id: &MemberId) -> StoreResult<Option<Member>> {
        Ok(self.tables.get_member(id))
    }

    fn get_members(&mut self, ids: &[&MemberId]) -> StoreResult<Vec<Member>> {
        Ok(self.tables.get_members(ids))
    }

    fn lock_members(&mut self, ids: &[&MemberId]) -> StoreResult<Vec<Locked<Member>>> {
        Ok(locked(self.tables.get_members(ids)))
    }

    fn list_members(&mut self, query: &MemberQuery) -> StoreResult<Listed<Member>> {
        Ok(listed(self.tables.list_members(query)))
    }

    fn taken_emails(&mut self, emails: &[String]) -> StoreResult<Vec<String>> {
        Ok(self.tables.taken_emails(emails))
    }

    fn members_with_custom_role(
        &mut self,
        key: &CustomRoleKey,
        limit: u32,
    ) -> StoreResult<Vec<String>> {
        Ok(self.tables.members_with_custom_role(key.as_str(), limit))
    }

    fn update_member(&mut self, member: &Locked<Member>) -> StoreResult<()> {
        self.tables.update_member(member);
        Ok(())
    }

    fn delete_member(&mut self, member: &Locked<Member>) -> StoreResult<()> {
        self.tables.delete_member(&member.id);
        Ok(())
    }
}

impl TokenRepository for MemoryRepository<'_> {
    fn insert_token(&mut self, token: &Token, secret_hash: &str) -> StoreResult<()> {
        self.tables.insert_token(token, secret_hash)
    }

    fn find_token_by_hash(
        &mut self,
        secret_hash: &str,
        now: i64,
    ) -> StoreResult<Option<TokenMatch>> {
        Ok(self.tables.find_token_by_hash(secret_hash, now).map(
            |(token, member, previous_secret_expires_at)| TokenMatch {
                token,
                member,
                previous_secret_expires_at,
            },
        ))
    }

    fn list_secret_hashes(&mut self, now: i64) -> StoreResult<Vec<String>> {
        Ok(self.tables.list_secret_hashes(now))
    }

    fn get_token(&mut self, id: &TokenId) -> StoreResult<Option<Token>> {
        Ok(self.tables.get_token(id))
    }

    fn lock_token(&mut self, id: &TokenId) -> StoreResult<Option<Locked<Token>>> {
        Ok(self.tables.get_token(id).map(Locked::assume_locked))
    }

    fn list_tokens(
        &mut self,
        member_id: Option<&MemberId>,
        page: Page,
    ) -> StoreResult<Listed<Token>> {
        Ok(listed(self.tables.list_tokens(member_id, page)))
    }

    fn update_token(&mut self, token: &Locked<Token>) -> StoreResult<()> {
        self.tables.update_token(token);
        Ok(())
    }

    fn tokens_with_custom_role(
        &mut self,
        id: &domain::id::CustomRoleId,
        limit: u32,
    ) -> StoreResult<Vec<String>> {
        Ok(self.tables.tokens_with_custom_role(id.as_str(), limit))
    }

    fn reset_token_secret(
        &mut self,
        token: &Locked<Token>,
        secret_hash: &str,
        previous_valid_until: Option<i64>,
    ) -> StoreResult<()> {
        self.tables
            .reset_token_secret(token, secret_hash, previous_valid_until)
    }

    fn record_token_use(
        &mut self,
        token_id: &TokenId,
        member_id: &MemberId,
        now: i64,
    ) -> StoreResult<()> {
        self.tables.record_token_use(token_id, member_id, now);
        Ok(())
    }

    fn delete_token(&mut self, token: &Locked<Token>) -> StoreResult<()> {
        self.tables.delete_token(&token.id);
        Ok(())
    }

    fn reassign_service_tokens(&mut self, from: &MemberId, to: &MemberId) -> StoreResult<()> {
        self.tables.reassign_service_tokens(from, to)
    }
}

impl ProjectRepository for MemoryRepository<'_> {
    fn insert_project(&mut self, project: &Project) -> StoreResult<()> {
        self.tables.insert_project(project)
    }

    fn get_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Project>> {
        Ok(self.tables.get_project(key))
    }

    fn lock_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Locked<Project>>> {
        Ok(self.tables.get_project(key).map(Locked::assume_locked))
    }

    fn share_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Project>> {
        // Write transactions run one at a time here: held as a lock is.
        Ok(self.tables.get_project(key))
    }

    fn list_projects(&mut self, query: &ProjectQuery) -> StoreResult<Listed<Project>> {
        Ok(listed(self.tables.list_projects(query)))
    }

    fn update_project(&mut self, project: &Locked<Project>) -> StoreResult<()> {
        self.tables.update_project(project)
    }

    fn delete_project(&mut self, project: &Locked<Project>) -> StoreResult<()> {
        self.tables.delete_project(&project.id);
        Ok(())
    }
}

impl EnvironmentRepository for MemoryRepository<'_> {
    fn insert_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Environment,
    ) -> StoreResult<()> {
        self.tables.insert_environment(project_id, environment)
    }

    fn get_environment(
        &mut self,
        project_id: &ProjectId,
        key: &EnvironmentKey,
    ) -> StoreResult<Option<Environment>> {
        Ok(self.tables.get_environment(project_id, key))
    }

    fn lock_environment(
        &mut self,
        project_id: &ProjectId,
        key: &EnvironmentKey,
    ) -> StoreResult<Option<Locked<Environment>>> {
        Ok(self
            .tables
            .get_environment(project_id, key)
            .map(Locked::assume_locked))
    }

    fn list_environments(
        &mut self,
        project_id: &ProjectId,
        query: &EnvironmentQuery,
    ) -> StoreResult<Listed<Environment>> {
        Ok(listed(self.tables.list_environments(project_id, query)))
    }

    fn environments_of(
        &mut self,
        project_ids: &[ProjectId],
    ) -> StoreResult<Vec<ProjectEnvironment>> {
        Ok(self
            .tables
            .environments_of(project_ids)
            .into_iter()
            .map(|(project_id, environment)| ProjectEnvironment {
                project_id,
                environment,
            })
            .collect())
    }

    fn update_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Locked<Environment>,
    ) -> StoreResult<()> {
        self.tables.update_environment(project_id, environment)
    }

    fn delete_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Locked<Environment>,
    ) -> StoreResult<()> {
        self.tables.delete_environment(project_id, &environment.id);
        Ok(())
    }

    fn find_environment_credential(
        &mut self,
        secret: &str,
    ) -> StoreResult<Option<EnvironmentCredential>> {
        Ok(self.tables.find_environment_credential(secret))
    }

    fn retire_environment_key(
        &mut self,
        environment_id: &EnvironmentId,
        key: &str,
        kind: EnvironmentCredential,
        expires_at: i64,
    ) -> StoreResult<()> {
        self.tables
            .retire_environment_key(environment_id, key, kind, expires_at)
    }

    fn environment_of_sdk_key(&mut self, secret: &str) -> StoreResult<Option<SdkKeyHolder>> {
        Ok(self.tables.environment_of_sdk_key(secret))
    }
}

impl FlagRepository for MemoryRepository<'_> {
    fn insert_flag(&mut self, project_id: &ProjectId, flag: &Flag) -> StoreResult<()> {
        self.tables.insert_flag(project_id, flag)
    }

    fn get_flag(&mut self, project_id: &ProjectId, key: &FlagKey) -> StoreResult<Option<Flag>> {
        Ok(self.tables.get_flag(project_id, key))
    }

    fn lock_flag(
        &mut self,
        project_id: &ProjectId,
        key: &FlagKey,
    ) -> StoreResult<Option<Locked<Flag>>> {
        Ok(self
            .tables
            .get_flag(project_id, key)
            .map(Locked::assume_locked))
    }

    fn lock_flags(&mut self, project_id: &ProjectId) -> StoreResult<Vec<Locked<Flag>>> {
        Ok(locked(self.tables.all_flags(project_id)))
    }

    fn find_flag(&mut self, project_key: &ProjectKey, key: &FlagKey) -> StoreResult<Option<Flag>> {
        Ok(self.tables.find_flag(project_key, key))
    }

    fn lock_flag_by_keys(
        &mut self,
        project_key: &ProjectKey,
        key: &FlagKey,
    ) -> StoreResult<Option<(ProjectId, Locked<Flag>)>> {
        let Some(project) = self.get_project(project_key)? else {
            return Ok(None);
        };
        Ok(self
            .tables
            .get_flag(&project.id, key)
            .map(|flag| (project.id, Locked::assume_locked(flag))))
    }

    fn list_flags(
        &mut self,
        project_id: &ProjectId,
        query: &FlagQuery,
        environments: &[String],
    ) -> StoreResult<Listed<Flag>> {
        Ok(listed(self.tables.list_flags(
            project_id,
            query,
            environments,
        )))
    }

    fn update_flag(
        &mut self,
        project_id: &ProjectId,
        flag: &Locked<Flag>,
        previous: &Flag,
    ) -> StoreResult<()> {
        let changed: Vec<String> = flag
            .environments
            .iter()
            .filter(|(key, config)| previous.environments.get(*key) != Some(*config))
            .map(|(key, _)| key.clone())
            .collect();
        self.tables.update_flag(project_id, flag, &changed)
    }

    fn delete_flag(&mut self, project_id: &ProjectId, flag: &Locked<Flag>) -> StoreResult<()> {
        self.tables.delete_flag(project_id, &flag.key);
        Ok(())
    }

    fn flag_facts(&mut self, project_id: &ProjectId) -> StoreResult<Vec<FlagFacts>> {
        Ok(self.tables.flag_facts(project_id))
    }

    fn flag_status_facts(
        &mut self,
        project_id: &ProjectId,
        flag: Option<&FlagKey>,
        environments: &[String],
    ) -> StoreResult<Vec<FlagEnvironmentFacts>> {
        Ok(self
            .tables
            .flag_status_facts(project_id, flag.map(FlagKey::as_str), environments)
            .into_iter()
            .map(|(flag_key, environment_key, facts)| FlagEnvironmentFacts {
                flag_key,
                environment_key,
                facts,
            })
            .collect())
    }

    fn flag_dependents(
        &mut self,
        project_id: &ProjectId,
        key: &FlagKey,
    ) -> StoreResult<Vec<FlagDependent>> {
        Ok(self
            .tables
            .flag_dependents(project_id, key)
            .into_iter()
            .map(|(flag_key, flag_name, environment_key)| FlagDependent {
                flag_key,
                flag_name,
                environment_key,
            })
            .collect())
    }

    fn flag_defaults(&mut self, project_id: &ProjectId) -> StoreResult<Vec<FlagDefaults>> {
        Ok(self
            .tables
            .flag_defaults(project_id)
            .into_iter()
            .map(|(flag_key, defaults)| FlagDefaults { flag_key, defaults })
            .collect())
    }

    fn insert_flag_configs(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        configs: &[KeyedFlagConfig],
    ) -> StoreResult<()> {
        self.tables
            .insert_flag_configs(project_id, environment_key, configs)
    }
}

impl SegmentRepository for MemoryRepository<'_> {
    fn insert_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        segment: &Segment,
    ) -> StoreResult<()> {
        self.tables
            .insert_segment(project_id, environment_key, segment)
    }

    fn get_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Option<Segment>> {
        Ok(self.tables.get_segment(project_id, environment_key, key))
    }

    fn lock_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Option<Locked<Segment>>> {
        Ok(self
            .tables
            .get_segment(project_id, environment_key, key)
            .map(Locked::assume_locked))
    }

    fn lock_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
    ) -> StoreResult<Vec<Locked<Segment>>> {
        Ok(locked(
            self.tables.all_segments(project_id, environment_key),
        ))
    }

    fn segments_of_environment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
    ) -> StoreResult<Vec<Segment>> {
        Ok(self.tables.all_segments(project_id, environment_key))
    }

    fn list_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        query: &SegmentQuery,
    ) -> StoreResult<Listed<Segment>> {
        Ok(listed(self.tables.list_segments(
            project_id,
            environment_key,
            query,
        )))
    }

    fn update_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        segment: &Locked<Segment>,
    ) -> StoreResult<()> {
        self.tables
            .update_segment(project_id, environment_key, segment)
    }

    fn delete_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        segment: &Locked<Segment>,
    ) -> StoreResult<()> {
        self.tables
            .delete_segment(project_id, environment_key, &segment.key);
        Ok(())
    }

    fn segment_users(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Vec<SegmentUser>> {
        Ok(self
            .tables
            .segment_users(project_id, environment_key, key)
            .into_iter()
            .map(|(flag_key, flag_name)| SegmentUser {
                flag_key,
                flag_name,
            })
            .collect())
    }

    fn existing_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        keys: &[String],
    ) -> StoreResult<Vec<String>> {
        Ok(self
            .tables
            .existing_segments(project_id, environment_key, keys))
    }
}

impl AuditRepository for MemoryRepository<'_> {
    fn insert_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<()> {
        self.tables.insert_audit_entry(entry)
    }

    fn append_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<Vec<Webhook>> {
        self.tables.insert_audit_entry(entry)?;
        Ok(self.tables.list_webhooks())
    }

    fn page_audit_entries(&mut self, query: &AuditQuery) -> StoreResult<AuditPage> {
        Ok(self.tables.page_audit_entries(query))
    }

    fn get_audit_entry(&mut self, id: &AuditEntryId) -> StoreResult<Option<AuditEntry>> {
        Ok(self.tables.get_audit_entry(id))
    }

    fn announce(&mut self, changed: &Changed) -> StoreResult<()> {
        self.announced.push(changed.clone());
        Ok(())
    }
}

impl WebhookRepository for MemoryRepository<'_> {
    fn insert_webhook(&mut self, webhook: &Webhook, now: i64) -> StoreResult<()> {
        self.tables.insert_webhook(webhook, now)
    }

    fn get_webhook(&mut self, id: &WebhookId) -> StoreResult<Option<Webhook>> {
        Ok(self.tables.get_webhook(id))
    }

    fn lock_webhook(&mut self, id: &WebhookId) -> StoreResult<Option<Locked<Webhook>>> {
        Ok(self.tables.get_webhook(id).map(Locked::assume_locked))
    }

    fn list_webhooks(&mut self) -> StoreResult<Vec<Webhook>> {
        Ok(self.tables.list_webhooks())
    }

    fn update_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()> {
        self.tables.update_webhook(webhook);
        Ok(())
    }

    fn delete_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()> {
        self.tables.delete_webhook(&webhook.id);
        Ok(())
    }

    fn enqueue_delivery(&mut self, delivery: &QueuedDelivery) -> StoreResult<()> {
        self.tables.enqueue_delivery(delivery)
    }

    fn claim_deliveries(
        &mut self,
        now: i64,
        lease_until: i64,
        limit: u32,
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        Ok(self.tables.claim_deliveries(now, lease_until, limit))
    }

    fn record_attempt(
        &mut self,
        attempt: &DeliveryAttempt,
        webhook_id: &WebhookId,
        outcome: DeliveryOutcome,
    ) -> StoreResult<()> {
        self.tables.record_attempt(attempt, webhook_id, outcome)
    }

    fn list_attempts(
        &mut self,
        webhook_id: &WebhookId,
        limit: u32,
    ) -> StoreResult<Vec<DeliveryAttempt>> {
        Ok(self.tables.list_attempts(webhook_id, limit))
    }

    fn outbox_depth(&mut self) -> StoreResult<ports::OutboxDepth> {
        Ok(self.tables.outbox_depth())
    }
}

impl CustomRoleRepository for MemoryRepository<'_> {
    fn insert_custom_role(&mut self, role: &CustomRole, now: i64) -> StoreResult<()> {
        self.tables.insert_custom_role(role, now)
    }

    fn get_custom_role(&mut self, key: &CustomRoleKey) -> StoreResult<Option<CustomRole>> {
        Ok(self.tables.get_custom_role(key.as_str()))
    }

    fn get_custom_roles(&mut self, keys: &[String]) -> StoreResult<Vec<CustomRole>> {
        Ok(keys
            .iter()
            .filter_map(|key| self.tables.get_custom_role(key))
            .collect())
    }

    fn get_custom_roles_by_id(
        &mut self,
        ids: &[domain::id::CustomRoleId],
    ) -> StoreResult<Vec<CustomRole>> {
        Ok(self.tables.get_custom_roles_by_id(ids))
    }

    fn lock_custom_role(&mut self, key: &CustomRoleKey) -> StoreResult<Option<Locked<CustomRole>>> {
        Ok(self
            .tables
            .get_custom_role(key.as_str())
            .map(Locked::assume_locked))
    }

    fn list_custom_roles(&mut self, query: &CustomRoleQuery) -> StoreResult<Listed<CustomRole>> {
        Ok(listed(self.tables.list_custom_roles(query)))
    }

    fn update_custom_role(&mut self, role: &Locked<CustomRole>) -> StoreResult<()> {
        self.tables.update_custom_role(role);
        Ok(())
    }

    fn delete_custom_role(&mut self, role: &Locked<CustomRole>) -> StoreResult<()> {
        self.tables.delete_custom_role(role.key.as_str());
        Ok(())
    }
}

/// A page of a listing, from the tables' `(items, total)`.
fn listed<T>((items, total): (Vec<T>, u64)) -> Listed<T> {
    Listed::new(items, total)
}

impl TeamRepository for MemoryRepository<'_> {
    fn insert_team(&mut self, team: &Team) -> StoreResult<()> {
        self.tables.insert_team(team)
    }

    fn get_team(&mut self, key: &TeamKey) -> StoreResult<Option<Team>> {
        Ok(self.tables.get_team(key.as_str()))
    }

    fn get_teams(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<Team>> {
        Ok(keys
            .iter()
            .filter_map(|key| self.tables.get_team(key.as_str()))
            .collect())
    }

    fn lock_teams(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<Locked<Team>>> {
        let mut keys = keys.to_vec();
        keys.sort();
        keys.dedup();
        Ok(locked(
            keys.into_iter()
                .filter_map(|key| self.tables.get_team(key.as_str()))
                .collect(),
        ))
    }

    fn list_teams(&mut self, query: &TeamQuery) -> StoreResult<Listed<Team>> {
        Ok(listed(self.tables.list_teams(query)))
    }

    fn count_team_members(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<u64>> {
        Ok(keys
            .iter()
            .map(|key| self.tables.count_team_members(key.as_str()))
            .collect())
    }

    fn update_team(&mut self, team: &Locked<Team>) -> StoreResult<()> {
        self.tables.update_team(team);
        Ok(())
    }

    fn change_team_members(
        &mut self,
        team: &Locked<Team>,
        step: &MembershipStep,
    ) -> StoreResult<bool> {
        self.tables.change_team_members(team.key.as_str(), step)
    }

    fn delete_team(&mut self, team: &Locked<Team>) -> StoreResult<()> {
        self.tables.delete_team(team.key.as_str());
        Ok(())
    }

    fn teams_with_custom_role(
        &mut self,
        key: &CustomRoleKey,
        limit: u32,
    ) -> StoreResult<Vec<String>> {
        Ok(self.tables.teams_with_custom_role(key.as_str(), limit))
    }
}
