import { readFileSync } from 'node:fs';

interface LockedPackage {
  version?: string;
  optionalDependencies?: Record<string, string>;
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string; npm: string } };
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockedPackage> };
const readme = readFileSync('README.md', 'utf8');

describe('package.json and its lock', () => {
  it('lists every platform’s optional packages in the lock, as `npm ci` requires on every machine', () => {
    // npm resolves a dependency in the package's own node_modules, then in each folder above it.
    const locked = (from: string, name: string) => {
      for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
        if (lock.packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true;
        if (!dir) return false;
      }
    };

    const missing = Object.entries(lock.packages).flatMap(([path, entry]) =>
      Object.keys(entry.optionalDependencies ?? {})
        .filter((name) => !locked(path, name))
        .map((name) => `${path || '(root)'} → ${name}`),
    );

    expect(missing).toEqual([]);
  });

  it('asks for the Node.js and npm versions the README names', () => {
    const [, node] = /^>=(\d+(?:\.\d+)*)$/.exec(pkg.engines.node) ?? [];
    const [, npm] = /^>=(\d+)$/.exec(pkg.engines.npm) ?? [];

    expect(readme).toContain(`Node.js ≥ ${node} with npm ≥ ${npm}`);
  });
});
