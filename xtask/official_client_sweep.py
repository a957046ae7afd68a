"""The original's official Python client (PyPI `launchdarkly-api`), unmodified, against flagsvc.

Seeds an account over plain HTTP (a project with flags, a prerequisite, targets and rules, a
segment, a custom role, a team, members, a webhook), then calls every operation flagsvc serves
with one token of each kind (the owner's, and service tokens of `admin`, `writer`, `reader` and
a custom role) through the client, which deserialises each answer with the original's schemas.
A 4xx answer is what the role may not do (the client raises `ApiException`, which is fine); a
5xx, or an answer the client cannot deserialise (a missing required field, a wrong type), fails.

Usage: python official_client_sweep.py <origin> <owner token>
Run by `cargo xtask conformance` (issue 32: 104 of 898 calls failed to deserialise before).
"""

import json
import sys
import traceback
import urllib.error
import urllib.request

import launchdarkly_api
from launchdarkly_api.api import (
    access_tokens_api,
    account_members_api,
    audit_log_api,
    custom_roles_api,
    environments_api,
    feature_flags_api,
    feature_flags_beta_api,
    other_api,
    projects_api,
    segments_api,
    teams_api,
    webhooks_api,
)
from launchdarkly_api.exceptions import ApiException

# Deviations the team chose over the original's schema (../shared/docs/api-decisions.md):
# a flag no SDK has evaluated has `lastRequested: null`, which the client's non-nullable
# date-time refuses. Reported, not failed.
KNOWN = {
    "getFeatureFlagStatuses": "last_requested",
    "getFeatureFlagStatus": "last_requested",
    "getFeatureFlagStatusAcrossEnvironments": "last_requested",
}


class Unreadable(Exception):
    """A call with nothing to act on for this role (what it may read holds none)."""

ORIGIN, OWNER = sys.argv[1], sys.argv[2]
SEMANTIC = "application/json; domain-model=svc.semanticpatch"


def http(method, path, body=None, token=OWNER, content_type="application/json"):
    """One request over plain HTTP, for seeding: the JSON answer, or a failure."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(ORIGIN + path, data=data, method=method)
    request.add_header("Authorization", token)
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request) as answer:
            text = answer.read()
    except urllib.error.HTTPError as error:
        raise SystemExit(f"seeding: {method} {path}: {error.code} {error.read()!r}")
    return json.loads(text) if text else None


def seed():
    """The account every role is swept over; returns the tokens by role and the ids."""
    http("POST", "/api/v2/projects", {"key": "sweep", "name": "Sweep", "tags": ["t"]})
    http("POST", "/api/v2/flags/sweep", {"key": "base", "name": "Base"})
    http(
        "POST",
        "/api/v2/flags/sweep",
        {
            "key": "feature",
            "name": "Feature",
            "tags": ["beta"],
            "variations": [{"value": "a", "name": "A"}, {"value": "b"}],
        },
    )
    http(
        "POST",
        "/api/v2/segments/sweep/production",
        {"key": "beta-users", "name": "Beta users", "tags": ["t"]},
    )
    http(
        "PATCH",
        "/api/v2/segments/sweep/production/beta-users",
        {
            "environmentKey": "production",
            "instructions": [
                {"kind": "addIncludedTargets", "contextKind": "user", "values": ["u1"]},
                {
                    "kind": "addRule",
                    "clauses": [
                        {"attribute": "email", "op": "endsWith", "values": ["@x.io"],
                         "contextKind": "user", "negate": False}
                    ],
                },
            ]
        },
        content_type=SEMANTIC,
    )
    http(
        "PATCH",
        "/api/v2/flags/sweep/feature",
        {
            "environmentKey": "production",
            "instructions": [
                {"kind": "turnFlagOn"},
                {"kind": "addPrerequisite", "key": "base", "variationId": variation_id("base", 0)},
                {"kind": "addTargets", "variationId": variation_id("feature", 1), "values": ["u2"]},
                {
                    "kind": "addRule",
                    "variationId": variation_id("feature", 0),
                    "clauses": [
                        {"attribute": "segmentMatch", "op": "segmentMatch",
                         "values": ["beta-users"], "negate": False}
                    ],
                },
            ],
        },
        content_type=SEMANTIC,
    )
    sweeper = http(
        "POST",
        "/api/v2/roles",
        {
            "key": "sweeper",
            "name": "Sweeper",
            "basePermissions": "no_access",
            "policy": [
                {"effect": "allow", "resources": ["proj/sweep"], "actions": ["viewProject"]},
                {"effect": "allow", "resources": ["proj/sweep:env/test:flag/*"], "actions": ["*"]},
                {"effect": "deny", "resources": ["proj/sweep:env/production:flag/*"],
                 "actions": ["updateOn"]},
                {"effect": "allow", "resources": ["acct"], "actions": ["viewAuditLog"]},
                {"effect": "allow", "resources": ["member/*"], "actions": ["viewMembers"]},
                {"effect": "allow", "resources": ["team/*"], "actions": ["viewTeams"]},
                {"effect": "allow", "resources": ["role/*"], "actions": ["viewRoles"]},
            ],
        },
    )
    invited = http(
        "POST",
        "/api/v2/members",
        [
            {"email": "writer@sweep.io", "role": "writer", "firstName": "W"},
            {"email": "reader@sweep.io", "role": "reader"},
            {"email": "custom@sweep.io", "role": "no_access", "customRoles": ["sweeper"]},
        ],
    )
    member_ids = [m["_id"] for m in invited["items"]]
    http(
        "POST",
        "/api/v2/teams",
        {
            "key": "platform",
            "name": "Platform",
            "customRoleKeys": ["sweeper"],
            "memberIDs": member_ids[:2],
        },
    )
    http(
        "POST",
        "/api/v2/webhooks",
        {"url": "https://hooks.example.com/hook", "sign": False, "on": False, "name": "w", "tags": ["t"]},
    )
    tokens = {"owner": OWNER}
    for role in ["admin", "writer", "reader"]:
        made = http(
            "POST", "/api/v2/tokens", {"name": f"sweep-{role}", "role": role, "serviceToken": True}
        )
        tokens[role] = made["token"]
    made = http(
        "POST",
        "/api/v2/tokens",
        {"name": "sweep-custom", "serviceToken": True, "customRoleIds": [sweeper["_id"]]},
    )
    tokens["custom"] = made["token"]
    return tokens, member_ids


def variation_id(flag, index):
    return http("GET", f"/api/v2/flags/sweep/{flag}")["variations"][index]["_id"]


def client(token):
    configuration = launchdarkly_api.Configuration(host=ORIGIN, api_key={"ApiKey": token})
    api_client = launchdarkly_api.ApiClient(configuration)
    # The beta route needs flagsvc's version header (the client sends the original's too).
    api_client.set_default_header("Svc-API-Version", "beta")
    return api_client


def calls(api, role, members):
    """Every operation, as (name, thunk); writes use keys of their own per role."""
    flags = feature_flags_api.FeatureFlagsApi(api)
    beta = feature_flags_beta_api.FeatureFlagsBetaApi(api)
    projects = projects_api.ProjectsApi(api)
    envs = environments_api.EnvironmentsApi(api)
    segs = segments_api.SegmentsApi(api)
    roles = custom_roles_api.CustomRolesApi(api)
    teams = teams_api.TeamsApi(api)
    tokens = access_tokens_api.AccessTokensApi(api)
    hooks = webhooks_api.WebhooksApi(api)
    people = account_members_api.AccountMembersApi(api)
    audit = audit_log_api.AuditLogApi(api)
    other = other_api.OtherApi(api)
    # Request bodies as the original's document names their fields (the client converts them).
    raw = {"_spec_property_naming": True}
    key = f"sweep-{role}"
    state = {}

    def remember(name, value):
        state[name] = value
        return value

    def token_id():
        return state["token"]["id"] if "token" in state else "0" * 24

    def webhook_id():
        return state["webhook"]["id"] if "webhook" in state else "0" * 24

    def entry_id():
        listed = audit.get_audit_log_entries(limit=20)["items"]
        if not listed:
            raise Unreadable("no audit entry this role may read on the first page")
        return listed[0]["id"]

    patch_tags = [{"op": "add", "path": "/tags/-", "value": "swept"}]
    return [
        ("getRoot", lambda: other.get_root()),
        ("getVersions", lambda: other.get_versions()),
        ("getCallerIdentity", lambda: other.get_caller_identity()),
        ("getProjects", lambda: projects.get_projects(expand="environments")),
        ("getProject", lambda: projects.get_project("sweep", expand="environments")),
        ("getEnvironmentsByProject", lambda: envs.get_environments_by_project("sweep")),
        ("getEnvironment", lambda: envs.get_environment("sweep", "production")),
        ("getFeatureFlags", lambda: flags.get_feature_flags("sweep", env="production", summary=False)),
        ("getFeatureFlag", lambda: flags.get_feature_flag("sweep", "feature")),
        ("getFeatureFlag+access", lambda: flags.get_feature_flag("sweep", "feature", expand="_access")),
        ("getFeatureFlagStatuses", lambda: flags.get_feature_flag_statuses("sweep", "production")),
        ("getFeatureFlagStatus", lambda: flags.get_feature_flag_status("sweep", "production", "feature")),
        ("getFeatureFlagStatusAcrossEnvironments",
         lambda: flags.get_feature_flag_status_across_environments("sweep", "feature")),
        ("getDependentFlags", lambda: beta.get_dependent_flags("sweep", "base")),
        ("getSegments", lambda: segs.get_segments("sweep", "production")),
        ("getSegment", lambda: segs.get_segment("sweep", "production", "beta-users")),
        ("getCustomRoles", lambda: roles.get_custom_roles()),
        ("getCustomRole", lambda: roles.get_custom_role("sweeper")),
        ("getTeams", lambda: teams.get_teams()),
        ("getTeam", lambda: teams.get_team("platform", expand="members,roles")),
        ("getMembers", lambda: people.get_members()),
        *[(f"getMember[{i}]", (lambda m=m: lambda: people.get_member(m))()) for i, m in enumerate(members)],
        ("getTokens", lambda: tokens.get_tokens(show_all=True)),
        ("getAllWebhooks", lambda: hooks.get_all_webhooks()),
        ("getAuditLogEntries", lambda: audit.get_audit_log_entries(limit=20)),
        ("getAuditLogEntry", lambda: audit.get_audit_log_entry(entry_id())),
        ("postProject", lambda: projects.post_project({"key": key, "name": key}, **raw)),
        ("patchProject", lambda: projects.patch_project(key, patch_tags, **raw)),
        ("postEnvironment",
         lambda: envs.post_environment(key, {"key": "extra", "name": "Extra", "color": "00AA00"}, **raw)),
        ("patchEnvironment", lambda: envs.patch_environment(key, "extra", patch_tags, **raw)),
        ("resetEnvironmentSdkKey", lambda: envs.reset_environment_sdk_key(key, "extra")),
        ("resetEnvironmentMobileKey", lambda: envs.reset_environment_mobile_key(key, "extra")),
        ("postFeatureFlag", lambda: flags.post_feature_flag(key, {"key": "f", "name": "F"}, **raw)),
        ("patchFeatureFlag",
         lambda: flags.patch_feature_flag(key, "f", {"patch": patch_tags, "comment": "swept"}, **raw)),
        ("copyFeatureFlag",
         lambda: flags.copy_feature_flag(
             key, "f", {"source": {"key": "test"}, "target": {"key": "production"}, "comment": "c"}, **raw)),
        ("postSegment", lambda: segs.post_segment(key, "test", {"key": "s", "name": "S"}, **raw)),
        ("patchSegment",
         lambda: segs.patch_segment(key, "test", "s", {"patch": patch_tags}, **raw)),
        ("postCustomRole",
         lambda: roles.post_custom_role(
             {"key": key, "name": key, "policy": [
                 {"effect": "allow", "resources": ["proj/*"], "actions": ["viewProject"]}]}, **raw)),
        ("patchCustomRole",
         lambda: roles.patch_custom_role(
             key, {"patch": [{"op": "replace", "path": "/name", "value": "Swept"}]}, **raw)),
        ("postTeam", lambda: teams.post_team({"key": key, "name": key}, **raw)),
        ("patchTeam",
         lambda: teams.patch_team(
             key, {"instructions": [{"kind": "updateName", "value": "Swept"}]}, **raw)),
        ("postMembers",
         lambda: remember("member", people.post_members([{"email": f"{key}@sweep.io"}], **raw)["items"][0])),
        ("patchMember",
         lambda: people.patch_member(
             state["member"]["id"], [{"op": "replace", "path": "/role", "value": "writer"}], **raw)),
        ("postMemberTeams",
         lambda: people.post_member_teams(state["member"]["id"], {"teamKeys": [key]}, **raw)),
        ("postToken",
         lambda: remember("token", tokens.post_token({"name": key, "role": "reader", "serviceToken": True}, **raw))),
        ("getToken", lambda: tokens.get_token(token_id())),
        ("patchToken",
         lambda: tokens.patch_token(token_id(), [{"op": "replace", "path": "/description", "value": "d"}], **raw)),
        ("resetToken", lambda: tokens.reset_token(token_id())),
        ("postWebhook",
         lambda: remember("webhook", hooks.post_webhook(
             {"url": "https://hooks.example.com/x", "sign": False, "on": False, "name": key}, **raw))),
        ("getWebhook", lambda: hooks.get_webhook(webhook_id())),
        ("patchWebhook",
         lambda: hooks.patch_webhook(webhook_id(), [{"op": "replace", "path": "/name", "value": "x"}], **raw)),
        ("deleteWebhook", lambda: hooks.delete_webhook(webhook_id())),
        ("deleteToken", lambda: tokens.delete_token(token_id())),
        ("deleteMember", lambda: people.delete_member(state["member"]["id"])),
        ("deleteTeam", lambda: teams.delete_team(key)),
        ("deleteCustomRole", lambda: roles.delete_custom_role(key)),
        ("deleteSegment", lambda: segs.delete_segment(key, "test", "s")),
        ("deleteFeatureFlag", lambda: flags.delete_feature_flag(key, "f")),
        ("deleteEnvironment", lambda: envs.delete_environment(key, "extra")),
        ("deleteProject", lambda: projects.delete_project(key)),
    ]


def main():
    tokens, members = seed()
    failures, total, succeeded, known = [], 0, {}, set()
    for role, token in tokens.items():
        api = client(token)
        for name, call in calls(api, role, members):
            total += 1
            try:
                call()
                succeeded[role] = succeeded.get(role, 0) + 1
            except ApiException as error:
                if error.status >= 500 or role == "owner":
                    failures.append(f"{role} {name}: {error.status} {error.body}")
            except (KeyError, Unreadable) as error:
                # A write this role may not make left nothing for the next call to act on.
                if not isinstance(error, Unreadable) and error.args[0] != "member":
                    failures.append(f"{role} {name}: {error!r}")
            except Exception as error:  # noqa: BLE001 - a deserialisation failure of any kind
                detail = traceback.format_exception_only(type(error), error)[-1].strip()
                if name in KNOWN and KNOWN[name] in detail:
                    known.add(name)
                    succeeded[role] = succeeded.get(role, 0) + 1
                else:
                    failures.append(f"{role} {name}: {detail[:600]}")
    print(f"official client sweep: {total} calls, succeeded by role: {succeeded}")
    # The owner may do everything: a sweep where it succeeds at less proves nothing.
    expected_owner = len(calls(client(OWNER), "owner", members))
    if succeeded.get("owner", 0) != expected_owner:
        failures.append(f"owner succeeded at {succeeded.get('owner', 0)} of {expected_owner} calls")
    for name in sorted(known):
        print(f"  known deviation: {name} ({KNOWN[name]}: null, see the script's KNOWN)")
    for failure in failures:
        print("  FAILED", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
