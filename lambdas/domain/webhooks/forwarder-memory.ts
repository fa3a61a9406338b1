import { LRUCache } from 'lru-cache';
import type { Db } from '../../shared/clients';
import { listIntegrationsOfWorkspace, type IntegrationRecord } from '../../stores/integration-store';

export interface ForwarderMemoryOptions {
  /**
   * How long what was read or written is relied on, in milliseconds: the staleness bound of a
   * change to an integration, and the most a status's `last_delivery_at` lags behind the last
   * delivery. 0 keeps nothing (every invocation reads the integrations and writes the status).
   */
  ttlMs: number;
  /** Workspaces (and integrations) remembered at most; the longest unused forgotten first. */
  max: number;
  /** The clock, in milliseconds (tests move it). */
  now?: () => number;
}

/** What one forwarder container remembers between invocations (`forwarderMemory`). */
export interface ForwarderMemory {
  /** The workspace's integrations: read from the registry, or as read at most `ttlMs` ago. */
  integrationsOf: (workspaceId: string) => Promise<IntegrationRecord[]>;
  /** Whether a batch's outcome for an integration must be written to its status (a success recorded less than `ttlMs` ago need not). */
  needsStatusWrite: (integration: IntegrationRecord, outcome: { error?: string }) => boolean;
  /** The outcome was written: a success is not written again for `ttlMs`. */
  statusWritten: (integration: IntegrationRecord, outcome: { error?: string }) => void;
  /** The integration is gone (its status write found no item): the workspace is read again next time. */
  forget: (integration: IntegrationRecord) => void;
}

/**
 * What a forwarder container keeps between invocations, so that a steady stream of batches costs the
 * registry no request per invocation (the integrations read and the status write used to be two):
 * - each workspace's integrations, for `ttlMs`: an integration created, changed, disabled, rotated or
 *   deleted through the API reaches deliveries within that time. A workspace found with no
 *   integrations is not remembered, so that its first webhook receives the very next batch;
 * - which integrations it recorded as delivering: a success is written at most once per `ttlMs` per
 *   integration and container, a failure always at once. When the integrations are read again and
 *   one shows failures (another container's), its next success is written at once, so the status's
 *   failure count returns to 0 within `ttlMs` of deliveries succeeding again.
 */
export const forwarderMemory = (db: Db, { ttlMs, max, now }: ForwarderMemoryOptions): ForwarderMemory => {
  if (ttlMs <= 0) {
    return {
      integrationsOf: (workspaceId) => listIntegrationsOfWorkspace(db, workspaceId),
      needsStatusWrite: () => true,
      statusWritten: () => {},
      forget: () => {},
    };
  }
  // ttlResolution 0: the clock is read at every check, not cached for a millisecond.
  const clock = now ? { perf: { now }, ttlResolution: 0 } : {};
  const integrations = new LRUCache<string, IntegrationRecord[]>({ max, ttl: ttlMs, ...clock });
  const delivering = new LRUCache<string, true>({ max, ttl: ttlMs, ...clock });
  return {
    integrationsOf: async (workspaceId) => {
      const known = integrations.get(workspaceId);
      if (known) return known;
      const read = await listIntegrationsOfWorkspace(db, workspaceId);
      for (const integration of read) if (integration.consecutive_failures > 0) delivering.delete(integration.id);
      if (read.length) integrations.set(workspaceId, read);
      return read;
    },
    needsStatusWrite: (integration, outcome) => outcome.error !== undefined || !delivering.has(integration.id),
    statusWritten: (integration, outcome) => {
      if (outcome.error === undefined) delivering.set(integration.id, true);
      else delivering.delete(integration.id);
    },
    forget: (integration) => {
      integrations.delete(integration.workspace_id);
      delivering.delete(integration.id);
    },
  };
};
