import type { Db } from '../../shared/clients';
import { LIMITS_CACHE_SECONDS, USAGE_FLUSH_SECONDS } from '../../shared/env';
import { callerOf } from '../../shared/http';
import type { RequestHooks } from '../../shared/middleware';
import { registerShutdownExtension } from '../../shared/shutdown';
import { admitRequest, limitsMemory } from './limits';
import { UsageTally, usageBuffer } from './usage';

// A handler that counts its requests is told of its container's end, to write what it kept.
await registerShutdownExtension();

/**
 * What a management or storage handler's container does around each request: admits it within its
 * key's `requests_per_second_per_key` (one conditional write per admitted request, a refused one
 * writes nothing), and counts it in the `api_requests` of the workspace it was found on, written in
 * batches every USAGE_FLUSH_SECONDS (domain/usage.ts usageBuffer) and when the container ends.
 */
export const apiRequestHooks = (db: Db): RequestHooks => {
  const limits = limitsMemory(db, { ttlMs: LIMITS_CACHE_SECONDS * 1000 });
  const counts = usageBuffer(db, { flushMs: USAGE_FLUSH_SECONDS * 1000 });
  return {
    admit: (event) => admitRequest(db, limits, callerOf(event)),
    done: async (_event, workspaceId) => {
      if (!workspaceId) return;
      const request = new UsageTally();
      request.add(workspaceId, Date.now(), { api_requests: 1 });
      await counts.add(request);
    },
  };
};
