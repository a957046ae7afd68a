//! The scripted sequence both servers are sent: an account built up through every kind of
//! write the API has (create, JSON Patch, merge patch, semantic patch, resets, copy, clone,
//! deletes), with tokens of several roles, the refusals (403, 400, 404, 409, 415, 422), and
//! at the end [`reads`], the reads of everything made, which phase two sends again. This file
//! holds the account, its members, projects and environments; `script_flags.rs` the flags;
//! `script_more.rs` the rest.

use anyhow::Result;
use serde_json::json;

use super::script_flags::{
    flags_create, flags_json_patch, flags_json_patch_more, flags_merge_patch, flags_other,
    flags_semantic, flags_semantic_more,
};
use super::script_more::{audit, deletes, refusals, roles_and_teams, segments, tokens, webhooks};
use super::session::{Session, Step};

pub use super::script_more::reads;

/// The whole script, in order.
pub fn run(s: &mut Session) -> Result<()> {
    identity(s)?;
    members(s)?;
    projects(s)?;
    environments(s)?;
    flags_create(s)?;
    flags_json_patch(s)?;
    flags_json_patch_more(s)?;
    flags_merge_patch(s)?;
    flags_semantic(s)?;
    flags_semantic_more(s)?;
    flags_other(s)?;
    segments(s)?;
    roles_and_teams(s)?;
    tokens(s)?;
    webhooks(s)?;
    refusals(s)?;
    audit(s)?;
    deletes(s)?;
    s.run_all(reads())
}

fn identity(s: &mut Session) -> Result<()> {
    s.run(Step::get("root, without a token", "/api/v2").token(None))?;
    s.run(Step::get("versions, without a token (401)", "/api/v2/versions").token(None))?;
    s.run(Step::get("caller identity", "/api/v2/caller-identity"))?;
    for role in ["reader", "writer", "admin"] {
        s.run(
            Step::post(
                &format!("token: create a {role} service token"),
                "/api/v2/tokens",
                &json!({"name": format!("svc-{role}"), "role": role, "serviceToken": true, "description": format!("the {role}")}),
            )
            .keep(role, "/token")
            .keep(&format!("{role}_token_id"), "/_id"),
        )?;
    }
    s.run(
        Step::post(
            "token: create a personal writer token",
            "/api/v2/tokens",
            &json!({"name": "mine", "role": "writer", "defaultApiVersion": 20220603}),
        )
        .keep("personal", "/token")
        .keep("personal_id", "/_id"),
    )?;
    for who in ["reader", "writer", "admin", "personal"] {
        s.run(
            Step::get(
                &format!("caller identity as {who}"),
                "/api/v2/caller-identity",
            )
            .by(who),
        )?;
    }
    s.run(
        Step::get("caller identity, unknown token", "/api/v2/caller-identity")
            .token(Some("api-00000000-0000-4000-8000-000000000000")),
    )?;
    Ok(())
}

fn members(s: &mut Session) -> Result<()> {
    let invite = json!([
        {"email": "wendy@example.com", "role": "writer", "firstName": "Wendy", "lastName": "W"},
        {"email": "rita@example.com", "firstName": "Rita"},
        {"email": "adam@example.com", "role": "admin"},
        {"email": "nora@example.com", "role": "no_access"}
    ]);
    s.run(
        Step::post("members: invite four", "/api/v2/members", &invite)
            .keep("m_writer", "/items/0/_id")
            .keep("m_reader", "/items/1/_id")
            .keep("m_admin", "/items/2/_id")
            .keep("m_none", "/items/3/_id"),
    )?;
    s.run(Step::post(
        "members: invite an existing email",
        "/api/v2/members",
        &json!([{"email": "rita@example.com"}]),
    ))?;
    s.run(Step::post(
        "members: same email twice",
        "/api/v2/members",
        &json!([{"email": "x@example.com"}, {"email": "x@example.com"}]),
    ))?;
    s.run(
        Step::post(
            "members: invite as writer",
            "/api/v2/members",
            &json!([{"email": "y@example.com"}]),
        )
        .by("writer"),
    )?;
    s.run(Step::post(
        "members: a refused field",
        "/api/v2/members",
        &json!([{"email": "z@example.com", "password": "p"}]),
    ))?;
    s.run(Step::get("members: list", "/api/v2/members"))?;
    s.run(Step::get(
        "members: filter role",
        "/api/v2/members?filter=role:writer%7Cadmin&sort=displayName",
    ))?;
    s.run(Step::get(
        "members: filter query",
        "/api/v2/members?filter=query:rita&limit=1",
    ))?;
    s.run(Step::get("members: me", "/api/v2/members/me").keep("m_owner", "/_id"))?;
    s.run(Step::get("members: me as a service token", "/api/v2/members/me").by("admin"))?;
    s.run(Step::get("members: one", "/api/v2/members/{{m_writer}}"))?;
    s.run(Step::patch("members: rename", "/api/v2/members/{{m_reader}}", &json!([{"op": "replace", "path": "/firstName", "value": "Margarita"}, {"op": "add", "path": "/lastName", "value": "R"}])))?;
    s.run(Step::patch("members: promote", "/api/v2/members/{{m_reader}}", &json!({"comment": "more rights", "patch": [{"op": "replace", "path": "/role", "value": "writer"}]})))?;
    s.run(Step::patch(
        "members: demote",
        "/api/v2/members/{{m_reader}}",
        &json!([{"op": "replace", "path": "/role", "value": "reader"}]),
    ))?;
    s.run(
        Step::patch(
            "members: role above the admin's own",
            "/api/v2/members/{{m_reader}}",
            &json!([{"op": "replace", "path": "/role", "value": "owner"}]),
        )
        .by("admin"),
    )?;
    s.run(Step::patch(
        "members: read-only path",
        "/api/v2/members/{{m_reader}}",
        &json!([{"op": "replace", "path": "/email", "value": "r@example.com"}]),
    ))?;
    s.run(
        Step::patch(
            "members: as a reader",
            "/api/v2/members/{{m_writer}}",
            &json!([{"op": "replace", "path": "/firstName", "value": "X"}]),
        )
        .by("reader"),
    )?;
    s.run(Step::get(
        "members: unknown",
        "/api/v2/members/000000000000000000000000",
    ))?;
    s.run(Step::delete(
        "members: delete the owner",
        "/api/v2/members/{{m_owner}}",
    ))?;
    Ok(())
}

fn projects(s: &mut Session) -> Result<()> {
    let shop = json!({"key": "shop", "name": "Shop", "tags": ["retail"], "environments": [
        {"key": "dev", "name": "Dev", "color": "00ff00"},
        {"key": "prod", "name": "Prod", "color": "ff0000", "critical": true, "tags": ["live"]}
    ]});
    s.run(
        Step::post(
            "project: create shop with two environments",
            "/api/v2/projects",
            &shop,
        )
        .keep("shop_id", "/_id"),
    )?;
    s.run(Step::post(
        "project: create web",
        "/api/v2/projects",
        &json!({"key": "web", "name": "Web", "includeInSnippetByDefault": true}),
    ))?;
    s.run(Step::post("project: create with a naming convention", "/api/v2/projects", &json!({"key": "named", "name": "Named", "namingConvention": {"case": "kebabCase", "prefix": "n-"}})))?;
    s.run(Step::post(
        "project: key taken",
        "/api/v2/projects",
        &json!({"key": "web", "name": "Again"}),
    ))?;
    s.run(Step::post(
        "project: invalid key",
        "/api/v2/projects",
        &json!({"key": "no spaces", "name": "X"}),
    ))?;
    s.run(Step::post(
        "project: missing name",
        "/api/v2/projects",
        &json!({"key": "x"}),
    ))?;
    s.run(
        Step::post(
            "project: as a reader",
            "/api/v2/projects",
            &json!({"key": "r", "name": "R"}),
        )
        .by("reader"),
    )?;
    s.run(
        Step::post(
            "project: as a writer",
            "/api/v2/projects",
            &json!({"key": "scratch", "name": "Scratch"}),
        )
        .by("writer"),
    )?;
    s.run(Step::patch("project: rename and tag", "/api/v2/projects/shop", &json!([{"op": "replace", "path": "/name", "value": "The Shop"}, {"op": "add", "path": "/tags/-", "value": "b2c"}])))?;
    s.run(Step::patch("project: change the naming convention", "/api/v2/projects/named", &json!({"comment": "looser", "patch": [{"op": "replace", "path": "/namingConvention", "value": {"case": "snakeCase"}}]})))?;
    s.run(Step::patch(
        "project: invalid naming convention",
        "/api/v2/projects/named",
        &json!([{"op": "replace", "path": "/namingConvention", "value": {"case": "shouting"}}]),
    ))?;
    s.run(Step::patch(
        "project: read-only key",
        "/api/v2/projects/shop",
        &json!([{"op": "replace", "path": "/key", "value": "k"}]),
    ))?;
    s.run(Step::merge(
        "project: merge patch (not accepted)",
        "/api/v2/projects/shop",
        &json!({"name": "M"}),
    ))?;
    s.run(Step::get("projects: list", "/api/v2/projects"))?;
    s.run(Step::get(
        "projects: list with environments, by name",
        "/api/v2/projects?expand=environments&sort=-name",
    ))?;
    s.run(Step::get(
        "projects: filter",
        "/api/v2/projects?filter=tags:retail",
    ))?;
    s.run(Step::get(
        "projects: bad expand",
        "/api/v2/projects?expand=flags",
    ))?;
    s.run(Step::get(
        "project: one",
        "/api/v2/projects/shop?expand=environments",
    ))?;
    s.run(Step::get("project: unknown", "/api/v2/projects/nope"))?;
    Ok(())
}

fn environments(s: &mut Session) -> Result<()> {
    let envs = "/api/v2/projects/web/environments";
    s.run(Step::post("environment: create staging", envs, &json!({"key": "staging", "name": "Staging", "color": "aabbcc", "tags": ["pre"], "confirmChanges": true})))?;
    s.run(Step::post(
        "environment: key taken",
        envs,
        &json!({"key": "test", "name": "T", "color": "000000"}),
    ))?;
    s.run(Step::post(
        "environment: bad colour",
        envs,
        &json!({"key": "x", "name": "X", "color": "#000000"}),
    ))?;
    s.run(Step::post(
        "environment: unknown project",
        "/api/v2/projects/nope/environments",
        &json!({"key": "x", "name": "X", "color": "000000"}),
    ))?;
    s.run(Step::patch(
        "environment: settings",
        &format!("{envs}/staging"),
        &json!([
        {"op": "replace", "path": "/color", "value": "112233"},
        {"op": "replace", "path": "/requireComments", "value": true},
        {"op": "replace", "path": "/defaultTtl", "value": 5},
        {"op": "add", "path": "/tags/-", "value": "qa"}]),
    ))?;
    s.run(Step::patch("environment: critical, with a comment", &format!("{envs}/production"), &json!({"comment": "careful", "patch": [{"op": "replace", "path": "/critical", "value": true}]})))?;
    s.run(Step::patch(
        "environment: copy from the SDK key",
        &format!("{envs}/staging"),
        &json!([{"op": "copy", "from": "/apiKey", "path": "/name"}]),
    ))?;
    s.run(
        Step::patch(
            "environment: as a reader",
            &format!("{envs}/staging"),
            &json!([{"op": "replace", "path": "/name", "value": "S"}]),
        )
        .by("reader"),
    )?;
    s.run(Step::post(
        "environment: reset the SDK key",
        &format!("{envs}/staging/apiKey"),
        &json!({}),
    ))?;
    s.run(Step::post(
        "environment: reset the SDK key with an expiry",
        &format!("{envs}/staging/apiKey?expiry=4102444800000"),
        &json!({}),
    ))?;
    s.run(Step::post(
        "environment: reset the mobile key",
        &format!("{envs}/staging/mobileKey"),
        &json!({}),
    ))?;
    s.run(
        Step::post(
            "environment: reset a key as a reader",
            &format!("{envs}/staging/mobileKey"),
            &json!({}),
        )
        .by("reader"),
    )?;
    s.run(Step::get("environments: list", envs))?;
    s.run(Step::get(
        "environments: filter and sort",
        &format!("{envs}?filter=critical:true&sort=-name"),
    ))?;
    s.run(Step::get("environment: one", &format!("{envs}/staging")))?;
    s.run(Step::get("environment: unknown", &format!("{envs}/nope")))?;
    Ok(())
}
