//! Every instruction kind: its effect, its no-op case, and its errors. Targeting (switches,
//! targets, rules, clauses, fallthrough, prerequisites, events) in `targeting`; variations, the
//! flag's settings and its lifecycle in `settings`.

mod settings;
mod targeting;

use serde_json::{json, Value};

use super::*;
use crate::instruction::{InstructionError, SemanticPatch};
use crate::key::FlagKey;
use crate::SequentialIds;

/// A multivariate flag "f" with variations a, b, c in environments test and production, and a
/// project that also holds flag "other" (variations x, y) and archived flag "old".
struct Fixture {
    flag: Flag,
    ids: SequentialIds,
    project: ProjectFlags,
}

fn fixture() -> Fixture {
    let mut ids = SequentialIds::default();
    let new = NewFlag::with_values(
        FlagKey::parse("f").unwrap(),
        "F",
        ["a", "b", "c"].map(Value::from),
    );
    let mut flag = Flag::create(new, 1, &mut ids).unwrap();
    for env in ["test", "production"] {
        let config = flag.new_config(env, 1, &mut ids);
        flag.environments.insert(env.to_owned(), config);
    }
    let project = ProjectFlags::new([
        FlagFacts {
            key: "other".into(),
            variation_ids: vec!["x".into(), "y".into()],
            archived: false,
            prerequisites: vec![],
        },
        FlagFacts {
            key: "old".into(),
            variation_ids: vec!["o".into()],
            archived: true,
            prerequisites: vec![],
        },
    ]);
    Fixture { flag, ids, project }
}

impl Fixture {
    fn var(&self, i: usize) -> String {
        self.flag.variations[i].id.clone()
    }

    fn apply(
        &mut self,
        env: Option<&str>,
        instructions: Value,
    ) -> Result<PatchOutcome, InstructionError> {
        let mut body = json!({"instructions": instructions});
        if let Some(env) = env {
            body["environmentKey"] = json!(env);
        }
        let patch = SemanticPatch::parse(body)?;
        self.flag
            .apply_instructions(&patch, 100, &mut self.ids, &self.project)
    }

    /// Applies and keeps the result.
    fn ok(&mut self, env: Option<&str>, instructions: Value) -> &Flag {
        let outcome = self
            .apply(env, instructions.clone())
            .unwrap_or_else(|e| panic!("{instructions}: {e}"));
        self.flag = outcome.flag;
        &self.flag
    }

    /// Applies again and expects no change at all.
    fn no_op(&mut self, env: Option<&str>, instructions: Value) {
        let before = self.flag.clone();
        let outcome = self
            .apply(env, instructions.clone())
            .unwrap_or_else(|e| panic!("{instructions}: {e}"));
        assert_eq!(outcome.flag, before, "{instructions} changed the flag");
    }

    /// Expects an error whose message contains `needle`, and no change.
    fn err(&mut self, env: Option<&str>, instructions: Value, needle: &str) -> InstructionError {
        let before = self.flag.clone();
        let err = self
            .apply(env, instructions.clone())
            .expect_err(&format!("{instructions} should fail"));
        assert!(
            err.to_string().contains(needle),
            "{instructions}: '{err}' lacks '{needle}'"
        );
        assert_eq!(self.flag, before);
        err
    }

    fn config(&self, env: &str) -> &FlagConfig {
        &self.flag.environments[env]
    }
}

const P: Option<&str> = Some("production");

#[test]
fn every_kind_is_tested_here() {
    let source = concat!(include_str!("targeting.rs"), include_str!("settings.rs"));
    for kind in crate::instruction::Instruction::KINDS {
        assert!(
            source.contains(&format!("\"kind\": \"{kind}\"")),
            "no test uses '{kind}'"
        );
    }
}
