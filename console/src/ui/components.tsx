import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { describeError, type Hints } from '../lib/errors';
import { visibleRange, type SortSpec } from '../lib/table';
import { formatIso } from '../lib/time';

/** An error in words a person can act on: the message, then each detail or hint. */
export const ErrorBox = ({ error, hints }: { error: unknown; hints?: Hints }) => {
  if (!error) return null;
  const { title, lines } = describeError(error, hints);
  return (
    <div class="error" role="alert">
      <strong>{title}</strong>
      {lines.length > 0 && (
        <ul>
          {lines.map((line) => (
            <li>{line}</li>
          ))}
        </ul>
      )}
    </div>
  );
};

/** A long operation under way: an indeterminate (or counted) progress bar with what it is doing. */
export const Busy = ({ label, value, max }: { label: string; value?: number; max?: number }) => (
  <div class="busy" role="status" aria-live="polite">
    {/* a bar of each kind (keyed): a counted bar reused for a wait would keep its max, and show an empty bar */}
    <progress key={max === undefined ? 'waiting' : 'counted'} aria-label={label} value={value} max={max} /> <span>{label}</span>
  </div>
);

/**
 * Runs actions one at a time with their busy state and error: `run(fn)` resolves with fn's answer,
 * or undefined after it failed (the error is kept for an {@link ErrorBox}).
 */
export const useAction = () => {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await fn();
    } catch (e) {
      setError(e);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
};

/** Loads data when `deps` change; `reload()` loads it again. */
/** Whether two dependency lists hold the same values (as hooks compare them). */
const sameDeps = (a: unknown[], b: unknown[]) => a.length === b.length && a.every((value, i) => Object.is(value, b[i]));

export const useLoad = <T,>(load: () => Promise<T>, deps: unknown[]) => {
  // The data is kept with the deps it was loaded for, and shown only under those: another
  // workspace's (or device's) data never shows while this one loads, nor under its error (a
  // workspace of another account showed the last one's fleets), whatever order answers and renders
  // come in. A reload (the same deps) keeps it on screen.
  const [loaded, setLoaded] = useState<{ deps: unknown[]; value: T } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    setError(undefined);
    load()
      .then((value) => live && setLoaded({ deps, value }))
      .catch((e) => live && setError(e))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const data = loaded && sameDeps(loaded.deps, deps) ? loaded.value : undefined;
  /** Replaces the data shown for the current deps (a value, or an update of the current one). */
  const setData = (next: T | undefined | ((current: T | undefined) => T | undefined)) =>
    setLoaded((was) => {
      const current = was && sameDeps(was.deps, deps) ? was.value : undefined;
      const value = typeof next === 'function' ? (next as (current: T | undefined) => T | undefined)(current) : next;
      return value === undefined ? undefined : { deps, value };
    });
  return { data, error, loading, reload: () => setTick((t) => t + 1), setData };
};

/**
 * Pages of a list by cursor: the cursors of the pages before this one, kept with what they are
 * cursors of (another workspace, rollout or filter starts at the first page again).
 */
export const usePages = (of: string) => {
  const [paging, setPaging] = useState<{ of: string; cursors: string[] }>({ of, cursors: [] });
  const cursors = paging.of === of ? paging.cursors : [];
  return {
    cursor: cursors.at(-1),
    first: cursors.length === 0,
    number: cursors.length + 1,
    next: (cursor: string) => setPaging({ of, cursors: [...cursors, cursor] }),
    previous: () => setPaging({ of, cursors: cursors.slice(0, -1) }),
  };
};

/**
 * The toolbar under a paged list: back and on (on only while the list has a `next` cursor), the
 * page's number, and a refresh when the list can be read again.
 */
export const Pager = ({
  pages,
  next,
  labels = ['Previous', 'Next'],
  onRefresh,
}: {
  pages: ReturnType<typeof usePages>;
  next: string | null | undefined;
  labels?: [string, string];
  onRefresh?: () => void;
}) => (
  <div class="toolbar">
    <button type="button" disabled={pages.first} onClick={pages.previous}>
      {labels[0]}
    </button>
    <span>Page {pages.number}</span>
    <button type="button" disabled={!next} onClick={() => next && pages.next(next)}>
      {labels[1]}
    </button>
    {onRefresh && (
      <button type="button" onClick={onRefresh}>
        Refresh
      </button>
    )}
  </div>
);

/** A secret the API shows only once: shown with a copy button and a warning that it will not come back. */
export const SecretOnce = ({ label, secret, onDismiss }: { label: string; secret: string; onDismiss: () => void }) => {
  const [copied, setCopied] = useState<'' | 'Copied.' | 'Copying was refused: select the text and copy it.'>('');
  const copy = async () => {
    // the clipboard needs a secure context (https, or localhost) and the page's focus
    await (navigator.clipboard?.writeText(secret) ?? Promise.reject(new Error('no clipboard'))).then(
      () => setCopied('Copied.'),
      () => setCopied('Copying was refused: select the text and copy it.'),
    );
  };
  return (
    <div class="secret" role="region" aria-label={label}>
      <p>
        <strong>{label}</strong>: copy it now. It is shown only this once and cannot be read again.
      </p>
      <code data-testid="secret">{secret}</code>{' '}
      <button type="button" onClick={copy}>
        Copy
      </button>{' '}
      <span role="status">{copied}</span>{' '}
      <button type="button" onClick={onDismiss}>
        I have saved it
      </button>
    </div>
  );
};

/** A labelled form field: the label names the control for screen readers and clicks. */
export const Field = ({ label, children, hint }: { label: string; children: ComponentChildren; hint?: string }) => (
  <label class="field">
    <span>{label}</span>
    {children}
    {hint && <small>{hint}</small>}
  </label>
);

/** A column of a {@link VirtualTable}. */
export interface Column<T, K extends string> {
  key: K;
  title: string;
  width: string;
  render: (row: T) => ComponentChildren;
  sortable?: boolean;
}

/**
 * A table that draws only the rows in view (fixed row height), so 10,000 rows scroll as fast as
 * 50. Headers sort with a click or Enter; `aria-rowcount` tells assistive technology the real size.
 */
export const VirtualTable = <T, K extends string>({
  rows,
  columns,
  rowKey,
  sort,
  onSort,
  label,
  rowHeight = 36,
  height = 480,
}: {
  rows: readonly T[];
  columns: Column<T, K>[];
  rowKey: (row: T) => string;
  sort?: SortSpec<K>;
  onSort?: (key: K) => void;
  label: string;
  rowHeight?: number;
  height?: number;
}) => {
  const [scrollTop, setScrollTop] = useState(0);
  const body = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    // a new filter or sort starts at the top
    if (body.current) body.current.scrollTop = 0;
    setScrollTop(0);
  }, [rows]);
  const { start, end } = visibleRange(scrollTop, height, rowHeight, rows.length);
  const template = columns.map((c) => c.width).join(' ');
  return (
    <div class="vtable" role="table" aria-label={label} aria-rowcount={rows.length + 1}>
      <div class="vrow vhead" role="row" aria-rowindex={1} style={{ gridTemplateColumns: template }}>
        {columns.map((c) => (
          <div role="columnheader" aria-sort={sort?.key === c.key ? (sort.direction === 'asc' ? 'ascending' : 'descending') : 'none'}>
            {c.sortable && onSort ? (
              <button type="button" class="link" onClick={() => onSort(c.key)}>
                {c.title} {sort?.key === c.key ? (sort.direction === 'asc' ? '▲' : '▼') : ''}
              </button>
            ) : (
              c.title
            )}
          </div>
        ))}
      </div>
      <div
        class="vbody"
        ref={body}
        style={{ height: `${Math.min(height, Math.max(rowHeight, rows.length * rowHeight))}px` }}
        onScroll={(e) => setScrollTop((e.currentTarget as HTMLDivElement).scrollTop)}
        tabIndex={0}
        aria-label={`${label}: ${rows.length} rows`}
      >
        <div style={{ height: `${rows.length * rowHeight}px`, position: 'relative' }}>
          {rows.slice(start, end).map((row, i) => (
            <div
              key={rowKey(row)}
              class="vrow"
              role="row"
              aria-rowindex={start + i + 2}
              style={{ gridTemplateColumns: template, position: 'absolute', top: `${(start + i) * rowHeight}px`, height: `${rowHeight}px`, left: 0, right: 0 }}
            >
              {columns.map((c) => (
                <div role="cell">{c.render(row)}</div>
              ))}
            </div>
          ))}
        </div>
      </div>
    </div>
  );
};

/**
 * A name that may be long (names take up to 128 characters): cut with an ellipsis where it would
 * not fit, its full text (or `title`) shown on hover and read by assistive technology.
 */
export const Name = ({ text, title, wide }: { text: string; title?: string; wide?: boolean }) => (
  <span class={wide ? 'name wide' : 'name'} title={title ?? text}>
    {text}
  </span>
);

/** Formats an RFC 3339 date for people in the console's zone, with its abbreviation or offset (`2026-11-25 13:36:05 CST`), or a dash. */
export const when = (iso: string | null | undefined) => formatIso(iso);

/** A button that shows its action is running and cannot be pressed twice. */
export const Submit = ({ busy, children, disabled }: { busy: boolean; children: ComponentChildren; disabled?: boolean }) => (
  <button type="submit" disabled={disabled ?? busy} aria-busy={busy}>
    {children}
  </button>
);

/** Saves text as a file in the user's downloads. */
export const download = (name: string, text: string, type: string) => {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
};
