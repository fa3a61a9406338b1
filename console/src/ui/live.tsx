import { useEffect, useRef, useState } from 'preact/hooks';
import { liveState, subscribeLive, type LiveKind, type LiveMessages, type LiveState } from '../lib/live';

/** How often a page reads again on its own while the live connection is down (or absent): at most every 30 s. */
export const FALLBACK_REFRESH_MS = 30_000;

/** The live connection's state, re-rendering on its changes. */
export const useLiveState = (): LiveState => {
  const [state, setState] = useState(liveState.current);
  useEffect(() => {
    setState(liveState.current);
    return liveState.subscribe(setState);
  }, []);
  return state;
};

/**
 * Calls `handler` with each live message of `kind` in the workspace, and with `undefined` when the
 * page should read again: after a reconnection (messages may have been missed), and every
 * {@link FALLBACK_REFRESH_MS} while the connection is down. One line for a page:
 * `useLive(workspaceId, 'rollout', () => refresh())`.
 */
export const useLive = <K extends LiveKind>(workspaceId: string, kind: K, handler: (message: LiveMessages[K] | undefined) => void) => {
  const latest = useRef(handler);
  latest.current = handler;
  useEffect(() => subscribeLive(workspaceId, kind, (message) => latest.current(message)), [workspaceId, kind]);
  const state = useLiveState();
  const down = state === 'lost' || state === 'off';
  useEffect(() => {
    if (!down) return;
    const timer = setInterval(() => latest.current(undefined), FALLBACK_REFRESH_MS);
    return () => clearInterval(timer);
  }, [down]);
};

/**
 * `run`, at most once per `ms`: a call within `ms` of the last run runs once at the end of it
 * (a burst of messages is one read, the last of them never lost).
 */
export const useThrottled = (run: () => void, ms: number) => {
  const latest = useRef(run);
  latest.current = run;
  const last = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return () => {
    if (timer.current) return;
    const wait = last.current + ms - Date.now();
    const fire = () => {
      timer.current = undefined;
      last.current = Date.now();
      latest.current();
    };
    if (wait <= 0) fire();
    else timer.current = setTimeout(fire, wait);
  };
};

const LABELS: Record<LiveState, string | undefined> = {
  off: undefined,
  connecting: 'Connecting…',
  live: 'Live',
  lost: 'Live updates lost: reconnecting…',
};

/** The header's word on the live connection (nothing while no page listens). */
export const LiveIndicator = () => {
  const state = useLiveState();
  const label = LABELS[state];
  if (!label) return null;
  return (
    <span
      class={`live live-${state}`}
      role="status"
      data-testid="live-state"
      title={state === 'lost' ? `Pages read again every ${FALLBACK_REFRESH_MS / 1000} s until it is back.` : 'Changes show as they happen.'}
    >
      {label}
    </span>
  );
};
