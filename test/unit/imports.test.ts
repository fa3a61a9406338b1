import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IForbiddenRuleType, type IViolation } from 'dependency-cruiser';

// The project's own sources: everything that runs (the functions, the stack, the local runtime,
// the CLIs, the benchmarks, the console) and the helpers the tests share.
const SOURCES = ['lambdas', 'lib', 'local', 'bin', 'bench', 'console/src', 'test/helpers'];

// The handlers' folders, one per resource (lambdas/handlers/<resource>/).
const HANDLERS = '^lambdas/handlers/';

/**
 * Imports that break a layering rule today, each a wall STYLE.md or an issue names to mend. A rule
 * lets exactly these through; mend one and drop it here (a test below asks that each still exists).
 */
const KNOWN = {
  // The webhook client posts what the forwarding domain asks for (its types): an adapter of the
  // domain's, kept in shared/.
  webhookClientReadsDomain: { from: '^lambdas/shared/webhook-client\\.ts$', to: '^lambdas/domain/webhooks/forwarding\\.ts$' },
};

// Type-only imports (`import type`) count, in cycles and in layers alike: they vanish at run time,
// but two modules that read each other's types still cannot be understood, moved or tested apart,
// and whether an import is written `import type` is a detail a later edit can flip either way.
const RULES: IForbiddenRuleType[] = [
  { name: 'no-cycle', severity: 'error', from: {}, to: { circular: true } },
  // An import of ours that the cruise cannot resolve is one whose cycles it cannot see (packages'
  // `exports` it may not read are outside the graph anyway).
  { name: 'resolved', severity: 'error', from: {}, to: { couldNotResolve: true, path: '^[.]' } },
  // What is deployed reads no development code, and no CDK (routes.ts and its kin are pure data).
  {
    name: 'lambdas-stand-alone',
    severity: 'error',
    from: { path: '^lambdas/' },
    to: { path: ['^(lib|local|bin|bench|test|console)/', '^node_modules/(aws-cdk-lib|constructs|cdk-nag)/'] },
  },
  // handlers → domain → stores → schemas and shared → routes.ts: no arrow back up.
  { name: 'domain-below-handlers', severity: 'error', from: { path: '^lambdas/domain/' }, to: { path: HANDLERS } },
  { name: 'stores-below-domain', severity: 'error', from: { path: '^lambdas/stores/' }, to: { path: ['^lambdas/domain/', HANDLERS] } },
  {
    name: 'schemas-and-shared-at-the-bottom',
    severity: 'error',
    from: { path: '^lambdas/(schemas|shared)/', pathNot: KNOWN.webhookClientReadsDomain.from },
    to: { path: ['^lambdas/(domain|stores)/', HANDLERS] },
  },
  {
    name: 'schemas-and-shared-at-the-bottom',
    severity: 'error',
    from: { path: KNOWN.webhookClientReadsDomain.from },
    to: { path: ['^lambdas/(domain|stores)/', HANDLERS], pathNot: KNOWN.webhookClientReadsDomain.to },
  },
  { name: 'tables-are-data', severity: 'error', from: { path: '^lambdas/[^/]+\\.ts$' }, to: { path: ['^lambdas/(domain|schemas|shared)/', HANDLERS] } },
  { name: 'lib-not-local', severity: 'error', from: { path: '^lib/' }, to: { path: '^local/' } },
  // The console talks to the API only over HTTP, like any client.
  { name: 'console-by-http', severity: 'error', from: { path: '^console/' }, to: { path: '^(lambdas|lib|local|bin|bench|test)/' } },
  // The pages share what they need through ui/page.ts (STYLE.md); only the entry mounts the app.
  { name: 'only-main-imports-app', severity: 'error', from: { pathNot: '^console/src/main\\.tsx$' }, to: { path: '^console/src/ui/app\\.tsx$' } },
  { name: 'no-tests-in-shipped-code', severity: 'error', from: { path: '^(lambdas|lib|local|bin|console)/' }, to: { path: '^test/' } },
  // `fleetstream --help` and a usage error load the commands' declarations only: what a command
  // runs (the runtime, the AWS SDK, the route table) is imported in its action (bin/commands/program.ts).
  {
    name: 'commands-load-light',
    severity: 'error',
    from: { path: '^bin/commands/' },
    to: { pathNot: ['^bin/commands/', '^node_modules/commander/'], dynamic: false, dependencyTypesNot: ['type-only', 'core'] },
  },
];

// A cycle is told once, from its first module in name order (the cruise names it from each).
const describeCycle = (v: IViolation) => {
  const ring = (v.cycle ?? []).map((step) => step.name);
  const start = ring.indexOf([...ring].sort()[0]);
  const steps = [...ring.slice(start), ...ring.slice(0, start)];
  return [...steps, steps[0]].join(' → ');
};

let graph: ICruiseResult;

beforeAll(async () => {
  const { output } = await cruise(SOURCES, {
    baseDir: fileURLToPath(new URL('../..', import.meta.url)),
    tsPreCompilationDeps: true, // see imports before TypeScript drops the type-only ones
    doNotFollow: { path: '^node_modules/' },
    ruleSet: { forbidden: RULES },
    validate: true,
  });
  graph = output as ICruiseResult;
});

describe('imports among the sources', () => {
  it('reads every source folder', () => {
    const cruised = new Set(graph.modules.map((m) => m.source));

    for (const file of [
      'lambdas/routes.ts',
      'lib/fleetstream-stack.ts',
      'local/runtime.ts',
      'bin/app.ts',
      'bench/run.ts',
      'console/src/ui/app.tsx',
      'test/helpers/sqs.ts',
    ]) {
      expect(cruised).toContain(file);
    }
  });

  it('forms no cycle, type-only imports included', () => {
    const cycles = new Set(graph.summary.violations.filter((v) => v.rule.name === 'no-cycle').map(describeCycle));

    expect([...cycles]).toEqual([]);
  });

  it('resolves every import and keeps the layers: no arrow runs back up', () => {
    const broken = graph.summary.violations.filter((v) => v.rule.name !== 'no-cycle').map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);

    expect(broken).toEqual([]);
  });

  it('still has each known exception (drop it once mended)', () => {
    const imports = graph.modules.flatMap((m) => m.dependencies.map((d) => [m.source, d.resolved] as const));

    for (const [name, { from, to }] of Object.entries(KNOWN)) {
      expect([name, imports.some(([a, b]) => new RegExp(from).test(a) && new RegExp(to).test(b))]).toEqual([name, true]);
    }
  });
});
