/** `api-keys` → `ApiKeys`: construct IDs from handler folder names. */
export const pascalCase = (name: string) => name.replace(/(^|-)(\w)/g, (_m, _dash, c: string) => c.toUpperCase());
