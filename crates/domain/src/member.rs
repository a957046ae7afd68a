//! Account members: invitations, roles, and the single owner.

use serde::{Deserialize, Serialize};

use crate::id::MemberId;
use crate::patch::{self, PatchError};
use crate::role::Role;
use crate::team::{check_team_keys, MemberTeam};
use crate::{FieldError, ValidationError};

// Where they were first named.
pub use crate::custom_role::{check_custom_roles, MAX_CUSTOM_ROLES};

/// The key two emails are the same member by, the same on every store: the email in Unicode's
/// composed form (NFC, so a letter and its accent written apart are that letter), lower-cased
/// by Unicode's rules (so `Émile@x.io` and `émile@x.io` are one), with the final sigma `ς`
/// read as `σ` (lower-casing writes `ΣΑΣ` as `σας`).
///
/// ```
/// use domain::member::email_key;
/// assert_eq!(email_key("Émile@X.io"), email_key("émile@x.io"));
/// assert_eq!(email_key("e\u{301}mile@x.io"), email_key("émile@x.io"));
/// assert_eq!(email_key("ΣΑΣ@x.io"), email_key("σασ@x.io"));
/// ```
pub fn email_key(email: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let composed: String = email.nfc().collect();
    composed
        .to_lowercase()
        .nfc()
        .map(|c| if c == 'ς' { 'σ' } else { c })
        .collect()
}

/// At most this many members are invited by one request.
pub const MAX_INVITES: usize = 50;

/// A member of the account.
///
/// ```
/// use domain::member::Member;
/// use domain::role::Role;
/// let owner = Member::owner(domain::id::MemberId::parse("5f0c0e0c0e0c0e0c0e0c0e0c").unwrap(), "owner@example.com".into(), 1);
/// assert_eq!(owner.role, Role::Owner);
/// ```
///
/// Its JSON (serde) is the document JSON Patches apply to: the fields a client reads, without
/// what the HTTP adapter adds to show it (`_links`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Member {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: MemberId,
    /// Unique within the account (compared case-insensitively).
    pub email: String,
    /// The member's base role.
    pub role: Role,
    /// Given name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
    /// The keys of the member's custom roles: its permissions are its base role's and theirs.
    pub custom_roles: Vec<String>,
    /// The teams the member belongs to (by key), with the custom roles it holds through each.
    /// Read-only here: membership changes through the team (or `POST /members/{id}/teams`).
    #[serde(default)]
    pub teams: Vec<MemberTeam>,
    /// Invited but not yet signed in.
    #[serde(rename = "_pendingInvite")]
    pub pending_invite: bool,
    /// Email address verified.
    #[serde(rename = "_verified")]
    pub verified: bool,
    /// Last use of one of the member's tokens (epoch ms; 0 = never).
    #[serde(rename = "_lastSeen")]
    pub last_seen: i64,
    /// Creation time (epoch ms).
    pub creation_date: i64,
    /// Multi-factor authentication (`disabled` here).
    pub mfa: String,
}

impl Member {
    /// The account owner, created on first start.
    pub fn owner(id: MemberId, email: String, now: i64) -> Self {
        Self {
            id,
            email,
            role: Role::Owner,
            first_name: None,
            last_name: None,
            custom_roles: vec![],
            teams: vec![],
            pending_invite: false,
            verified: true,
            last_seen: 0,
            creation_date: now,
            mfa: "disabled".into(),
        }
    }

    /// A member invited by `invite`.
    pub fn invited(id: MemberId, invite: NewMember, now: i64) -> Self {
        Self {
            id,
            email: invite.email,
            role: invite.role,
            first_name: invite.first_name,
            last_name: invite.last_name,
            custom_roles: invite.custom_roles,
            teams: vec![],
            pending_invite: true,
            verified: false,
            last_seen: 0,
            creation_date: now,
            mfa: "disabled".into(),
        }
    }

    /// The keys of every custom role the member holds: its own and its teams', each once.
    ///
    /// ```
    /// use domain::member::Member;
    /// use domain::team::MemberTeam;
    /// let mut m = Member::owner(domain::id::MemberId::parse(&"0".repeat(24)).unwrap(), "m@example.com".into(), 1);
    /// m.custom_roles = vec!["a".into()];
    /// m.teams = vec![MemberTeam { key: "t".into(), name: "T".into(), custom_role_keys: vec!["a".into(), "b".into()] }];
    /// assert_eq!(m.all_custom_roles(), ["a", "b"]);
    /// ```
    pub fn all_custom_roles(&self) -> Vec<String> {
        let mut keys = self.custom_roles.clone();
        for key in self.teams.iter().flat_map(|t| &t.custom_role_keys) {
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        }
        keys
    }

    /// The name members are sorted by: first and last name, else the email.
    pub fn display_name(&self) -> String {
        let name = [self.first_name.as_deref(), self.last_name.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        if name.trim().is_empty() {
            self.email.clone()
        } else {
            name
        }
    }

    /// Applies a JSON Patch (`/role`, `/firstName`, `/lastName`) on behalf of a caller with role
    /// `by`.
    ///
    /// ```
    /// # use domain::member::Member;
    /// use domain::role::Role;
    /// let admin = Member::owner(domain::id::MemberId::parse(&"0".repeat(24)).unwrap(), "a@example.com".into(), 1);
    /// let mut member = admin.clone();
    /// member.role = Role::Reader;
    /// let ops: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!(
    ///     [{"op": "replace", "path": "/role", "value": "writer"}])).unwrap();
    /// assert_eq!(member.apply_patch(&ops, Role::Admin).unwrap().role, Role::Writer);
    /// let owner: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!(
    ///     [{"op": "replace", "path": "/role", "value": "admin"}])).unwrap();
    /// assert!(member.apply_patch(&owner, Role::Writer).is_err(), "nobody gives a role above their own");
    /// ```
    ///
    /// # Errors
    /// [`PatchError`] for another path, an invalid name, a role above `by`, making someone owner
    /// (ownership moves only by transfer, see [`Member::role_change`]), or demoting the owner.
    pub fn apply_patch(&self, ops: &[patch::Operation], by: Role) -> Result<Member, PatchError> {
        self.apply_patch_as_shown(&serde_json::Value::Null, ops, by)
    }

    /// [`Member::apply_patch`] on this member as the API shows it: with the `_links` of `shown` (its
    /// representation; nothing else is taken from it), which the operations may `test` and
    /// `copy` from but not write.
    ///
    /// # Errors
    /// As [`Member::apply_patch`].
    pub fn apply_patch_as_shown(
        &self,
        shown: &serde_json::Value,
        ops: &[patch::Operation],
        by: Role,
    ) -> Result<Member, PatchError> {
        const WRITABLE: [&str; 4] = ["role", "firstName", "lastName", "customRoles"];
        let mut next: Member =
            patch::apply_to_fields_as_shown(self, shown, &patch::LINKS_ONLY, ops, &WRITABLE)?;
        next.first_name = next.first_name.filter(|n| !n.trim().is_empty());
        next.last_name = next.last_name.filter(|n| !n.trim().is_empty());
        let mut errors = Vec::new();
        for (attribute, name) in [
            ("firstName", &next.first_name),
            ("lastName", &next.last_name),
        ] {
            if let Some(name) = name {
                crate::validate_label(attribute, name, &mut errors);
            }
        }
        check_custom_roles("customRoles", &next.custom_roles, &mut errors);
        ValidationError::check(errors)?;
        self.role_change(next.role, by)
            .map_err(PatchError::Invalid)?;
        Ok(next)
    }

    /// Checks a change of this member's role to `to` by a caller with role `by`.
    ///
    /// Nobody gives a role above their own; only the owner makes someone else owner (a transfer:
    /// the previous owner becomes admin); the owner is never demoted otherwise.
    ///
    /// # Errors
    /// [`ValidationError`] on `role` naming the rule.
    pub fn role_change(&self, to: Role, by: Role) -> Result<(), ValidationError> {
        if to == self.role {
            return Ok(());
        }
        if self.role == Role::Owner {
            return Err(ValidationError::single(
                "role",
                "the owner keeps the owner role; transfer ownership by making another member owner",
            ));
        }
        if to == Role::Owner && by != Role::Owner {
            return Err(ValidationError::single(
                "role",
                "only the owner can transfer ownership",
            ));
        }
        if to > by {
            return Err(ValidationError::single(
                "role",
                format!("cannot give the role '{to}' above your own role '{by}'"),
            ));
        }
        Ok(())
    }
}

/// One invitation in `POST /members`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMemberForm {
    /// Email address.
    pub email: String,
    /// `reader` (default), `writer`, `admin` or `no_access`.
    #[serde(default)]
    pub role: Option<String>,
    /// Given name.
    #[serde(default)]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(default)]
    pub last_name: Option<String>,
    /// Not supported: members authenticate with access tokens, never a password. A request
    /// that sets it is a 400 naming the field.
    #[serde(default)]
    pub password: Option<String>,
    /// Keys of custom roles to give the member, at most 50, each naming an existing role (a 400
    /// naming `[i].customRoles` otherwise): its permissions are its base role's and theirs.
    #[serde(default)]
    pub custom_roles: Option<Vec<String>>,
    /// Keys of teams the member joins, at most 20, each naming an existing team (a 400 naming
    /// `[i].teamKeys` otherwise): it holds their custom roles too.
    #[serde(default)]
    pub team_keys: Option<Vec<String>>,
    /// Role attributes are not supported: only an empty map is accepted.
    #[serde(default)]
    pub role_attributes: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

/// A validated invitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMember {
    /// Email address, trimmed.
    pub email: String,
    /// Role.
    pub role: Role,
    /// Given name.
    pub first_name: Option<String>,
    /// Family name.
    pub last_name: Option<String>,
    /// Keys of custom roles (checked against the roles that exist by the use case).
    pub custom_roles: Vec<String>,
    /// Keys of the teams it joins (checked against the teams that exist by the use case).
    pub team_keys: Vec<String>,
}

/// Why invitations were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InviteError {
    /// Invalid fields.
    #[error("{0}")]
    Invalid(#[from] ValidationError),
    /// The same email appears twice in the request.
    #[error("the email '{0}' appears more than once in the request")]
    DuplicateEmail(String),
}

/// Checks a batch of invitations by a caller with role `by`.
///
/// ```
/// use domain::member::{validate_invites, NewMemberForm};
/// use domain::role::Role;
/// let form = |email: &str| NewMemberForm { email: email.into(), ..Default::default() };
/// assert_eq!(validate_invites(vec![form("a@example.com")], Role::Admin).unwrap()[0].role, Role::Reader);
/// assert!(validate_invites(vec![form("a@example.com"), form("A@example.com")], Role::Admin).is_err());
/// assert!(validate_invites(vec![form("nope")], Role::Admin).is_err());
/// ```
///
/// # Errors
/// [`InviteError::Invalid`] for none or more than 50 invitations, a bad email, an unknown role,
/// `owner`, or a role above `by`; [`InviteError::DuplicateEmail`] for a repeated email.
pub fn validate_invites(
    forms: Vec<NewMemberForm>,
    by: Role,
) -> Result<Vec<NewMember>, InviteError> {
    if forms.is_empty() || forms.len() > MAX_INVITES {
        return Err(ValidationError::single(
            "",
            format!("send between 1 and {MAX_INVITES} invitations"),
        )
        .into());
    }
    let mut errors = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut members = Vec::with_capacity(forms.len());
    for (i, form) in forms.into_iter().enumerate() {
        // Not trimmed: what the document calls invalid is refused, not repaired.
        let email = form.email;
        if !crate::text::is_email(&email) {
            errors.push(FieldError::new(
                format!("[{i}].email"),
                format!("'{email}' is not an email address"),
            ));
        } else if !seen.insert(email_key(&email)) {
            return Err(InviteError::DuplicateEmail(email));
        }
        let role = match form.role.as_deref().unwrap_or("reader").parse::<Role>() {
            Ok(Role::Owner) => {
                errors.push(FieldError::new(
                    format!("[{i}].role"),
                    "ownership is transferred, not invited",
                ));
                Role::Reader
            }
            Ok(role) if role > by => {
                errors.push(FieldError::new(
                    format!("[{i}].role"),
                    format!("cannot give the role '{role}' above your own role '{by}'"),
                ));
                role
            }
            Ok(role) => role,
            Err(e) => {
                errors.push(FieldError::new(format!("[{i}].role"), e.to_string()));
                Role::Reader
            }
        };
        if form.password.is_some() {
            errors.push(FieldError::new(
                format!("[{i}].password"),
                "members authenticate with access tokens; passwords are not supported",
            ));
        }
        let custom_roles = form.custom_roles.unwrap_or_default();
        check_custom_roles(&format!("[{i}].customRoles"), &custom_roles, &mut errors);
        let team_keys = form.team_keys.unwrap_or_default();
        check_team_keys(&format!("[{i}].teamKeys"), &team_keys, &mut errors);
        if form.role_attributes.as_ref().is_some_and(|a| !a.is_empty()) {
            errors.push(FieldError::new(
                format!("[{i}].roleAttributes"),
                "role attributes are not supported",
            ));
        }
        for (attribute, name) in [
            ("firstName", &form.first_name),
            ("lastName", &form.last_name),
        ] {
            if let Some(name) = name {
                crate::validate_label(&format!("[{i}].{attribute}"), name, &mut errors);
            }
        }
        members.push(NewMember {
            email,
            role,
            first_name: form.first_name,
            last_name: form.last_name,
            custom_roles,
            team_keys,
        });
    }
    ValidationError::check(errors)?;
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(role: Role) -> Member {
        let mut m = Member::owner(
            crate::id::MemberId::parse(&"0".repeat(24)).unwrap(),
            "m@example.com".into(),
            1,
        );
        m.role = role;
        m
    }

    #[test]
    fn role_changes() {
        assert!(member(Role::Reader)
            .role_change(Role::Admin, Role::Admin)
            .is_ok());
        assert!(member(Role::Reader)
            .role_change(Role::Admin, Role::Writer)
            .is_err());
        assert!(member(Role::Admin)
            .role_change(Role::Owner, Role::Admin)
            .is_err());
        assert!(member(Role::Admin)
            .role_change(Role::Owner, Role::Owner)
            .is_ok());
        assert!(member(Role::Owner)
            .role_change(Role::Admin, Role::Owner)
            .is_err());
        assert!(
            member(Role::Owner)
                .role_change(Role::Owner, Role::Admin)
                .is_ok(),
            "no change"
        );
        assert!(member(Role::Writer)
            .role_change(Role::NoAccess, Role::Admin)
            .is_ok());
    }

    #[test]
    fn invites() {
        let form = |email: &str, role: Option<&str>| NewMemberForm {
            email: email.into(),
            role: role.map(str::to_owned),
            ..Default::default()
        };
        assert!(validate_invites(vec![], Role::Admin).is_err());
        assert!(validate_invites(
            (0..51).map(|i| form(&format!("u{i}@x.io"), None)).collect(),
            Role::Admin
        )
        .is_err());
        assert!(matches!(
            validate_invites(vec![form("a@x.io", Some("owner"))], Role::Owner),
            Err(InviteError::Invalid(_))
        ));
        assert!(matches!(
            validate_invites(vec![form("a@x.io", Some("admin"))], Role::Writer),
            Err(InviteError::Invalid(_))
        ));
        assert!(matches!(
            validate_invites(vec![form("a@x.io", Some("boss"))], Role::Admin),
            Err(InviteError::Invalid(_))
        ));
        assert!(matches!(
            validate_invites(
                vec![form("a@x.io", None), form("A@X.io", None)],
                Role::Admin
            ),
            Err(InviteError::DuplicateEmail(_))
        ));
        // White space around an email is refused, not trimmed: the document's pattern has none.
        assert!(validate_invites(vec![form(" a@x.io ", None)], Role::Admin).is_err());
        let ok = validate_invites(vec![form("a@x.io", Some("no_access"))], Role::Admin).unwrap();
        assert_eq!(
            (ok[0].email.as_str(), ok[0].role),
            ("a@x.io", Role::NoAccess)
        );
    }
}
