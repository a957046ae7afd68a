//! The script's flags: created in every form, changed by JSON Patch, merge patch and semantic
//! patch, copied, cloned, listed, and refused.

use anyhow::Result;
use serde_json::{json, Value};

use super::session::{Session, Step, JSON};

const WEB_FLAGS: &str = "/api/v2/flags/web";

/// A clause on the user's email.
fn email_clause(suffix: &str) -> Value {
    json!({"attribute": "email", "op": "endsWith", "values": [suffix], "contextKind": "user", "negate": false})
}

/// A flag's semantic patch in one environment of project `web`.
fn flag_instructions(flag: &str, env: &str, what: &str, instructions: &Value) -> Step {
    Step::semantic(
        &format!("flag {flag}: {what} in {env} (semantic)"),
        &format!("{WEB_FLAGS}/{flag}"),
        &json!({"environmentKey": env, "comment": what, "instructions": instructions}),
    )
}

pub fn flags_create(s: &mut Session) -> Result<()> {
    let create =
        |what: &str, body: Value| Step::post(&format!("flag: create {what}"), WEB_FLAGS, &body);
    s.run(create("boolean dark-mode", json!({"key": "dark-mode", "name": "Dark mode", "description": "night", "tags": ["ui"], "temporary": true}))
        .keep("dm_true", "/variations/0/_id").keep("dm_false", "/variations/1/_id"))?;
    s.run(create("multivariate theme", json!({"key": "theme", "name": "Theme", "tags": ["ui", "beta"],
        "variations": [{"value": "red", "name": "Red"}, {"value": "green"}, {"value": "blue", "description": "cool"}],
        "defaults": {"onVariation": 0, "offVariation": 2}}))
        .keep("th_red", "/variations/0/_id").keep("th_green", "/variations/1/_id").keep("th_blue", "/variations/2/_id"))?;
    s.run(create("number limit", json!({"key": "limit", "name": "Limit", "variations": [{"value": 1}, {"value": 10}, {"value": 100}], "isFlagOn": true}))
        .keep("li_1", "/variations/0/_id").keep("li_10", "/variations/1/_id"))?;
    s.run(create("json layout", json!({"key": "layout", "name": "Layout", "variations": [{"value": {"cols": 1}}, {"value": {"cols": 2}}], "maintainerId": "{{m_writer}}"})))?;
    s.run(
        create(
            "base, a prerequisite",
            json!({"key": "base", "name": "Base"}),
        )
        .keep("base_true", "/variations/0/_id"),
    )?;
    s.run(create(
        "dependent, with initial prerequisites",
        json!({"key": "dependent", "name": "Dependent",
        "initialPrerequisites": [{"key": "base", "variationId": "{{base_true}}"}]}),
    ))?;
    for i in 0..8 {
        s.run(create(&format!("bulk-{i}"), json!({"key": format!("bulk-{i}"), "name": format!("Bulk {i}"), "tags": [if i % 2 == 0 { "even" } else { "odd" }]})).by("writer"))?;
    }
    s.run(create(
        "maintained by a team that does not exist",
        json!({"key": "t", "name": "T", "maintainerTeamKey": "nobody"}),
    ))?;
    s.run(create(
        "key taken",
        json!({"key": "theme", "name": "Again"}),
    ))?;
    s.run(create(
        "duplicate variation values",
        json!({"key": "dup", "name": "Dup", "variations": [{"value": "a"}, {"value": "a"}]}),
    ))?;
    s.run(create(
        "refused purpose",
        json!({"key": "p", "name": "P", "purpose": "migration"}),
    ))?;
    s.run(create(
        "unknown field",
        json!({"key": "u", "name": "U", "colour": "red"}),
    ))?;
    s.run(create("as a reader", json!({"key": "r", "name": "R"})).by("reader"))?;
    s.run(Step::post(
        "flag: create against the naming convention",
        "/api/v2/flags/named",
        &json!({"key": "newCheckout", "name": "N"}),
    ))?;
    s.run(Step::post(
        "flag: create following the naming convention",
        "/api/v2/flags/named",
        &json!({"key": "new_checkout", "name": "N"}),
    ))?;
    s.run(Step::post(
        "flag: create in an unknown project",
        "/api/v2/flags/nope",
        &json!({"key": "x", "name": "X"}),
    ))?;
    s.run(Step::post(
        "flag: clone theme",
        &format!("{WEB_FLAGS}?clone=theme"),
        &json!({"key": "theme-copy", "name": "Theme copy"}),
    ))?;
    s.run(Step::post(
        "flag: clone with isFlagOn (refused)",
        &format!("{WEB_FLAGS}?clone=theme"),
        &json!({"key": "theme-2", "name": "T2", "isFlagOn": true}),
    ))?;
    s.run(Step::post(
        "flag: clone an unknown flag",
        &format!("{WEB_FLAGS}?clone=nope"),
        &json!({"key": "theme-3", "name": "T3"}),
    ))?;
    Ok(())
}

pub fn flags_json_patch(s: &mut Session) -> Result<()> {
    let patch = |flag: &str, what: &str, body: Value| {
        Step::patch(
            &format!("flag {flag}: {what} (JSON Patch)"),
            &format!("{WEB_FLAGS}/{flag}"),
            &body,
        )
    };
    s.run(patch(
        "dark-mode",
        "rename, tag, turn on in test",
        json!([
        {"op": "replace", "path": "/name", "value": "Dark mode!"},
        {"op": "add", "path": "/tags/-", "value": "night"},
        {"op": "replace", "path": "/environments/test/on", "value": true}]),
    ))?;
    s.run(patch("dark-mode", "guarded by _version 2", json!([{"op": "test", "path": "/_version", "value": 2}, {"op": "replace", "path": "/description", "value": "guarded"}])))?;
    s.run(patch("dark-mode", "stale _version", json!([{"op": "test", "path": "/_version", "value": 1}, {"op": "replace", "path": "/description", "value": "stale"}])))?;
    s.run(patch("dark-mode", "stale /version (the reference's idiom)", json!([{"op": "test", "path": "/version", "value": 1}, {"op": "replace", "path": "/description", "value": "stale"}])))?;
    s.run(patch("dark-mode", "stale environment version", json!([{"op": "test", "path": "/environments/production/version", "value": 7}, {"op": "replace", "path": "/environments/production/on", "value": true}])))?;
    s.run(patch("dark-mode", "add a rule", json!({"comment": "rule by patch", "patch": [
        {"op": "add", "path": "/environments/production/rules/-", "value": {"variation": 0, "clauses": [email_clause("@example.com")]}}]})))?;
    s.run(patch("dark-mode", "add targets", json!([{"op": "add", "path": "/environments/production/targets/-", "value": {"values": ["alice", "bob"], "variation": 1}}])))?;
    s.run(patch("dark-mode", "a clause value of the wrong type", json!([{"op": "add", "path": "/environments/production/rules/-", "value": {"variation": 0, "clauses": [{"attribute": "age", "op": "lessThan", "values": ["old"], "negate": false}]}}])))?;
    s.run(patch(
        "dark-mode",
        "read-only path",
        json!([{"op": "replace", "path": "/key", "value": "k"}]),
    ))?;
    s.run(patch(
        "dark-mode",
        "missing path",
        json!([{"op": "remove", "path": "/environments/production/rules/9"}]),
    ))?;
    s.run(patch(
        "dark-mode",
        "a change that changes nothing",
        json!([{"op": "replace", "path": "/name", "value": "Dark mode!"}]),
    ))?;
    Ok(())
}

pub fn flags_json_patch_more(s: &mut Session) -> Result<()> {
    let patch = |flag: &str, what: &str, body: Value| {
        Step::patch(
            &format!("flag {flag}: {what} (JSON Patch)"),
            &format!("{WEB_FLAGS}/{flag}"),
            &body,
        )
    };
    s.run(patch(
        "theme",
        "rename a variation",
        json!([{"op": "add", "path": "/variations/1/name", "value": "Green"}]),
    ))?;
    s.run(patch(
        "theme",
        "move a used variation",
        json!([{"op": "move", "from": "/variations/0", "path": "/variations/2"}]),
    ))?;
    s.run(patch("limit", "fallthrough and off variation", json!([
        {"op": "replace", "path": "/environments/production/fallthrough", "value": {"variation": 1}},
        {"op": "replace", "path": "/environments/production/offVariation", "value": 0}])))?;
    s.run(patch(
        "layout",
        "both maintainers",
        json!([{"op": "add", "path": "/maintainerTeamKey", "value": "platform"}]),
    ))?;
    for i in 0..8 {
        s.run(
            patch(
                &format!("bulk-{i}"),
                "describe and turn on",
                json!([
            {"op": "add", "path": "/description", "value": format!("bulk flag {i}")},
            {"op": "replace", "path": "/environments/production/on", "value": i % 3 == 0}]),
            )
            .by("writer"),
        )?;
    }
    s.run(
        patch(
            "bulk-0",
            "as a reader",
            json!([{"op": "replace", "path": "/name", "value": "R"}]),
        )
        .by("reader"),
    )?;
    s.run(patch(
        "nope",
        "unknown flag",
        json!([{"op": "replace", "path": "/name", "value": "R"}]),
    ))?;
    s.run(patch("bulk-1", "malformed JSON", json!(null)).raw(JSON, "[{\"op\": \"replace\","))?;
    s.run(patch("bulk-1", "not a patch", json!({"name": "x"})))?;
    s.run(patch("bulk-1", "text/plain", json!(null)).raw("text/plain", "hello"))?;
    s.run(
        patch(
            "bulk-1",
            "dry run",
            json!([{"op": "replace", "path": "/name", "value": "Dry"}]),
        )
        .path_suffix("?dryRun=true"),
    )?;
    s.run(
        patch(
            "bulk-1",
            "dry run, bad value",
            json!([{"op": "replace", "path": "/name", "value": "Dry"}]),
        )
        .path_suffix("?dryRun=maybe"),
    )?;
    s.run(
        patch(
            "bulk-1",
            "undeclared parameter",
            json!([{"op": "replace", "path": "/name", "value": "Dry"}]),
        )
        .path_suffix("?dryrun=true"),
    )?;
    Ok(())
}

pub fn flags_merge_patch(s: &mut Session) -> Result<()> {
    let merge = |flag: &str, what: &str, body: Value| {
        Step::merge(
            &format!("flag {flag}: {what} (merge patch)"),
            &format!("{WEB_FLAGS}/{flag}"),
            &body,
        )
    };
    s.run(merge(
        "theme",
        "description and tags",
        json!({"description": "colours", "tags": ["ui"]}),
    ))?;
    s.run(merge(
        "theme",
        "an environment's on",
        json!({"environments": {"test": {"on": true}}}),
    ))?;
    s.run(merge(
        "theme",
        "remove the description",
        json!({"description": null}),
    ))?;
    s.run(merge("theme", "a read-only field", json!({"key": "other"})))?;
    s.run(merge(
        "theme",
        "invalid variations",
        json!({"variations": [{"value": 1}, {"value": "x"}]}),
    ))?;
    s.run(merge("limit", "temporary off", json!({"temporary": false})))?;
    s.run(Step::patch(
        "flag layout: {comment, merge} as JSON",
        &format!("{WEB_FLAGS}/layout"),
        &json!({"comment": "merged", "merge": {"name": "Layout!"}}),
    ))?;
    s.run(Step::patch(
        "flag layout: {comment, merge} with another field",
        &format!("{WEB_FLAGS}/layout"),
        &json!({"comment": "merged", "merge": {"name": "L"}, "extra": 1}),
    ))?;
    s.run(merge("layout", "as a reader", json!({"name": "R"})).by("reader"))?;
    s.run(merge("layout", "not an object", json!([1, 2])))?;
    Ok(())
}

pub fn flags_semantic(s: &mut Session) -> Result<()> {
    let i = flag_instructions;
    s.run(i(
        "dark-mode",
        "production",
        "turn on",
        &json!([{"kind": "turnFlagOn"}]),
    ))?;
    s.run(i(
        "dark-mode",
        "production",
        "turn on again",
        &json!([{"kind": "turnFlagOn"}]),
    ))?;
    s.run(i("dark-mode", "production", "targets", &json!([
        {"kind": "addTargets", "variationId": "{{dm_true}}", "values": ["carol", "dave"]},
        {"kind": "addTargets", "variationId": "{{dm_false}}", "values": ["org-1"], "contextKind": "organization"},
        {"kind": "removeTargets", "variationId": "{{dm_false}}", "values": ["bob"]}])))?;
    s.run(i("dark-mode", "production", "add a rule", &json!([{"kind": "addRule", "variationId": "{{dm_false}}", "description": "staff", "clauses": [email_clause("@staff.example.com")]}]))
        .keep("dm_rule", "/environments/production/rules/1/_id")
        .keep("dm_rule0", "/environments/production/rules/0/_id")
        .keep("dm_clause", "/environments/production/rules/1/clauses/0/_id"))?;
    s.run(i("dark-mode", "production", "change the rule", &json!([
        {"kind": "updateRuleDescription", "ruleId": "{{dm_rule}}", "description": "staff only"},
        {"kind": "addValuesToClause", "ruleId": "{{dm_rule}}", "clauseId": "{{dm_clause}}", "values": ["@ops.example.com"]},
        {"kind": "addClauses", "ruleId": "{{dm_rule}}", "clauses": [{"attribute": "country", "op": "in", "values": ["NL"], "negate": true}]},
        {"kind": "updateRuleTrackEvents", "ruleId": "{{dm_rule}}", "trackEvents": true}])))?;
    s.run(i(
        "dark-mode",
        "production",
        "reorder rules",
        &json!([{"kind": "reorderRules", "ruleIds": ["{{dm_rule}}", "{{dm_rule0}}"]}]),
    ))?;
    s.run(i("dark-mode", "production", "rollout fallthrough", &json!([{"kind": "updateFallthroughVariationOrRollout", "rolloutWeights": {"{{dm_true}}": 25000, "{{dm_false}}": 75000}, "rolloutBucketBy": "email"}])))?;
    s.run(i("dark-mode", "production", "rollout weights that do not sum", &json!([{"kind": "updateFallthroughVariationOrRollout", "rolloutWeights": {"{{dm_true}}": 25000, "{{dm_false}}": 5000}}])))?;
    s.run(i(
        "dark-mode",
        "production",
        "off variation and prerequisite",
        &json!([
        {"kind": "updateOffVariation", "variationId": "{{dm_false}}"},
        {"kind": "addPrerequisite", "key": "base", "variationId": "{{base_true}}"}]),
    ))?;
    s.run(i(
        "dark-mode",
        "production",
        "a prerequisite on itself",
        &json!([{"kind": "addPrerequisite", "key": "dark-mode", "variationId": "{{dm_true}}"}]),
    ))?;
    s.run(i("dark-mode", "production", "an unknown variation", &json!([{"kind": "updateOffVariation", "variationId": "00000000-0000-4000-8000-000000000000"}])))?;
    s.run(i(
        "dark-mode",
        "production",
        "an unknown kind",
        &json!([{"kind": "turnFlagSideways"}]),
    ))?;
    s.run(i(
        "dark-mode",
        "nope",
        "an unknown environment",
        &json!([{"kind": "turnFlagOff"}]),
    ))?;
    s.run(
        i(
            "dark-mode",
            "production",
            "as a reader",
            &json!([{"kind": "turnFlagOff"}]),
        )
        .by("reader"),
    )?;
    s.run(
        i(
            "dark-mode",
            "production",
            "dry run",
            &json!([{"kind": "turnFlagOff"}]),
        )
        .path_suffix("?dryRun=true"),
    )?;
    s.run(i("dark-mode", "test", "track events", &json!([{"kind": "updateTrackEvents", "trackEvents": true}, {"kind": "updateTrackEventsFallthrough", "trackEvents": false}])))?;
    s.run(i("theme", "production", "replace rules and targets", &json!([
        {"kind": "replaceRules", "rules": [{"variationId": "{{th_green}}", "clauses": [email_clause("@green.io")]}, {"rolloutWeights": {"{{th_red}}": 50000, "{{th_blue}}": 50000}, "clauses": [email_clause("@mix.io")]}]},
        {"kind": "replaceTargets", "targets": [{"variationId": "{{th_blue}}", "values": ["eve"]}]},
        {"kind": "turnFlagOn"}])).keep("th_rule", "/environments/production/rules/0/_id"))?;
    s.run(i("theme", "production", "rule variation and removal", &json!([
        {"kind": "updateRuleVariationOrRollout", "ruleId": "{{th_rule}}", "variationId": "{{th_blue}}"},
        {"kind": "removeRule", "ruleId": "{{th_rule}}"},
        {"kind": "clearTargets", "variationId": "{{th_blue}}"}])))?;
    s.run(i("limit", "production", "user targets", &json!([{"kind": "addUserTargets", "variationId": "{{li_10}}", "values": ["u1", "u2"]}, {"kind": "turnFlagOff"}])))?;
    s.run(i("dependent", "production", "replace prerequisites", &json!([{"kind": "replacePrerequisites", "prerequisites": [{"key": "base", "variationId": "{{base_true}}"}, {"key": "dark-mode", "variationId": "{{dm_true}}"}]}])))?;
    Ok(())
}

pub fn flags_semantic_more(s: &mut Session) -> Result<()> {
    let flag = |name: &str, what: &str, instructions: Value| {
        Step::semantic(
            &format!("flag {name}: {what} (semantic, flag-wide)"),
            &format!("{WEB_FLAGS}/{name}"),
            &json!({"comment": what, "instructions": instructions}),
        )
    };
    s.run(
        flag(
            "theme",
            "add a variation",
            json!([{"kind": "addVariation", "value": "yellow", "name": "Yellow"}]),
        )
        .keep("th_yellow", "/variations/3/_id"),
    )?;
    s.run(flag("theme", "update and remove variations", json!([
        {"kind": "updateVariation", "variationId": "{{th_yellow}}", "name": "Sun", "description": "bright"},
        {"kind": "removeVariation", "variationId": "{{th_yellow}}"}])))?;
    s.run(flag(
        "theme",
        "remove a used variation",
        json!([{"kind": "removeVariation", "variationId": "{{th_red}}"}]),
    ))?;
    s.run(flag("theme", "defaults", json!([{"kind": "updateDefaultVariation", "onVariationValue": "green", "offVariationValue": "red"}])))?;
    s.run(flag("theme", "name, description, tags", json!([
        {"kind": "updateName", "value": "Colour theme"}, {"kind": "updateDescription", "value": "which colour"},
        {"kind": "addTags", "values": ["paint"]}, {"kind": "removeTags", "values": ["beta"]}])))?;
    s.run(flag(
        "theme",
        "permanent, custom properties",
        json!([
        {"kind": "makeFlagPermanent"},
        {"kind": "addCustomProperties", "key": "jira", "name": "Jira", "values": ["WEB-1"]},
        {"kind": "removeCustomProperties", "key": "jira", "values": ["WEB-1"]}]),
    ))?;
    s.run(flag(
        "theme",
        "client-side availability",
        json!([{"kind": "turnOnClientSideAvailability", "value": "usingMobileKey"}]),
    ))?;
    s.run(flag(
        "theme",
        "maintainer member",
        json!([{"kind": "updateMaintainerMember", "value": "{{m_admin}}"}]),
    ))?;
    s.run(flag(
        "theme",
        "unknown maintainer member",
        json!([{"kind": "updateMaintainerMember", "value": "000000000000000000000000"}]),
    ))?;
    s.run(flag(
        "theme",
        "remove maintainer",
        json!([{"kind": "removeMaintainer"}]),
    ))?;
    s.run(flag(
        "limit",
        "maintainer team (unknown)",
        json!([{"kind": "updateMaintainerTeam", "value": "nobody"}]),
    ))?;
    s.run(flag(
        "bulk-2",
        "deprecate",
        json!([{"kind": "deprecateFlag"}]),
    ))?;
    s.run(flag(
        "bulk-3",
        "archive and restore",
        json!([{"kind": "archiveFlag"}, {"kind": "restoreFlag"}]),
    ))?;
    s.run(flag("bulk-4", "archive", json!([{"kind": "archiveFlag"}])))?;
    s.run(flag(
        "base",
        "archive a prerequisite",
        json!([{"kind": "archiveFlag"}]),
    ))?;
    s.run(flag(
        "bulk-5",
        "an instruction after deleteFlag",
        json!([{"kind": "deleteFlag"}, {"kind": "archiveFlag"}]),
    ))?;
    s.run(flag(
        "bulk-5",
        "delete by instruction",
        json!([{"kind": "deleteFlag"}]),
    ))?;
    s.run(flag(
        "bulk-6",
        "turnFlagOn without an environment",
        json!([{"kind": "turnFlagOn"}]),
    ))?;
    s.run(flag("bulk-6", "empty instructions", json!([])))?;
    Ok(())
}

pub fn flags_other(s: &mut Session) -> Result<()> {
    let copy = format!("{WEB_FLAGS}/dark-mode/copy");
    s.run(Step::post(
        "flag dark-mode: copy production onto staging",
        &copy,
        &json!({"source": {"key": "production"}, "target": {"key": "staging"}, "comment": "copy"}),
    ))?;
    s.run(Step::post("flag dark-mode: copy targets only onto test", &copy, &json!({"source": {"key": "production"}, "target": {"key": "test"}, "includedActions": ["updateTargets"]})))?;
    s.run(Step::post(
        "flag dark-mode: copy with a stale version",
        &copy,
        &json!({"source": {"key": "production", "currentVersion": 1}, "target": {"key": "test"}}),
    ))?;
    s.run(Step::post(
        "flag dark-mode: copy onto itself",
        &copy,
        &json!({"source": {"key": "production"}, "target": {"key": "production"}}),
    ))?;
    s.run(
        Step::post(
            "flag dark-mode: copy as a reader",
            &copy,
            &json!({"source": {"key": "production"}, "target": {"key": "test"}}),
        )
        .by("reader"),
    )?;
    s.run(
        Step::get(
            "flag base: dependent flags",
            &format!("{WEB_FLAGS}/base/dependent-flags"),
        )
        .header("Svc-API-Version", "beta"),
    )?;
    s.run(Step::get(
        "flag base: dependent flags without beta",
        &format!("{WEB_FLAGS}/base/dependent-flags"),
    ))?;
    s.run(Step::get(
        "flag statuses: production",
        "/api/v2/flag-statuses/web/production",
    ))?;
    s.run(Step::get(
        "flag status: dark-mode in production",
        "/api/v2/flag-statuses/web/production/dark-mode",
    ))?;
    s.run(Step::get(
        "flag status: across environments",
        "/api/v2/flag-status/web/dark-mode?env=production,test",
    ))?;
    s.run(Step::get(
        "flag status: unknown flag",
        "/api/v2/flag-statuses/web/production/nope",
    ))?;
    s.run(
        Step::get(
            "flag: with _access",
            &format!("{WEB_FLAGS}/dark-mode?expand=_access&env=production"),
        )
        .by("writer"),
    )?;
    s.run(Step::get(
        "flag: bad expand",
        &format!("{WEB_FLAGS}/dark-mode?expand=everything"),
    ))?;
    for (what, query) in [
        ("default page", ""),
        ("version 20220603", "?limit=5"),
        ("env and summary", "?env=production&env=test&summary=true"),
        ("filter tags", "?filter=tags:even"),
        ("archived", "?filter=state:archived"),
        ("deprecated", "?filter=state:deprecated"),
        ("temporary, by name", "?filter=type:temporary&sort=name"),
        ("maintainer", "?filter=maintainerId:{{m_writer}}"),
        ("by key descending, paged", "?sort=-key&limit=3&offset=2"),
        ("query", "?filter=query:bulk"),
        ("bad sort", "?sort=colour"),
        ("bad limit", "?limit=0"),
    ] {
        let mut step = Step::get(
            &format!("flags: list, {what}"),
            &format!("{WEB_FLAGS}{query}"),
        );
        if what == "version 20220603" {
            step = step.header("Svc-API-Version", "20220603");
        }
        s.run(step)?;
    }
    s.run(
        Step::get(
            "flags: list as the personal token (20220603 default)",
            WEB_FLAGS,
        )
        .by("personal"),
    )?;
    s.run(Step::get("flags: bad version header", WEB_FLAGS).header("Svc-API-Version", "Beta"))?;
    Ok(())
}
