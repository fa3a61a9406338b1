import { writeFileSync } from 'node:fs';

// A jest reporter that prints, at the end of a run, each project's files, tests and times: its span
// (from its first file's start to its last file's end: the projects run interleaved on the same
// workers, so spans overlap) and its busy time (the sum of its files' durations). .ci/run prints
// the same table last (FLEETSTREAM_PROJECT_TIMES_FILE), so that a slow project shows in every CI
// log. Plain JavaScript: jest loads reporters untransformed.

/** @implements {import('@jest/reporters').Reporter} */
export default class ProjectTimesReporter {
  /** @type {Map<string, { files: number; passed: number; failed: number; busyMs: number; start: number; end: number }>} */
  projects = new Map();

  onTestResult(test, result) {
    const name = test.context.config.displayName?.name ?? 'default';
    const entry = this.projects.get(name) ?? { files: 0, passed: 0, failed: 0, busyMs: 0, start: Infinity, end: 0 };
    const { start, end } = result.perfStats;
    entry.files += 1;
    entry.passed += result.numPassingTests;
    entry.failed += result.numFailingTests + (result.testExecError ? 1 : 0);
    entry.busyMs += end - start;
    entry.start = Math.min(entry.start, start);
    entry.end = Math.max(entry.end, end);
    this.projects.set(name, entry);
  }

  onRunComplete(_contexts, results) {
    if (!this.projects.size) return;
    const seconds = (ms) => `${Math.round(ms / 1000)} s`;
    const rows = [...this.projects].sort(([, a], [, b]) => b.busyMs - a.busyMs);
    const lines = rows.map(
      ([name, p]) =>
        `  ${name.padEnd(10)} ${String(p.files).padStart(4)} files ${String(p.passed).padStart(5)} passed ${String(p.failed).padStart(3)} failed   busy ${seconds(p.busyMs).padStart(7)}   span ${seconds(p.end - p.start).padStart(7)}`,
    );
    const wall = Date.now() - results.startTime;
    const table = `project times (wall ${seconds(wall)}; busy: the files' own durations added up):\n${lines.join('\n')}\n`;
    process.stderr.write(`\n${table}`);
    if (process.env.FLEETSTREAM_PROJECT_TIMES_FILE) writeFileSync(process.env.FLEETSTREAM_PROJECT_TIMES_FILE, table);
  }
}
