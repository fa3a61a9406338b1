import { useEffect, useId, useMemo, useState } from 'preact/hooks';
import type { ApiClient } from '../lib/api';
import { labelOf, matchItems, resolveTyped, type Pickable } from '../lib/pickers';

/** What a picker holds: the items chosen (IDs) and the text typed after them. */
export interface PickerState {
  chosen: string[];
  setChosen: (ids: string[]) => void;
  text: string;
  setText: (text: string) => void;
}

export const usePickerState = (initial: string[] = []): PickerState => {
  const [chosen, setChosen] = useState(initial);
  const [text, setText] = useState('');
  return { chosen, setChosen, text, setText };
};

/** The IDs a picker names: those chosen, then those the typed text names (names or IDs, see {@link resolveTyped}). */
export const pickedIds = (state: Pick<PickerState, 'chosen' | 'text'>, items: readonly Pickable[] | undefined) => [
  ...new Set([...state.chosen, ...resolveTyped(state.text, items ?? [])]),
];

/**
 * The workspace's devices and fleets for the pickers, read through the list API when the page
 * opens (one devices list and one fleets list; `reload()` reads them again).
 */
export const useWorkspaceItems = (api: ApiClient, workspaceId: string) => {
  const [items, setItems] = useState<{ workspaceId: string; devices: Pickable[]; fleets: Pickable[] } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setError(undefined);
    Promise.all([api.listDevices(workspaceId), api.listFleets(workspaceId)]).then(
      ([devices, fleets]) =>
        live &&
        setItems({
          workspaceId,
          devices: devices.map((d) => ({ id: d.id, name: d.name, detail: d.fleet_name })),
          fleets: fleets.map((f) => ({ id: f.id, name: f.name })),
        }),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [api, workspaceId, tick]);
  const current = items?.workspaceId === workspaceId ? items : undefined;
  return { devices: current?.devices, fleets: current?.fleets, error, reload: () => setTick((t) => t + 1) };
};

/**
 * A type-ahead picker of devices or fleets (the WAI-ARIA combobox pattern): typing part of a name
 * lists the matches (`listbox`), the arrow keys move through them, Enter or a click chooses one,
 * Escape closes the list, Backspace in an empty box drops the last chosen. IDs are still accepted:
 * text left in the box is read as names or IDs when the form uses it ({@link pickedIds}).
 */
export const EntityPicker = ({
  label,
  name,
  hint,
  items,
  state,
  multiple = false,
  required = false,
}: {
  label: string;
  name: string;
  hint?: string;
  items: readonly Pickable[] | undefined;
  state: PickerState;
  multiple?: boolean;
  required?: boolean;
}) => {
  const id = useId();
  const listId = `${id}-list`;
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const { chosen, setChosen, text, setText } = state;
  const options = useMemo(() => matchItems(items ?? [], text).filter((i) => !chosen.includes(i.id)), [items, text, chosen]);
  // a whole ID typed is taken as it is: no list left open over the fields below it
  const typedId = Boolean(text.trim()) && (items ?? []).some((i) => i.id === text.trim());
  const shown = open && options.length > 0 && !typedId;
  const choose = (item: Pickable) => {
    setChosen(multiple ? [...chosen, item.id] : [item.id]);
    setText('');
    setActive(0);
    setOpen(false);
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      if (!open) setOpen(true);
      else setActive((a) => Math.min(a + 1, options.length - 1));
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((a) => Math.max(a - 1, 0));
    } else if (e.key === 'Enter' && shown && options[active]) {
      e.preventDefault();
      choose(options[active]);
    } else if (e.key === 'Escape' && open) {
      e.preventDefault();
      setOpen(false);
    } else if (e.key === 'Backspace' && !text && chosen.length) {
      setChosen(chosen.slice(0, -1));
    }
  };
  return (
    <div class="field picker">
      <label for={id}>{label}</label>
      <div class="picker-box">
        {chosen.map((c) => (
          <span class="chip" data-testid="picked" data-id={c} title={c}>
            {labelOf(c, items ?? [])}
            <button type="button" aria-label={`Remove ${labelOf(c, items ?? [])}`} onClick={() => setChosen(chosen.filter((x) => x !== c))}>
              ×
            </button>
          </span>
        ))}
        <input
          id={id}
          name={name}
          role="combobox"
          autocomplete="off"
          aria-autocomplete="list"
          aria-expanded={shown}
          aria-controls={listId}
          aria-activedescendant={shown ? `${listId}-${active}` : undefined}
          required={required && !chosen.length}
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value);
            setActive(0);
            setOpen(true);
          }}
          onFocus={() => setOpen(true)}
          onBlur={() => setOpen(false)}
          onKeyDown={onKeyDown}
        />
      </div>
      <div role="listbox" id={listId} aria-label={label} class="picker-list" hidden={!shown}>
        {shown &&
          options.map((o, k) => (
            <div
              role="option"
              id={`${listId}-${k}`}
              aria-selected={k === active}
              data-id={o.id}
              // chosen before the input's blur closes the list
              onMouseDown={(e) => {
                e.preventDefault();
                choose(o);
              }}
            >
              <span class="clip">{o.name}</span> <small>{[o.detail, o.id].filter(Boolean).join(' · ')}</small>
            </div>
          ))}
      </div>
      {hint && <small>{hint}</small>}
    </div>
  );
};
