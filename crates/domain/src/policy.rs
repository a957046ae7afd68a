//! Policies: statements allowing or denying actions on resources, and the one function that
//! decides a request by them ([`decide`]).
//!
//! A statement names resources by *specifier* (`proj/shop:env/production:flag/*`: parts
//! `kind/name` joined by `:`, `*` globs in names, `;tag,tag` qualifiers that the resource must
//! carry all of) and actions by their camelCase names (`updateOn`, `createFlag`, `update*`),
//! the vocabulary of the audit log's `accesses` ([`actions`] lists them). Deny wins over allow,
//! and what no statement allows is denied.
//!
//! ```
//! use domain::policy::{decide, Policy, Resource, Statement};
//! let staging_only = Policy::new("staging-toggler", vec![
//!     Statement::allow(&["proj/shop:env/staging:flag/*"], &["updateOn"]),
//! ]);
//! let staging = Resource::project("shop").environment("staging").flag("checkout");
//! let production = Resource::project("shop").environment("production").flag("checkout");
//! assert!(decide(&[staging_only.clone()], "updateOn", &staging).is_allowed());
//! assert!(!decide(&[staging_only], "updateOn", &production).is_allowed());
//! ```

pub mod actions;
mod decision;
mod inclusion;
mod pattern;
mod resource;
mod specifier;
mod statement;

pub use decision::{
    base_role_policy, decide, decide_each, decide_in_environments, Decision, Reason,
};
pub use inclusion::includes;
pub use pattern::glob;
pub use resource::{Access, Request, Resource};
pub use specifier::{
    check_shape, check_specifier, ACTION_PATTERN, MAX_ACTION_CHARS, MAX_NAME_GLOBS,
    MAX_SPECIFIER_CHARS, SPECIFIER_PATTERN,
};
pub use statement::{Effect, Policy, Statement};

#[cfg(test)]
mod tests;
