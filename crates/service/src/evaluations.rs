//! Evaluating flags for a context on the management API: what each flag of an environment
//! serves a given context, and why ([`Evaluations::evaluate_flags`], [`Evaluations::explain_flag`]).
//! The flags and segments are read from the store in one read transaction and projected into
//! the SDK data model (`domain::evaluation`); the context is evaluated, never stored or logged.

use std::collections::HashMap;

use domain::evaluation::{self, Context, Detail, Explanation, FlagData, SdkFlag, SdkSegment};
use domain::id::ProjectId;
use domain::key::{EnvironmentKey, FlagKey, SegmentKey};
use domain::query::FlagQuery;
use ports::{Repository, StoreExt};
use serde_json::Value;

use crate::environments::load_environment;
use crate::flags::flag_not_found;
use crate::projects::load_project;
use crate::{use_case, Permit, Service, ServiceResult};

/// The most segments one evaluation reads (those the flags' rules name, and those those
/// segments name): beyond it, segments are not read and do not match.
pub const MAX_EVALUATED_SEGMENTS: usize = 1_000;

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

/// The flags and segments of one environment that an evaluation reads.
struct EnvironmentData {
    flags: HashMap<String, SdkFlag>,
    segments: HashMap<String, SdkSegment>,
}

impl FlagData for EnvironmentData {
    fn flag(&self, key: &str) -> Option<&SdkFlag> {
        self.flags.get(key).filter(|flag| !flag.deleted)
    }

    fn segment(&self, key: &str) -> Option<&SdkSegment> {
        self.segments.get(key).filter(|segment| !segment.deleted)
    }
}

/// Every live flag of the project in environment `environment`, projected.
fn flags_in(
    repo: &mut dyn Repository,
    project_id: &ProjectId,
    environment: &str,
) -> ServiceResult<HashMap<String, SdkFlag>> {
    let every = FlagQuery::parse(None, None, None, None)?;
    let listed = repo.list_flags(project_id, &every, &[environment.to_owned()])?;
    Ok(listed
        .items
        .iter()
        .filter_map(|flag| evaluation::sdk_flag(flag, environment))
        .map(|flag| (flag.key.clone(), flag))
        .collect())
}

/// The segments `flags` name, and those they name in turn, projected (at most
/// [`MAX_EVALUATED_SEGMENTS`]).
fn segments_named(
    repo: &mut dyn Repository,
    project_id: &ProjectId,
    environment: &EnvironmentKey,
    flags: &HashMap<String, SdkFlag>,
) -> ServiceResult<HashMap<String, SdkSegment>> {
    let named = |clauses: &mut dyn Iterator<Item = &evaluation::Clause>| -> Vec<String> {
        clauses
            .filter(|clause| clause.op == "segmentMatch")
            .flat_map(|clause| clause.values.iter().filter_map(Value::as_str))
            .map(str::to_owned)
            .collect()
    };
    // In key order, so that which segments fall within the limit never depends on the request.
    let mut ordered: Vec<&SdkFlag> = flags.values().collect();
    ordered.sort_by(|a, b| a.key.cmp(&b.key));
    let mut wanted: Vec<String> = ordered
        .iter()
        .rev()
        .flat_map(|flag| named(&mut flag.rules.iter().flat_map(|rule| rule.clauses.iter())))
        .collect();
    let mut segments = HashMap::new();
    let mut asked = std::collections::HashSet::new();
    while let Some(key) = wanted.pop() {
        if asked.len() >= MAX_EVALUATED_SEGMENTS || !asked.insert(key.clone()) {
            continue;
        }
        let Some(segment) = repo.get_segment(project_id, environment, &SegmentKey::lookup(&key))?
        else {
            continue;
        };
        let projected = evaluation::sdk_segment(&segment);
        wanted.extend(named(
            &mut projected.rules.iter().flat_map(|rule| rule.clauses.iter()),
        ));
        segments.insert(key, projected);
    }
    Ok(segments)
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
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let environment = load_environment(repo, &project.id, project_key, environment_key)?;
            let page = repo.list_flags(&project.id, query, &[environment.key.to_string()])?;
            let flags = flags_in(repo, &project.id, environment.key.as_str())?;
            let segments = segments_named(repo, &project.id, &environment.key, &flags)?;
            let data = EnvironmentData { flags, segments };
            let items = page
                .items
                .iter()
                .filter_map(|flag| {
                    // Not one archived in this environment either: SDKs drop it.
                    let projected = data.flag(flag.key.as_str())?;
                    Some(FlagEvaluation {
                        key: flag.key.to_string(),
                        name: flag.name.clone(),
                        detail: evaluation::evaluate(projected, context, &data),
                    })
                })
                .collect();
            Ok(EvaluationPage {
                items,
                total: page.total,
            })
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
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let environment = load_environment(repo, &project.id, project_key, environment_key)?;
            let flags = flags_in(repo, &project.id, environment.key.as_str())?;
            let segments = segments_named(repo, &project.id, &environment.key, &flags)?;
            let data = EnvironmentData { flags, segments };
            // One archived (everywhere, or in this environment) is not found, as SDKs have it.
            let Some(flag) = data.flag(FlagKey::lookup(flag_key).as_str()) else {
                return Err(flag_not_found(project_key, flag_key));
            };
            Ok(evaluation::explain(flag, context, &data))
        })
    }
}
