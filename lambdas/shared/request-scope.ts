import { AsyncLocalStorage } from 'node:async_hooks';

/** What one API request learns about itself as it runs: the workspace it was found to be on. */
export interface RequestScope {
  /** The first workspace of the caller's account that the request's domain resolved (its path's). */
  workspaceId?: string;
}

// One store per request, wherever its await chain goes: several requests share a process locally.
const storage = new AsyncLocalStorage<RequestScope>();

/** Runs a request's route function in its own scope. */
export const inRequestScope = <T>(scope: RequestScope, run: () => T): T => storage.run(scope, run);

/**
 * Notes that the request runs on a workspace of the caller's account (domain/workspaces.ts and
 * domain/devices.ts call it once they found it): its usage counts the request. Outside a request
 * (a queue consumer, a CLI) it does nothing.
 */
export const noteWorkspace = (workspaceId: string) => {
  const scope = storage.getStore();
  if (scope) scope.workspaceId ??= workspaceId;
};
