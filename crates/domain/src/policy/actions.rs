//! The action catalogue: every action a statement can name, the kind of resource it is done
//! to, and what it covers. The names are those of the audit log's `accesses`, so a policy
//! statement and a webhook or audit-log filter speak one vocabulary.
//!
//! ```
//! use domain::policy::actions::{self, ResourceKind};
//! let on = actions::find("updateOn", ResourceKind::Flag).unwrap();
//! assert_eq!(on.kind.specifier(), "proj/*:env/*:flag/*");
//! assert!(actions::find("updateOn", ResourceKind::Member).is_none());
//! ```

use std::fmt;

/// The kind of resource an action is done to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    /// The account (`acct`): its ownership, its audit log.
    Account,
    /// A project (`proj/{key}`).
    Project,
    /// An environment of a project (`proj/{key}:env/{key}`).
    Environment,
    /// A flag's configuration in one environment (`proj/{key}:env/{key}:flag/{key}`); a change
    /// to what all environments share is done in every environment (`env/*`).
    Flag,
    /// A segment of an environment (`proj/{key}:env/{key}:segment/{key}`).
    Segment,
    /// An account member (`member/{id}`).
    Member,
    /// A member's access token (`member/{id}:token/{name}`; a service token's member is the
    /// one who created it).
    Token,
    /// A webhook (`webhook/{id}`).
    Webhook,
    /// A custom role (`role/{key}`).
    Role,
    /// A team (`team/{key}`).
    Team,
}

impl ResourceKind {
    /// Every kind, in the order of the catalogue.
    pub const ALL: [ResourceKind; 10] = [
        ResourceKind::Account,
        ResourceKind::Project,
        ResourceKind::Environment,
        ResourceKind::Flag,
        ResourceKind::Segment,
        ResourceKind::Member,
        ResourceKind::Token,
        ResourceKind::Webhook,
        ResourceKind::Role,
        ResourceKind::Team,
    ];

    /// The specifier naming every resource of this kind.
    pub fn specifier(self) -> &'static str {
        match self {
            ResourceKind::Account => "acct",
            ResourceKind::Project => "proj/*",
            ResourceKind::Environment => "proj/*:env/*",
            ResourceKind::Flag => "proj/*:env/*:flag/*",
            ResourceKind::Segment => "proj/*:env/*:segment/*",
            ResourceKind::Member => "member/*",
            ResourceKind::Token => "member/*:token/*",
            ResourceKind::Webhook => "webhook/*",
            ResourceKind::Role => "role/*",
            ResourceKind::Team => "team/*",
        }
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResourceKind::Account => "account",
            ResourceKind::Project => "project",
            ResourceKind::Environment => "environment",
            ResourceKind::Flag => "flag",
            ResourceKind::Segment => "segment",
            ResourceKind::Member => "member",
            ResourceKind::Token => "access token",
            ResourceKind::Webhook => "webhook",
            ResourceKind::Role => "custom role",
            ResourceKind::Team => "team",
        })
    }
}

/// One action of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionInfo {
    /// Its name in statements and audit entries.
    pub name: &'static str,
    /// What it is done to.
    pub kind: ResourceKind,
    /// What it covers, for people.
    pub describe: &'static str,
}

const fn action(name: &'static str, kind: ResourceKind, describe: &'static str) -> ActionInfo {
    ActionInfo {
        name,
        kind,
        describe,
    }
}

use ResourceKind::{
    Account, Environment, Flag, Member, Project, Role as CustomRole, Segment, Team, Token, Webhook,
};

/// Every action, grouped by the kind of resource it is done to.
pub const ALL: &[ActionInfo] = &[
    action("viewAuditLog", Account, "read the audit log"),
    action(
        "transferOwnership",
        Account,
        "transfer the account's ownership",
    ),
    action(
        "viewProject",
        Project,
        "read the project and everything in it: environments, flags, segments",
    ),
    action("createProject", Project, "create the project"),
    action("deleteProject", Project, "delete the project"),
    action("updateName", Project, "rename the project"),
    action("updateTags", Project, "change the project's tags"),
    action(
        "updateDefaultClientSideAvailability",
        Project,
        "change which SDKs new flags are available to",
    ),
    action(
        "updateIncludeInSnippetByDefault",
        Project,
        "change whether new flags are available to client-side SDKs by default",
    ),
    action(
        "updateFlagNamingConvention",
        Project,
        "change the convention new flags' keys must follow",
    ),
    action(
        "createEnvironment",
        Environment,
        "create the environment (or clone another into it)",
    ),
    action(
        "cloneEnvironment",
        Environment,
        "clone the environment into a new one (needed on the source)",
    ),
    action("deleteEnvironment", Environment, "delete the environment"),
    action("updateName", Environment, "rename the environment"),
    action(
        "updateColor",
        Environment,
        "change the environment's colour",
    ),
    action("updateTtl", Environment, "change the environment's TTL"),
    action(
        "updateSecureMode",
        Environment,
        "turn secure mode on or off",
    ),
    action(
        "updateDefaultTrackEvents",
        Environment,
        "change whether new flags send detailed events",
    ),
    action(
        "updateRequireComments",
        Environment,
        "change whether changes need a comment",
    ),
    action(
        "updateConfirmChanges",
        Environment,
        "change whether changes need a confirmation",
    ),
    action(
        "updateCritical",
        Environment,
        "mark the environment critical or not",
    ),
    action("updateTags", Environment, "change the environment's tags"),
    action(
        "updateApiKey",
        Environment,
        "reset the environment's SDK key",
    ),
    action(
        "updateMobileKey",
        Environment,
        "reset the environment's mobile key",
    ),
    action(
        "createFlag",
        Flag,
        "create the flag (in every environment: `env/*`), or clone one into it",
    ),
    action("deleteFlag", Flag, "delete the flag (in every environment)"),
    action(
        "cloneFlag",
        Flag,
        "clone the flag into a new one (needed on the source, in every environment)",
    ),
    action("updateName", Flag, "rename the flag"),
    action("updateDescription", Flag, "change the flag's description"),
    action("updateTags", Flag, "change the flag's tags"),
    action(
        "updateTemporary",
        Flag,
        "mark the flag temporary or permanent",
    ),
    action(
        "updateFlagVariations",
        Flag,
        "add, change or remove variations",
    ),
    action(
        "updateFlagDefaults",
        Flag,
        "change the variations new environments start with",
    ),
    action(
        "updateMaintainer",
        Flag,
        "change the flag's maintainer (member or team)",
    ),
    action(
        "updateClientSideFlagAvailability",
        Flag,
        "change which SDKs the flag is available to",
    ),
    action(
        "updateFlagCustomProperties",
        Flag,
        "change the flag's custom properties",
    ),
    action("updateGlobalArchived", Flag, "archive or restore the flag"),
    action("updateDeprecated", Flag, "deprecate the flag or undo it"),
    action(
        "updateOn",
        Flag,
        "turn targeting on or off in the environment",
    ),
    action("updateRules", Flag, "change the rules in the environment"),
    action(
        "updateFallthrough",
        Flag,
        "change the default rule (fallthrough) in the environment",
    ),
    action(
        "updateOffVariation",
        Flag,
        "change the off variation in the environment",
    ),
    action(
        "updatePrerequisites",
        Flag,
        "change the prerequisites in the environment",
    ),
    action(
        "updateTargets",
        Flag,
        "change the individual targets in the environment",
    ),
    action(
        "updateTrackEvents",
        Flag,
        "change whether the flag sends detailed events in the environment",
    ),
    action(
        "updateTrackEventsFallthrough",
        Flag,
        "change whether the default rule sends detailed events in the environment",
    ),
    action(
        "updateArchived",
        Flag,
        "archive or restore the flag's configuration in the environment (`archiveFlag` and \
         `restoreFlag` do it in every environment)",
    ),
    action(
        "copyFlagConfigFrom",
        Flag,
        "copy the flag's configuration in this environment to another",
    ),
    action(
        "copyFlagConfigTo",
        Flag,
        "copy another environment's configuration onto this one",
    ),
    action("createSegment", Segment, "create the segment"),
    action("deleteSegment", Segment, "delete the segment"),
    action("updateName", Segment, "rename the segment"),
    action(
        "updateDescription",
        Segment,
        "change the segment's description",
    ),
    action("updateTags", Segment, "change the segment's tags"),
    action("updateIncluded", Segment, "change who the segment includes"),
    action("updateExcluded", Segment, "change who the segment excludes"),
    action("updateRules", Segment, "change the segment's rules"),
    action("viewMembers", Member, "list and read members"),
    action("createMember", Member, "invite the member"),
    action("deleteMember", Member, "delete the member"),
    action("updateMemberName", Member, "change the member's name"),
    action("updateMemberRole", Member, "change the member's base role"),
    action(
        "updateCustomRole",
        Member,
        "change the member's custom roles",
    ),
    action("updateMemberTeams", Member, "change the member's teams"),
    action(
        "viewAccessTokens",
        Token,
        "list and read access tokens (never their secrets)",
    ),
    action("createAccessToken", Token, "create the access token"),
    action(
        "updateAccessToken",
        Token,
        "change the token's name, description, role or policy",
    ),
    action("resetAccessToken", Token, "reset the token's secret"),
    action("deleteAccessToken", Token, "delete the access token"),
    action(
        "viewWebhooks",
        Webhook,
        "list and read webhooks and their deliveries",
    ),
    action("createWebhook", Webhook, "create the webhook"),
    action("updateWebhook", Webhook, "change the webhook"),
    action("deleteWebhook", Webhook, "delete the webhook"),
    action("viewRoles", CustomRole, "list and read custom roles"),
    action("createRole", CustomRole, "create the custom role"),
    action(
        "updateRole",
        CustomRole,
        "change the custom role's name, description, policy or base permissions",
    ),
    action("deleteRole", CustomRole, "delete the custom role"),
    action("viewTeams", Team, "list and read teams"),
    action("createTeam", Team, "create the team"),
    action("updateTeamName", Team, "rename the team"),
    action(
        "updateTeamDescription",
        Team,
        "change the team's description",
    ),
    action(
        "updateTeamCustomRoles",
        Team,
        "change the team's custom roles",
    ),
    action("updateTeamMembers", Team, "change the team's members"),
    action("deleteTeam", Team, "delete the team"),
];

/// Actions over policies themselves (giving custom roles, directly or through a team, writing
/// them): a caller needs an
/// `admin` base role for them besides a policy allowing them, since whoever may do them may give
/// itself anything; a policy cannot grant power over policies.
///
/// ```
/// assert!(domain::policy::actions::OVER_POLICIES.contains(&"updateCustomRole"));
/// ```
pub const OVER_POLICIES: [&str; 9] = [
    "updateCustomRole",
    "createRole",
    "updateRole",
    "deleteRole",
    "updateMemberTeams",
    "createTeam",
    "updateTeamCustomRoles",
    "updateTeamMembers",
    "deleteTeam",
];

/// Actions on webhooks, which are sent every change of the account (whatever its project) and
/// whose signing secrets they show: a caller needs an `admin` base role for them besides a
/// policy allowing them, since a policy limited to some projects must not read the others'
/// changes through a webhook, nor forge or silence its deliveries.
pub const ACCOUNT_WIDE: [&str; 4] = [
    "createWebhook",
    "updateWebhook",
    "viewWebhooks",
    "deleteWebhook",
];

/// Flag actions on what every environment of a flag shares: decided on the flag in `env/*` and
/// in each of its environments, so a statement denying one of them in one environment refuses
/// it everywhere. (`createFlag` and `cloneFlag` are decided on `env/*` alone; every other flag
/// action, in the environment it changes.)
///
/// ```
/// assert!(domain::policy::actions::FLAG_WIDE.contains(&"updateName"));
/// assert!(!domain::policy::actions::FLAG_WIDE.contains(&"updateOn"));
/// ```
pub const FLAG_WIDE: [&str; 12] = [
    "deleteFlag",
    "updateName",
    "updateDescription",
    "updateTags",
    "updateTemporary",
    "updateFlagVariations",
    "updateFlagDefaults",
    "updateMaintainer",
    "updateClientSideFlagAvailability",
    "updateFlagCustomProperties",
    "updateGlobalArchived",
    "updateDeprecated",
];

/// Flag actions decided on the flag in `env/*` alone: creating it, cloning it.
pub const FLAG_CREATION: [&str; 2] = ["createFlag", "cloneFlag"];

/// The action `name` done to a resource of `kind`, if the catalogue has it.
pub fn find(name: &str, kind: ResourceKind) -> Option<&'static ActionInfo> {
    ALL.iter().find(|a| a.name == name && a.kind == kind)
}

/// The actions done to resources of `kind`.
///
/// ```
/// use domain::policy::actions::{of_kind, ResourceKind};
/// assert!(of_kind(ResourceKind::Team).any(|a| a.name == "createTeam"));
/// ```
pub fn of_kind(kind: ResourceKind) -> impl Iterator<Item = &'static ActionInfo> {
    ALL.iter().filter(move |a| a.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_action_is_listed_once_per_kind() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(
                !ALL[..i]
                    .iter()
                    .any(|b| b.name == a.name && b.kind == a.kind),
                "{} on {} twice",
                a.name,
                a.kind
            );
        }
    }

    #[test]
    fn every_kind_has_actions_and_a_valid_specifier() {
        for kind in ResourceKind::ALL {
            assert!(of_kind(kind).next().is_some(), "{kind}");
            super::super::check_specifier(kind.specifier()).unwrap();
        }
    }

    #[test]
    fn the_audit_logs_flag_actions_are_in_the_catalogue() {
        use crate::flag::{Flag, NewFlag};
        use crate::key::FlagKey;
        let mut ids = crate::SequentialIds::default();
        let mut flag = Flag::create(
            NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"),
            1,
            &mut ids,
        )
        .unwrap();
        let config = flag.new_config("production", 1, &mut ids);
        flag.environments.insert("production".into(), config);
        let mut next = flag.clone();
        next.name = "G".into();
        next.description = "d".into();
        next.tags = vec!["t".into()];
        next.temporary = !flag.temporary;
        next.archived = true;
        next.deprecated = true;
        let config = next.environments.get_mut("production").unwrap();
        config.on = true;
        config.track_events = true;
        config.track_events_fallthrough = true;
        config.off_variation = Some(0);
        let accesses = crate::audit::accesses_of(&crate::audit::flag_requests(
            &crate::policy::Resource::project("p"),
            &flag,
            &next,
        ));
        assert!(accesses.len() >= 8, "{accesses:?}");
        for access in accesses {
            assert!(
                find(&access.action, ResourceKind::Flag).is_some(),
                "{} is not in the catalogue",
                access.action
            );
            // `_access` reports FLAG_WIDE actions as decided in every environment: they are
            // the ones a change asks for on `env/*`.
            assert_eq!(
                FLAG_WIDE.contains(&access.action.as_str()),
                access.resource.contains(":env/*:"),
                "{access:?}"
            );
        }
    }
}
