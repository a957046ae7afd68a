//! What goes over the wire: each resource's shape (`wire/<resource>.rs`), their links
//! (`hrefs`, `link`), request bodies (`body`), query parameters (`query`), pages (`page`), kept
//! answers (`answers`), and the bridge to the blocking use cases (`calls`).

pub(crate) mod access;
mod answers;
mod audit;
mod body;
mod calls;
mod environments;
mod flags;
mod hrefs;
pub(crate) mod link;
mod members;
mod page;
// Schemas only, never built: they describe what the domain's types serialise to and parse from
// (see the module's documentation), so nothing here constructs them.
#[allow(dead_code)]
pub(crate) mod model;
mod projects;
mod query;
mod representations;
mod roles;
mod segments;
mod teams;
mod tokens;
mod webhooks;

pub use access::{with_access, with_flag_access, ResourceAccess};
pub use answers::{answer_request, keep_answer, kept_answer};
pub use audit::{AuditEntries, AuditEntry};
pub use body::{
    document_patch, integers_leniently, json_body, json_patch_only, parse_json, patch_form,
    DocumentPatch, JsonPatchOperation, PatchForm, SemanticPatchBody,
};
pub use calls::{call, call_queued};
pub use environments::{Environment, Environments};
pub use flags::{flag_shown_to, DependentFlags, FeatureFlags, Flag};
pub use members::{Member, Members};
pub use page::{collection, page_links, within_page_bytes, MAX_PAGE_BYTES};
pub use projects::{ProjectExpanded, ProjectRep, Projects};
pub use query::{expiry_param, QueryParams, DRY_RUN_DESCRIPTION};
pub use representations::ApiRepresentations;
pub use roles::{CustomRole, CustomRoles};
pub use segments::{Segment, SegmentDetail, Segments};
pub use teams::{Team, Teams};
pub use tokens::{TokenRep, Tokens};
pub use webhooks::{Webhook, Webhooks};
