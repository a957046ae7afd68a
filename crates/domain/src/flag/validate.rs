//! The invariants of a flag, checked after every change whatever its form.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use super::{Flag, FlagConfig, FlagKind, Rollout, Target, VariationOrRollout};
use crate::{
    validate_name, validate_tags, FieldError, ValidationError, MAX_PREREQUISITES, MAX_VALUE_DEPTH,
};

/// Total weight of a rollout: 100% in thousandths of a percent.
pub const ROLLOUT_TOTAL: i64 = 100_000;

/// The most variations a flag may have.
pub const MAX_VARIATIONS: usize = 1000;

/// Writes `value` so that equal variation values give equal text: object members in key order,
/// numbers by their value (`0`, `-0` and `0.0` alike; `1` and `1.0` alike).
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) => {
            let _ = write!(out, "{value}");
        }
        Value::Number(n) => {
            let _ = match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => write!(out, "{i}"),
                (None, Some(u), _) => write!(out, "{u}"),
                // Whole floats within i128 read as the integer they equal (and -0.0 as 0).
                (None, None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e38 => {
                    write!(out, "{}", f as i128)
                }
                _ => write!(out, "{n}"),
            };
        }
        Value::String(s) => {
            let _ = write!(out, "{s:?}");
        }
        Value::Array(items) => {
            out.push('[');
            for item in items {
                write_canonical(item, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(fields) => {
            let mut sorted: Vec<_> = fields.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (name, item) in sorted {
                let _ = write!(out, "{name:?}:");
                write_canonical(item, out);
                out.push(',');
            }
            out.push('}');
        }
    }
}

/// A variation value as text in which equal values are equal, for finding repeated values in
/// linear time.
fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Whether two variation values count as the same value (see [`Flag::validate`]).
pub(crate) fn same_value(a: &Value, b: &Value) -> bool {
    a == b || canonical(a) == canonical(b)
}

/// The JSON type class of a multivariate flag's values.
fn value_class(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Null | Value::Array(_) | Value::Object(_) => "json",
    }
}

impl Flag {
    /// Checks every invariant of the flag that can be judged from the flag alone.
    ///
    /// Rules: a non-empty name; valid tags; two to [`MAX_VARIATIONS`] variations with unique
    /// values (numbers compare by value: `0` and `-0` are the same value), each nesting at most
    /// [`crate::MAX_VALUE_DEPTH`] levels of arrays and objects; a
    /// boolean flag has exactly `true` and `false`; a multivariate flag's values share one type
    /// (string, number or JSON); defaults, targets, rules, rollouts, fallthrough and off
    /// variation name existing variations; rollout weights are 0..=100000 and sum to 100000; a
    /// context key is targeted by at most one variation per context kind; a flag is never its own
    /// prerequisite, and names each prerequisite at most once.
    ///
    /// # Errors
    /// [`ValidationError`] listing every broken rule with the path of the field.
    pub fn validate(&self) -> Result<(), ValidationError> {
        self.validate_since(None)
    }

    /// [`Flag::validate`] for a change from `previous`, whose regular expressions were checked
    /// when it was stored and are not compiled again.
    pub(crate) fn validate_since(&self, previous: Option<&Flag>) -> Result<(), ValidationError> {
        let mut regexes = crate::rules::RegexCheck::since(previous.into_iter().flat_map(|p| {
            p.environments
                .values()
                .flat_map(|c| c.rules.iter().flat_map(|r| &r.clauses))
        }));
        let mut errors = Vec::new();
        validate_name("name", &self.name, &mut errors);
        validate_tags("tags", &self.tags, &mut errors);
        validate_maintainer(
            self.maintainer_id.as_deref(),
            self.maintainer_team_key.as_deref(),
            &mut errors,
        );
        for (i, variation) in self.variations.iter().enumerate() {
            if let Some(name) = &variation.name {
                crate::validate_label(&format!("variations[{i}].name"), name, &mut errors);
            }
        }
        for (key, property) in &self.custom_properties {
            validate_name(
                &format!("customProperties.{key}.name"),
                &property.name,
                &mut errors,
            );
        }
        self.validate_variations(&mut errors);
        let count = self.variations.len();
        let index_ok = |i: usize| i < count;
        if !index_ok(self.defaults.on_variation) {
            errors.push(FieldError::new(
                "defaults.onVariation",
                "is not a variation index",
            ));
        }
        if !index_ok(self.defaults.off_variation) {
            errors.push(FieldError::new(
                "defaults.offVariation",
                "is not a variation index",
            ));
        }
        for (env, config) in &self.environments {
            self.validate_config(
                &format!("environments.{env}"),
                config,
                &mut regexes,
                &mut errors,
            );
        }
        ValidationError::check(errors)
    }

    fn validate_variations(&self, errors: &mut Vec<FieldError>) {
        if self.variations.len() < 2 {
            errors.push(FieldError::new(
                "variations",
                "a flag needs at least two variations",
            ));
        }
        if self.variations.len() > MAX_VARIATIONS {
            errors.push(FieldError::new(
                "variations",
                format!(
                    "has {} variations; a flag has at most {MAX_VARIATIONS} variations",
                    self.variations.len()
                ),
            ));
            return;
        }
        let mut too_deep = false;
        for (i, variation) in self.variations.iter().enumerate() {
            if crate::patch::nests_deeper_than(&variation.value, MAX_VALUE_DEPTH) {
                too_deep = true;
                errors.push(FieldError::new(
                    format!("variations[{i}].value"),
                    format!(
                        "nests arrays and objects more than {MAX_VALUE_DEPTH} levels deep; a variation value nests at most {MAX_VALUE_DEPTH} levels"
                    ),
                ));
            }
        }
        if too_deep {
            return;
        }
        let mut seen: HashMap<String, usize> = HashMap::with_capacity(self.variations.len());
        for (i, variation) in self.variations.iter().enumerate() {
            if let Some(first) = seen.insert(canonical(&variation.value), i) {
                errors.push(FieldError::new(
                    format!("variations[{i}].value"),
                    format!("repeats another variation's value (that of variation {first})"),
                ));
            }
        }
        match self.kind {
            FlagKind::Boolean => {
                let values: HashSet<Option<bool>> =
                    self.variations.iter().map(|v| v.value.as_bool()).collect();
                if self.variations.len() != 2 || values != HashSet::from([Some(true), Some(false)])
                {
                    errors.push(FieldError::new(
                        "variations",
                        "a boolean flag has exactly the values true and false",
                    ));
                }
            }
            FlagKind::Multivariate => {
                let classes: HashSet<&str> = self
                    .variations
                    .iter()
                    .map(|v| value_class(&v.value))
                    .collect();
                if classes.contains("boolean") {
                    errors.push(FieldError::new(
                        "variations",
                        "boolean values make a boolean flag, not a multivariate one",
                    ));
                } else if classes.len() > 1 {
                    errors.push(FieldError::new(
                        "variations",
                        "all values must be of one type: string, number or JSON",
                    ));
                }
            }
        }
    }

    fn validate_config<'n>(
        &self,
        at: &str,
        config: &'n FlagConfig,
        regexes: &mut crate::rules::RegexCheck<'_, 'n>,
        errors: &mut Vec<FieldError>,
    ) {
        let count = self.variations.len();
        let values: usize = (config.targets.iter())
            .chain(&config.context_targets)
            .map(|t| t.values.len())
            .sum();
        let lists: &[(&str, &Vec<Target>)] = if values > crate::MAX_TARGETS {
            errors.push(FieldError::new(
                format!("{at}.targets"),
                format!(
                    "an environment holds at most {} target values (targets and contextTargets \
                     together), not {values}",
                    crate::MAX_TARGETS
                ),
            ));
            &[]
        } else {
            &[
                ("targets", &config.targets),
                ("contextTargets", &config.context_targets),
            ]
        };
        if config.prerequisites.len() > MAX_PREREQUISITES {
            errors.push(FieldError::new(
                format!("{at}.prerequisites"),
                format!(
                    "an environment has at most {MAX_PREREQUISITES} prerequisites, not {}",
                    config.prerequisites.len()
                ),
            ));
        }
        validate_targets(at, lists, count, errors);
        for (i, rule) in config.rules.iter().enumerate() {
            let serve = VariationOrRollout {
                variation: rule.variation,
                rollout: rule.rollout.clone(),
            };
            validate_serve(&format!("{at}.rules[{i}]"), &serve, count, errors);
            for (j, clause) in rule.clauses.iter().enumerate() {
                crate::rules::validate_clause(
                    &format!("{at}.rules[{i}].clauses[{j}]"),
                    clause,
                    regexes,
                    errors,
                );
            }
        }
        crate::rules::validate_ids(
            at,
            config
                .rules
                .iter()
                .map(|r| (r.id.as_str(), r.clauses.as_slice())),
            errors,
        );
        validate_serve(
            &format!("{at}.fallthrough"),
            &config.fallthrough,
            count,
            errors,
        );
        if config.off_variation.is_some_and(|v| v >= count) {
            errors.push(FieldError::new(
                format!("{at}.offVariation"),
                "is not a variation index",
            ));
        }
        let mut keys = HashSet::new();
        for (i, prerequisite) in config.prerequisites.iter().enumerate() {
            if prerequisite.key == self.key {
                errors.push(FieldError::new(
                    format!("{at}.prerequisites[{i}].key"),
                    "a flag cannot be its own prerequisite",
                ));
            }
            if !keys.insert(prerequisite.key.as_str()) {
                errors.push(FieldError::new(
                    format!("{at}.prerequisites[{i}].key"),
                    "is listed twice",
                ));
            }
        }
    }
}

fn validate_serve(
    at: &str,
    serve: &VariationOrRollout,
    count: usize,
    errors: &mut Vec<FieldError>,
) {
    match (serve.variation, &serve.rollout) {
        (Some(v), None) => {
            if v >= count {
                errors.push(FieldError::new(
                    format!("{at}.variation"),
                    "is not a variation index",
                ));
            }
        }
        (None, Some(rollout)) => validate_rollout(&format!("{at}.rollout"), rollout, count, errors),
        _ => errors.push(FieldError::new(
            at,
            "needs exactly one of 'variation' and 'rollout'",
        )),
    }
}

fn validate_rollout(at: &str, rollout: &Rollout, count: usize, errors: &mut Vec<FieldError>) {
    let mut total = 0i64;
    for (i, weighted) in rollout.variations.iter().enumerate() {
        if weighted.variation >= count {
            errors.push(FieldError::new(
                format!("{at}.variations[{i}].variation"),
                "is not a variation index",
            ));
        }
        if !(0..=ROLLOUT_TOTAL).contains(&weighted.weight) {
            errors.push(FieldError::new(
                format!("{at}.variations[{i}].weight"),
                "must be between 0 and 100000",
            ));
        }
        total = total.saturating_add(weighted.weight);
    }
    if total != ROLLOUT_TOTAL {
        errors.push(FieldError::new(
            format!("{at}.variations"),
            format!("weights sum to {total}, not 100000"),
        ));
    }
}

/// A flag is maintained by a member or by a team, not both; a team is named by a key.
pub(crate) fn validate_maintainer(
    member: Option<&str>,
    team: Option<&str>,
    errors: &mut Vec<FieldError>,
) {
    if let Some(team) = team {
        if member.is_some() {
            errors.push(FieldError::new(
                "maintainerTeamKey",
                "a flag is maintained by a member (maintainerId) or a team (maintainerTeamKey), not both",
            ));
        } else if let Err(e) = crate::key::TeamKey::parse(team) {
            errors.push(FieldError::new("maintainerTeamKey", e.to_string()));
        }
    }
}

/// Individual targets: each serves a variation that exists, and no context is targeted by two
/// variations.
fn validate_targets(
    at: &str,
    lists: &[(&str, &Vec<Target>)],
    count: usize,
    errors: &mut Vec<FieldError>,
) {
    let mut targeted: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for &(list, targets) in lists {
        for (i, target) in targets.iter().enumerate() {
            if target.variation >= count {
                errors.push(FieldError::new(
                    format!("{at}.{list}[{i}].variation"),
                    "is not a variation index",
                ));
            }
            for value in &target.values {
                let previous = targeted.insert(
                    (target.context_kind.as_str(), value.as_str()),
                    target.variation,
                );
                if previous.is_some_and(|v| v != target.variation) {
                    errors.push(FieldError::new(
                        format!("{at}.{list}[{i}].values"),
                        format!(
                            "'{value}' ({}) is already targeted by another variation",
                            target.context_kind
                        ),
                    ));
                }
            }
        }
    }
}
