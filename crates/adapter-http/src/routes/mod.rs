//! Handlers, one module per resource. Each carries its OpenAPI description, and the app is built
//! from the same registrations, so the document lists exactly the routes the server has.

pub mod audit;
pub mod caller;
pub mod environments;
pub mod evaluations;
pub mod flags;
pub mod members;
pub mod projects;
pub mod roles;
pub mod root;
pub mod segments;
pub mod statuses;
pub mod teams;
pub mod tokens;
pub mod webhooks;
