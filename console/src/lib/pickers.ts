/** Something a picker offers: a device or a fleet, by ID and name (and, for a device, its fleet's name). */
export interface Pickable {
  id: string;
  name: string;
  /** What the option shows under the name (a device's fleet). */
  detail?: string;
}

/** Options a picker lists at most under what is typed. */
export const PICKER_OPTIONS = 20;

/**
 * The items that match what is typed, best first: a name that starts with it, then a name with a
 * word that starts with it, then a name holding it, then an ID that starts with it
 * (case-insensitive); at most `limit`. Nothing typed: the first `limit` items by name.
 */
export const matchItems = <T extends Pickable>(items: readonly T[], typed: string, limit = PICKER_OPTIONS): T[] => {
  const q = typed.trim().toLowerCase();
  const byName = (a: T, b: T) => a.name.localeCompare(b.name, undefined, { numeric: true, sensitivity: 'base' }) || a.id.localeCompare(b.id);
  if (!q) return [...items].sort(byName).slice(0, limit);
  const rank = (item: T) => {
    const name = item.name.toLowerCase();
    if (name.startsWith(q)) return 0;
    if (name.split(/[\s\-_.:/]+/).some((word) => word.startsWith(q))) return 1;
    if (name.includes(q)) return 2;
    if (item.id.toLowerCase().startsWith(q)) return 3;
    return -1;
  };
  return items
    .map((item) => ({ item, rank: rank(item) }))
    .filter((r) => r.rank >= 0)
    .sort((a, b) => a.rank - b.rank || byName(a.item, b.item))
    .map((r) => r.item)
    .slice(0, limit);
};

/**
 * The IDs typed text names, for a filter or a scheduling: each comma- or space-separated word
 * that is an item's ID stays, one that is an item's name (case-insensitive, one item of that
 * name) becomes its ID, and what is neither is kept as typed (an ID the API then judges: a device
 * of another workspace, or one not listed yet). A whole text that is one item's name (names may
 * hold spaces) is that item.
 */
export const resolveTyped = (text: string, items: readonly Pickable[]): string[] => {
  const whole = text.trim();
  if (!whole) return [];
  const byName = new Map<string, Pickable[]>();
  for (const item of items) byName.set(item.name.toLowerCase(), [...(byName.get(item.name.toLowerCase()) ?? []), item]);
  const one = (word: string) => {
    if (items.some((i) => i.id === word)) return word;
    const named = byName.get(word.toLowerCase());
    return named?.length === 1 ? named[0].id : word;
  };
  const wholeNamed = byName.get(whole.toLowerCase());
  if (wholeNamed?.length === 1) return [wholeNamed[0].id];
  return [
    ...new Set(
      whole
        .split(/[\s,]+/)
        .filter(Boolean)
        .map(one),
    ),
  ];
};

/** What a chosen ID reads as: its item's name, or the ID itself when no item has it. */
export const labelOf = (id: string, items: readonly Pickable[]) => items.find((i) => i.id === id)?.name ?? id;
