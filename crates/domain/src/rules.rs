//! Rules made of clauses, shared by flags and segments: addressing rules and clauses by `_id`,
//! the clause instructions, and the rules every clause obeys.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::flag::{Clause, Operator};
use crate::instruction::ClauseInput;
use crate::{FieldError, IdSource};

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

/// `addValuesToClause`: values already there are not repeated.
pub(crate) fn add_clause_values<R: ClauseRule>(
    rules: &mut [R],
    rule_id: &str,
    clause_id: &str,
    values: &[Value],
) -> Step {
    let clause = clause_mut(rules, rule_id, clause_id)?;
    for value in values {
        if !clause.values.contains(value) {
            clause.values.push(value.clone());
        }
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

/// Checks that a clause's values have the type its operator needs.
pub(crate) fn validate_clause(at: &str, clause: &Clause, errors: &mut Vec<FieldError>) {
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
    for (k, value) in clause.values.iter().enumerate() {
        let problem = match clause.op {
            Operator::Matches => match value.as_str() {
                Some(pattern) => regex::Regex::new(pattern)
                    .err()
                    .map(|e| format!("is not a valid regular expression: {e}")),
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
