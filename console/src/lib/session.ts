import { needsRefresh, type CognitoClient, type Session } from './cognito';

/** Where a browser keeps the session between page loads. */
export interface SessionStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const KEY = 'fleetstream.session';

/**
 * Holds the signed-in user's tokens: saved across reloads, refreshed shortly before the access
 * token ends (one refresh at a time, however many requests wait for it), dropped on sign-out or
 * when the refresh is refused.
 */
export const createSessionStore = (cognito: CognitoClient, storage: SessionStorage, onChange: (session: Session | undefined) => void, now = Date.now) => {
  let session: Session | undefined;
  try {
    const saved = storage.getItem(KEY);
    session = saved ? (JSON.parse(saved) as Session) : undefined;
  } catch {
    session = undefined;
  }
  let refreshing: Promise<Session> | undefined;
  const set = (next: Session | undefined) => {
    session = next;
    if (next) storage.setItem(KEY, JSON.stringify(next));
    else storage.removeItem(KEY);
    onChange(next);
  };
  return {
    current: () => session,
    set,
    /** The `Authorization` header of the next API request, refreshing the token first when it is about to end. */
    headers: async (): Promise<Record<string, string>> => {
      if (!session) return {};
      if (needsRefresh(session, now())) {
        refreshing ??= cognito.refresh(session).finally(() => (refreshing = undefined));
        try {
          set(await refreshing);
        } catch (error) {
          set(undefined);
          throw error;
        }
      }
      return { Authorization: `Bearer ${session!.accessToken}` };
    },
    signOut: async () => {
      const ending = session;
      set(undefined);
      // the tokens are gone from this browser whatever the answer; GlobalSignOut also ends them elsewhere
      if (ending) await cognito.signOut(ending).catch(() => undefined);
    },
  };
};

export type SessionStore = ReturnType<typeof createSessionStore>;
