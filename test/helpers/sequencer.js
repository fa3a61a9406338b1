import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import Sequencer from '@jest/test-sequencer';

// Jest runs the files it has timed longest first, so that no long file starts last and keeps one
// worker busy alone at the end. A clean clone (CI's) has no timings, and jest then goes by file
// size, which put the template's slow runs last. This sequencer gives jest, for a file it has not
// timed itself, the seconds test/durations.json holds: a whole run's durations, the longer of the
// two projects for an e2e file (docs/testing.md says how to write it anew). Plain JavaScript:
// jest loads a sequencer untransformed.

const ROOT = new URL('../..', import.meta.url).pathname;
const KNOWN = JSON.parse(readFileSync(new URL('../durations.json', import.meta.url), 'utf8'));

const Base = Sequencer.default ? Sequencer.default : Sequencer;

export default class KnownDurationsSequencer extends Base {
  time(test) {
    const own = super.time(test);
    if (own !== undefined) return own;
    const seconds = KNOWN[relative(ROOT, test.path)];
    return seconds === undefined ? undefined : seconds * 1000;
  }
}
