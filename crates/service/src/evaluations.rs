//! Evaluating flags for a context on the management API: what each flag of an environment
//! serves a given context, and why ([`Evaluations::evaluate_flags`], [`Evaluations::explain_flag`]).
//! The flags and segments come from the environment's snapshot (`crate::snapshots`: projected
//! into the SDK data model once per change, not per request); the page of flags a query selects
//! is read from the store. The context is evaluated, never stored or logged.

use domain::evaluation::{self, Context, Detail, Explanation, FlagData};
use domain::key::FlagKey;
use domain::query::FlagQuery;
use ports::StoreExt;

use crate::flags::flag_not_found;
use crate::projects::load_project;
use crate::{use_case, Permit, Service, ServiceResult};

/// Evaluating flags for a context. The use cases of `Service::evaluations`; they work with the
/// service's data ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Evaluations<'a>(&'a Service);

impl Service {
    /// Evaluating flags for a context.
    pub fn evaluations(&self) -> Evaluations<'_> {
        Evaluations(self)
    }
}

impl std::ops::Deref for Evaluations<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// One flag's evaluation for a context.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagEvaluation {
    /// The flag's key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// What it serves, and why.
    pub detail: Detail,
}

/// A page of evaluations, and how many flags matched in all.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluationPage {
    /// The flags of the page, evaluated.
    pub items: Vec<FlagEvaluation>,
    /// How many flags matched the query.
    pub total: u64,
}

impl Evaluations<'_> {
    /// What the flags of environment `environment_key` of project `project_key` that `query`
    /// selects (its page, filters and order) serve `context`, and why: as the original's SDKs
    /// would evaluate them. Archived flags are not evaluated.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound` (project or environment), `Invalid` (query, or a `state`
    /// filter: archived flags are never evaluated).
    pub fn evaluate_flags(
        &self,
        permit: &Permit<use_case::EvaluateFlags>,
        (project_key, environment_key): (&str, &str),
        context: &Context,
        query: &FlagQuery,
    ) -> ServiceResult<EvaluationPage> {
        permit.caller().authorize_view(project_key)?;
        if query.state.is_some() {
            return Err(crate::ServiceError::invalid(
                "evaluation filters by query and tags only: archived flags are never evaluated",
            ));
        }
        let data = self.environment_snapshot(project_key, environment_key)?;
        // The page (its filters and order) from the store; what its flags serve, from the
        // snapshot. A flag created between the two reads is not in the snapshot: it is left
        // out, as one archived in this environment is (SDKs drop it).
        let page = self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let environment = [data.environment_key().to_owned()];
            Ok(repo.list_flags(&project.id, query, &environment)?)
        })?;
        let items = page
            .items
            .iter()
            .filter_map(|flag| {
                let projected = data.flag(flag.key.as_str())?;
                Some(FlagEvaluation {
                    key: flag.key.to_string(),
                    name: flag.name.clone(),
                    detail: evaluation::evaluate(projected, context, &*data),
                })
            })
            .collect();
        Ok(EvaluationPage {
            items,
            total: page.total,
        })
    }

    /// How flag `flag_key` of environment `environment_key` of project `project_key` is
    /// evaluated for `context`, step by step ([`domain::evaluation::explain`]).
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound` (project, environment or flag).
    pub fn explain_flag(
        &self,
        permit: &Permit<use_case::EvaluateFlags>,
        (project_key, environment_key, flag_key): (&str, &str, &str),
        context: &Context,
    ) -> ServiceResult<Explanation> {
        permit.caller().authorize_view(project_key)?;
        let data = self.environment_snapshot(project_key, environment_key)?;
        // One archived (everywhere, or in this environment) is not found, as SDKs have it.
        let Some(flag) = data.flag(FlagKey::lookup(flag_key).as_str()) else {
            return Err(flag_not_found(project_key, flag_key));
        };
        Ok(evaluation::explain(flag, context, &*data))
    }
}
