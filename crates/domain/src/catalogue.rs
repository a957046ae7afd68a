//! The action catalogue ([`crate::policy::actions`]) described for people: which semantic-patch
//! instructions and routes need each action, as rendered into `docs/roles.md`. Above the
//! catalogue and the instruction sets, so that neither knows the other.

use crate::policy::actions::{of_kind, ActionInfo, ResourceKind};

/// The kinds of semantic-patch instructions (flags', segments' or teams') that need `action`.
///
/// ```
/// use domain::catalogue::instructions_needing;
/// use domain::policy::actions::{find, ResourceKind};
/// let on = find("updateOn", ResourceKind::Flag).unwrap();
/// assert_eq!(instructions_needing(on), ["turnFlagOn", "turnFlagOff"]);
/// ```
pub fn instructions_needing(action: &ActionInfo) -> Vec<&'static str> {
    use strum::IntoEnumIterator;
    fn kinds<K: IntoEnumIterator + Into<&'static str>>(
        action_of: impl Fn(&K) -> &'static str,
        name: &str,
    ) -> Vec<&'static str> {
        K::iter()
            .filter(|kind| action_of(kind) == name)
            .map(Into::into)
            .collect()
    }
    match action.kind {
        ResourceKind::Flag => kinds(
            |k: &crate::instruction::InstructionKind| k.action(),
            action.name,
        ),
        ResourceKind::Segment => kinds(
            |k: &crate::segment::SegmentInstructionKind| k.action(),
            action.name,
        ),
        ResourceKind::Team => kinds(
            |k: &crate::team::TeamInstructionKind| k.action(),
            action.name,
        ),
        _ => Vec::new(),
    }
}

/// The catalogue as Markdown (rendered into `docs/roles.md`): one table per kind of resource,
/// with the specifier naming all of them, and for each action what needs it: the routes
/// `routes` names (the HTTP adapter knows them) and the semantic-patch instructions.
///
/// ```
/// let text = domain::catalogue::catalogue_markdown(&|_| vec!["`PATCH /x`".into()]);
/// assert!(text.contains("| `updateOn` |"));
/// assert!(text.contains("`PATCH /x`; instructions `turnFlagOn`, `turnFlagOff`"));
/// ```
pub fn catalogue_markdown(routes: &dyn Fn(&ActionInfo) -> Vec<String>) -> String {
    let mut out = String::from(
        "## Actions\n\nThe vocabulary of policy statements: an action on a resource. A statement's `resources` are \
         specifiers (`proj/shop:env/production:flag/*`: `kind/name` parts joined by `:`, at most 8 `*` globs in a \
         name, `;tag,tag` after the last part for things carrying all those tags); its `actions` are these names or globs of them \
         (`update*`); a deny statement wins over any allow. Webhook statements match them against the `accesses` of \
         audit entries, which record the actions of each change; reading (`view…`) is never recorded. A statement \
         without `actions` (or `notActions`) covers every action.\n\n\
         Who may act on whom follows base roles (no role above one's own, one owner), and the actions over \
         custom roles themselves (`updateCustomRole`, `createRole`, `updateRole`, `deleteRole`) and over who \
         holds them through a team (`createTeam`, `updateTeamCustomRoles`, `updateTeamMembers`, \
         `updateMemberTeams`, `deleteTeam`) need an `admin` base role besides a statement allowing them: whoever may do them \
         may give itself anything; so do \
         `createWebhook`, `updateWebhook`, `deleteWebhook` and `viewWebhooks`, since a webhook is sent every change of the account \
         and shows its signing secret. The owner \
         acts with its built-in role alone, whatever custom roles it holds.\n\n\
         Every request is decided by the caller's policies (a built-in role is one too): each action a change \
         consists of, on its resource with the resource's own tags, before anything is written (a flag-wide change \
         and the creation or deletion of a flag are on `env/*`, which only a statement naming `env/*` covers, and \
         a flag-wide change or deletion also in each of the flag's environments, so that a statement denying one \
         environment denies them; each instruction of a semantic patch is decided even when it changes nothing; a \
         change that retags something is decided on it as it was and as it becomes); a read inside a project needs \
         `viewProject` on `proj/{key}` (a list of projects shows those the caller may read), the audit log \
         `viewAuditLog` on `acct`, a list of members, teams, custom roles, webhooks or tokens the `view…` action \
         on every one of them (`member/*`), and one of them the action on it. Who may act on whom (no role above one's own, \
         one owner) is decided by base roles, as listed above.\n\n\
         \"Needed by\" names the routes (paths under the API's root) whose requests may need the action, and the \
         semantic-patch instructions that need it; a JSON Patch or merge patch needs the actions of what it \
         changes.\n",
    );
    for kind in ResourceKind::ALL {
        out.push_str(&format!(
            "\n### {} (`{}`)\n\n| Action | Covers | Needed by |\n|---|---|---|\n",
            kind,
            kind.specifier()
        ));
        for action in of_kind(kind) {
            let mut needed = routes(action).join(", ");
            let instructions = instructions_needing(action);
            if !instructions.is_empty() {
                let kinds: Vec<String> = instructions.iter().map(|k| format!("`{k}`")).collect();
                needed.push_str(&format!("; instructions {}", kinds.join(", ")));
            }
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                action.name, action.describe, needed
            ));
        }
    }
    out
}
