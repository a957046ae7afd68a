//! The script's second half: segments, custom roles and teams, tokens, webhooks, refusals, the
//! audit log, deletes, and the reads that phase two sends again.

use anyhow::Result;
use serde_json::{json, Value};

use super::session::{Session, Step};

const SEGMENTS: &str = "/api/v2/segments/web/production";

fn segment_instructions(segment: &str, what: &str, instructions: &Value) -> Step {
    Step::semantic(
        &format!("segment {segment}: {what} (semantic)"),
        &format!("{SEGMENTS}/{segment}"),
        &json!({"environmentKey": "production", "instructions": instructions}),
    )
}

pub fn segments(s: &mut Session) -> Result<()> {
    let create =
        |what: &str, body: Value| Step::post(&format!("segment: create {what}"), SEGMENTS, &body);
    s.run(create("beta-users", json!({"key": "beta-users", "name": "Beta users", "description": "early", "tags": ["beta"]})))?;
    s.run(create("staff", json!({"key": "staff", "name": "Staff"})))?;
    s.run(create(
        "key taken",
        json!({"key": "staff", "name": "Staff"}),
    ))?;
    s.run(create(
        "unbounded (refused)",
        json!({"key": "big", "name": "Big", "unbounded": true}),
    ))?;
    s.run(create("as a reader", json!({"key": "r", "name": "R"})).by("reader"))?;
    s.run(Step::post(
        "segment: create in an unknown environment",
        "/api/v2/segments/web/nope",
        &json!({"key": "x", "name": "X"}),
    ))?;
    let i = segment_instructions;
    s.run(i(
        "beta-users",
        "targets",
        &json!([
        {"kind": "addIncludedTargets", "contextKind": "user", "values": ["u1", "u2"]},
        {"kind": "addExcludedUsers", "values": ["u3"]},
        {"kind": "addTags", "values": ["early"]}, {"kind": "updateName", "value": "Beta testers"}]),
    ))?;
    s.run(i(
        "beta-users",
        "include an excluded key",
        &json!([{"kind": "addIncludedUsers", "values": ["u3"]}]),
    ))?;
    s.run(i("beta-users", "add a rule", &json!([{"kind": "addRule", "description": "testers", "clauses": [{"attribute": "email", "op": "endsWith", "values": ["@beta.io"], "negate": false}], "weight": 50000, "bucketBy": "key"}]))
        .keep("seg_rule", "/rules/0/_id").keep("seg_clause", "/rules/0/clauses/0/_id"))?;
    s.run(i("beta-users", "change the rule", &json!([
        {"kind": "updateRuleDescription", "ruleId": "{{seg_rule}}", "description": "beta testers"},
        {"kind": "addValuesToClause", "ruleId": "{{seg_rule}}", "clauseId": "{{seg_clause}}", "values": ["@gamma.io"]},
        {"kind": "updateRuleRolloutAndContextKind", "ruleId": "{{seg_rule}}", "weight": 60000, "contextKind": "user"}])))?;
    s.run(Step::semantic(
        "segment beta-users: another environment's key (semantic)",
        &format!("{SEGMENTS}/beta-users"),
        &json!({"environmentKey": "test", "instructions": [{"kind": "updateName", "value": "x"}]}),
    ))?;
    s.run(Step::patch("segment staff: JSON Patch", &format!("{SEGMENTS}/staff"), &json!([{"op": "replace", "path": "/name", "value": "All staff"}, {"op": "add", "path": "/included/-", "value": "boss"}])))?;
    s.run(Step::patch("segment staff: stale version", &format!("{SEGMENTS}/staff"), &json!([{"op": "test", "path": "/version", "value": 1}, {"op": "replace", "path": "/name", "value": "S"}])))?;
    s.run(Step::merge(
        "segment staff: merge patch",
        &format!("{SEGMENTS}/staff"),
        &json!({"description": "everyone", "tags": ["hr"]}),
    ))?;
    s.run(Step::merge(
        "segment staff: dry run",
        &format!("{SEGMENTS}/staff?dryRun=true"),
        &json!({"name": "Dry"}),
    ))?;
    s.run(
        Step::patch(
            "segment staff: as a reader",
            &format!("{SEGMENTS}/staff"),
            &json!([{"op": "replace", "path": "/name", "value": "R"}]),
        )
        .by("reader"),
    )?;
    s.run(Step::patch(
        "segment nope: unknown",
        &format!("{SEGMENTS}/nope"),
        &json!([{"op": "replace", "path": "/name", "value": "R"}]),
    ))?;
    s.run(Step::semantic("flag theme: a rule matching beta-users (semantic)", "/api/v2/flags/web/theme", &json!({"environmentKey": "production", "instructions": [
        {"kind": "addRule", "variationId": "{{th_green}}", "clauses": [{"attribute": "segmentMatch", "op": "segmentMatch", "values": ["beta-users"], "negate": false}]}]})))?;
    s.run(Step::semantic("flag theme: a rule matching an unknown segment (semantic)", "/api/v2/flags/web/theme", &json!({"environmentKey": "production", "instructions": [
        {"kind": "addRule", "variationId": "{{th_green}}", "clauses": [{"attribute": "segmentMatch", "op": "segmentMatch", "values": ["nobody"], "negate": false}]}]})))?;
    s.run(Step::get("segments: list", SEGMENTS))?;
    s.run(Step::get(
        "segments: filter and sort",
        &format!("{SEGMENTS}?filter=tags:beta&sort=-name"),
    ))?;
    s.run(Step::get(
        "segment: one, with its flags",
        &format!("{SEGMENTS}/beta-users"),
    ))?;
    s.run(Step::post("environment: clone production (flags and segments)", "/api/v2/projects/web/environments", &json!({"key": "preview", "name": "Preview", "color": "999999", "source": {"key": "production"}})))?;
    s.run(Step::post("environment: clone with source.version (refused)", "/api/v2/projects/web/environments", &json!({"key": "preview2", "name": "P2", "color": "999999", "source": {"key": "production", "version": 1}})))?;
    Ok(())
}

pub fn roles_and_teams(s: &mut Session) -> Result<()> {
    let editor = json!({"key": "flag-editor", "name": "Flag editor", "description": "test flags", "basePermissions": "reader", "policy": [
        {"effect": "allow", "resources": ["proj/web:env/test:flag/*"], "actions": ["*"]},
        {"effect": "deny", "resources": ["proj/web:env/production:flag/*"], "actions": ["updateOn"]}]});
    s.run(
        Step::post("role: create flag-editor", "/api/v2/roles", &editor)
            .keep("role_editor", "/_id"),
    )?;
    s.run(Step::post("role: create auditor", "/api/v2/roles", &json!({"key": "auditor", "name": "Auditor", "basePermissions": "no_access", "policy": [{"effect": "allow", "resources": ["acct"], "actions": ["viewAuditLog"]}]})))?;
    s.run(Step::post("role: key taken", "/api/v2/roles", &editor))?;
    s.run(Step::post("role: a built-in key", "/api/v2/roles", &json!({"key": "admin", "name": "A", "policy": [{"effect": "allow", "resources": ["acct"], "actions": ["*"]}]})))?;
    s.run(Step::post("role: bad specifier", "/api/v2/roles", &json!({"key": "bad", "name": "B", "policy": [{"effect": "allow", "resources": ["flag/x:proj/p"], "actions": ["*"]}]})))?;
    s.run(Step::post("role: as a writer", "/api/v2/roles", &json!({"key": "w", "name": "W", "policy": [{"effect": "allow", "resources": ["acct"], "actions": ["*"]}]})).by("writer"))?;
    s.run(Step::patch(
        "role flag-editor: JSON Patch",
        "/api/v2/roles/flag-editor",
        &json!([{"op": "replace", "path": "/description", "value": "edits test flags"}]),
    ))?;
    s.run(Step::merge(
        "role flag-editor: merge patch",
        "/api/v2/roles/flag-editor",
        &json!({"name": "Flag editors"}),
    ))?;
    s.run(Step::semantic(
        "role flag-editor: semantic patch (415)",
        "/api/v2/roles/flag-editor",
        &json!({"instructions": []}),
    ))?;
    s.run(Step::patch(
        "role auditor: remove basePermissions",
        "/api/v2/roles/auditor",
        &json!([{"op": "remove", "path": "/basePermissions"}]),
    ))?;
    s.run(Step::get("roles: list", "/api/v2/roles"))?;
    s.run(Step::get(
        "roles: by name descending",
        "/api/v2/roles?sort=-name&filter=query:a",
    ))?;
    s.run(Step::get("role: one", "/api/v2/roles/flag-editor"))?;
    s.run(
        Step::post(
            "token: create with a custom role",
            "/api/v2/tokens",
            &json!({"name": "editor", "serviceToken": true, "customRoleIds": ["{{role_editor}}"]}),
        )
        .keep("custom", "/token"),
    )?;
    s.run(Step::post(
        "token: an unknown custom role",
        "/api/v2/tokens",
        &json!({"name": "x", "serviceToken": true, "customRoleIds": ["000000000000000000000000"]}),
    ))?;
    s.run(
        Step::patch(
            "flag bulk-6: JSON Patch in test as the custom role",
            "/api/v2/flags/web/bulk-6",
            &json!([{"op": "replace", "path": "/environments/test/on", "value": true}]),
        )
        .by("custom"),
    )?;
    s.run(
        Step::semantic(
            "flag bulk-6: turn on in production as the custom role",
            "/api/v2/flags/web/bulk-6",
            &json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]}),
        )
        .by("custom"),
    )?;
    s.run(Step::patch(
        "member: give a custom role",
        "/api/v2/members/{{m_writer}}",
        &json!([{"op": "add", "path": "/customRoles", "value": ["flag-editor"]}]),
    ))?;
    s.run(Step::patch(
        "member: an unknown custom role",
        "/api/v2/members/{{m_writer}}",
        &json!([{"op": "add", "path": "/customRoles", "value": ["nope"]}]),
    ))?;
    s.run(Step::post("team: create platform", "/api/v2/teams", &json!({"key": "platform", "name": "Platform", "description": "infra", "customRoleKeys": ["auditor"], "memberIDs": ["{{m_writer}}"]})))?;
    s.run(Step::post(
        "team: an unknown member",
        "/api/v2/teams",
        &json!({"key": "ghosts", "name": "G", "memberIDs": ["000000000000000000000000"]}),
    ))?;
    s.run(
        Step::post(
            "team: as a writer",
            "/api/v2/teams",
            &json!({"key": "w", "name": "W"}),
        )
        .by("writer"),
    )?;
    s.run(Step::semantic("team platform: add a member, rename (semantic)", "/api/v2/teams/platform", &json!({"comment": "grow", "instructions": [{"kind": "addMembers", "values": ["{{m_reader}}"]}, {"kind": "updateName", "value": "Platform team"}]})))?;
    s.run(Step::patch("team platform: instructions as plain JSON", "/api/v2/teams/platform", &json!({"instructions": [{"kind": "updateDescription", "value": "infrastructure"}, {"kind": "addCustomRoles", "values": ["flag-editor"]}]})))?;
    s.run(Step::patch(
        "team platform: a JSON Patch (415)",
        "/api/v2/teams/platform",
        &json!([{"op": "replace", "path": "/name", "value": "x"}]),
    ))?;
    s.run(Step::semantic("team platform: remove an unknown member (semantic)", "/api/v2/teams/platform", &json!({"instructions": [{"kind": "removeMembers", "values": ["000000000000000000000000"]}]})))?;
    s.run(Step::post(
        "member: join a team",
        "/api/v2/members/{{m_admin}}/teams",
        &json!({"teamKeys": ["platform"]}),
    ))?;
    s.run(Step::post(
        "member: join an unknown team",
        "/api/v2/members/{{m_admin}}/teams",
        &json!({"teamKeys": ["nope"]}),
    ))?;
    s.run(Step::semantic(
        "flag layout: maintainer team (semantic)",
        "/api/v2/flags/web/layout",
        &json!({"instructions": [{"kind": "updateMaintainerTeam", "value": "platform"}]}),
    ))?;
    s.run(Step::get("teams: list", "/api/v2/teams"))?;
    s.run(Step::get(
        "team: one, expanded",
        "/api/v2/teams/platform?expand=members,roles",
    ))?;
    s.run(Step::delete(
        "role: delete one in use",
        "/api/v2/roles/flag-editor",
    ))?;
    Ok(())
}

pub fn tokens(s: &mut Session) -> Result<()> {
    s.run(Step::get("tokens: list", "/api/v2/tokens"))?;
    s.run(Step::get("tokens: list all", "/api/v2/tokens?showAll=true"))?;
    s.run(Step::get("tokens: list as a reader", "/api/v2/tokens").by("reader"))?;
    s.run(Step::get(
        "token: one",
        "/api/v2/tokens/{{reader_token_id}}",
    ))?;
    s.run(Step::patch("token: rename, describe, promote", "/api/v2/tokens/{{reader_token_id}}", &json!([
        {"op": "replace", "path": "/name", "value": "svc-reader-2"}, {"op": "replace", "path": "/description", "value": "renamed"},
        {"op": "replace", "path": "/defaultApiVersion", "value": 20220603}])))?;
    s.run(Step::patch(
        "token: role owner (refused)",
        "/api/v2/tokens/{{reader_token_id}}",
        &json!([{"op": "replace", "path": "/role", "value": "owner"}]),
    ))?;
    s.run(Step::patch(
        "token: read-only serviceToken",
        "/api/v2/tokens/{{reader_token_id}}",
        &json!([{"op": "replace", "path": "/serviceToken", "value": false}]),
    ))?;
    s.run(
        Step::post(
            "token: create as a writer",
            "/api/v2/tokens",
            &json!({"name": "w", "role": "reader"}),
        )
        .by("writer"),
    )?;
    s.run(
        Step::post(
            "token: a personal token by a service token",
            "/api/v2/tokens",
            &json!({"name": "p", "role": "reader"}),
        )
        .by("admin"),
    )?;
    s.run(Step::post(
        "token: an unknown field",
        "/api/v2/tokens",
        &json!({"name": "u", "colour": "red"}),
    ))?;
    s.run(
        Step::post(
            "token: create a throwaway",
            "/api/v2/tokens",
            &json!({"name": "throwaway", "serviceToken": true}),
        )
        .keep("throwaway_id", "/_id")
        .keep("throwaway", "/token"),
    )?;
    s.run(
        Step::post(
            "token: reset the throwaway",
            "/api/v2/tokens/{{throwaway_id}}/reset",
            &json!({}),
        )
        .keep("throwaway2", "/token"),
    )?;
    s.run(Step::get("token: the retired secret", "/api/v2/caller-identity").by("throwaway"))?;
    s.run(Step::get("token: the new secret", "/api/v2/caller-identity").by("throwaway2"))?;
    s.run(
        Step::post(
            "token: reset with an expiry",
            "/api/v2/tokens/{{throwaway_id}}/reset?expiry=4102444800000",
            &json!({}),
        )
        .keep("throwaway3", "/token"),
    )?;
    s.run(
        Step::get(
            "token: the secret kept until its expiry",
            "/api/v2/caller-identity",
        )
        .by("throwaway2"),
    )?;
    s.run(
        Step::post(
            "token: reset as a reader",
            "/api/v2/tokens/{{throwaway_id}}/reset",
            &json!({}),
        )
        .by("reader"),
    )?;
    s.run(Step::delete(
        "token: delete the throwaway",
        "/api/v2/tokens/{{throwaway_id}}",
    ))?;
    s.run(Step::delete(
        "token: delete it again",
        "/api/v2/tokens/{{throwaway_id}}",
    ))?;
    s.run(
        Step::get("token: a deleted token's secret", "/api/v2/caller-identity").by("throwaway3"),
    )?;
    s.run(Step::get(
        "token: unknown",
        "/api/v2/tokens/000000000000000000000000",
    ))?;
    s.run(Step::get("token: not an id", "/api/v2/tokens/xyz"))?;
    Ok(())
}

pub fn webhooks(s: &mut Session) -> Result<()> {
    let hooks = "/api/v2/webhooks";
    s.run(Step::post("webhook: create, signed, on", hooks, &json!({"url": "https://hooks.example.invalid/a", "sign": true, "on": true, "name": "all", "tags": ["t"]})).keep("wh_a", "/_id"))?;
    s.run(Step::post("webhook: create with statements, off", hooks, &json!({"url": "https://hooks.example.invalid/b", "sign": true, "secret": "s3cret-value-1234", "on": false, "name": "prod",
        "statements": [{"effect": "allow", "resources": ["proj/*:env/production:flag/*"], "actions": ["updateOn"]}]})).keep("wh_b", "/_id"))?;
    s.run(Step::post(
        "webhook: a private address",
        hooks,
        &json!({"url": "http://127.0.0.1/hook", "sign": false, "on": true}),
    ))?;
    s.run(Step::post(
        "webhook: user information",
        hooks,
        &json!({"url": "https://u@hooks.example.invalid/", "sign": false, "on": true}),
    ))?;
    s.run(Step::post("webhook: bad statements", hooks, &json!({"url": "https://hooks.example.invalid/c", "sign": false, "on": true, "statements": [{"effect": "allow"}]})))?;
    s.run(
        Step::post(
            "webhook: as a writer",
            hooks,
            &json!({"url": "https://hooks.example.invalid/d", "sign": false, "on": true}),
        )
        .by("writer"),
    )?;
    s.run(Step::patch("webhook: turn off, retag", &format!("{hooks}/{{{{wh_a}}}}"), &json!([{"op": "replace", "path": "/on", "value": false}, {"op": "replace", "path": "/tags", "value": ["x", "y"]}])))?;
    s.run(Step::patch("webhook: a new secret and name", &format!("{hooks}/{{{{wh_b}}}}"), &json!([{"op": "replace", "path": "/secret", "value": "another-secret-5678"}, {"op": "replace", "path": "/name", "value": "production"}])))?;
    s.run(Step::patch(
        "webhook: a bad url",
        &format!("{hooks}/{{{{wh_b}}}}"),
        &json!([{"op": "replace", "path": "/url", "value": "ftp://x"}]),
    ))?;
    s.run(Step::get("webhooks: list", hooks))?;
    s.run(Step::get("webhook: one", &format!("{hooks}/{{{{wh_b}}}}")))?;
    s.run(Step::get(
        "webhook: deliveries of one that is off",
        &format!("{hooks}/{{{{wh_b}}}}/deliveries"),
    ))?;
    s.run(Step::get(
        "webhook: unknown",
        &format!("{hooks}/000000000000000000000000"),
    ))?;
    s.run(Step::get("webhooks: list as a writer", hooks).by("writer"))?;
    Ok(())
}

pub fn refusals(s: &mut Session) -> Result<()> {
    s.run(
        Step::get(
            "environment production: its SDK key",
            "/api/v2/projects/web/environments/production",
        )
        .keep("sdk", "/apiKey"),
    )?;
    s.run(Step::get("an SDK key as a token", "/api/v2/projects").by("sdk"))?;
    s.run(Step::get("no token", "/api/v2/projects").token(None))?;
    s.run(Step::get("an unknown route", "/api/v2/nothing-here"))?;
    s.run(Step::get("an unknown route without a token", "/api/v2/nothing-here").token(None))?;
    s.run(Step::post("PUT on projects (405)", "/api/v2/projects", &json!({})).method("PUT"))?;
    s.run(
        Step::post("a project as text/plain", "/api/v2/projects", &json!(null))
            .raw("text/plain", "key=x"),
    )?;
    s.run(
        Step::post(
            "a project, malformed JSON",
            "/api/v2/projects",
            &json!(null),
        )
        .raw("application/json", "{\"key\": "),
    )?;
    s.run(
        Step::post("a project, empty body", "/api/v2/projects", &json!(null))
            .raw("application/json", ""),
    )?;
    s.run(Step::post(
        "a project, wrong JSON type",
        "/api/v2/projects",
        &json!({"key": 5, "name": "N"}),
    ))?;
    s.run(Step::delete("a reader deletes a flag", "/api/v2/flags/web/bulk-0").by("reader"))?;
    s.run(Step::delete("a reader deletes a project", "/api/v2/projects/shop").by("reader"))?;
    s.run(Step::delete("a writer deletes a member", "/api/v2/members/{{m_reader}}").by("writer"))?;
    s.run(
        Step::get("a bad version header on the root", "/api/v2")
            .token(None)
            .header("Svc-API-Version", "2000"),
    )?;
    s.run(Step::get(
        "flags of an unknown project",
        "/api/v2/flags/nope",
    ))?;
    s.run(Step::get("an unknown flag", "/api/v2/flags/web/nope"))?;
    s.run(Step::get(
        "segments of an unknown environment",
        "/api/v2/segments/web/nope",
    ))?;
    s.run(Step::get("an unknown role", "/api/v2/roles/nope"))?;
    s.run(Step::get("an unknown team", "/api/v2/teams/nope"))?;
    Ok(())
}

pub fn audit(s: &mut Session) -> Result<()> {
    s.run(
        Step::get("audit log: first page", "/api/v2/auditlog?limit=20")
            .keep("audit_id", "/items/0/_id")
            .keep("audit_next", "/_links/next/href"),
    )?;
    s.run(Step::get("audit log: next page", "{{audit_next}}"))?;
    s.run(Step::get(
        "audit log: one entry",
        "/api/v2/auditlog/{{audit_id}}",
    ))?;
    s.run(Step::get(
        "audit log: by spec",
        "/api/v2/auditlog?spec=proj/web:env/production:flag/*&limit=20",
    ))?;
    s.run(Step::get(
        "audit log: by q",
        "/api/v2/auditlog?q=theme&limit=20",
    ))?;
    s.run(Step::get(
        "audit log: limit 21",
        "/api/v2/auditlog?limit=21",
    ))?;
    s.run(Step::get(
        "audit log: a bad spec",
        "/api/v2/auditlog?spec=flag/x:proj/p",
    ))?;
    s.run(Step::get(
        "audit log: unknown entry",
        "/api/v2/auditlog/000000000000000000000000",
    ))?;
    s.run(Step::get("audit log: as a reader", "/api/v2/auditlog?limit=5").by("reader"))?;
    s.run(Step::get("audit log: as the custom role", "/api/v2/auditlog?limit=5").by("custom"))?;
    Ok(())
}

pub fn deletes(s: &mut Session) -> Result<()> {
    let flags = "/api/v2/flags/web";
    s.run(Step::delete(
        "flag: delete a prerequisite",
        &format!("{flags}/base"),
    ))?;
    s.run(Step::delete(
        "flag: delete bulk-7",
        &format!("{flags}/bulk-7"),
    ))?;
    s.run(Step::delete(
        "flag: delete bulk-7 again",
        &format!("{flags}/bulk-7"),
    ))?;
    s.run(Step::delete(
        "segment: delete one in use",
        "/api/v2/segments/web/production/beta-users",
    ))?;
    s.run(Step::delete(
        "segment: delete staff",
        "/api/v2/segments/web/production/staff",
    ))?;
    s.run(Step::delete(
        "environment: delete preview",
        "/api/v2/projects/web/environments/preview",
    ))?;
    s.run(Step::delete(
        "project: delete scratch",
        "/api/v2/projects/scratch",
    ))?;
    s.run(Step::delete(
        "project: delete unknown",
        "/api/v2/projects/scratch",
    ))?;
    s.run(Step::delete(
        "webhook: delete all",
        "/api/v2/webhooks/{{wh_a}}",
    ))?;
    s.run(Step::delete(
        "member: delete nora",
        "/api/v2/members/{{m_none}}",
    ))?;
    s.run(Step::delete(
        "token: delete the personal token",
        "/api/v2/tokens/{{personal_id}}",
    ))?;
    s.run(Step::delete(
        "role: delete auditor (held by a team)",
        "/api/v2/roles/auditor",
    ))?;
    Ok(())
}

/// Reads of everything the script made: sent by both servers at the end of phase one, and by
/// the new binary on the base server's database in phase two.
pub fn reads() -> Vec<Step> {
    let mut paths: Vec<String> = [
        "/api/v2/caller-identity",
        "/api/v2/projects?expand=environments",
        "/api/v2/projects/shop/environments",
        "/api/v2/projects/web/environments",
        "/api/v2/flags/web?env=production&env=test&env=staging&limit=100",
        "/api/v2/flags/web?filter=state:archived",
        "/api/v2/flags/named?env=test",
        "/api/v2/flags/shop",
        "/api/v2/segments/web/production",
        "/api/v2/flag-statuses/web/production",
        "/api/v2/flag-status/web/dark-mode",
        "/api/v2/roles",
        "/api/v2/teams",
        "/api/v2/members",
        "/api/v2/tokens?showAll=true",
        "/api/v2/webhooks",
        "/api/v2/auditlog?limit=20",
        "/api/v2/auditlog/{{audit_id}}",
        "/api/v2/webhooks/{{wh_b}}",
        "/api/v2/teams/platform?expand=members,roles",
        "/api/v2/roles/flag-editor",
        "/api/v2/roles/auditor",
        "/api/v2/segments/web/production/beta-users",
        "/api/v2/segments/web/preview/beta-users",
    ]
    .map(str::to_owned)
    .to_vec();
    for project in ["shop", "web", "named"] {
        paths.push(format!("/api/v2/projects/{project}"));
    }
    for (project, env) in [
        ("shop", "dev"),
        ("shop", "prod"),
        ("web", "test"),
        ("web", "production"),
        ("web", "staging"),
    ] {
        paths.push(format!("/api/v2/projects/{project}/environments/{env}"));
    }
    for flag in [
        "dark-mode",
        "theme",
        "limit",
        "layout",
        "base",
        "dependent",
        "theme-copy",
        "bulk-0",
        "bulk-2",
        "bulk-4",
        "bulk-6",
    ] {
        paths.push(format!("/api/v2/flags/web/{flag}"));
    }
    paths.push("/api/v2/flags/named/new_checkout".into());
    for member in ["m_owner", "m_writer", "m_reader", "m_admin"] {
        paths.push(format!("/api/v2/members/{{{{{member}}}}}"));
    }
    for token in ["reader_token_id", "writer_token_id", "admin_token_id"] {
        paths.push(format!("/api/v2/tokens/{{{{{token}}}}}"));
    }
    paths
        .into_iter()
        .map(|path| Step::get(&format!("read {path}"), &path))
        .collect()
}
