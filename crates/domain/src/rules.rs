//! Rules made of clauses, shared by flags and segments: addressing rules and clauses by `_id`,
//! the clause instructions, and the rules every clause obeys.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use crate::flag::{Clause, Operator};
use crate::instruction::ClauseInput;
use crate::{FieldError, IdSource};

/// The most values one clause may have.
pub const MAX_CLAUSE_VALUES: usize = 1000;

/// The largest a `matches` regular expression may be once compiled, in bytes (the `regex`
/// crate's `size_limit`); the lazy DFA of an evaluator gets as much (`dfa_size_limit`).
pub const MAX_REGEX_BYTES: usize = 64 * 1024;

/// The most distinct regular expressions (`matches` values) one flag or segment may hold, in all
/// its rules and environments together.
pub const MAX_REGEXES: usize = 100;

/// A rule with an `_id` and clauses (a flag's targeting rule, a segment's rule).
pub(crate) trait ClauseRule {
    fn id(&self) -> &str;
    fn clauses_mut(&mut self) -> &mut Vec<Clause>;
}

impl ClauseRule for crate::flag::Rule {
    fn id(&self) -> &str {
        &self.id
    }
    fn clauses_mut(&mut self) -> &mut Vec<Clause> {
        &mut self.clauses
    }
}

/// The result of one instruction: an error message, or nothing.
pub(crate) type Step = Result<(), String>;

/// A clause from an instruction's description of it.
pub(crate) fn clause_from(input: &ClauseInput, id: String) -> Clause {
    Clause {
        id,
        attribute: input.attribute.clone(),
        op: input.op,
        values: input.values.clone(),
        negate: input.negate,
        context_kind: input
            .context_kind
            .clone()
            .unwrap_or_else(|| "user".to_owned()),
    }
}

/// Clauses from instructions, each with a new `_id`.
pub(crate) fn clauses_from(inputs: &[ClauseInput], ids: &mut dyn IdSource) -> Vec<Clause> {
    inputs.iter().map(|c| clause_from(c, ids.uuid())).collect()
}

pub(crate) fn rule_mut<'a, R: ClauseRule>(
    rules: &'a mut [R],
    rule_id: &str,
) -> Result<&'a mut R, String> {
    rules
        .iter_mut()
        .find(|r| r.id() == rule_id)
        .ok_or_else(|| format!("no rule with _id '{rule_id}'"))
}

fn clause_mut<'a, R: ClauseRule>(
    rules: &'a mut [R],
    rule_id: &str,
    clause_id: &str,
) -> Result<&'a mut Clause, String> {
    rule_mut(rules, rule_id)?
        .clauses_mut()
        .iter_mut()
        .find(|c| c.id == clause_id)
        .ok_or_else(|| format!("no clause with _id '{clause_id}' in rule '{rule_id}'"))
}

/// `removeRule`: a no-op when the rule does not exist.
pub(crate) fn remove_rule<R: ClauseRule>(rules: &mut Vec<R>, rule_id: &str) {
    rules.retain(|r| r.id() != rule_id);
}

/// `reorderRules`: `rule_ids` must be exactly the current rules.
pub(crate) fn reorder_rules<R: ClauseRule>(rules: &mut Vec<R>, rule_ids: &[String]) -> Step {
    let current: BTreeSet<&str> = rules.iter().map(|r| r.id()).collect();
    let wanted: BTreeSet<&str> = rule_ids.iter().map(String::as_str).collect();
    if current != wanted || rule_ids.len() != rules.len() {
        return Err("ruleIds must list every current rule exactly once".into());
    }
    let mut old = std::mem::take(rules);
    for id in rule_ids {
        if let Some(position) = old.iter().position(|r| r.id() == id) {
            rules.push(old.remove(position));
        }
    }
    Ok(())
}

/// `addClauses`.
pub(crate) fn add_clauses<R: ClauseRule>(
    rules: &mut [R],
    rule_id: &str,
    clauses: &[ClauseInput],
    ids: &mut dyn IdSource,
) -> Step {
    let new = clauses_from(clauses, ids);
    rule_mut(rules, rule_id)?.clauses_mut().extend(new);
    Ok(())
}

/// `removeClauses`: every clause must exist.
pub(crate) fn remove_clauses<R: ClauseRule>(
    rules: &mut [R],
    rule_id: &str,
    clause_ids: &[String],
) -> Step {
    for id in clause_ids {
        clause_mut(rules, rule_id, id)?;
    }
    rule_mut(rules, rule_id)?
        .clauses_mut()
        .retain(|c| !clause_ids.contains(&c.id));
    Ok(())
}

/// `updateClause`: replaces the clause, keeping its `_id`.
pub(crate) fn update_clause<R: ClauseRule>(
    rules: &mut [R],
    rule_id: &str,
    clause_id: &str,
    input: &ClauseInput,
) -> Step {
    *clause_mut(rules, rule_id, clause_id)? = clause_from(input, clause_id.to_owned());
    Ok(())
}

/// An instruction sends at most [`MAX_CLAUSE_VALUES`] values for one clause.
fn check_value_count(values: &[Value]) -> Step {
    if values.len() > MAX_CLAUSE_VALUES {
        return Err(format!(
            "{} values sent; a clause has at most {MAX_CLAUSE_VALUES} values",
            values.len()
        ));
    }
    Ok(())
}

/// `addValuesToClause`: values already there are not repeated.
pub(crate) fn add_clause_values<R: ClauseRule>(
    rules: &mut [R],
    rule_id: &str,
    clause_id: &str,
    values: &[Value],
) -> Step {
    check_value_count(values)?;
    let clause = clause_mut(rules, rule_id, clause_id)?;
    for value in values {
        if !clause.values.contains(value) {
            clause.values.push(value.clone());
        }
    }
    if clause.values.len() > MAX_CLAUSE_VALUES {
        return Err(format!(
            "clause '{clause_id}' would have {} values; a clause has at most {MAX_CLAUSE_VALUES} values",
            clause.values.len()
        ));
    }
    Ok(())
}

/// `removeValuesFromClause`.
pub(crate) fn remove_clause_values<R: ClauseRule>(
    rules: &mut [R],
    rule_id: &str,
    clause_id: &str,
    values: &[Value],
) -> Step {
    check_value_count(values)?;
    clause_mut(rules, rule_id, clause_id)?
        .values
        .retain(|v| !values.contains(v));
    Ok(())
}

/// A semantic version as clauses accept it: `1.2.3`, or a shorter `1.2` / `1` completed with zeros.
fn is_semver(text: &str) -> bool {
    if semver::Version::parse(text).is_ok() {
        return true;
    }
    let core_end = text.find(['-', '+']).unwrap_or(text.len());
    let parts = text[..core_end].split('.').count();
    (1..3).contains(&parts)
        && semver::Version::parse(&format!(
            "{}{}{}",
            &text[..core_end],
            ".0".repeat(3 - parts),
            &text[core_end..]
        ))
        .is_ok()
}

/// A time as `before`/`after` accept it: epoch milliseconds or an RFC 3339 date-time.
fn is_time(value: &Value) -> bool {
    value.is_number()
        || value
            .as_str()
            .is_some_and(|s| chrono::DateTime::parse_from_rfc3339(s).is_ok())
}

/// Checks the regular expressions of a flag or segment: at most [`MAX_REGEXES`] distinct ones,
/// each compiled once within [`MAX_REGEX_BYTES`]. Those the previous version held were checked
/// when it was stored and are not compiled again, so a change costs only what it brings.
#[derive(Debug, Default)]
pub(crate) struct RegexCheck<'p, 'n> {
    stored: HashSet<&'p str>,
    distinct: HashSet<&'n str>,
    verdicts: HashMap<&'n str, Option<String>>,
    over: bool,
}

impl<'p, 'n> RegexCheck<'p, 'n> {
    /// A check that trusts the expressions of `stored` clauses (the version being changed).
    pub(crate) fn since(stored: impl IntoIterator<Item = &'p Clause>) -> Self {
        Self {
            stored: stored
                .into_iter()
                .filter(|c| c.op == Operator::Matches)
                .flat_map(|c| c.values.iter().filter_map(Value::as_str))
                .collect(),
            ..Self::default()
        }
    }

    /// What is wrong with `pattern`, if anything.
    fn check(&mut self, pattern: &'n str) -> Option<String> {
        if self.distinct.insert(pattern) && self.distinct.len() > MAX_REGEXES {
            if self.over {
                return None; // reported once; nothing more is compiled
            }
            self.over = true;
            return Some(format!(
                "is one regular expression too many: a flag or segment holds at most {MAX_REGEXES} distinct regular expressions"
            ));
        }
        if self.over || self.stored.contains(pattern) {
            return None;
        }
        self.verdicts
            .entry(pattern)
            .or_insert_with(|| {
                regex::RegexBuilder::new(pattern)
                    .size_limit(MAX_REGEX_BYTES)
                    .dfa_size_limit(MAX_REGEX_BYTES)
                    .build()
                    .err()
                    .map(|e| match e {
                        regex::Error::CompiledTooBig(_) => format!(
                            "is too large a regular expression: compiled, it exceeds the limit of {MAX_REGEX_BYTES} bytes"
                        ),
                        e => format!("is not a valid regular expression: {e}"),
                    })
            })
            .clone()
    }
}

/// Checks that a clause has at most [`MAX_CLAUSE_VALUES`] values of the type its operator needs.
pub(crate) fn validate_clause<'n>(
    at: &str,
    clause: &'n Clause,
    regexes: &mut RegexCheck<'_, 'n>,
    errors: &mut Vec<FieldError>,
) {
    if clause.attribute.is_empty() {
        errors.push(FieldError::new(
            format!("{at}.attribute"),
            "must not be empty",
        ));
    }
    if clause.context_kind.is_empty() {
        errors.push(FieldError::new(
            format!("{at}.contextKind"),
            "must not be empty",
        ));
    }
    if clause.values.len() > MAX_CLAUSE_VALUES {
        errors.push(FieldError::new(
            format!("{at}.values"),
            format!(
                "has {} values; a clause has at most {MAX_CLAUSE_VALUES} values",
                clause.values.len()
            ),
        ));
        return;
    }
    for (k, value) in clause.values.iter().enumerate() {
        let problem = match clause.op {
            Operator::Matches => match value.as_str() {
                Some(pattern) => regexes.check(pattern),
                None => Some("must be a string (a regular expression)".to_owned()),
            },
            Operator::SemVerEqual | Operator::SemVerLessThan | Operator::SemVerGreaterThan => {
                (!value.as_str().is_some_and(is_semver))
                    .then(|| "must be a semantic version such as 1.2.3".to_owned())
            }
            Operator::Before | Operator::After => (!is_time(value))
                .then(|| "must be a time: epoch milliseconds or an RFC 3339 date-time".to_owned()),
            Operator::LessThan
            | Operator::LessThanOrEqual
            | Operator::GreaterThan
            | Operator::GreaterThanOrEqual => {
                (!value.is_number()).then(|| "must be a number".to_owned())
            }
            Operator::EndsWith
            | Operator::StartsWith
            | Operator::Contains
            | Operator::SegmentMatch => (!value.is_string()).then(|| "must be a string".to_owned()),
            Operator::In => (value.is_object() || value.is_array())
                .then(|| "must be a string, number or boolean".to_owned()),
        };
        if let Some(reason) = problem {
            errors.push(FieldError::new(
                format!("{at}.values[{k}]"),
                format!("{reason} (operator {:?})", clause.op),
            ));
        }
    }
}

/// Rule and clause `_id`s must be unique (and present).
pub(crate) fn validate_ids<'a>(
    at: &str,
    rules: impl Iterator<Item = (&'a str, &'a [Clause])>,
    errors: &mut Vec<FieldError>,
) {
    let mut rule_ids = BTreeSet::new();
    for (i, (id, clauses)) in rules.enumerate() {
        if id.is_empty() || !rule_ids.insert(id) {
            errors.push(FieldError::new(
                format!("{at}.rules[{i}]._id"),
                "rule ids must be unique",
            ));
        }
        let clause_ids: BTreeSet<&str> = clauses.iter().map(|c| c.id.as_str()).collect();
        if clause_ids.len() != clauses.len() || clause_ids.contains("") {
            errors.push(FieldError::new(
                format!("{at}.rules[{i}].clauses"),
                "clause ids must be unique",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Case-insensitive and Unicode-class expressions compile (the `regex` crate's Unicode
    /// features are on); the size limit still refuses large ones.
    #[test]
    fn unicode_regular_expressions_compile_within_the_size_limit() {
        let mut check = RegexCheck::default();
        for pattern in [
            "(?i)abc",
            r"\pL",
            r"(?i)\w",
            r"^\p{Greek}+$",
            "(?i)straße",
            r"\d\s\b",
        ] {
            assert_eq!(check.check(pattern), None, "{pattern}");
        }
        let refused = check.check(r"(?i)\w{500}").expect("too large");
        assert!(refused.contains("65536 bytes"), "{refused}");
    }

    /// Test builds get the `regex` crate's Unicode tables anyway (dev-dependencies such as
    /// proptest turn on `regex-syntax`'s defaults), which hid that the service's own build
    /// refused `(?i)abc` and `\pL`; so the workspace manifest itself is checked.
    #[test]
    fn the_service_build_has_the_regex_unicode_features() {
        let manifest = include_str!("../../../Cargo.toml");
        let line = manifest
            .lines()
            .find(|l| l.starts_with("regex ="))
            .expect("regex in [workspace.dependencies]");
        assert!(line.contains("\"unicode\""), "{line}");
    }
}
