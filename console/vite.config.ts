import { defineConfig } from 'vite';

/**
 * The console's build: `npm run console:build` writes console/dist (served at `/` by `npm start`,
 * and from S3 + CloudFront on AWS). Preact's JSX through esbuild; no runtime configuration is baked
 * in: the app reads `/config.json` when it starts.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', sourcemap: true, reportCompressedSize: true },
});
