import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  createIntegration,
  deleteIntegration,
  getIntegration,
  listIntegrations,
  rotateIntegrationSecret,
  updateIntegration,
} from '../../../lambdas/domain/webhooks/integrations';
import type { CreateIntegrationBody } from '../../../lambdas/schemas/integration';
import { LIMIT_DEFAULTS } from '../../../lambdas/schemas/limits';
import type { Db } from '../../../lambdas/shared/clients';
import { NotFoundError, QuotaExceededError, ValidationError } from '../../../lambdas/shared/errors';
import type { Caller } from '../../../lambdas/shared/http';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

const body = (fields: Partial<CreateIntegrationBody> = {}): CreateIntegrationBody => ({
  name: 'hook',
  url: 'https://hooks.example.com/fleetstream',
  data: true,
  events: true,
  tags: [],
  enabled: true,
  ...fields,
});

const create = (caller: Caller, workspaceId: string, fields: Partial<CreateIntegrationBody> = {}) => createIntegration(db, caller, workspaceId, body(fields));

const everything = async () => (await db.doc.send(new ScanCommand({ TableName: db.table }))).Items ?? [];

describe('integrations on DynamoDB Local', () => {
  it('creates an integration with an empty status and shows its secret only at creation', async () => {
    const { caller, workspace_id } = await newAccount(db);

    const { integration, secret } = await create(caller, workspace_id, { tags: ['temp'] });

    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(integration).toEqual(
      expect.objectContaining({
        id: expect.stringMatching(/^int-/),
        workspace_id,
        url: 'https://hooks.example.com/fleetstream',
        tags: ['temp'],
        previous_secret_expires_at: null,
        status: { last_delivery_at: null, last_error_at: null, last_error: null, consecutive_failures: 0, failing_since: null },
      }),
    );
    expect(await getIntegration(db, caller, workspace_id, integration.id)).toEqual(integration);
    expect(JSON.stringify(await itemsOf(listIntegrations(db, caller, workspace_id)))).not.toContain(secret);
  });

  it('lists a workspace’s integrations oldest first', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const first = await create(caller, workspace_id, { name: 'first' });
    const second = await create(caller, workspace_id, { name: 'second' });

    const listed = await itemsOf(listIntegrations(db, caller, workspace_id));

    expect(listed.map((i) => i.id)).toEqual([first.integration.id, second.integration.id]);
  });

  it('changes only the given settings and keeps the secret', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration } = await create(caller, workspace_id);

    const updated = await updateIntegration(db, caller, workspace_id, integration.id, { enabled: false, tags: ['a', 'b'] });

    expect(updated).toEqual({ ...integration, enabled: false, tags: ['a', 'b'], updated_at: expect.any(String) });
  });

  it('rotates the secret and keeps the previous one signing for a grace period', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const created = await create(caller, workspace_id);

    const rotated = await rotateIntegrationSecret(db, caller, workspace_id, created.integration.id);

    expect(rotated.secret).not.toBe(created.secret);
    expect(Date.parse(rotated.integration.previous_secret_expires_at!) - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
  });

  it('deletes an integration, after which it is not found', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration } = await create(caller, workspace_id);

    const deleted = await deleteIntegration(db, caller, workspace_id, integration.id);

    expect(deleted.id).toBe(integration.id);
    await expect(getIntegration(db, caller, workspace_id, integration.id)).rejects.toThrow(NotFoundError);
    await expect(deleteIntegration(db, caller, workspace_id, integration.id)).rejects.toThrow(NotFoundError);
  });

  it.each([
    ['http', { url: 'http://hooks.example.com/x' }, 'body.url'],
    ['a loopback address', { url: 'https://127.0.0.1/x' }, 'body.url'],
    ['the metadata service', { url: 'https://169.254.169.254/latest' }, 'body.url'],
    ['nothing to send', { data: false, events: false }, 'body.data'],
  ])('refuses %s and stores nothing', async (_what, fields, field) => {
    const { caller, workspace_id } = await newAccount(db);
    const before = (await everything()).length;

    const attempt = create(caller, workspace_id, fields);

    await expect(attempt).rejects.toThrow(ValidationError);
    await expect(attempt).rejects.toMatchObject({ details: [expect.objectContaining({ field })] });
    expect((await everything()).length).toBe(before);
  });

  it('refuses an update that would send nothing, and changes nothing', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration } = await create(caller, workspace_id, { events: false });

    await expect(updateIntegration(db, caller, workspace_id, integration.id, { data: false })).rejects.toThrow(ValidationError);

    expect(await getIntegration(db, caller, workspace_id, integration.id)).toEqual(integration);
  });

  it.each([
    'https://[64:ff9b::a9fe:a9fe]/hook',
    'https://[2002:7f00:1::1]/hook',
    'https://[::7f00:1]/hook',
    'https://[100::1]/hook',
    'https://localhost./hook',
  ])('refuses %s under the cloud policy, at creation and at update, and writes nothing', async (url) => {
    const { caller, workspace_id } = await newAccount(db);
    const { integration } = await create(caller, workspace_id);
    const before = await everything();
    const cloud = { allowPrivateTargets: false };

    const created = createIntegration(db, caller, workspace_id, body({ url }), cloud);
    const updated = updateIntegration(db, caller, workspace_id, integration.id, { url }, cloud);

    await expect(created).rejects.toMatchObject({ details: [{ field: 'body.url', message: 'Must not target a private, loopback or link-local address.' }] });
    await expect(updated).rejects.toThrow(ValidationError);
    expect(await everything()).toEqual(before);
  });

  it('takes private http targets only under the local policy', async () => {
    const { caller, workspace_id } = await newAccount(db);

    const local = await createIntegration(db, caller, workspace_id, body({ url: 'http://127.0.0.1:9999/hook' }), { allowPrivateTargets: true });

    expect(local.integration.url).toBe('http://127.0.0.1:9999/hook');
  });

  it(`keeps a workspace at its quota of integrations (${LIMIT_DEFAULTS.integrations} by default), and a deleted one frees its place`, async () => {
    const { caller, workspace_id } = await newAccount(db);
    const made = [];
    for (let i = 0; i < LIMIT_DEFAULTS.integrations; i++) made.push((await create(caller, workspace_id, { name: `h${i}` })).integration);

    await expect(create(caller, workspace_id)).rejects.toThrow(QuotaExceededError);
    await deleteIntegration(db, caller, workspace_id, made[0].id);
    await expect(create(caller, workspace_id, { name: 'again' })).resolves.toMatchObject({ integration: { name: 'again' } });
    await expect(create(caller, workspace_id)).rejects.toThrow(QuotaExceededError);
  });

  it('answers 404 for another account’s workspace and integration, and leaves them alone', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);
    const { integration } = await create(theirs.caller, theirs.workspace_id);
    const attempts = [
      getIntegration(db, mine.caller, theirs.workspace_id, integration.id),
      listIntegrations(db, mine.caller, theirs.workspace_id),
      create(mine.caller, theirs.workspace_id),
      updateIntegration(db, mine.caller, theirs.workspace_id, integration.id, { enabled: false }),
      rotateIntegrationSecret(db, mine.caller, theirs.workspace_id, integration.id),
      deleteIntegration(db, mine.caller, theirs.workspace_id, integration.id),
      // their integration named under my own workspace
      getIntegration(db, mine.caller, mine.workspace_id, integration.id),
      deleteIntegration(db, mine.caller, mine.workspace_id, integration.id),
    ];

    for (const attempt of attempts) await expect(attempt).rejects.toThrow(NotFoundError);
    expect(await getIntegration(db, theirs.caller, theirs.workspace_id, integration.id)).toEqual(integration);
  });
});
