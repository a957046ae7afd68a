// OpenFeature's Node.js server SDK with the OFREP provider (both from npm, unmodified) against
// flagsvc. Usage: node ofrep_node.mjs <origin> <owner token>
//
// The same checks as ofrep_python.py, in a project of its own: flags of every type read for
// several contexts, a change made through the API seen by the next evaluation, and errors ending
// in the application's default with OpenFeature's error codes. Exits 1 on the first difference.
import { OpenFeature, ErrorCode, StandardResolutionReasons } from '@openfeature/server-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { isDeepStrictEqual } from 'node:util';

const [origin, token] = process.argv.slice(2);
const project = 'ofrep-node';
const semantic = 'application/json; domain-model=svc.semanticpatch';

async function call(method, path, body, contentType = 'application/json') {
  const response = await fetch(origin + path, {
    method,
    headers: { Authorization: token, 'Content-Type': contentType },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) {
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  }
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

function expect(what, got, want) {
  if (!isDeepStrictEqual(got, want)) {
    console.error(`ofrep-node: ${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    process.exit(1);
  }
  console.log(`ofrep-node: ${what}: ${JSON.stringify(got)}`);
}

async function configure() {
  await call('POST', '/api/v2/projects', { key: project, name: project });
  const env = await call('GET', `/api/v2/projects/${project}/environments/production`);
  const typed = {
    'bool-flag': [true, false],
    'string-flag': ['red', 'green'],
    'number-flag': [1.5, 2.5],
    'object-flag': [{ theme: 'dark' }, { theme: 'light' }],
  };
  for (const [key, values] of Object.entries(typed)) {
    const created = await call('POST', `/api/v2/flags/${project}`, {
      key,
      name: key,
      variations: values.map((value, i) => ({ value, name: `v${i}` })),
      defaults: { onVariation: 0, offVariation: 1 },
    });
    const [on, off] = created.variations.map((v) => v._id);
    await call('PATCH', `/api/v2/flags/${project}/${key}`, {
      environmentKey: 'production',
      instructions: [
        { kind: 'turnFlagOn' },
        { kind: 'updateFallthroughVariationOrRollout', variationId: off },
        { kind: 'addTargets', values: ['ann'], variationId: on },
        {
          kind: 'addRule',
          variationId: on,
          clauses: [{ contextKind: 'org', attribute: 'plan', op: 'in', values: ['gold'], negate: false }],
        },
      ],
    }, semantic);
  }
  return env.apiKey;
}

const sdkKey = await configure();
await OpenFeature.setProviderAndWait(
  new OFREPProvider({ baseUrl: origin, headers: [['Authorization', `Bearer ${sdkKey}`]] }),
);
const client = OpenFeature.getClient();
const ann = { targetingKey: 'ann' };
const bob = { targetingKey: 'bob', plan: 'gold' };
const goldOrg = { kind: 'multi', user: { targetingKey: 'cy' }, org: { targetingKey: 'acme', plan: 'gold' } };

let details = await client.getBooleanDetails('bool-flag', false, ann);
expect('boolean for a target', [details.value, details.reason, details.variant], [true, StandardResolutionReasons.TARGETING_MATCH, 'v0']);
expect('flag metadata', details.flagMetadata.reason, 'TARGET_MATCH');
details = await client.getBooleanDetails('bool-flag', true, bob);
expect('boolean falls through', [details.value, details.reason], [false, StandardResolutionReasons.STATIC]);
expect('string for a target', await client.getStringValue('string-flag', 'x', ann), 'red');
expect('string by the org rule', await client.getStringValue('string-flag', 'x', goldOrg), 'red');
expect('number', await client.getNumberValue('number-flag', 0, bob), 2.5);
expect('object', await client.getObjectValue('object-flag', {}, ann), { theme: 'dark' });

// A change made through the API is what the next evaluation sees.
await call('PATCH', `/api/v2/flags/${project}/bool-flag`,
  { environmentKey: 'production', instructions: [{ kind: 'turnFlagOff' }] }, semantic);
details = await client.getBooleanDetails('bool-flag', true, ann);
expect('after turning it off', [details.value, details.reason], [false, StandardResolutionReasons.DISABLED]);

// Errors end in the application's default, with OpenFeature's error codes.
details = await client.getBooleanDetails('no-such-flag', true, ann);
expect('unknown flag', [details.value, details.errorCode], [true, ErrorCode.FLAG_NOT_FOUND]);
details = await client.getStringDetails('string-flag', 'default', {});
expect('no targeting key', [details.value, details.errorCode], ['default', ErrorCode.TARGETING_KEY_MISSING]);
details = await client.getNumberDetails('string-flag', 5, ann);
expect('wrong type', [details.value, details.errorCode], [5, ErrorCode.TYPE_MISMATCH]);

await OpenFeature.setProviderAndWait(
  new OFREPProvider({ baseUrl: origin, headers: [['Authorization', 'sdk-wrong']] }),
);
details = await OpenFeature.getClient().getBooleanDetails('bool-flag', true, ann);
expect('a wrong SDK key', [details.value, details.errorCode], [true, ErrorCode.GENERAL]);
console.log('ofrep-node: every check passed');
