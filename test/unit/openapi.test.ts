import { readFileSync } from 'node:fs';
import { ROUTES } from '../../lambdas/routes';
import { OPERATIONS, buildOpenApi } from '../../lambdas/schemas/openapi';

const committed = JSON.parse(readFileSync(new URL('../../lambdas/openapi/openapi.json', import.meta.url), 'utf8'));

describe('OpenAPI document', () => {
  it('is current: the committed file equals what the schemas generate (run `npm run openapi`)', () => {
    expect(committed).toEqual(buildOpenApi());
  });

  it('has exactly the route table’s operations, each at its path and method', () => {
    const documented = Object.entries(committed.paths as Record<string, Record<string, { operationId: string }>>).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`),
    );

    expect(documented.sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path} ${r.operationId}`).sort());
    expect(Object.keys(OPERATIONS).sort()).toEqual(ROUTES.map((r) => r.operationId).sort());
  });

  it('resolves every $ref to a component', () => {
    const refs = [...JSON.stringify(committed).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);

    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(committed.components.schemas).toHaveProperty([ref]);
  });
});
