//! The OpenAPI schemas of the domain's types that the API shows or reads: a flag's parts, a
//! segment's parts, the create bodies, the semantic-patch instructions, and the parts of projects,
//! members, webhooks, audit entries and errors.
//!
//! The domain knows nothing of OpenAPI. Each type here has the name, the doc comments (they are
//! the schema's descriptions) and the serde attributes of the domain type it describes, and the
//! schema's own constraints (`max_items`, `nullable`, ...). They are schemas only, never built:
//! the wire shapes serialise the domain's values and name these in `#[schema(value_type = ...)]`,
//! and the routes name them in `request_body` (the domain parses those bodies itself).
//!
//! `tests` holds them to the domain: an example of each, read as the domain type, must be kept
//! whole, and what the domain writes back must fit the served document; enums and instruction
//! kinds must be exactly the domain's. A field added, renamed or retyped in the domain without
//! its schema here fails there.

mod account;
mod flags;
mod instructions;
mod requests;
mod segments;

pub use account::{
    Access, BasePermissions, ClientSideAvailability, DeliveryAttempt, Effect, FieldError,
    NamingConvention, PolicyStatement, Role,
};
pub use flags::{
    ConfigSummary, CustomProperty, Defaults, Experiments, FlagKind, FlagStatusName, Prerequisite,
    Rule, Target, Variation, VariationOrRollout,
};
pub use instructions::{Instruction, SegmentInstruction, TeamInstruction};
pub use requests::{
    CustomRolePost, EnvironmentPost, FlagCopyPost, FlagPost, MemberTeamsPost, NewMemberForm,
    ProjectPost, SegmentPost, TeamPost, TokenPost, WebhookPost,
};
pub use segments::{SegmentRule, SegmentTarget};

#[cfg(test)]
mod tests;
