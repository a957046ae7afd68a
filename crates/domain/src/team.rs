//! Teams: groups of members sharing custom roles. A member's permissions are its base role's,
//! its own custom roles' and those of the teams it belongs to.
//!
//! A team's members are not part of its document: membership is a relation between teams and
//! members (a member may be in many teams), which a semantic patch changes step by step
//! ([`MembershipStep`]), so that two administrators adding different members to one team both
//! succeed.
//!
//! ```
//! use domain::team::{Team, TeamPatch, TeamPost, MembershipStep};
//! let team = Team::create(TeamPost { key: "platform".into(), name: "Platform".into(), ..TeamPost::default() }, 1).unwrap();
//! let patch = TeamPatch::parse(serde_json::json!({"instructions": [
//!     {"kind": "addCustomRoles", "values": ["deployer"]},
//!     {"kind": "addMembers", "values": ["5f0c0e0c0e0c0e0c0e0c0e0c"]},
//! ]})).unwrap();
//! let change = team.apply(&patch.instructions).unwrap();
//! assert_eq!(change.team.custom_role_keys, ["deployer"]);
//! assert!(matches!(&change.membership[0], MembershipStep::Add(ids) if ids.len() == 1));
//! // The store says whether the members changed; a change moves the version on once.
//! assert_eq!(change.team.touched(2).version, 2);
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::custom_role::check_custom_roles;
use crate::id::MemberId;
use crate::instruction::InstructionError;
use crate::key::TeamKey;
use crate::{validate_name, FieldError, ValidationError};

/// The longest description of a team, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 4096;

/// The most member ids one request names (in a team's creation, or in all the instructions of
/// one semantic patch together): a request's cost stays bounded.
pub const MAX_MEMBER_IDS: usize = 1000;

/// The most teams a member belongs to: what it holds through them (and what its representation
/// shows) stays bounded.
pub const MAX_TEAMS_PER_MEMBER: usize = 20;

/// A team. Its members are a relation kept by the store (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Team {
    /// Unique in the account; never changes.
    pub key: TeamKey,
    /// Display name.
    pub name: String,
    /// Free text (empty when none was given).
    #[serde(default)]
    pub description: String,
    /// The keys of the custom roles the team's members hold through it (at most
    /// [`crate::custom_role::MAX_CUSTOM_ROLES`]).
    pub custom_role_keys: Vec<String>,
    /// Creation time (epoch ms).
    #[serde(rename = "_creationDate")]
    pub creation_date: i64,
    /// Time of the last change (epoch ms), its members' included.
    #[serde(rename = "_lastModified")]
    pub last_modified: i64,
    /// Starts at 1; every change adds one.
    #[serde(rename = "_version")]
    pub version: u64,
}

/// `POST /teams` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TeamPost {
    /// Unique in the account; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Keys of custom roles the team's members hold through it (at most 50, each naming an
    /// existing role).
    #[serde(default)]
    pub custom_role_keys: Option<Vec<String>>,
    /// `_id`s of its first members (at most 1000, each naming a member).
    #[serde(default, rename = "memberIDs")]
    pub member_ids: Option<Vec<String>>,
}

/// A new team with the members it starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTeam {
    /// The team.
    pub team: Team,
    /// Its first members, each once.
    pub member_ids: Vec<MemberId>,
}

/// A change of a team's members, applied by the store in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MembershipStep {
    /// These members join (those already in stay).
    Add(Vec<MemberId>),
    /// These members leave (those not in are ignored).
    Remove(Vec<MemberId>),
    /// The team's members become exactly these.
    Replace(Vec<MemberId>),
}

impl MembershipStep {
    /// The members the step names.
    pub fn member_ids(&self) -> &[MemberId] {
        match self {
            MembershipStep::Add(ids)
            | MembershipStep::Remove(ids)
            | MembershipStep::Replace(ids) => ids,
        }
    }
}

/// One team instruction, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, strum::EnumDiscriminants)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[strum_discriminants(
    name(TeamInstructionKind),
    derive(strum::EnumIter, strum::IntoStaticStr, strum::VariantNames, Hash),
    strum(serialize_all = "camelCase"),
    allow(missing_docs),
    doc = "The kind of a [`TeamInstruction`] (its `kind`), without its parameters."
)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[allow(missing_docs)]
pub enum TeamInstruction {
    /// Give the team's members these custom roles (keys of existing roles).
    AddCustomRoles { values: Vec<String> },
    /// Take these custom roles (keys) from the team.
    RemoveCustomRoles { values: Vec<String> },
    /// Add these members (`_id`s of existing members).
    AddMembers { values: Vec<String> },
    /// Remove these members (`_id`s).
    RemoveMembers { values: Vec<String> },
    /// Make these members (`_id`s of existing members) the team's only ones.
    ReplaceMembers { values: Vec<String> },
    /// Rename the team.
    UpdateName { value: String },
    /// Change the team's description.
    UpdateDescription { value: String },
}

impl TeamInstruction {
    /// Every team instruction kind.
    pub const KINDS: &'static [&'static str] =
        <TeamInstructionKind as strum::VariantNames>::VARIANTS;

    /// The policy action the instruction needs on the team (see [`crate::policy::actions`]),
    /// decided whether or not it changes anything.
    ///
    /// ```
    /// use domain::team::TeamInstruction;
    /// let i = TeamInstruction::AddMembers { values: vec![] };
    /// assert_eq!(i.action(), "updateTeamMembers");
    /// ```
    pub fn action(&self) -> &'static str {
        TeamInstructionKind::from(self).action()
    }
}

impl TeamInstructionKind {
    /// The policy action an instruction of this kind needs (see [`crate::policy::actions`]).
    pub fn action(self) -> &'static str {
        use TeamInstructionKind::*;
        match self {
            AddCustomRoles | RemoveCustomRoles => "updateTeamCustomRoles",
            AddMembers | RemoveMembers | ReplaceMembers => "updateTeamMembers",
            UpdateName => "updateTeamName",
            UpdateDescription => "updateTeamDescription",
        }
    }
}

impl TeamInstruction {
    fn member_values(&self) -> usize {
        use TeamInstruction::*;
        match self {
            AddMembers { values } | RemoveMembers { values } | ReplaceMembers { values } => {
                values.len()
            }
            _ => 0,
        }
    }
}

/// A team semantic patch: `{comment?, instructions}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamPatch {
    /// A comment for the audit log.
    pub comment: Option<String>,
    /// The instructions, applied in order, all or none.
    pub instructions: Vec<TeamInstruction>,
}

impl TeamPatch {
    /// Reads a team semantic patch body.
    ///
    /// ```
    /// use domain::team::TeamPatch;
    /// assert!(TeamPatch::parse(serde_json::json!({"instructions": [{"kind": "updateName", "value": "Ops"}]})).is_ok());
    /// assert!(TeamPatch::parse(serde_json::json!({"environmentKey": "production", "instructions": [{"kind": "updateName", "value": "Ops"}]})).is_err());
    /// ```
    ///
    /// # Errors
    /// [`InstructionError`] for a missing `instructions`, an `environmentKey` (teams have no
    /// environments), an unknown kind, missing or unknown parameters, or more than
    /// [`MAX_MEMBER_IDS`] member ids in all.
    pub fn parse(body: Value) -> Result<Self, InstructionError> {
        let (environment_key, comment, instructions) =
            crate::instruction::parse_body::<TeamInstruction>(body)?;
        if environment_key.is_some() {
            return Err(InstructionError::Malformed(
                "a team semantic patch has no 'environmentKey': teams belong to the account".into(),
            ));
        }
        let ids: usize = instructions
            .iter()
            .map(TeamInstruction::member_values)
            .sum();
        if ids > MAX_MEMBER_IDS {
            return Err(InstructionError::Malformed(format!(
                "{ids} member ids in one request; at most {MAX_MEMBER_IDS}"
            )));
        }
        Ok(Self {
            comment,
            instructions,
        })
    }
}

/// What a semantic patch makes of a team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamChange {
    /// The team's fields as they become (its version and last change as they were: whether its
    /// members changed is known once the store applied `membership`; see [`Team::touched`]).
    pub team: Team,
    /// The changes of its members, in order.
    pub membership: Vec<MembershipStep>,
}

/// Refuses a list that names a value twice.
fn once_each(at: &str, values: &[String]) -> Result<(), String> {
    match values
        .iter()
        .enumerate()
        .find(|(i, v)| values[..*i].contains(v))
    {
        Some((i, v)) => Err(format!("{at}[{i}]: '{v}' is named twice")),
        None => Ok(()),
    }
}

/// Reads member ids, refusing text that is none and ids given twice.
fn member_ids(at: &str, values: &[String]) -> Result<Vec<MemberId>, String> {
    let mut ids: Vec<MemberId> = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let id = MemberId::parse(value).map_err(|e| format!("{at}[{i}]: {e}"))?;
        if ids.contains(&id) {
            return Err(format!("{at}[{i}]: the member '{value}' is named twice"));
        }
        ids.push(id);
    }
    Ok(ids)
}

impl Team {
    /// A new team (version 1) created at `now`, with the members it starts with.
    ///
    /// ```
    /// use domain::team::{Team, TeamPost};
    /// let post = TeamPost { key: "ops".into(), name: "Ops".into(), member_ids: Some(vec!["x".into()]), ..TeamPost::default() };
    /// assert_eq!(Team::new_team(post, 1).unwrap_err().errors[0].attribute, "memberIDs[0]");
    /// ```
    ///
    /// # Errors
    /// [`ValidationError`] for a bad key, name, description, custom role key or member id.
    pub fn new_team(post: TeamPost, now: i64) -> Result<NewTeam, ValidationError> {
        let mut errors = Vec::new();
        let ids = post.member_ids.clone().unwrap_or_default();
        if ids.len() > MAX_MEMBER_IDS {
            errors.push(FieldError::new(
                "memberIDs",
                format!("at most {MAX_MEMBER_IDS} members at once"),
            ));
        }
        let member_ids = match member_ids("memberIDs", &ids) {
            Ok(ids) => ids,
            Err(reason) => {
                let (at, reason) = reason.split_once(": ").unwrap_or(("memberIDs", &reason));
                errors.push(FieldError::new(at, reason));
                Vec::new()
            }
        };
        let team = match Self::create(post, now) {
            Ok(team) => Some(team),
            Err(e) => {
                errors.extend(e.errors);
                None
            }
        };
        ValidationError::check(errors)?;
        Ok(NewTeam {
            team: team.ok_or_else(|| ValidationError::single("", "invalid team"))?,
            member_ids,
        })
    }

    /// A new team (version 1) created at `now`; its `memberIDs` are left to
    /// [`Team::new_team`].
    ///
    /// # Errors
    /// [`ValidationError`] for a bad key, name, description or custom role key.
    pub fn create(post: TeamPost, now: i64) -> Result<Self, ValidationError> {
        let key =
            TeamKey::parse(&post.key).map_err(|e| ValidationError::single("key", e.to_string()))?;
        let team = Self {
            key,
            name: post.name,
            description: post.description.unwrap_or_default(),
            custom_role_keys: post.custom_role_keys.unwrap_or_default(),
            creation_date: now,
            last_modified: now,
            version: 1,
        };
        team.validate("customRoleKeys")?;
        Ok(team)
    }

    fn validate(&self, roles_at: &str) -> Result<(), ValidationError> {
        let mut errors = Vec::new();
        validate_name("name", &self.name, &mut errors);
        if self.description.chars().count() > MAX_DESCRIPTION_CHARS {
            errors.push(FieldError::new(
                "description",
                format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
            ));
        }
        check_custom_roles(roles_at, &self.custom_role_keys, &mut errors);
        ValidationError::check(errors)
    }

    /// This team changed at `now`: its version moves on by one.
    #[must_use]
    pub fn touched(mut self, now: i64) -> Self {
        self.version += 1;
        self.last_modified = now;
        self
    }

    /// Applies semantic-patch instructions: the team's fields as they become and the changes
    /// of its members. Custom role keys and member ids are checked for form here; whether they
    /// exist is the use case's question.
    ///
    /// # Errors
    /// [`InstructionError::Instruction`] naming the instruction that is ill-formed (a bad key
    /// or id, one named twice, an empty name, more than [`crate::custom_role::MAX_CUSTOM_ROLES`]
    /// roles).
    pub fn apply(&self, instructions: &[TeamInstruction]) -> Result<TeamChange, InstructionError> {
        use TeamInstruction::*;
        let mut team = self.clone();
        let mut membership = Vec::new();
        for (index, instruction) in instructions.iter().enumerate() {
            let fail = |message: String| InstructionError::Instruction { index, message };
            match instruction {
                AddCustomRoles { values } => {
                    once_each("values", values).map_err(fail)?;
                    for key in values {
                        if !team.custom_role_keys.contains(key) {
                            team.custom_role_keys.push(key.clone());
                        }
                    }
                }
                RemoveCustomRoles { values } => {
                    once_each("values", values).map_err(fail)?;
                    team.custom_role_keys.retain(|key| !values.contains(key));
                }
                AddMembers { values } => membership.push(MembershipStep::Add(
                    member_ids("values", values).map_err(fail)?,
                )),
                RemoveMembers { values } => membership.push(MembershipStep::Remove(
                    member_ids("values", values).map_err(fail)?,
                )),
                ReplaceMembers { values } => membership.push(MembershipStep::Replace(
                    member_ids("values", values).map_err(fail)?,
                )),
                UpdateName { value } => team.name = value.clone(),
                UpdateDescription { value } => team.description = value.clone(),
            }
            team.validate("values").map_err(|e| fail(e.to_string()))?;
        }
        Ok(TeamChange { team, membership })
    }
}

/// A team as a member's representation names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberTeam {
    /// The team's key.
    pub key: String,
    /// The team's name.
    pub name: String,
    /// The custom roles the member holds through it.
    pub custom_role_keys: Vec<String>,
}

impl From<&Team> for MemberTeam {
    fn from(team: &Team) -> Self {
        Self {
            key: team.key.to_string(),
            name: team.name.clone(),
            custom_role_keys: team.custom_role_keys.clone(),
        }
    }
}

/// Checks the team keys of a member's invitation or of `POST /members/{id}/teams`: at most
/// [`MAX_TEAMS_PER_MEMBER`], each well-formed, none twice.
///
/// ```
/// let mut errors = Vec::new();
/// domain::team::check_team_keys("teamKeys", &["ops".into(), "ops".into()], &mut errors);
/// assert_eq!(errors[0].attribute, "teamKeys[1]");
/// ```
pub fn check_team_keys(at: &str, keys: &[String], errors: &mut Vec<FieldError>) {
    if keys.len() > MAX_TEAMS_PER_MEMBER {
        errors.push(FieldError::new(
            at,
            format!("at most {MAX_TEAMS_PER_MEMBER} teams at once"),
        ));
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        if let Err(e) = TeamKey::parse(key) {
            errors.push(FieldError::new(format!("{at}[{i}]"), e.to_string()));
        } else if keys[..i].contains(key) {
            errors.push(FieldError::new(
                format!("{at}[{i}]"),
                format!("the team '{key}' is named twice"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team() -> Team {
        Team::create(
            TeamPost {
                key: "ops".into(),
                name: "Ops".into(),
                ..TeamPost::default()
            },
            1,
        )
        .unwrap()
    }

    fn patch(instructions: Value) -> TeamPatch {
        TeamPatch::parse(serde_json::json!({ "instructions": instructions })).unwrap()
    }

    #[test]
    fn instructions_change_the_team_and_its_members_in_order() {
        let id = "5f0c0e0c0e0c0e0c0e0c0e0c";
        let p = patch(serde_json::json!([
            {"kind": "addCustomRoles", "values": ["a", "b"]},
            {"kind": "removeCustomRoles", "values": ["a"]},
            {"kind": "addCustomRoles", "values": ["a"]},
            {"kind": "replaceMembers", "values": [id]},
            {"kind": "removeMembers", "values": [id]},
            {"kind": "updateName", "value": "Operations"},
            {"kind": "updateDescription", "value": "on call"},
        ]));
        let change = team().apply(&p.instructions).unwrap();
        assert_eq!(change.team.custom_role_keys, ["b", "a"]);
        assert_eq!(change.team.name, "Operations");
        assert_eq!(change.team.description, "on call");
        assert_eq!(change.team.version, 1, "the use case moves it on");
        let touched = change.team.touched(5);
        assert_eq!((touched.version, touched.last_modified), (2, 5));
        assert_eq!(change.membership.len(), 2);
        assert!(matches!(change.membership[0], MembershipStep::Replace(_)));
    }

    #[test]
    fn nothing_changed_keeps_the_version() {
        let p = patch(serde_json::json!([{"kind": "removeCustomRoles", "values": ["x"]}]));
        let change = team().apply(&p.instructions).unwrap();
        assert_eq!(change.team, team());
    }

    #[test]
    fn ill_formed_instructions_are_named() {
        for (instructions, index) in [
            (
                serde_json::json!([{"kind": "addMembers", "values": ["nope"]}]),
                0,
            ),
            (
                serde_json::json!([{"kind": "updateName", "value": "x"}, {"kind": "updateName", "value": ""}]),
                1,
            ),
            (
                serde_json::json!([{"kind": "addCustomRoles", "values": ["no way"]}]),
                0,
            ),
            (
                serde_json::json!([{"kind": "addMembers", "values": ["5f0c0e0c0e0c0e0c0e0c0e0c", "5f0c0e0c0e0c0e0c0e0c0e0c"]}]),
                0,
            ),
        ] {
            let p = patch(instructions);
            assert!(
                matches!(team().apply(&p.instructions), Err(InstructionError::Instruction { index: i, .. }) if i == index),
                "{p:?}"
            );
        }
        let too_many: Vec<String> = (0..=crate::custom_role::MAX_CUSTOM_ROLES)
            .map(|i| format!("r{i}"))
            .collect();
        let p = patch(serde_json::json!([{"kind": "addCustomRoles", "values": too_many}]));
        assert!(team().apply(&p.instructions).is_err());
    }

    #[test]
    fn a_patch_names_a_bounded_number_of_members() {
        let ids: Vec<String> = (0..=MAX_MEMBER_IDS).map(|i| format!("{i:024x}")).collect();
        assert!(TeamPatch::parse(
            serde_json::json!({"instructions": [{"kind": "addMembers", "values": ids}]})
        )
        .is_err());
        assert!(
            TeamPatch::parse(serde_json::json!({"instructions": [{"kind": "teleport"}]})).is_err()
        );
    }

    #[test]
    fn a_new_team_checks_every_field() {
        let post = TeamPost {
            key: "-x".into(),
            name: String::new(),
            member_ids: Some(vec!["nope".into()]),
            ..TeamPost::default()
        };
        let errors = Team::new_team(post, 1).unwrap_err().errors;
        let at: Vec<&str> = errors.iter().map(|e| e.attribute.as_str()).collect();
        assert!(
            at.contains(&"memberIDs[0]") && at.contains(&"key"),
            "{at:?}"
        );
    }
}
