import type { StreamedList } from '../../lambdas/shared/json-stream';

/**
 * Every item a domain list function streams, read to the end, and its `next` (undefined when unpaged).
 *
 * @example const devices = await itemsOf(listDevices(db, caller, workspaceId));
 */
export const pageOf = async <T>(list: StreamedList<T> | Promise<StreamedList<T>>) => {
  const { items, next } = await list;
  const read: T[] = [];
  for await (const item of items) read.push(item);
  return { items: read, next: next?.() };
};

/** Every item a domain list function streams, read to the end. */
export const itemsOf = async <T>(list: StreamedList<T> | Promise<StreamedList<T>>) => (await pageOf(list)).items;
