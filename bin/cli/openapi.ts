/** Writes the OpenAPI document generated from the zod schemas: `fleetstream openapi` (`npm run openapi`). */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOpenApi } from '../../lambdas/schemas/openapi';

/** Writes lambdas/handlers/openapi/openapi.json and says where. */
export const writeOpenApi = () => {
  const target = fileURLToPath(new URL('../../lambdas/handlers/openapi/openapi.json', import.meta.url));
  writeFileSync(target, `${JSON.stringify(buildOpenApi(), null, 2)}\n`);
  console.log(`wrote ${target}`);
};
