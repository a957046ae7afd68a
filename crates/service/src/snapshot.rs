//! [`EnvironmentSnapshot`]: one environment's flags and segments, projected into the SDK data
//! model (`domain::evaluation`), as one read transaction saw them. What every evaluation reads
//! (see `crate::snapshots` for how they are kept).

use std::collections::HashMap;

use domain::environment::Environment;
use domain::evaluation::{self, FlagData, SdkFlag, SdkSegment};
use domain::project::Project;
use domain::query::FlagQuery;
use ports::Repository;

use crate::ServiceResult;

/// One environment's flags and segments in the SDK data model.
#[derive(Debug, Clone)]
pub struct EnvironmentSnapshot {
    project_key: String,
    environment_key: String,
    /// Every flag with a configuration in the environment, by key (archived ones marked
    /// `deleted`, as SDKs are told).
    flags: HashMap<String, SdkFlag>,
    /// Flag keys in creation order (the order bulk evaluations answer in).
    order: Vec<String>,
    /// Each flag's variations by name (else `_id`), by index: what OpenFeature calls a variant.
    variants: HashMap<String, Vec<String>>,
    /// Every segment of the environment, by key.
    segments: HashMap<String, SdkSegment>,
    /// What it counts against the snapshots' budget: its memory, estimated from its JSON.
    weight: usize,
}

impl FlagData for EnvironmentSnapshot {
    fn flag(&self, key: &str) -> Option<&SdkFlag> {
        self.flags.get(key).filter(|flag| !flag.deleted)
    }

    fn segment(&self, key: &str) -> Option<&SdkSegment> {
        self.segments.get(key).filter(|segment| !segment.deleted)
    }
}

impl EnvironmentSnapshot {
    /// Reads the flags and segments of `environment` of `project` in `repo` (the transaction
    /// that found them), and projects them.
    ///
    /// # Errors
    /// The store's.
    pub(crate) fn read(
        repo: &mut dyn Repository,
        project: &Project,
        environment: &Environment,
    ) -> ServiceResult<Self> {
        let every = FlagQuery::parse(None, None, None, None)?;
        let env = environment.key.to_string();
        let listed = repo.list_flags(&project.id, &every, std::slice::from_ref(&env))?;
        let mut weight = 0;
        let mut order = Vec::with_capacity(listed.items.len());
        let mut flags = HashMap::with_capacity(listed.items.len());
        let mut variants = HashMap::with_capacity(listed.items.len());
        for flag in &listed.items {
            let Some(projected) = evaluation::sdk_flag(flag, &env) else {
                continue;
            };
            weight += weight_of(&projected);
            let names = flag
                .variations
                .iter()
                .map(|variation| {
                    variation
                        .name
                        .clone()
                        .unwrap_or_else(|| variation.id.clone())
                })
                .collect();
            variants.insert(projected.key.clone(), names);
            order.push(projected.key.clone());
            flags.insert(projected.key.clone(), projected);
        }
        let mut segments = HashMap::new();
        for segment in repo.segments_of_environment(&project.id, &environment.key)? {
            let projected = evaluation::sdk_segment(&segment);
            weight += weight_of(&projected);
            segments.insert(projected.key.clone(), projected);
        }
        Ok(Self {
            project_key: project.key.to_string(),
            environment_key: env,
            flags,
            order,
            variants,
            segments,
            weight,
        })
    }

    /// An empty snapshot of (`project`, `environment`) counting `weight`.
    #[cfg(test)]
    pub(crate) fn empty(project: &str, environment: &str, weight: usize) -> Self {
        Self {
            project_key: project.to_owned(),
            environment_key: environment.to_owned(),
            flags: HashMap::new(),
            order: Vec::new(),
            variants: HashMap::new(),
            segments: HashMap::new(),
            weight,
        }
    }

    /// The project's key, as stored.
    pub fn project_key(&self) -> &str {
        &self.project_key
    }

    /// The environment's key, as stored.
    pub fn environment_key(&self) -> &str {
        &self.environment_key
    }

    /// The live (not archived) flags, in creation order.
    pub fn flags(&self) -> impl Iterator<Item = &SdkFlag> {
        self.order.iter().filter_map(|key| self.flag(key))
    }

    /// The name of variation `index` of flag `key` (its `_id` when it has none).
    pub fn variant(&self, key: &str, index: usize) -> Option<&str> {
        self.variants.get(key)?.get(index).map(String::as_str)
    }

    /// How many live flags it holds.
    pub fn flag_count(&self) -> usize {
        self.flags().count()
    }

    /// What it counts against the snapshots' budget (bytes of memory, estimated).
    pub fn weight(&self) -> usize {
        self.weight
    }
}

/// How many bytes of memory a projected flag or segment takes per byte of its JSON, about: the
/// same strings and values in their containers (maps, vectors, options, compiled patterns),
/// measured at 3.7 for flags as a new flag gets them (`cargo xtask bench`,
/// `snapshots-100x1000`).
const MEMORY_PER_JSON_BYTE: usize = 4;

/// What a projected flag or segment counts against the budget: its memory, estimated from the
/// size of its JSON.
fn weight_of(item: &impl serde::Serialize) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Serialising plain data to a counter cannot fail; a failure would count nothing.
    let _ = serde_json::to_writer(&mut counter, item);
    counter.0.saturating_mul(MEMORY_PER_JSON_BYTE)
}
