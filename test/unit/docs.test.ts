import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { headingSlug, markdownOutline } from '../helpers/markdown';

const ROOT = resolve('.');
const PAGES = readdirSync('docs')
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`)
  .sort();
const FILES = ['README.md', ...PAGES];
const outlines = new Map(FILES.map((file) => [file, markdownOutline(readFileSync(file, 'utf8'))]));

// A scheme (`https:`, `mailto:`) makes a link external; anything else is a path in this repository.
const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;
// GitHub's anchors of a line or lines in a file that is not Markdown.
const LINE_ANCHOR = /^L\d+(-L\d+)?$/;

/** Why a relative link of `file` does not lead where it says, or undefined when it does. */
const brokenLink = (file: string, target: string): string | undefined => {
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const to = path ? relative(ROOT, resolve(dirname(file), decodeURIComponent(path))) : file;
  if (to.startsWith('..')) return 'leaves the repository';
  if (!existsSync(to)) return `no file ${to}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!to.endsWith('.md')) return statSync(to).isFile() && LINE_ANCHOR.test(anchor) ? undefined : `no anchor #${anchor} in ${to}`;
  const anchors = outlines.get(to)?.anchors ?? markdownOutline(readFileSync(to, 'utf8')).anchors;
  return anchors.includes(decodeURIComponent(anchor)) ? undefined : `no heading #${anchor} in ${to}`;
};

describe('the README and docs/', () => {
  it('has pages to check', () => {
    expect(PAGES.length).toBeGreaterThan(0);
  });

  it('links only to files that exist and to headings those files have', () => {
    const broken = FILES.flatMap((file) =>
      outlines
        .get(file)!
        .links.filter(({ target }) => !EXTERNAL.test(target))
        .flatMap(({ target, line }) => {
          const why = brokenLink(file, target);
          return why ? [`${file}:${line} → ${target}: ${why}`] : [];
        }),
    );

    expect(broken).toEqual([]);
  });

  it('links every page of docs/ from the README', () => {
    const linked = new Set(
      outlines
        .get('README.md')!
        .links.filter(({ target }) => !EXTERNAL.test(target))
        .map(({ target }) => relative(ROOT, resolve(target.split('#')[0]!))),
    );

    expect(PAGES.filter((page) => !linked.has(page))).toEqual([]);
  });

  it('starts every page of docs/ with a one-line title', () => {
    const untitled = PAGES.filter((page) => !/^# \S.*\n\n\S/.test(readFileSync(page, 'utf8')));

    expect(untitled).toEqual([]);
  });
});

describe('markdownOutline', () => {
  it('gives headings GitHub’s anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered', () => {
    const { anchors } = markdownOutline(
      [
        '# Fleetstream',
        '## The synthesized stack, run here: `npm start -- --cloud-assembly [dir]`',
        "#### The operator's command: `fleetstream limits`",
        '### Data exports (API key)',
        '## Data exports (API key)',
        '## Data exports (API key)',
        '## **Bold** and [a link](x.md) and `data_retention_days`',
      ].join('\n'),
    );

    expect(anchors).toEqual([
      'fleetstream',
      'the-synthesized-stack-run-here-npm-start------cloud-assembly-dir',
      'the-operators-command-fleetstream-limits',
      'data-exports-api-key',
      'data-exports-api-key-1',
      'data-exports-api-key-2',
      'bold-and-a-link-and-data_retention_days',
    ]);
    expect(headingSlug('Limits and usage (API key)')).toBe('limits-and-usage-api-key');
  });

  it('finds inline links, images and reference definitions, and nothing inside code', () => {
    const { anchors, links } = markdownOutline(
      [
        'See [the API](docs/api.md#errors) and ![a figure](docs/fig.png "title").',
        'Not this: `[x](code.md)`, nor ``[y](`z`.md)``.',
        '```sh',
        '# a comment, not a heading',
        'echo "[z](fenced.md)"',
        '```',
        '- item',
        '  ```json',
        '  {"[w](in-list-fence.md)": 1}',
        '  ```',
        '[ref]: <docs/limits.md>',
        'Two on a line: [a](#one) [b](two.md), and one wrapped: [Delivery',
        '  guarantees](webhooks.md#delivery-guarantees); a code span ``wrapped [c](',
        'd.md)`` is none.',
      ].join('\n'),
    );

    expect(anchors).toEqual([]);
    expect(links).toEqual([
      { target: 'docs/api.md#errors', line: 1 },
      { target: 'docs/fig.png', line: 1 },
      { target: 'docs/limits.md', line: 11 },
      { target: '#one', line: 12 },
      { target: 'two.md', line: 12 },
      { target: 'webhooks.md#delivery-guarantees', line: 13 },
    ]);
  });
});
