import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { objectPath, type EngineClient } from './s3-engine-client';

/** An object as a data folder keeps it: its bytes beside `<hash>.json` (key, content type, metadata). */
interface KeptObject {
  key: string;
  contentType: string;
  metadata: Record<string, string>;
}

/**
 * The local S3's data folder, which keeps the objects fauxqs holds in memory only:
 * `<dataDir>/s3/<bucket>/<sha256 of key>` (bytes) and `.json` (what else S3 keeps of it). Without
 * a data folder every call does nothing.
 */
export const s3DataFolder = (dataDir: string | undefined, engine: EngineClient) => {
  const kept = dataDir && join(dataDir, 's3');
  const bucketDir = (bucket: string) => join(kept!, encodeURIComponent(bucket));
  const keptPath = (bucket: string, key: string) => join(bucketDir(bucket), createHash('sha256').update(key).digest('hex'));

  const keep = (bucket: string, key: string, body: Buffer, headers: IncomingHttpHeaders) => {
    if (!kept) return;
    const metadata = Object.fromEntries(
      Object.entries(headers)
        .filter(([name]) => name.startsWith('x-amz-meta-'))
        .map(([name, value]) => [name, String(value)]),
    );
    const object: KeptObject = { key, contentType: String(headers['content-type'] ?? 'application/octet-stream'), metadata };
    const path = keptPath(bucket, key);
    mkdirSync(bucketDir(bucket), { recursive: true });
    writeFileSync(path, body);
    writeFileSync(`${path}.json`, JSON.stringify(object));
  };

  const forget = (bucket: string, key: string) => {
    if (!kept) return;
    const path = keptPath(bucket, key);
    rmSync(path, { force: true });
    rmSync(`${path}.json`, { force: true });
  };

  /** Keeps what fauxqs now holds at a key (after a copy or a completed multipart upload). */
  const keepFromEngine = async (bucket: string, key: string) => {
    if (!kept) return;
    const answer = await engine.read(await engine.send('GET', objectPath(bucket, key)));
    if (answer.status === 200) keep(bucket, key, answer.body, answer.headers);
  };

  /** Creates the kept buckets and objects again in fauxqs. */
  const restore = async () => {
    if (!kept || !existsSync(kept)) return;
    for (const dir of readdirSync(kept)) {
      const bucket = decodeURIComponent(dir);
      await engine.call('PUT', `/${encodeURIComponent(bucket)}`);
      for (const file of readdirSync(join(kept, dir)).filter((f) => f.endsWith('.json'))) {
        const object = JSON.parse(readFileSync(join(kept, dir, file), 'utf8')) as KeptObject;
        await engine.put(bucket, object.key, readFileSync(join(kept, dir, file.slice(0, -'.json'.length))), {
          'content-type': object.contentType,
          ...object.metadata,
        });
      }
    }
  };

  return {
    keep,
    forget,
    keepFromEngine,
    restore,
    addBucket: (bucket: string) => {
      if (kept) mkdirSync(bucketDir(bucket), { recursive: true });
    },
    forgetBucket: (bucket: string) => {
      if (kept) rmSync(bucketDir(bucket), { recursive: true, force: true });
    },
  };
};

/** The local S3's data folder; see `s3DataFolder`. */
export type S3DataFolder = ReturnType<typeof s3DataFolder>;
