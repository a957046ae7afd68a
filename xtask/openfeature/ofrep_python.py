"""OpenFeature's Python SDK with the OFREP provider (both from PyPI, unmodified) against flagsvc.

Usage: ofrep_python.py <origin> <owner token>

Configures a project through the management API (flags of every type, targets, a rule on
another context kind), then reads the flags as an application does: boolean, string, integer,
float and object flags for several contexts; a change made through the API is seen by the next
evaluation; unknown flags, a missing targeting key and a wrong SDK key end in the application's
default with the right error code. Exits 1 on the first difference.
"""

import json
import sys
import urllib.request

from openfeature import api
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import Reason

ORIGIN, TOKEN = sys.argv[1], sys.argv[2]
PROJECT = "ofrep-python"
SEMANTIC = "application/json; domain-model=svc.semanticpatch"


def call(method, path, body=None, content_type="application/json"):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(ORIGIN + path, data=data, method=method)
    request.add_header("Authorization", TOKEN)
    request.add_header("Content-Type", content_type)
    with urllib.request.urlopen(request) as response:
        text = response.read()
        return json.loads(text) if text else None


def flag(key, values):
    created = call(
        "POST",
        f"/api/v2/flags/{PROJECT}",
        {
            "key": key,
            "name": key,
            "variations": [{"value": v, "name": f"v{i}"} for i, v in enumerate(values)],
            "defaults": {"onVariation": 0, "offVariation": 1},
        },
    )
    return [v["_id"] for v in created["variations"]]


def instructions(key, *steps):
    call(
        "PATCH",
        f"/api/v2/flags/{PROJECT}/{key}",
        {"environmentKey": "production", "instructions": list(steps)},
        SEMANTIC,
    )


def expect(what, got, want):
    if got != want:
        print(f"ofrep-python: {what}: got {got!r}, want {want!r}", file=sys.stderr)
        sys.exit(1)
    print(f"ofrep-python: {what}: {got!r}")


def main():
    call("POST", "/api/v2/projects", {"key": PROJECT, "name": PROJECT})
    env = call("GET", f"/api/v2/projects/{PROJECT}/environments/production")
    sdk_key = env["apiKey"]
    typed = {
        "bool-flag": [True, False],
        "string-flag": ["red", "green"],
        "int-flag": [7, 3],
        "float-flag": [1.5, 2.5],
        "object-flag": [{"theme": "dark"}, {"theme": "light"}],
    }
    for key, values in typed.items():
        on, off = flag(key, values)
        instructions(
            key,
            {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout", "variationId": off},
            {"kind": "addTargets", "values": ["ann"], "variationId": on},
            {
                "kind": "addRule",
                "variationId": on,
                "clauses": [
                    {"contextKind": "org", "attribute": "plan", "op": "in",
                     "values": ["gold"], "negate": False}
                ],
            },
        )

    api.set_provider(
        OFREPProvider(ORIGIN, headers_factory=lambda: {"Authorization": f"Bearer {sdk_key}"})
    )
    client = api.get_client()
    ann = EvaluationContext("ann")
    bob = EvaluationContext("bob", {"plan": "gold"})
    gold_org = EvaluationContext(
        attributes={"kind": "multi", "user": {"targetingKey": "cy"},
                    "org": {"targetingKey": "acme", "plan": "gold"}}
    )

    details = client.get_boolean_details("bool-flag", False, ann)
    expect("boolean for a target", (details.value, details.reason, details.variant),
           (True, Reason.TARGETING_MATCH, "v0"))
    expect("flag metadata", details.flag_metadata.get("reason"), "TARGET_MATCH")
    details = client.get_boolean_details("bool-flag", True, bob)
    expect("boolean falls through", (details.value, details.reason), (False, Reason.STATIC))
    expect("string for a target", client.get_string_value("string-flag", "x", ann), "red")
    expect("string for a multi-kind context's org rule",
           client.get_string_details("string-flag", "x", gold_org).reason,
           Reason.TARGETING_MATCH)
    expect("string by the org rule", client.get_string_value("string-flag", "x", gold_org), "red")
    expect("integer", client.get_integer_value("int-flag", 0, bob), 3)
    expect("float", client.get_float_value("float-flag", 0.0, ann), 1.5)
    expect("object", client.get_object_value("object-flag", {}, bob), {"theme": "light"})

    # A change made through the API is what the next evaluation sees.
    instructions("bool-flag", {"kind": "turnFlagOff"})
    details = client.get_boolean_details("bool-flag", True, ann)
    expect("after turning it off", (details.value, details.reason), (False, Reason.DISABLED))

    # Errors end in the application's default, with OpenFeature's error codes.
    details = client.get_boolean_details("no-such-flag", True, ann)
    expect("unknown flag", (details.value, details.error_code), (True, ErrorCode.FLAG_NOT_FOUND))
    details = client.get_string_details("string-flag", "default", EvaluationContext())
    expect("no targeting key", (details.value, details.error_code),
           ("default", ErrorCode.TARGETING_KEY_MISSING))
    details = client.get_integer_details("string-flag", 5, ann)
    expect("wrong type", (details.value, details.error_code), (5, ErrorCode.TYPE_MISMATCH))

    api.set_provider(OFREPProvider(ORIGIN, headers_factory=lambda: {"Authorization": "sdk-wrong"}))
    details = api.get_client().get_boolean_details("bool-flag", True, ann)
    expect("a wrong SDK key", (details.value, details.error_code), (True, ErrorCode.GENERAL))
    print("ofrep-python: every check passed")


if __name__ == "__main__":
    main()
