// The original's Node.js server SDK (npm `@launchdarkly/node-server-sdk`, unmodified, at the
// version `package-lock.json` pins) against flagsvc.
//
// Usage: node ld_node.mjs <origin> <owner token>
//
// For streaming and for polling (each in a project of its own), configures flags through the
// management API (individual targets, a rule on an attribute, a rule on another context kind, a
// percentage rollout, prerequisites, a segment in a rule), then reads them as an application
// does, with every base URI (base, stream, events) set to the origin and events off:
// 1. the client initialises and every context gets the value and reason the configuration gives
//    (the rollout's bucket computed here from the flag's salt; two clients agree);
// 2. a change made through the API (flag off and on, a new target) is seen: streaming, by the
//    running client within 1 s; polling, whose shortest interval this SDK allows is 30 s, by a
//    client created after the change;
// 3. an archived and a deleted flag end in the default with ERROR FLAG_NOT_FOUND;
// 4. a reset SDK key with an expiry keeps the old key working until then and not after; the new
//    key works; a reset without expiry refuses the old key at once;
// 5. a bad key does not initialise, and the SDK logs its "invalid SDK key" message.
// Exits 1 on the first difference.

import { createHash, randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';

import { basicLogger, init } from '@launchdarkly/node-server-sdk';

const [origin, token] = process.argv.slice(2);
const SEMANTIC = 'application/json; domain-model=svc.semanticpatch';
const BAD_KEY = 'sdk-00000000-0000-4000-8000-000000000000';
const RUN = randomUUID().slice(0, 6); // lets the check run twice against one store
let mode = 'start';

// Everything the SDK logs, by client, shown only when a check fails.
const log = [];

function fail(message) {
  console.error(`ld-node: [${mode}] ${message}`);
  console.error(`ld-node: the SDK's log:\n  ${log.slice(-40).join('\n  ')}`);
  process.exit(1);
}
const passed = (message) => console.log(`ld-node: [${mode}] ${message}`);
const show = (value) => JSON.stringify(value);
function expect(what, got, want) {
  if (!isDeepStrictEqual(got, want)) fail(`${what}: got ${show(got)}, want ${show(want)}`);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function call(method, path, body, contentType = 'application/json') {
  const response = await fetch(origin + path, {
    method,
    headers: { Authorization: token, 'Content-Type': contentType },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) fail(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

class Project {
  static async create(key) {
    const p = new Project();
    p.key = key;
    await call('POST', '/api/v2/projects', { key, name: key });
    p.sdkKey = (await call('GET', `/api/v2/projects/${key}/environments/production`)).apiKey;
    return p;
  }

  // Creates a flag (on: variation 0, off: the last); returns its variations' ids.
  async flag(key, values) {
    const created = await call('POST', `/api/v2/flags/${this.key}`, {
      key,
      name: key,
      variations: values.map((value, i) => ({ value, name: `v${i}` })),
      defaults: { onVariation: 0, offVariation: values.length - 1 },
    });
    return created.variations.map((v) => v._id);
  }

  patch(key, ...instructions) {
    const body = { environmentKey: 'production', instructions };
    return call('PATCH', `/api/v2/flags/${this.key}/${key}`, body, SEMANTIC);
  }

  async production(key) {
    return (await call('GET', `/api/v2/flags/${this.key}/${key}`)).environments.production;
  }

  async resetKey(expiryMs) {
    const query = expiryMs === undefined ? '' : `?expiry=${expiryMs}`;
    const path = `/api/v2/projects/${this.key}/environments/production/apiKey${query}`;
    return (await call('POST', path)).apiKey;
  }
}

function client(sdkKey, stream, name = 'new') {
  const logger = basicLogger({ level: 'info', destination: (line) => log.push(`(${name}) ${line}`) });
  return init(sdkKey, {
    baseUri: origin,
    streamUri: origin,
    eventsUri: origin,
    stream,
    sendEvents: false,
    diagnosticOptOut: true,
    logger,
  });
}

async function started(sdkKey, stream, what, name = 'new') {
  const c = client(sdkKey, stream, name);
  try {
    await c.waitForInitialization({ timeout: 5 });
  } catch (e) {
    fail(`${what}: did not initialise: ${e}`);
  }
  expect(`${what}: initialised`, c.initialized(), true);
  return c;
}

// A client with `sdkKey` is refused and does not initialise.
async function refused(sdkKey, stream, what) {
  const c = client(sdkKey, stream);
  const outcome = await c.waitForInitialization({ timeout: 3 }).then(
    () => 'initialised',
    (e) => String(e),
  );
  // What the SDK rejects with: its streaming data source maps a 401 to its own error, its
  // polling one passes the error on.
  const want = stream
    ? 'Error: Authentication failed. Double check your SDK key.'
    : 'LaunchDarklyPollingError: Received error 401 (invalid SDK key) for polling request - giving up permanently';
  expect(`${what}: initialisation`, outcome, want);
  expect(`${what}: initialised`, c.initialized(), false);
  c.close();
}

function bucket(flagKey, salt, key) {
  const digest = createHash('sha1').update(`${flagKey}.${salt}.${key}`).digest('hex');
  return parseInt(digest.slice(0, 15), 16) / 0xfffffffffffffff;
}

const ANN = { kind: 'user', key: 'ann' };
const BOB = { kind: 'user', key: 'bob' };
const STAFF = { kind: 'user', key: 'sue', email: 'sue@example.com' };
const GOLD = {
  kind: 'multi',
  user: { key: 'cy', email: 'cy@elsewhere.org' },
  org: { key: 'acme', plan: 'gold' },
};
const MEMBER = { kind: 'user', key: 'seg-member' };

async function detail(c, key, context, fallback = null) {
  const d = await c.variationDetail(key, context, fallback);
  return [d.value, d.reason];
}

const clause = (contextKind, attribute, op, values) => ({ contextKind, attribute, op, values, negate: false });
const fallthrough = (variationId) => ({ kind: 'updateFallthroughVariationOrRollout', variationId });
const ON = { kind: 'turnFlagOn' };

// Every flag the checks read; returns the rule ids and the rollout's salt.
async function configure(p) {
  const [on, off] = await p.flag('targeted', [true, false]);
  await p.patch('targeted', ON, fallthrough(off), { kind: 'addTargets', values: ['ann'], variationId: on });
  const [staff, gold, basic] = await p.flag('rules', ['staff', 'gold', 'basic']);
  await p.patch(
    'rules',
    ON,
    fallthrough(basic),
    { kind: 'addRule', variationId: staff, clauses: [clause('user', 'email', 'endsWith', ['@example.com'])] },
    { kind: 'addRule', variationId: gold, clauses: [clause('org', 'plan', 'in', ['gold'])] },
  );
  const [a, b] = await p.flag('rollout', ['a', 'b']);
  await p.patch('rollout', ON, {
    kind: 'updateFallthroughVariationOrRollout',
    rolloutWeights: { [a]: 50000, [b]: 50000 },
  });
  const [yes] = await p.flag('child', [true, false]);
  await p.patch('child', ON, fallthrough(yes));
  const [yesOff] = await p.flag('child-off', [true, false]);
  for (const [parent, prerequisite, required] of [
    ['parent-ok', 'child', yes],
    ['parent-failing', 'child-off', yesOff],
  ]) {
    const [go] = await p.flag(parent, ['go', 'stop']);
    await p.patch(parent, ON, fallthrough(go), { kind: 'addPrerequisite', key: prerequisite, variationId: required });
  }
  await call('POST', `/api/v2/segments/${p.key}/production`, { key: 'beta', name: 'beta' });
  await call(
    'PATCH',
    `/api/v2/segments/${p.key}/production/beta`,
    { environmentKey: 'production', instructions: [{ kind: 'addIncludedUsers', values: ['seg-member'] }] },
    SEMANTIC,
  );
  const [inside, outside] = await p.flag('in-segment', [true, false]);
  await p.patch('in-segment', ON, fallthrough(outside), {
    kind: 'addRule',
    variationId: inside,
    clauses: [clause('user', 'segmentMatch', 'segmentMatch', ['beta'])],
  });
  for (const key of ['off-flag', 'to-archive', 'to-delete']) {
    await p.flag(key, key === 'off-flag' ? ['lit', 'dark'] : [true, false]);
  }
  return {
    rules: (await p.production('rules')).rules.map((r) => r._id),
    segmentRule: (await p.production('in-segment')).rules[0]._id,
    salt: (await p.production('rollout')).salt,
  };
}

// Check 1: every context gets what the configuration gives.
async function evaluations(c, other, { rules, segmentRule, salt }) {
  expect('target', await detail(c, 'targeted', ANN), [true, { kind: 'TARGET_MATCH' }]);
  expect('fallthrough', await detail(c, 'targeted', BOB), [false, { kind: 'FALLTHROUGH' }]);
  expect('rule on email', await detail(c, 'rules', STAFF), [
    'staff',
    { kind: 'RULE_MATCH', ruleIndex: 0, ruleId: rules[0] },
  ]);
  expect('rule on the org kind', await detail(c, 'rules', GOLD), [
    'gold',
    { kind: 'RULE_MATCH', ruleIndex: 1, ruleId: rules[1] },
  ]);
  expect('no rule matches', await detail(c, 'rules', BOB), ['basic', { kind: 'FALLTHROUGH' }]);
  passed('targets, a rule on an attribute and a rule on the org kind');
  const seen = new Set();
  for (let i = 0; i < 12; i += 1) {
    const context = { kind: 'user', key: `rollout-${i}` };
    const want = bucket('rollout', salt, `rollout-${i}`) < 0.5 ? 'a' : 'b';
    const [value, reason] = await detail(c, 'rollout', context);
    expect(`rollout for rollout-${i}`, value, want);
    expect(`rollout reason for rollout-${i}`, reason.kind, 'FALLTHROUGH');
    expect(`rollout in experiment for rollout-${i}`, reason.inExperiment ?? false, false);
    expect(`a second client for rollout-${i}`, await other.variation('rollout', context, null), want);
    seen.add(value);
  }
  expect('both rollout variations among 12 contexts', [...seen].sort(), ['a', 'b']);
  passed('a 50/50 rollout buckets 12 contexts as computed from the salt; two clients agree');
  expect('prerequisite met', await detail(c, 'parent-ok', BOB), ['go', { kind: 'FALLTHROUGH' }]);
  expect('prerequisite failed', await detail(c, 'parent-failing', BOB), [
    'stop',
    { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 'child-off' },
  ]);
  expect('segment rule', await detail(c, 'in-segment', MEMBER), [
    true,
    { kind: 'RULE_MATCH', ruleIndex: 0, ruleId: segmentRule },
  ]);
  expect('outside the segment', await detail(c, 'in-segment', BOB), [false, { kind: 'FALLTHROUGH' }]);
  expect('off', await detail(c, 'off-flag', ANN), ['dark', { kind: 'OFF' }]);
  for (const key of ['to-archive', 'to-delete']) {
    expect(`${key} before it goes`, await detail(c, key, ANN), [false, { kind: 'OFF' }]);
  }
  passed('prerequisites, a segment in a rule, a flag off');
}

// Check 2: makes `change`; streaming, the running client sees `want` within 1 s of the request
// (polled every 50 ms); polling, a client created after it sees it.
async function seen(c, sdkKey, stream, what, change, flag, context, want, fallback = null) {
  const start = performance.now();
  await change();
  if (stream) {
    while (performance.now() - start < 1000) {
      if (isDeepStrictEqual(await detail(c, flag, context, fallback), want)) {
        passed(`${what}: seen after ${Math.round(performance.now() - start)} ms`);
        return;
      }
      await sleep(50);
    }
    fail(`${what}: not seen within 1 s: got ${show(await detail(c, flag, context, fallback))}, want ${show(want)}`);
  }
  const fresh = await started(sdkKey, false, `${what}: a new client`);
  expect(`${what}: a new client`, await detail(fresh, flag, context, fallback), want);
  fresh.close();
  passed(`${what}: seen by a client created after the change`);
}

async function run(stream) {
  mode = stream ? 'streaming' : 'polling';
  log.length = 0;
  const p = await Project.create(`ld-node-${mode}-${RUN}`);
  const configured = await configure(p);
  const c = await started(p.sdkKey, stream, 'the first client', 'main');
  const other = await started(p.sdkKey, stream, 'the second client', 'second');
  // The SDK logs (at info) each stream it opens, and nothing when it polls.
  const streams = log.filter((line) => line.includes('Opened LaunchDarkly stream connection')).length;
  expect('streams opened by two clients', streams, stream ? 2 : 0);
  passed(`the clients initialise (${stream ? 'two streams opened' : 'no stream opened'})`);
  await evaluations(c, other, configured);
  other.close();

  const key = p.sdkKey;
  await seen(c, key, stream, 'flag turned off', () => p.patch('targeted', { kind: 'turnFlagOff' }), 'targeted', ANN, [
    false,
    { kind: 'OFF' },
  ]);
  await seen(c, key, stream, 'flag turned on', () => p.patch('targeted', ON), 'targeted', ANN, [
    true,
    { kind: 'TARGET_MATCH' },
  ]);
  const flag = await call('GET', `/api/v2/flags/${p.key}/targeted`);
  const variationId = flag.variations[flag.environments.production.targets[0].variation]._id;
  const target = () => p.patch('targeted', { kind: 'addTargets', values: ['bob'], variationId });
  await seen(c, key, stream, 'new target', target, 'targeted', BOB, [true, { kind: 'TARGET_MATCH' }]);

  // Check 3: flags that are no more.
  const notFound = ['dflt', { kind: 'ERROR', errorKind: 'FLAG_NOT_FOUND' }];
  const archive = () =>
    call('PATCH', `/api/v2/flags/${p.key}/to-archive`, [{ op: 'replace', path: '/archived', value: true }]);
  await seen(c, key, stream, 'archived flag gone', archive, 'to-archive', ANN, notFound, 'dflt');
  const remove = () => call('DELETE', `/api/v2/flags/${p.key}/to-delete`);
  await seen(c, key, stream, 'deleted flag gone', remove, 'to-delete', ANN, notFound, 'dflt');

  // Check 4: key rotation.
  const expiry = Date.now() + 3000;
  const fresh = await p.resetKey(expiry);
  if (fresh === key) fail('the reset key is the old one');
  const what = "after a reset with expiry, the old key's client";
  await seen(c, key, stream, what, () => p.patch('off-flag', ON), 'off-flag', ANN, ['lit', { kind: 'FALLTHROUGH' }]);
  for (const [sdkKey, name] of [
    [key, 'the old key before its expiry'],
    [fresh, 'the new key'],
  ]) {
    const d = await started(sdkKey, stream, `a new client with ${name}`);
    expect(`a new client with ${name}`, await d.variation('off-flag', ANN, null), 'lit');
    d.close();
    passed(`a new client with ${name} initialises`);
  }
  await sleep(Math.max(0, expiry - Date.now()) + 300);
  await refused(key, stream, 'a new client with the old key after its expiry');
  passed('a new client with the old key after its expiry is refused');
  if (stream) {
    // The server ends the old key's stream at the expiry; the SDK's reconnection is refused.
    const cutOff = '(main) error: [LaunchDarkly] Received error 401 (invalid SDK key) for streaming request';
    const deadline = performance.now() + 2000;
    while (!log.some((line) => line.startsWith(cutOff)) && performance.now() < deadline) await sleep(50);
    if (!log.some((line) => line.startsWith(cutOff))) fail("the old key's running client was not cut off at its expiry");
    passed("the old key's running client is cut off at its expiry (401 on reconnecting)");
  }
  const newer = await p.resetKey();
  await refused(fresh, stream, 'a new client with a key reset without expiry');
  (await started(newer, stream, 'a new client with the newest key')).close();
  passed('a reset without expiry refuses the old key at once; the newest key works');
  c.close();

  // Check 5: a bad key.
  log.length = 0;
  await refused(BAD_KEY, stream, 'a bad key');
  const message = `Received error 401 (invalid SDK key) for ${stream ? 'streaming' : 'polling'} request - giving up permanently`;
  if (!log.some((line) => line.includes(message))) fail(`a bad key: the SDK did not log ${show(message)}`);
  passed(`a bad key does not initialise; the SDK logs ${show(message)}`);
}

const begun = performance.now();
await run(true);
await run(false);
console.log(`ld-node: every check passed in ${((performance.now() - begun) / 1000).toFixed(1)} s`);
