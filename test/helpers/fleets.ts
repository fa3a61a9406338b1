import { createDevice } from '../../lambdas/domain/registry/devices';
import { createFleet } from '../../lambdas/domain/registry/fleets';
import type { Db } from '../../lambdas/shared/clients';
import { newAccount } from './callers';

/** A new account whose workspace has fleets `north` (with `northDevices` devices) and `south` (with one). */
export const workspaceWithFleets = async (db: Db, northDevices: number) => {
  const account = await newAccount(db);
  const { caller, workspace_id } = account;
  const north = await createFleet(db, caller, workspace_id, { name: 'north', description: '' });
  const south = await createFleet(db, caller, workspace_id, { name: 'south', description: '' });
  const device = (fleet_id: string, name: string) => createDevice(db, caller, workspace_id, { name, fleet_id, phys_id: '' });
  const inNorth = await Promise.all(Array.from({ length: northDevices }, (_, i) => device(north.id, `n${i}`)));
  const inSouth = await device(south.id, 's0');
  return { ...account, north, south, inNorth, inSouth };
};

/** A fleet-wide job or FOTA scheduled to the end: the answer's fields with its `devices` read whole. */
export const scheduledWhole = async <A extends { devices: AsyncIterable<string> }, K extends Exclude<keyof A, 'devices'>>(
  key: K,
  scheduling: Promise<A>,
): Promise<A[K] & { devices: string[] }> => {
  const answer = await scheduling;
  const devices: string[] = [];
  for await (const id of answer.devices) devices.push(id);
  return { ...answer[key], devices };
};
