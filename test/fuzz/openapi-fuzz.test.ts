/**
 * Issue 8's fuzz suite: every operation of the OpenAPI document, on `npm start`'s runtime, with
 * requests generated from the document's JSON Schemas, valid and invalid, the hostile classes
 * weighted in. For each answer: no 5xx, a documented status, a body matching the documented
 * schema, the status the interface requires for that kind of bad input, and nothing written by
 * a refused request (the registry read back).
 *
 * FUZZ_SEED (default 8) fixes the inputs; FUZZ_RUNS (default 2) is the runs per operation and
 * family; `npm run fuzz` runs 20 times as many. The counts are printed at the end.
 */
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';
import { buildWorld, type FuzzWorld } from '../helpers/fuzz/fixture';
import { operationsOf, validators, type OpenApiDocument, type Validators } from '../helpers/fuzz/openapi';
import { createOracle } from '../helpers/fuzz/oracle';
import { familiesOf, requestFamilies, type Auth } from '../helpers/fuzz/requests';
import { registryReader } from '../helpers/fuzz/registry-snapshot';

const SEED = Number(process.env.FUZZ_SEED ?? 8);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2);
/** Time one family may take, shrinking included: shrinking a failure sends many requests. */
const FAMILY_MS = Number(process.env.FUZZ_FAMILY_MS ?? 10_000 + RUNS * 1_000);

// The operations and families are known when jest collects the tests: from the committed
// document. The runtime's own document (GET /v3/openapi.json) drives every request and check.
const committed = JSON.parse(readFileSync('lambdas/handlers/openapi/openapi.json', 'utf8')) as OpenApiDocument;

/** A seed per operation and family, so that each test draws the same inputs however the others run. */
const seedOf = (name: string) => [...name].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) | 0, SEED);

let stack: LocalStack;
let world: FuzzWorld;
let doc: OpenApiDocument;
let v: Validators;
let oracle: ReturnType<typeof createOracle>;
let closeRegistry: () => void;

beforeAll(async () => {
  // Fuzzed webhooks point at the fixture's receiver or at `.invalid` hosts (helpers/fuzz/requests.ts); the
  // short timeout bounds a test delivery (POST …/test, answered synchronously) should a resolver not answer.
  // The sweep would time out and release what the fuzzer schedules in the background, between a
  // refused request's registry reads: it runs once a day here (its own tests run it every second).
  stack = await startLocalStack({ AUTHORIZER_CACHE_TTL_SECONDS: '0', WEBHOOK_TIMEOUT_MS: '2000', SWEEP_INTERVAL_SECONDS: '86400' }, undefined, {
    readyTimeoutMs: 170_000,
  });
  const served = await fetch(`${stack.base_url}/openapi.json`);
  doc = (await served.json()) as OpenApiDocument;
  v = validators(doc);
  world = await buildWorld(stack);
  const registry = registryReader(stack.dataDir);
  closeRegistry = registry.close;
  const badKey = `fsk_${'A'.repeat(43)}`;
  oracle = createOracle({
    baseUrl: stack.base_url,
    validators: v,
    snapshot: registry.snapshot,
    credentials: async (): Promise<Record<Auth, Record<string, string>>> => {
      const token = await world.token();
      return {
        'api-key': { 'x-api-key': world.apiKey },
        device: { authorization: `Bearer ${token}` },
        none: {},
        missing: {},
        'bad-key': { 'x-api-key': badKey },
        'bad-token': { authorization: 'Bearer not.a.token' },
        'token-for-key': { authorization: `Bearer ${token}` },
        'key-for-token': { 'x-api-key': world.apiKey },
      };
    },
  });
}, 180_000);

afterAll(async () => {
  if (oracle) {
    const { requests, snapshots, statuses, findings } = oracle.summary();
    const lines = [
      `fuzz: ${requests} requests (FUZZ_SEED=${SEED}, FUZZ_RUNS=${RUNS}), ${snapshots} registry reads; answers by status: ${statuses}`,
      ...(findings.length
        ? [`fuzz: ${findings.length} kinds of failure (operation | family | failure ×count, then the shortest request that showed it):`]
        : []),
      ...findings.map((f) => `  ${f.operationId} | ${f.family} | ${f.kind} ×${f.count}\n      ${f.example}`),
    ];
    process.stderr.write(`${lines.join('\n')}\n`);
  }
  closeRegistry?.();
  await world?.stop();
  await stack?.stop();
});

describe('fuzzing every operation of the OpenAPI document', () => {
  it('serves the committed document, so the tests collected from it are the operations fuzzed', () => {
    expect(operationsOf(doc).map((o) => o.operationId)).toEqual(operationsOf(committed).map((o) => o.operationId));
  });

  it('answers a body over API Gateway’s 10 MB limit with 413 in the error envelope, writing nothing', async () => {
    const op = operationsOf(doc).find((o) => o.operationId === 'createWorkspace')!;
    const body = Buffer.from(JSON.stringify({ name: 'huge', description: 'a'.repeat(10 * 1024 * 1024 + 1) }));

    // the same checks as every fuzzed request: documented status, schema, registry unchanged
    await oracle.check({
      family: 'oversized',
      why: 'a body over 10 MB',
      op,
      method: 'POST',
      target: '/workspaces',
      auth: 'api-key',
      contentType: 'application/json',
      body,
      expect: [413],
    });
  }, 60_000);

  for (const op of operationsOf(committed)) {
    describe(`${op.method} ${op.path} (${op.operationId})`, () => {
      for (const family of familiesOf(op)) {
        it(
          `${family}: answers as documented`,
          async () => {
            const served = operationsOf(doc).find((o) => o.operationId === op.operationId);
            if (!served) throw new Error(`the runtime's document has no ${op.operationId}`);
            const arbitrary = requestFamilies(doc, served, world, v)[family];
            if (!arbitrary) throw new Error(`no ${family} requests for ${op.operationId} in the runtime's document`);
            await fc.assert(
              fc.asyncProperty(arbitrary, (req) => oracle.check(req)),
              { seed: seedOf(`${op.operationId}/${family}`), numRuns: RUNS, interruptAfterTimeLimit: FAMILY_MS, markInterruptAsFailure: false },
            );
          },
          FAMILY_MS + 30_000,
        );
      }
    });
  }
});
