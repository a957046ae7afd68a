//! Loads a flag from JSON, applies a semantic patch and prints the result: the domain crate on
//! its own, as another service would use it.
//!
//! ```sh
//! cargo run -p flagsvc-domain --example patch_flag            # a built-in flag and patch
//! cargo run -p flagsvc-domain --example patch_flag flag.json patch.json
//! ```

use std::process::ExitCode;

use domain::flag::{Flag, NewFlag, ProjectFlags};
use domain::instruction::SemanticPatch;
use domain::key::FlagKey;
use domain::SequentialIds;
use serde_json::{json, Value};

fn read(path: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))
}

/// A boolean flag configured in `test` and `production`, as JSON (the flag's document; a file
/// given instead may also hold the body of `GET /flags/{p}/{f}`).
fn sample_flag(ids: &mut SequentialIds) -> Result<Value, String> {
    let key = FlagKey::parse("new-checkout").map_err(|e| e.to_string())?;
    let mut flag =
        Flag::create(NewFlag::boolean(key, "New checkout"), 1, ids).map_err(|e| e.to_string())?;
    for env in ["test", "production"] {
        let config = flag.new_config(env, 1, ids);
        flag.environments.insert(env.into(), config);
    }
    serde_json::to_value(&flag).map_err(|e| e.to_string())
}

fn run() -> Result<Value, String> {
    let mut ids = SequentialIds::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (flag, patch) = match args.as_slice() {
        [] => (
            sample_flag(&mut ids)?,
            json!({
                "environmentKey": "production",
                "instructions": [
                    {"kind": "turnFlagOn"},
                    {"kind": "addTargets", "values": ["alice"], "variationId": "00000000-0000-4000-8000-000000000001"}
                ]
            }),
        ),
        [flag, patch] => (read(flag)?, read(patch)?),
        _ => return Err("usage: patch_flag [flag.json patch.json]".into()),
    };
    // The body of a GET reads as well: what the API adds to show a flag is left out.
    let flag = Flag::from_shown(flag).map_err(|e| format!("flag: {e}"))?;
    let patch = SemanticPatch::parse(patch).map_err(|e| format!("patch: {e}"))?;
    let outcome = flag
        .apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default())
        .map_err(|e| format!("patch refused: {e}"))?;
    serde_json::to_value(&outcome.flag).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    match run() {
        Ok(flag) => {
            println!("{flag:#}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
