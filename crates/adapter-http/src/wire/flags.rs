//! Flags as the API shows them: `Flag` with its `_links` and `_maintainer`, each environment's
//! `FlagConfig` with its `_site` and `_summary`, and the collections around them.
//!
//! The domain's [`domain::flag::Flag`] is the document a patch applies to; what is added here is
//! presentation, derived on every answer and never stored.

use std::collections::BTreeMap;

use crate::wire::link::{Link, Links};
use domain::flag::{
    ConfigSummary, CustomProperty, Defaults, Experiments, FlagKind, Prerequisite, Rule, Target,
    Variation, VariationOrRollout,
};
use domain::project::ClientSideAvailability;
use domain::role::Role;
use serde::Serialize;

use serde_json::Value;

use super::hrefs::member_href;
use super::hrefs::{flag_href, flags_href};

/// The UI page of flag `key` in environment `environment_key` of project `project_key`.
pub fn flag_site(project_key: &str, environment_key: &str, key: &str) -> Link {
    Link::site(format!("/{project_key}/{environment_key}/features/{key}"))
}

/// A feature flag with its configuration in each environment of its project.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Flag {
    /// Unique within the project; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// `boolean` or `multivariate`.
    pub kind: FlagKind,
    /// Grows by one with every change, in any environment.
    #[serde(rename = "_version")]
    pub version: i64,
    /// Creation time (epoch ms).
    pub creation_date: i64,
    /// The values the flag can serve; rules and targets refer to them by index. At most 1000.
    #[schema(min_items = 2, max_items = 1000)]
    pub variations: Vec<Variation>,
    /// Temporary flags are meant to be removed after a release.
    pub temporary: bool,
    /// Sorted, unique tags.
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
    /// Archived flags are hidden from the live list.
    pub archived: bool,
    /// When it was archived (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub archived_date: Option<i64>,
    /// Deprecated flags are on their way out.
    pub deprecated: bool,
    /// When it was deprecated (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub deprecated_date: Option<i64>,
    /// Custom properties by key.
    pub custom_properties: BTreeMap<String, CustomProperty>,
    /// Always `{baselineIdx: 0, items: []}` here.
    pub experiments: Experiments,
    /// Which client-side SDKs may see the flag.
    pub client_side_availability: ClientSideAvailability,
    /// Deprecated mirror of `clientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet: bool,
    /// Variations used for new environments.
    pub defaults: Defaults,
    /// The maintaining member's `_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub maintainer_id: Option<String>,
    /// The maintaining member, when `maintainerId` names a member of the account (derived: filled
    /// in by the service on every read, never stored).
    #[serde(
        rename = "_maintainer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub maintainer: Option<MemberSummary>,
    /// The maintaining team's key (a flag has a maintaining member or team, not both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub maintainer_team_key: Option<String>,
    /// The maintaining team, while `maintainerTeamKey` names a team of the account (derived:
    /// filled in by the service on every read, never stored).
    #[serde(
        rename = "_maintainerTeam",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub maintainer_team: Option<TeamSummary>,
    /// `parent` and `self`.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    #[serde(rename = "_links")]
    pub links: Links,
    /// Per-environment configuration, by environment key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environments: BTreeMap<String, FlagConfig>,
}

impl Flag {
    /// Flag `flag` of project `project_key`, with `maintainers` as its `_maintainer` and
    /// `_maintainerTeam`.
    pub fn of(
        project_key: &str,
        flag: domain::flag::Flag,
        maintainers: &service::Maintainers,
    ) -> Self {
        let variations = flag.variations.len();
        let environments = flag
            .environments
            .into_iter()
            .map(|(env_key, config)| {
                let site = flag_site(project_key, &env_key, &flag.key);
                let config = FlagConfig::of(config, site, variations);
                (env_key, config)
            })
            .collect();
        Self {
            links: Links::from([
                ("parent".to_owned(), Link::api(flags_href(project_key))),
                (
                    "self".to_owned(),
                    Link::api(flag_href(project_key, &flag.key)),
                ),
            ]),
            key: flag.key.into_string(),
            name: flag.name,
            description: flag.description,
            kind: flag.kind,
            version: flag.version,
            creation_date: flag.creation_date,
            variations: flag.variations,
            temporary: flag.temporary,
            tags: flag.tags,
            archived: flag.archived,
            archived_date: flag.archived_date,
            deprecated: flag.deprecated,
            deprecated_date: flag.deprecated_date,
            custom_properties: flag.custom_properties,
            experiments: flag.experiments,
            client_side_availability: flag.client_side_availability,
            include_in_snippet: flag.include_in_snippet,
            defaults: flag.defaults,
            maintainer_id: flag.maintainer_id,
            maintainer: maintainers.member.as_ref().map(MemberSummary::from),
            maintainer_team_key: flag.maintainer_team_key,
            maintainer_team: maintainers.team.as_ref().map(TeamSummary::from),
            environments,
        }
    }
}

impl From<(&str, service::FlagView)> for Flag {
    fn from((project_key, view): (&str, service::FlagView)) -> Self {
        Self::of(project_key, view.flag, &view.maintainers)
    }
}

/// A flag's configuration in one environment.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlagConfig {
    /// Targeting on or off.
    pub on: bool,
    /// Archived in this environment.
    pub archived: bool,
    /// Bucketing salt.
    pub salt: String,
    /// Opaque hex.
    pub sel: String,
    /// Last change of this configuration (epoch ms).
    pub last_modified: i64,
    /// Grows by one with every change of this configuration.
    pub version: i64,
    /// Individual targets of context kind `user` (with `contextTargets`: at most 15,000 values).
    #[serde(default)]
    pub targets: Vec<Target>,
    /// Individual targets of other context kinds.
    #[serde(default)]
    pub context_targets: Vec<Target>,
    /// Rules, evaluated in order.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The default rule: served when targeting is on and nothing else matched.
    pub fallthrough: VariationOrRollout,
    /// Index served when targeting is off; without it SDKs serve their fallback value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub off_variation: Option<usize>,
    /// Flags that must serve a given variation before this one is evaluated (at most 100).
    #[serde(default)]
    #[schema(max_items = 100)]
    pub prerequisites: Vec<Prerequisite>,
    /// Send full events for every evaluation.
    #[serde(default)]
    #[schema(required = true)]
    pub track_events: bool,
    /// Send full events for fallthrough evaluations.
    #[serde(default)]
    #[schema(required = true)]
    pub track_events_fallthrough: bool,
    /// The UI page of this configuration.
    #[serde(rename = "_site")]
    pub site: Link,
    /// The environment's display name.
    #[serde(rename = "_environmentName", default)]
    #[schema(required = true)]
    pub environment_name: String,
    /// How the configuration uses each variation (derived; recomputed after every change).
    #[serde(rename = "_summary", default)]
    pub summary: ConfigSummary,
}

impl FlagConfig {
    /// `config` of a flag with `variations` variations, whose UI page is `site`.
    fn of(config: domain::flag::FlagConfig, site: Link, variations: usize) -> Self {
        Self {
            summary: config.summary(variations),
            on: config.on,
            archived: config.archived,
            salt: config.salt,
            sel: config.sel,
            last_modified: config.last_modified,
            version: config.version,
            targets: config.targets,
            context_targets: config.context_targets,
            rules: config.rules,
            fallthrough: config.fallthrough,
            off_variation: config.off_variation,
            prerequisites: config.prerequisites,
            track_events: config.track_events,
            track_events_fallthrough: config.track_events_fallthrough,
            site,
            environment_name: config.environment_name,
        }
    }
}

/// A team in brief, as a flag's `_maintainerTeam` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct TeamSummary {
    /// `self`: the team.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// The team's key.
    pub key: String,
    /// The team's name.
    pub name: String,
}

impl From<&domain::team::Team> for TeamSummary {
    fn from(team: &domain::team::Team) -> Self {
        Self {
            links: Links::from([(
                "self".to_owned(),
                Link::api(super::hrefs::team_href(&team.key)),
            )]),
            key: team.key.to_string(),
            name: team.name.clone(),
        }
    }
}

/// A member in brief, as other resources show it (a flag's `_maintainer`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberSummary {
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// The member's `_id`.
    #[serde(rename = "_id")]
    pub id: String,
    /// Given name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub last_name: Option<String>,
    /// The member's base role.
    pub role: Role,
    /// Email.
    pub email: String,
}

impl From<&domain::member::Member> for MemberSummary {
    fn from(member: &domain::member::Member) -> Self {
        Self {
            links: Links::from([("self".to_owned(), Link::api(member_href(&member.id)))]),
            id: member.id.to_string(),
            first_name: member.first_name.clone(),
            last_name: member.last_name.clone(),
            role: member.role,
            email: member.email.clone(),
        }
    }
}

/// A page of flags. In summary mode (the default) each environment's `targets`,
/// `contextTargets`, `rules` and `prerequisites` are left out.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FeatureFlags {
    /// The flags.
    #[schema(value_type = Vec<Flag>)]
    pub items: Vec<Value>,
    /// All matches.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
    /// Paging links.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    #[serde(rename = "_links")]
    pub links: Links,
}

crate::wire::page::collection_of!(FeatureFlags, Value);

/// Per-environment fields left out of summary listings.
const DETAIL_FIELDS: [&str; 4] = ["targets", "contextTargets", "rules", "prerequisites"];

impl Flag {
    /// The flag as a list item: in summary mode without each environment's
    /// [`DETAIL_FIELDS`].
    ///
    /// # Errors
    /// When the flag cannot be serialised (it always can: string keys, no custom serialisers).
    pub fn list_item(&self, summary: bool) -> Result<Value, serde_json::Error> {
        let mut value = serde_json::to_value(self)?;
        if summary {
            if let Some(Value::Object(environments)) = value.get_mut("environments") {
                for config in environments.values_mut() {
                    if let Value::Object(fields) = config {
                        for field in DETAIL_FIELDS {
                            fields.remove(field);
                        }
                    }
                }
            }
        }
        Ok(value)
    }
}

/// Flag `view` of project `project_key` as `caller` may see it: the maintaining member's
/// email, name and role (`_maintainer`) only for a caller who may see that member, the
/// maintaining team's name (`_maintainerTeam`) only for one who may see that team (the
/// `maintainerId` and `maintainerTeamKey` stay).
pub fn flag_shown_to(
    caller: &service::Caller,
    project_key: &str,
    mut view: service::FlagView,
) -> Flag {
    if caller.sees_every_member() {
        return Flag::from((project_key, view));
    }
    if view
        .maintainers
        .member
        .as_ref()
        .is_some_and(|member| !caller.may_view_member(member.id.as_str()))
    {
        view.maintainers.member = None;
    }
    if view
        .maintainers
        .team
        .as_ref()
        .is_some_and(|team| !caller.may_view_team(team.key.as_str()))
    {
        view.maintainers.team = None;
    }
    Flag::from((project_key, view))
}

/// An environment where a flag uses another as a prerequisite.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DependentFlagEnvironment {
    /// The environment's key.
    pub key: String,
    /// `self`: the dependent flag.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// The dependent flag's UI page in that environment.
    #[serde(rename = "_site")]
    pub site: Link,
}

/// A flag that uses another as a prerequisite.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DependentFlagRep {
    /// Its key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Environments where it has the prerequisite.
    pub environments: Vec<DependentFlagEnvironment>,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

/// Flags that use a flag as a prerequisite.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DependentFlags {
    /// The dependent flags, by key.
    pub items: Vec<DependentFlagRep>,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// The prerequisite flag's UI page (in every environment).
    #[serde(rename = "_site")]
    pub site: Link,
}

impl DependentFlags {
    /// The flags of project `project_key` that depend on flag `flag_key`, answered at `path`.
    pub fn of(
        project_key: &str,
        flag_key: &str,
        path: &str,
        dependents: Vec<service::DependentFlag>,
    ) -> Self {
        let items = dependents
            .into_iter()
            .map(|d| {
                let href = flag_href(project_key, &d.key);
                let environments = d
                    .environments
                    .into_iter()
                    .map(|env| DependentFlagEnvironment {
                        links: Links::from([("self".to_owned(), Link::api(href.clone()))]),
                        site: flag_site(project_key, &env, &d.key),
                        key: env,
                    })
                    .collect();
                DependentFlagRep {
                    links: Links::from([("self".to_owned(), Link::api(href))]),
                    key: d.key,
                    name: d.name,
                    environments,
                }
            })
            .collect();
        Self {
            items,
            links: Links::from([("self".to_owned(), Link::api(path.to_owned()))]),
            site: flag_site(project_key, "~", flag_key),
        }
    }
}
