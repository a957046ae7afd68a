//! [`EnvironmentSnapshot`]: one environment's flags and segments, projected into the SDK data
//! model (`domain::evaluation`), as one read transaction saw them. What every evaluation reads
//! (see `crate::snapshots` for how they are kept).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use domain::environment::Environment;
use domain::evaluation::{self, FlagData, SdkFlag, SdkSegment};
use domain::flag::Flag;
use domain::key::{FlagKey, ProjectKey};
use domain::project::Project;
use domain::query::FlagQuery;
use ports::Repository;

use crate::payload::{write_members, SdkPayload};
use crate::ServiceResult;

/// What a snapshot weighs besides its flags and segments (its keys, maps, the build lock).
const SNAPSHOT_OVERHEAD: usize = 1024;

/// What a flag of a snapshot weighs besides its own data: its map entry, its `Arc`, its place
/// in the creation order (and its key twice: in the map and in the order).
const FLAG_OVERHEAD: usize = 96;

/// One flag of a snapshot: projected, with its variants' names and its weight.
#[derive(Debug)]
struct FlagEntry {
    flag: SdkFlag,
    /// Its variations by name (else `_id`), by index: what OpenFeature calls a variant.
    variants: Vec<String>,
    weight: usize,
}

impl FlagEntry {
    /// `flag` projected into `environment`; `None` when it has no configuration there.
    fn of(flag: &Flag, environment: &str) -> Option<Self> {
        let projected = evaluation::sdk_flag(flag, environment)?;
        let variants = flag
            .variations
            .iter()
            .map(|variation| {
                variation
                    .name
                    .clone()
                    .unwrap_or_else(|| variation.id.clone())
            })
            .collect::<Vec<_>>();
        let weight = weight_of(&projected) + variants.iter().map(String::len).sum::<usize>();
        Some(Self {
            flag: projected,
            variants,
            weight,
        })
    }
}

/// One environment's flags and segments in the SDK data model. Flags are shared between a
/// snapshot and the one a flag's change makes of it (`EnvironmentSnapshot::with_flags`).
#[derive(Debug, Clone)]
pub struct EnvironmentSnapshot {
    project_key: String,
    environment_key: String,
    /// The environment's `_id`: another environment given the same key (deleted and created
    /// again) is not this one.
    environment_id: String,
    /// Every flag with a configuration in the environment, by key (archived ones marked
    /// `deleted`, as SDKs are told).
    flags: HashMap<String, Arc<FlagEntry>>,
    /// Flag keys in creation order (the order bulk evaluations answer in).
    order: Vec<String>,
    /// Every segment of the environment, by key (in order: see [`SdkPayload`]).
    segments: Arc<BTreeMap<String, SdkSegment>>,
    /// The segments' weight.
    segments_weight: usize,
    /// What it counts against the snapshots' budget: its memory, estimated from its JSON.
    weight: usize,
    /// Its data as SDKs poll it, serialised on first use.
    payload: OnceLock<Arc<SdkPayload>>,
    /// When the read it shows began (for a refreshed one, the refresh's read): it shows every
    /// change this replica was told of before.
    as_of: Instant,
}

impl FlagData for EnvironmentSnapshot {
    fn flag(&self, key: &str) -> Option<&SdkFlag> {
        self.flags
            .get(key)
            .map(|entry| &entry.flag)
            .filter(|flag| !flag.deleted)
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
        let mut order = Vec::with_capacity(listed.items.len());
        let mut flags = HashMap::with_capacity(listed.items.len());
        for flag in &listed.items {
            if let Some(entry) = FlagEntry::of(flag, &env) {
                order.push(entry.flag.key.clone());
                flags.insert(entry.flag.key.clone(), Arc::new(entry));
            }
        }
        let mut segments = BTreeMap::new();
        let mut segments_weight = 0;
        for segment in repo.segments_of_environment(&project.id, &environment.key)? {
            let projected = evaluation::sdk_segment(&segment);
            segments_weight += weight_of(&projected);
            segments.insert(projected.key.clone(), projected);
        }
        let mut snapshot = Self {
            project_key: project.key.to_string(),
            environment_key: env,
            environment_id: environment.id.to_string(),
            flags,
            order,
            segments: Arc::new(segments),
            segments_weight,
            weight: 0,
            payload: OnceLock::new(),
            as_of: Instant::now(),
        };
        snapshot.weigh();
        Ok(snapshot)
    }

    fn weigh(&mut self) {
        self.weight = SNAPSHOT_OVERHEAD
            + self.segments_weight
            + self
                .flags
                .values()
                .map(|entry| entry.weight + FLAG_OVERHEAD + 2 * entry.flag.key.len())
                .sum::<usize>();
    }

    /// This snapshot with flags `keys` read again from `repo` (a flag gone, or no longer
    /// configured in the environment, is left out); the others and the segments are shared.
    ///
    /// # Errors
    /// The store's.
    pub(crate) fn with_flags(
        &self,
        repo: &mut dyn Repository,
        keys: &[String],
    ) -> ServiceResult<Self> {
        let project = ProjectKey::lookup(&self.project_key);
        let mut next = self.clone();
        next.payload = OnceLock::new();
        for key in keys {
            let read = repo.find_flag(&project, &FlagKey::lookup(key))?;
            match read.and_then(|flag| FlagEntry::of(&flag, &self.environment_key)) {
                Some(entry) => {
                    let salt = entry.flag.salt.clone();
                    match next.flags.insert(key.clone(), Arc::new(entry)) {
                        None => next.order.push(key.clone()),
                        // Deleted and created again (a new flag has a new salt): it is the
                        // newest flag now, as a full read orders it.
                        Some(old) if old.flag.salt != salt => {
                            next.order.retain(|k| k != key);
                            next.order.push(key.clone());
                        }
                        Some(_) => {}
                    }
                }
                None => {
                    if next.flags.remove(key).is_some() {
                        next.order.retain(|k| k != key);
                    }
                }
            }
        }
        next.weigh();
        Ok(next)
    }

    /// An empty snapshot of (`project`, `environment`) counting `weight`.
    #[cfg(test)]
    pub(crate) fn empty(project: &str, environment: &str, weight: usize) -> Self {
        Self {
            project_key: project.to_owned(),
            environment_key: environment.to_owned(),
            environment_id: String::new(),
            flags: HashMap::new(),
            order: Vec::new(),
            segments: Arc::default(),
            segments_weight: 0,
            weight,
            payload: OnceLock::new(),
            as_of: Instant::now(),
        }
    }

    /// The same snapshot, marked as showing what a read that began at `at` saw.
    pub(crate) fn read_since(mut self, at: Instant) -> Self {
        self.as_of = at;
        self
    }

    /// When the read it shows began.
    pub(crate) fn read_at(&self) -> Instant {
        self.as_of
    }

    /// The project's key, as stored.
    pub fn project_key(&self) -> &str {
        &self.project_key
    }

    /// The environment's key, as stored.
    pub fn environment_key(&self) -> &str {
        &self.environment_key
    }

    /// The environment's `_id`.
    pub(crate) fn environment_id(&self) -> &str {
        &self.environment_id
    }

    /// The live (not archived) flags, in creation order.
    pub fn flags(&self) -> impl Iterator<Item = &SdkFlag> {
        self.order.iter().filter_map(|key| self.flag(key))
    }

    /// The live (not deleted) segments, by key.
    pub fn segments(&self) -> impl Iterator<Item = &SdkSegment> {
        self.segments.values().filter(|segment| !segment.deleted)
    }

    /// Flag `key` as SDKs are sent it, archived ones (`deleted`) too.
    pub fn sdk_flag(&self, key: &str) -> Option<&SdkFlag> {
        self.flags.get(key).map(|entry| &entry.flag)
    }

    /// Every flag as SDKs are sent it, archived ones (`deleted`) too, in creation order.
    pub(crate) fn every_sdk_flag(&self) -> impl Iterator<Item = &SdkFlag> {
        self.order.iter().filter_map(|key| self.sdk_flag(key))
    }

    /// Every segment, by key, deleted ones too.
    pub(crate) fn every_segment(&self) -> &BTreeMap<String, SdkSegment> {
        &self.segments
    }

    /// Its live flags and segments as SDKs poll them (serialised on first use, then kept).
    pub fn payload(&self) -> Arc<SdkPayload> {
        self.payload
            .get_or_init(|| Arc::new(SdkPayload::from_json(self.all_data())))
            .clone()
    }

    /// Its payload, if already made ([`EnvironmentSnapshot::payload`] makes it).
    pub fn payload_made(&self) -> Option<Arc<SdkPayload>> {
        self.payload.get().cloned()
    }

    /// `{key: flag}` of its live flags, in creation order.
    pub fn flags_json(&self) -> Vec<u8> {
        let mut out = vec![b'{'];
        write_members(&mut out, self.flags().map(|flag| (flag.key.as_str(), flag)));
        out.push(b'}');
        out
    }

    /// `{key: segment}` of its live segments, by key.
    pub fn segments_json(&self) -> Vec<u8> {
        let mut out = vec![b'{'];
        write_members(
            &mut out,
            self.segments()
                .map(|segment| (segment.key.as_str(), segment)),
        );
        out.push(b'}');
        out
    }

    /// `{"flags": {...}, "segments": {...}}` of its live flags (in creation order) and
    /// segments (by key).
    pub(crate) fn all_data(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.weight / MEMORY_PER_JSON_BYTE + 64);
        out.extend_from_slice(b"{\"flags\":{");
        write_members(&mut out, self.flags().map(|flag| (flag.key.as_str(), flag)));
        out.extend_from_slice(b"},\"segments\":{");
        write_members(
            &mut out,
            self.segments()
                .map(|segment| (segment.key.as_str(), segment)),
        );
        out.extend_from_slice(b"}}");
        out
    }

    /// The name of variation `index` of flag `key` (its `_id` when it has none).
    pub fn variant(&self, key: &str, index: usize) -> Option<&str> {
        self.flags.get(key)?.variants.get(index).map(String::as_str)
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
/// `snapshots-100x1000`), and one more for its serialised form once polled or streamed
/// ([`SdkPayload`]).
const MEMORY_PER_JSON_BYTE: usize = 5;

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
