//! Rules that involve other flags of the project: prerequisites must exist, must not be archived,
//! must name a valid variation and must never form a cycle; a flag that others depend on cannot be
//! archived, and the variations they point at cannot move.

use std::collections::{BTreeMap, BTreeSet};

use super::Flag;
use crate::{FieldError, ValidationError};

/// A prerequisite of a flag in one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrerequisiteEdge {
    /// The environment.
    pub environment: String,
    /// The prerequisite flag.
    pub key: String,
    /// The prerequisite flag's variation index.
    pub variation: usize,
}

/// What the rules need to know of another flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagFacts {
    /// The flag's key.
    pub key: String,
    /// Its variations' `_id`s, in order.
    pub variation_ids: Vec<String>,
    /// Whether it is archived.
    pub archived: bool,
    /// Its prerequisites in every environment.
    pub prerequisites: Vec<PrerequisiteEdge>,
}

impl FlagFacts {
    /// The facts of `flag`.
    pub fn of(flag: &Flag) -> Self {
        let prerequisites = flag
            .environments
            .iter()
            .flat_map(|(env, config)| {
                config.prerequisites.iter().map(move |p| PrerequisiteEdge {
                    environment: env.clone(),
                    key: p.key.clone(),
                    variation: p.variation,
                })
            })
            .collect();
        Self {
            key: flag.key.to_string(),
            variation_ids: flag.variations.iter().map(|v| v.id.clone()).collect(),
            archived: flag.archived,
            prerequisites,
        }
    }
}

/// The flags of a project, as far as cross-flag rules need them.
///
/// ```
/// use domain::flag::{FlagFacts, ProjectFlags};
/// let project = ProjectFlags::new([FlagFacts {
///     key: "a".into(), variation_ids: vec!["x".into(), "y".into()], archived: false, prerequisites: vec![],
/// }]);
/// assert!(project.get("a").is_some());
/// assert!(project.dependents_of("a").is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectFlags {
    flags: BTreeMap<String, FlagFacts>,
}

/// A rule involving other flags was broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectRuleError {
    /// The flag itself is invalid (HTTP 400 for semantic patch, 422 for JSON Patch).
    #[error("{0}")]
    Invalid(#[from] ValidationError),
    /// The change would break other flags that depend on this one.
    #[error("{0}")]
    Conflict(String),
}

impl ProjectFlags {
    /// The project made of `facts`.
    pub fn new(facts: impl IntoIterator<Item = FlagFacts>) -> Self {
        Self {
            flags: facts.into_iter().map(|f| (f.key.clone(), f)).collect(),
        }
    }

    /// Another flag of the project.
    pub fn get(&self, key: &str) -> Option<&FlagFacts> {
        self.flags.get(key)
    }

    /// Flags that use `key` as a prerequisite, with the edge, by flag key.
    pub fn dependents_of(&self, key: &str) -> Vec<(&str, &PrerequisiteEdge)> {
        self.flags
            .values()
            .filter(|f| f.key != key)
            .flat_map(|f| {
                f.prerequisites
                    .iter()
                    .filter(|p| p.key == key)
                    .map(move |p| (f.key.as_str(), p))
            })
            .collect()
    }

    /// A path of prerequisites from `from` back to `to`, if one exists, where `to`'s own edges
    /// are `own` (its new prerequisites) rather than the stored ones.
    fn path_back(&self, to: &str, own: &BTreeSet<String>) -> Option<Vec<String>> {
        let edges = |key: &str| -> BTreeSet<String> {
            if key == to {
                own.clone()
            } else {
                self.flags
                    .get(key)
                    .map(|f| f.prerequisites.iter().map(|p| p.key.clone()).collect())
                    .unwrap_or_default()
            }
        };
        // Depth-first search from `to` over prerequisite edges; a path that returns to `to` is a cycle.
        let mut stack: Vec<(String, Vec<String>)> = vec![(to.to_owned(), vec![to.to_owned()])];
        let mut seen = BTreeSet::new();
        while let Some((key, path)) = stack.pop() {
            for next in edges(&key) {
                let mut next_path = path.clone();
                next_path.push(next.clone());
                if next == to {
                    return Some(next_path);
                }
                if seen.insert(next.clone()) {
                    stack.push((next, next_path));
                }
            }
        }
        None
    }
}

impl Flag {
    /// Whether a change from `previous` touches anything the cross-flag rules look at.
    pub fn needs_project_check(&self, previous: &Flag) -> bool {
        let prerequisites = |f: &Flag| -> Vec<_> {
            f.environments
                .iter()
                .map(|(env, c)| (env.clone(), c.prerequisites.clone()))
                .collect()
        };
        let ids = |f: &Flag| -> Vec<String> { f.variations.iter().map(|v| v.id.clone()).collect() };
        prerequisites(self) != prerequisites(previous)
            || ids(self) != ids(previous)
            || self.archived != previous.archived
    }

    /// Checks the rules involving other flags after a change from `previous`.
    ///
    /// # Errors
    /// [`ProjectRuleError::Invalid`] for a prerequisite on a missing or archived flag, an invalid
    /// prerequisite variation, or a cycle; [`ProjectRuleError::Conflict`] for archiving a flag
    /// that others depend on, or moving or removing a variation they point at.
    pub fn validate_in_project(
        &self,
        previous: &Flag,
        project: &ProjectFlags,
    ) -> Result<(), ProjectRuleError> {
        let mut errors = Vec::new();
        let mut own_edges = BTreeSet::new();
        for (env, config) in &self.environments {
            for (i, prerequisite) in config.prerequisites.iter().enumerate() {
                let at = format!("environments.{env}.prerequisites[{i}]");
                own_edges.insert(prerequisite.key.clone());
                if prerequisite.key == self.key {
                    continue; // reported by `validate`
                }
                match project.get(&prerequisite.key) {
                    None => errors.push(FieldError::new(
                        format!("{at}.key"),
                        format!("no flag '{}' in this project", prerequisite.key),
                    )),
                    Some(facts) => {
                        if facts.archived {
                            errors.push(FieldError::new(
                                format!("{at}.key"),
                                format!(
                                    "flag '{}' is archived and cannot be a prerequisite",
                                    prerequisite.key
                                ),
                            ));
                        }
                        if prerequisite.variation >= facts.variation_ids.len() {
                            errors.push(FieldError::new(
                                format!("{at}.variation"),
                                format!(
                                    "flag '{}' has no variation {}",
                                    prerequisite.key, prerequisite.variation
                                ),
                            ));
                        }
                    }
                }
            }
        }
        own_edges.remove(self.key.as_str());
        if let Some(path) = project.path_back(&self.key, &own_edges) {
            errors.push(FieldError::new(
                "prerequisites",
                format!("prerequisites would form a cycle: {}", path.join(" -> ")),
            ));
        }
        ValidationError::check(errors)?;

        let dependents = project.dependents_of(&self.key);
        if self.archived && !previous.archived && !dependents.is_empty() {
            let names: BTreeSet<&str> = dependents.iter().map(|(k, _)| *k).collect();
            return Err(ProjectRuleError::Conflict(format!(
                "flag '{}' is a prerequisite of {}; remove those prerequisites before archiving it",
                self.key,
                names.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
        for (dependent, edge) in dependents {
            let before = previous.variations.get(edge.variation).map(|v| &v.id);
            let after = self.variations.get(edge.variation).map(|v| &v.id);
            if before != after {
                return Err(ProjectRuleError::Conflict(format!(
                    "flag '{dependent}' uses variation {} of '{}' as a prerequisite in '{}'; that variation cannot be removed or moved",
                    edge.variation, self.key, edge.environment
                )));
            }
        }
        Ok(())
    }
}
