import { forwarderMemory } from '../../../lambdas/domain/webhooks/forwarder-memory';
import { createIntegration, deleteIntegration, getIntegration, updateIntegration } from '../../../lambdas/domain/webhooks/integrations';
import type { Db } from '../../../lambdas/shared/clients';
import type { Caller } from '../../../lambdas/shared/http';
import { recordDeliveryOutcome } from '../../../lambdas/stores/integration-store';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

const TTL_MS = 10_000;

/** A memory on a clock the test moves. */
const memoryAt = () => {
  let clock = 1_000_000;
  const memory = forwarderMemory(db, { ttlMs: TTL_MS, max: 100, now: () => clock });
  return { memory, advance: (ms: number) => (clock += ms) };
};

const hook = (caller: Caller, workspaceId: string, name = 'hook') =>
  createIntegration(
    db,
    caller,
    workspaceId,
    { name, url: 'http://127.0.0.1:9/hook', data: true, events: true, tags: [], enabled: true },
    { allowPrivateTargets: true },
  );

describe('what a forwarder container remembers between invocations', () => {
  it('uses a workspace’s integrations as read for the bound, then reads them again', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration } = await hook(caller, workspace_id);
    const { memory, advance } = memoryAt();

    expect((await memory.integrationsOf(workspace_id)).map((i) => i.enabled)).toEqual([true]);
    await updateIntegration(db, caller, workspace_id, integration.id, { enabled: false }, { allowPrivateTargets: true });
    advance(TTL_MS);
    expect((await memory.integrationsOf(workspace_id)).map((i) => i.enabled)).toEqual([true]);
    advance(1);
    expect((await memory.integrationsOf(workspace_id)).map((i) => i.enabled)).toEqual([false]);
  });

  it('does not keep a workspace without integrations, so that its first webhook gets the next batch', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { memory } = memoryAt();

    expect(await memory.integrationsOf(workspace_id)).toEqual([]);
    await hook(caller, workspace_id);
    expect(await memory.integrationsOf(workspace_id)).toHaveLength(1);
  });

  it('writes a success once per bound, a failure every time, and the next success after a failure', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration: created } = await hook(caller, workspace_id);
    const { memory, advance } = memoryAt();
    const [integration] = await memory.integrationsOf(workspace_id);
    expect(integration.id).toBe(created.id);
    const ok: { error?: string } = {};
    const failed = { error: 'HTTP 500' };

    expect(memory.needsStatusWrite(integration, ok)).toBe(true);
    memory.statusWritten(integration, ok);
    expect(memory.needsStatusWrite(integration, ok)).toBe(false);
    advance(TTL_MS + 1);
    expect(memory.needsStatusWrite(integration, ok)).toBe(true);
    memory.statusWritten(integration, ok);
    expect(memory.needsStatusWrite(integration, failed)).toBe(true);
    memory.statusWritten(integration, failed);
    expect(memory.needsStatusWrite(integration, failed)).toBe(true);
    expect(memory.needsStatusWrite(integration, ok)).toBe(true);
  });

  it('writes the next success at once when a fresh read shows another container’s failures', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration: created } = await hook(caller, workspace_id);
    const { memory, advance } = memoryAt();
    const [integration] = await memory.integrationsOf(workspace_id);
    advance(TTL_MS / 2);
    memory.statusWritten(integration, {});
    // another container records a failure meanwhile
    await recordDeliveryOutcome(db, workspace_id, created.id, { at: new Date().toISOString(), delivered: false, error: 'HTTP 503' });
    advance(TTL_MS / 2 + 1);
    expect(memory.needsStatusWrite(integration, {})).toBe(false);

    await memory.integrationsOf(workspace_id); // read again: the integrations' bound has passed, the status's has not

    expect(memory.needsStatusWrite(integration, {})).toBe(true);
    expect((await getIntegration(db, caller, workspace_id, created.id)).status.consecutive_failures).toBe(1);
  });

  it('reads the workspace again once one of its integrations is gone', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration: created } = await hook(caller, workspace_id);
    const { memory } = memoryAt();
    const [integration] = await memory.integrationsOf(workspace_id);
    await deleteIntegration(db, caller, workspace_id, created.id);

    memory.forget(integration);

    expect(await memory.integrationsOf(workspace_id)).toEqual([]);
  });

  it('keeps nothing with a bound of 0', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration } = await hook(caller, workspace_id);
    const memory = forwarderMemory(db, { ttlMs: 0, max: 100 });
    const [read] = await memory.integrationsOf(workspace_id);
    memory.statusWritten(read, {});

    expect(memory.needsStatusWrite(read, {})).toBe(true);
    await updateIntegration(db, caller, workspace_id, integration.id, { name: 'renamed' }, { allowPrivateTargets: true });
    expect((await memory.integrationsOf(workspace_id)).map((i) => i.name)).toEqual(['renamed']);
  });
});
