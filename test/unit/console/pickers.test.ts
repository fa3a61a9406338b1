import { labelOf, matchItems, resolveTyped } from '../../../console/src/lib/pickers';

const devices = [
  { id: 'dev-0001', name: 'Boiler room' },
  { id: 'dev-0002', name: 'attic sensor' },
  { id: 'dev-0003', name: 'Roof boiler' },
  { id: 'dev-0004', name: 'pump' },
  { id: 'dev-0005', name: 'pump' },
];

describe('type-ahead', () => {
  it('lists names that start with the text, then names with a word that does, then names holding it, then IDs, case-insensitive', () => {
    expect(matchItems(devices, 'boi').map((d) => d.id)).toEqual(['dev-0001', 'dev-0003']);
    expect(matchItems(devices, 'SENS').map((d) => d.id)).toEqual(['dev-0002']);
    expect(matchItems(devices, 'oile').map((d) => d.id)).toEqual(['dev-0001', 'dev-0003']);
    expect(matchItems(devices, 'dev-0004').map((d) => d.id)).toEqual(['dev-0004']);
    expect(matchItems(devices, 'nothing')).toEqual([]);
  });

  it('lists the first ones by name when nothing is typed, at most the limit', () => {
    expect(matchItems(devices, '  ', 3).map((d) => d.name)).toEqual(['attic sensor', 'Boiler room', 'pump']);
  });
});

describe('typed text', () => {
  it('reads IDs as IDs, a unique name as its ID, a whole name with spaces as its item, and keeps what is neither', () => {
    expect(resolveTyped('dev-0001, dev-0002', devices)).toEqual(['dev-0001', 'dev-0002']);
    expect(resolveTyped('Boiler room', devices)).toEqual(['dev-0001']);
    expect(resolveTyped('boiler ROOM', devices)).toEqual(['dev-0001']);
    expect(resolveTyped('dev-0003 dev-9999', devices)).toEqual(['dev-0003', 'dev-9999']);
    // a name two devices share names neither: it is kept as typed, for the API to refuse
    expect(resolveTyped('pump', devices)).toEqual(['pump']);
    expect(resolveTyped('   ', devices)).toEqual([]);
  });

  it('labels a chosen ID by its name, or by itself when no item has it', () => {
    expect([labelOf('dev-0002', devices), labelOf('dev-0009', devices)]).toEqual(['attic sensor', 'dev-0009']);
  });
});
