"""The original's Python server SDK (PyPI `launchdarkly-server-sdk`, unmodified) against flagsvc.

Usage: ld_python.py <origin> <owner token>

For streaming and for polling (each in a project of its own), configures flags through the
management API (individual targets, a rule on an attribute, a rule on another context kind, a
percentage rollout, prerequisites, a segment in a rule), then reads them as an application
does, with every base URI (base, stream, events) set to the origin and events off:
1. the client initialises and every context gets the value and reason the configuration gives
   (the rollout's bucket computed here from the flag's salt; two clients agree);
2. a change made through the API (flag off and on, a new target) is seen: streaming, by the
   running client within 1 s; polling, whose shortest interval this SDK allows is 30 s, by a
   client created after the change;
3. an archived and a deleted flag end in the default with ERROR FLAG_NOT_FOUND;
4. a reset SDK key with an expiry keeps the old key working until then and not after; the new
   key works; a reset without expiry refuses the old key at once;
5. a bad key does not initialise, and the SDK logs its "invalid SDK key" message.
Exits 1 on the first difference.
"""

import hashlib
import json
import logging
import sys
import time
import urllib.error
import urllib.request
import uuid

from ldclient import Context
from ldclient.client import LDClient
from ldclient.config import Config

ORIGIN, TOKEN = sys.argv[1], sys.argv[2]
SEMANTIC = "application/json; domain-model=svc.semanticpatch"
BAD_KEY = "sdk-00000000-0000-4000-8000-000000000000"
RUN = uuid.uuid4().hex[:6]  # lets the check run twice against one store
MODE = "start"


class Captured(logging.Handler):
    """Everything the SDK logs, shown only when a check fails."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


LOG = Captured()
logging.getLogger("ldclient").addHandler(LOG)
logging.getLogger("ldclient").setLevel(logging.INFO)
logging.getLogger("ldclient").propagate = False


def fail(message):
    print(f"ld-python: [{MODE}] {message}", file=sys.stderr)
    print("ld-python: the SDK's log:\n  " + "\n  ".join(LOG.lines[-40:]), file=sys.stderr)
    sys.exit(1)


def passed(message):
    print(f"ld-python: [{MODE}] {message}")


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, want {want!r}")


def call(method, path, body=None, content_type="application/json"):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(ORIGIN + path, data=data, method=method)
    request.add_header("Authorization", TOKEN)
    request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request) as response:
            text = response.read()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        fail(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")


class Project:
    def __init__(self, key):
        self.key = key
        call("POST", "/api/v2/projects", {"key": key, "name": key})
        self.sdk_key = call("GET", f"/api/v2/projects/{key}/environments/production")["apiKey"]

    def flag(self, key, values):
        """Creates a flag (on: variation 0, off: the last); returns its variations' ids."""
        created = call("POST", f"/api/v2/flags/{self.key}", {
            "key": key, "name": key,
            "variations": [{"value": v, "name": f"v{i}"} for i, v in enumerate(values)],
            "defaults": {"onVariation": 0, "offVariation": len(values) - 1},
        })
        return [v["_id"] for v in created["variations"]]

    def patch(self, key, *steps):
        return call("PATCH", f"/api/v2/flags/{self.key}/{key}",
                    {"environmentKey": "production", "instructions": list(steps)}, SEMANTIC)

    def production(self, key):
        return call("GET", f"/api/v2/flags/{self.key}/{key}")["environments"]["production"]

    def reset_key(self, expiry_ms=None):
        query = "" if expiry_ms is None else f"?expiry={expiry_ms}"
        path = f"/api/v2/projects/{self.key}/environments/production/apiKey{query}"
        return call("POST", path)["apiKey"]


def client(sdk_key, stream, wait=5.0):
    config = Config(sdk_key, base_uri=ORIGIN, stream_uri=ORIGIN, events_uri=ORIGIN,
                    stream=stream, send_events=False, diagnostic_opt_out=True)
    return LDClient(config=config, start_wait=wait)


def refused(sdk_key, stream, what):
    """A client with `sdk_key` is refused (401) and does not initialise."""
    c = client(sdk_key, stream, wait=0)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        error = c.data_source_status_provider.status.error
        if error is not None and error.status_code == 401:
            break
        time.sleep(0.05)
    else:
        fail(f"{what}: no 401 within 3 s")
    expect(f"{what}: initialised", c.is_initialized(), False)
    c.close()


def bucket(flag_key, salt, key):
    digest = hashlib.sha1(f"{flag_key}.{salt}.{key}".encode()).hexdigest()
    return int(digest[:15], 16) / 0xFFFFFFFFFFFFFFF


def user(key, **attributes):
    builder = Context.builder(key)
    for name, value in attributes.items():
        builder.set(name, value)
    return builder.build()


ANN = user("ann")
BOB = user("bob")
STAFF = user("sue", email="sue@example.com")
GOLD = Context.create_multi(user("cy", email="cy@elsewhere.org"),
                            Context.builder("acme").kind("org").set("plan", "gold").build())
MEMBER = user("seg-member")


def detail(c, key, context, default):
    d = c.variation_detail(key, context, default)
    return d.value, d.reason


def configure(p):
    """Every flag the checks read; returns the rule ids and the rollout's salt."""
    on, off = p.flag("targeted", [True, False])
    p.patch("targeted", {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout", "variationId": off},
            {"kind": "addTargets", "values": ["ann"], "variationId": on})
    staff, gold, basic = p.flag("rules", ["staff", "gold", "basic"])
    p.patch("rules", {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout", "variationId": basic},
            {"kind": "addRule", "variationId": staff, "clauses": [
                {"contextKind": "user", "attribute": "email", "op": "endsWith",
                 "values": ["@example.com"], "negate": False}]},
            {"kind": "addRule", "variationId": gold, "clauses": [
                {"contextKind": "org", "attribute": "plan", "op": "in",
                 "values": ["gold"], "negate": False}]})
    a, b = p.flag("rollout", ["a", "b"])
    p.patch("rollout", {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout",
             "rolloutWeights": {a: 50000, b: 50000}})
    yes, _ = p.flag("child", [True, False])
    p.patch("child", {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout", "variationId": yes})
    yes_off, _ = p.flag("child-off", [True, False])
    for parent, prerequisite, required in (("parent-ok", "child", yes),
                                           ("parent-failing", "child-off", yes_off)):
        go, _ = p.flag(parent, ["go", "stop"])
        p.patch(parent, {"kind": "turnFlagOn"},
                {"kind": "updateFallthroughVariationOrRollout", "variationId": go},
                {"kind": "addPrerequisite", "key": prerequisite, "variationId": required})
    call("POST", f"/api/v2/segments/{p.key}/production", {"key": "beta", "name": "beta"})
    call("PATCH", f"/api/v2/segments/{p.key}/production/beta",
         {"environmentKey": "production",
          "instructions": [{"kind": "addIncludedUsers", "values": ["seg-member"]}]}, SEMANTIC)
    inside, outside = p.flag("in-segment", [True, False])
    p.patch("in-segment", {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout", "variationId": outside},
            {"kind": "addRule", "variationId": inside, "clauses": [
                {"contextKind": "user", "attribute": "segmentMatch", "op": "segmentMatch",
                 "values": ["beta"], "negate": False}]})
    p.flag("off-flag", ["lit", "dark"])
    p.flag("to-archive", [True, False])
    p.flag("to-delete", [True, False])
    rules = [r["_id"] for r in p.production("rules")["rules"]]
    segment_rule = p.production("in-segment")["rules"][0]["_id"]
    return rules, segment_rule, p.production("rollout")["salt"]


def evaluations(c, other, rules, segment_rule, salt):
    """Check 1: every context gets what the configuration gives."""
    expect("target", detail(c, "targeted", ANN, None), (True, {"kind": "TARGET_MATCH"}))
    expect("fallthrough", detail(c, "targeted", BOB, None), (False, {"kind": "FALLTHROUGH"}))
    expect("rule on email", detail(c, "rules", STAFF, None),
           ("staff", {"kind": "RULE_MATCH", "ruleIndex": 0, "ruleId": rules[0]}))
    expect("rule on the org kind", detail(c, "rules", GOLD, None),
           ("gold", {"kind": "RULE_MATCH", "ruleIndex": 1, "ruleId": rules[1]}))
    expect("no rule matches", detail(c, "rules", BOB, None), ("basic", {"kind": "FALLTHROUGH"}))
    passed("targets, a rule on an attribute and a rule on the org kind")
    seen = set()
    for i in range(12):
        context = user(f"rollout-{i}")
        want = "a" if bucket("rollout", salt, f"rollout-{i}") < 0.5 else "b"
        value, reason = detail(c, "rollout", context, None)
        expect(f"rollout for rollout-{i}", value, want)
        expect(f"rollout reason for rollout-{i}", reason.get("kind"), "FALLTHROUGH")
        expect(f"rollout in experiment for rollout-{i}", reason.get("inExperiment", False), False)
        expect(f"a second client for rollout-{i}", other.variation("rollout", context, None), want)
        seen.add(value)
    expect("both rollout variations among 12 contexts", seen, {"a", "b"})
    passed("a 50/50 rollout buckets 12 contexts as computed from the salt; two clients agree")
    expect("prerequisite met", detail(c, "parent-ok", BOB, None), ("go", {"kind": "FALLTHROUGH"}))
    expect("prerequisite failed", detail(c, "parent-failing", BOB, None),
           ("stop", {"kind": "PREREQUISITE_FAILED", "prerequisiteKey": "child-off"}))
    expect("segment rule", detail(c, "in-segment", MEMBER, None),
           (True, {"kind": "RULE_MATCH", "ruleIndex": 0, "ruleId": segment_rule}))
    expect("outside the segment", detail(c, "in-segment", BOB, None),
           (False, {"kind": "FALLTHROUGH"}))
    expect("off", detail(c, "off-flag", ANN, None), ("dark", {"kind": "OFF"}))
    for key in ("to-archive", "to-delete"):
        expect(f"{key} before it goes", detail(c, key, ANN, None), (False, {"kind": "OFF"}))
    passed("prerequisites, a segment in a rule, a flag off")


def seen(c, stream, what, change, flag, context, want, default=None):
    """Check 2: makes `change`; streaming, the running client sees `want` within 1 s of the
    request (polled every 50 ms); polling, a client created after it sees it."""
    start = time.monotonic()
    change()
    if stream:
        while time.monotonic() - start < 1.0:
            if detail(c, flag, context, default) == want:
                passed(f"{what}: seen after {(time.monotonic() - start) * 1000:.0f} ms")
                return
            time.sleep(0.05)
        fail(f"{what}: not seen within 1 s: got {detail(c, flag, context, default)!r}, "
             f"want {want!r}")
    fresh = client(c.get_sdk_key(), stream=False)
    expect(f"{what}: a new client", detail(fresh, flag, context, default), want)
    fresh.close()
    passed(f"{what}: seen by a client created after the change")


def run(stream):
    global MODE
    MODE = "streaming" if stream else "polling"
    LOG.lines.clear()
    p = Project(f"ld-python-{MODE}-{RUN}")
    rules, segment_rule, salt = configure(p)
    c, other = client(p.sdk_key, stream), client(p.sdk_key, stream)
    expect("initialised", (c.is_initialized(), other.is_initialized()), (True, True))
    source = "StreamingUpdateProcessor" if stream else "PollingUpdateProcessor"
    if not any(f"{source} initialized ok" in line for line in LOG.lines):
        fail(f"the SDK did not log that its {source} initialised")
    passed(f"the clients initialise ({source})")
    evaluations(c, other, rules, segment_rule, salt)
    other.close()

    seen(c, stream, "flag turned off", lambda: p.patch("targeted", {"kind": "turnFlagOff"}),
         "targeted", ANN, (False, {"kind": "OFF"}))
    seen(c, stream, "flag turned on", lambda: p.patch("targeted", {"kind": "turnFlagOn"}),
         "targeted", ANN, (True, {"kind": "TARGET_MATCH"}))
    on = p.production("targeted")["targets"][0]["variation"]
    variation_id = call("GET", f"/api/v2/flags/{p.key}/targeted")["variations"][on]["_id"]
    seen(c, stream, "new target",
         lambda: p.patch("targeted", {"kind": "addTargets", "values": ["bob"],
                                      "variationId": variation_id}),
         "targeted", BOB, (True, {"kind": "TARGET_MATCH"}))

    # Check 3: flags that are no more.
    not_found = ("dflt", {"kind": "ERROR", "errorKind": "FLAG_NOT_FOUND"})
    seen(c, stream, "archived flag gone",
         lambda: call("PATCH", f"/api/v2/flags/{p.key}/to-archive",
                      [{"op": "replace", "path": "/archived", "value": True}]),
         "to-archive", ANN, not_found, "dflt")
    seen(c, stream, "deleted flag gone",
         lambda: call("DELETE", f"/api/v2/flags/{p.key}/to-delete"),
         "to-delete", ANN, not_found, "dflt")

    # Check 4: key rotation.
    old = p.sdk_key
    expiry = time.time() + 3
    new = p.reset_key(int(expiry * 1000))
    if new == old:
        fail("the reset key is the old one")
    seen(c, stream, "after a reset with expiry, the old key's client",
         lambda: p.patch("off-flag", {"kind": "turnFlagOn"}), "off-flag", ANN,
         ("lit", {"kind": "FALLTHROUGH"}))
    for key, what in ((old, "the old key before its expiry"), (new, "the new key")):
        fresh = client(key, stream)
        expect(f"a new client with {what}: initialised", fresh.is_initialized(), True)
        expect(f"a new client with {what}", detail(fresh, "off-flag", ANN, None)[0], "lit")
        fresh.close()
        passed(f"a new client with {what} initialises")
    time.sleep(max(0.0, expiry - time.time()) + 0.3)
    refused(old, stream, "a new client with the old key after its expiry")
    passed("a new client with the old key after its expiry is refused")
    if stream:
        # The server ends the old key's stream at the expiry; the SDK's reconnection is refused.
        deadline = time.monotonic() + 2
        while (getattr(c.data_source_status_provider.status.error, "status_code", None) != 401
               and time.monotonic() < deadline):
            time.sleep(0.05)
        expect("the old key's running client after its expiry: its reconnection",
               getattr(c.data_source_status_provider.status.error, "status_code", None), 401)
        passed("the old key's running client is cut off at its expiry (401 on reconnecting)")
    newer = p.reset_key()
    refused(new, stream, "a new client with a key reset without expiry")
    fresh = client(newer, stream)
    expect("a new client with the newest key: initialised", fresh.is_initialized(), True)
    fresh.close()
    passed("a reset without expiry refuses the old key at once; the newest key works")
    c.close()

    # Check 5: a bad key.
    LOG.lines.clear()
    refused(BAD_KEY, stream, "a bad key")
    message = ("Received HTTP error 401 (invalid SDK key) for "
               + ("stream connection" if stream else "polling request"))
    if not any(message in line for line in LOG.lines):
        fail(f"a bad key: the SDK did not log {message!r}")
    passed(f"a bad key does not initialise; the SDK logs {message!r}")


def main():
    started = time.monotonic()
    for stream in (True, False):
        run(stream)
    print(f"ld-python: every check passed in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
