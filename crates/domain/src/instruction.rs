//! Semantic patch: a list of named instructions applied to a flag, all or nothing.
//!
//! The body is `{"environmentKey"?, "comment"?, "instructions": [{"kind": ..., ...}]}`.
//! Environment-scoped kinds need `environmentKey`. An instruction that finds the flag already as
//! asked succeeds without change, and a request that changes nothing leaves `_version` alone.

use serde_json::{Map, Value};

use crate::flag::Flag;
use crate::ValidationError;

/// One instruction of a semantic patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instruction {
    /// Turn targeting on in the patch's environment.
    TurnFlagOn,
    /// Turn targeting off in the patch's environment.
    TurnFlagOff,
}

impl Instruction {
    /// Whether the instruction acts on one environment (and so needs `environmentKey`).
    pub fn is_environment_scoped(&self) -> bool {
        match self {
            Instruction::TurnFlagOn | Instruction::TurnFlagOff => true,
        }
    }

    /// The instruction's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Instruction::TurnFlagOn => "turnFlagOn",
            Instruction::TurnFlagOff => "turnFlagOff",
        }
    }

    /// The instruction kinds this version understands.
    pub const KINDS: [&'static str; 2] = ["turnFlagOn", "turnFlagOff"];

    fn parse(index: usize, value: Value) -> Result<Self, InstructionError> {
        let fail = |message: String| InstructionError::Instruction { index, message };
        let Value::Object(mut fields) = value else {
            return Err(fail(
                "an instruction must be an object with a 'kind'".into(),
            ));
        };
        let kind = match fields.remove("kind") {
            Some(Value::String(kind)) => kind,
            Some(_) => return Err(fail("'kind' must be a string".into())),
            None => return Err(fail("missing 'kind'".into())),
        };
        let instruction = match kind.as_str() {
            "turnFlagOn" => Instruction::TurnFlagOn,
            "turnFlagOff" => Instruction::TurnFlagOff,
            other => {
                return Err(fail(format!(
                    "unknown kind '{other}'; supported kinds: {}",
                    Instruction::KINDS.join(", ")
                )))
            }
        };
        no_more_parameters(&fields)
            .map_err(|p| fail(format!("'{kind}' takes no parameter '{p}'")))?;
        Ok(instruction)
    }
}

fn no_more_parameters(fields: &Map<String, Value>) -> Result<(), String> {
    match fields.keys().next() {
        Some(name) => Err(name.clone()),
        None => Ok(()),
    }
}

/// Why a semantic patch was refused (HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstructionError {
    /// The body is not a semantic patch.
    #[error("{0}")]
    Malformed(String),
    /// One instruction is ill-formed or cannot be applied.
    #[error("instruction {index}: {message}")]
    Instruction {
        /// Its index in `instructions`.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// The result breaks a rule of the model.
    #[error("the result is invalid: {0}")]
    Invalid(#[from] ValidationError),
}

/// A parsed semantic patch body.
///
/// ```
/// use domain::instruction::{Instruction, SemanticPatch};
/// let patch = SemanticPatch::parse(serde_json::json!({
///     "environmentKey": "production",
///     "instructions": [{"kind": "turnFlagOn"}]})).unwrap();
/// assert_eq!(patch.instructions, vec![Instruction::TurnFlagOn]);
/// let err = SemanticPatch::parse(serde_json::json!({"instructions": [{"kind": "fly"}]})).unwrap_err();
/// assert!(err.to_string().starts_with("instruction 0: unknown kind 'fly'"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemanticPatch {
    /// The environment that environment-scoped instructions act on.
    pub environment_key: Option<String>,
    /// A comment for the audit log.
    pub comment: Option<String>,
    /// The instructions, applied in order.
    pub instructions: Vec<Instruction>,
}

impl SemanticPatch {
    /// Reads a semantic patch body.
    ///
    /// # Errors
    /// [`InstructionError`] for a body that is not an object with an `instructions` array, or
    /// an instruction with an unknown kind or ill-typed parameters (naming its index).
    pub fn parse(body: Value) -> Result<Self, InstructionError> {
        let Value::Object(mut fields) = body else {
            return Err(InstructionError::Malformed(
                "a semantic patch is an object: {\"environmentKey\", \"comment\", \"instructions\": [...]}".into(),
            ));
        };
        let string_field = |fields: &mut Map<String, Value>, name: &str| match fields.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(InstructionError::Malformed(format!(
                "'{name}' must be a string"
            ))),
        };
        let environment_key = string_field(&mut fields, "environmentKey")?;
        let comment = string_field(&mut fields, "comment")?;
        let instructions = match fields.remove("instructions") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| Instruction::parse(i, item))
                .collect::<Result<Vec<_>, _>>()?,
            Some(Value::Array(_)) => {
                return Err(InstructionError::Malformed(
                    "'instructions' must not be empty".into(),
                ))
            }
            Some(_) => {
                return Err(InstructionError::Malformed(
                    "'instructions' must be an array".into(),
                ))
            }
            None => return Err(InstructionError::Malformed("missing 'instructions'".into())),
        };
        if let Some(other) = fields.keys().next() {
            return Err(InstructionError::Malformed(format!(
                "unexpected field '{other}' in semantic patch"
            )));
        }
        Ok(Self {
            environment_key,
            comment,
            instructions,
        })
    }
}

impl Flag {
    /// Applies a semantic patch: every instruction or none, then the flag's invariants.
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag};
    /// # use domain::key::FlagKey;
    /// use domain::instruction::SemanticPatch;
    /// # let mut ids = domain::SequentialIds::default();
    /// # let mut flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// # for env in ["test", "production"] { let c = flag.new_config(env, 1, &mut ids); flag.environments.insert(env.into(), c); }
    /// let patch = SemanticPatch::parse(serde_json::json!({
    ///     "environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]})).unwrap();
    /// let next = flag.apply_instructions(&patch, 2).unwrap();
    /// assert!(next.environments["production"].on);
    /// assert!(!next.environments["test"].on);
    /// assert_eq!(next.version, flag.version + 1);
    /// // Already on: succeeds without a change.
    /// assert_eq!(next.apply_instructions(&patch, 3).unwrap().version, next.version);
    /// ```
    ///
    /// # Errors
    /// [`InstructionError`]: an environment-scoped instruction without `environmentKey`, an
    /// environment the flag does not have, or a result that breaks a rule.
    pub fn apply_instructions(
        &self,
        patch: &SemanticPatch,
        now: i64,
    ) -> Result<Flag, InstructionError> {
        let mut next = self.clone();
        for (index, instruction) in patch.instructions.iter().enumerate() {
            let fail = |message: String| InstructionError::Instruction { index, message };
            if instruction.is_environment_scoped() {
                let env_key = patch.environment_key.as_deref().ok_or_else(|| {
                    fail(format!(
                        "'{}' needs 'environmentKey' in the request body",
                        instruction.kind()
                    ))
                })?;
                let config = next.environments.get_mut(env_key).ok_or_else(|| {
                    fail(format!(
                        "environment '{env_key}' does not exist in this project"
                    ))
                })?;
                match instruction {
                    Instruction::TurnFlagOn => config.on = true,
                    Instruction::TurnFlagOff => config.on = false,
                }
            }
        }
        next.validate()?;
        next.settle_change(self, now);
        Ok(next)
    }
}
