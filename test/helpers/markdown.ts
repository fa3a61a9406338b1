/** A link found in a Markdown file, outside code. */
export interface MarkdownLink {
  /** The destination as written: `docs/api.md#errors`, `#limits`, `https://…`. */
  target: string;
  /** 1-based line of the file. */
  line: number;
}

/** What the link check needs of one Markdown file. */
export interface MarkdownOutline {
  /** The anchors GitHub gives the file's headings, in order (a repeated slug with `-1`, `-2`, …). */
  anchors: string[];
  links: MarkdownLink[];
}

// A fence opens with three or more backticks or tildes (indented too: fences inside list items)
// and closes with a run of the same character at least as long (CommonMark §4.5).
const FENCE = /^\s*(`{3,}|~{3,})/;
const HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
// A code span: a run of backticks, then anything up to the same run within the paragraph
// (CommonMark §6.1), so that a stray backtick cannot hide the paragraphs after it.
const CODE_SPAN = /(`+)(?:(?!\n[ \t]*\n)[\s\S])*?\1/g;
// An inline link or image: [text](destination "title"), the destination optionally in <…>.
const INLINE_LINK = /!?\[[^\]]*\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)/g;
// A link reference definition: [label]: destination
const REFERENCE_DEFINITION = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/;
// What GitHub's slugger (github-slugger) removes from a heading's text: anything but letters,
// marks, digits, connector punctuation (`_`), spaces and hyphens.
const NOT_IN_SLUG = /[^\p{L}\p{M}\p{N}\p{Pc} -]/gu;

/**
 * The text GitHub renders for a heading's Markdown: code spans keep their content, links their
 * text, emphasis and HTML tags go.
 */
const renderedText = (markdown: string): string =>
  markdown
    .replace(CODE_SPAN, (span, ticks: string) => span.slice(ticks.length, -ticks.length).trim())
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/\*+/g, '');

/**
 * The anchor GitHub gives a heading: its rendered text in lower case, without punctuation, each
 * space a hyphen (so `Run here: npm start -- --x` is `run-here-npm-start------x`).
 *
 * @example headingSlug('Data exports (API key)') // 'data-exports-api-key'
 */
export const headingSlug = (markdown: string): string => renderedText(markdown).toLowerCase().replace(NOT_IN_SLUG, '').replace(/ /g, '-');

/**
 * The headings' anchors and the links of a Markdown file, leaving out everything inside fenced
 * code blocks and code spans (a `[x](y)` shown as code is no link). A link's text may run over
 * several lines, as wrapped prose has it.
 *
 * @example markdownOutline('# A\n\nSee [B](b.md#c).').links // [{ target: 'b.md#c', line: 3 }]
 */
export const markdownOutline = (text: string): MarkdownOutline => {
  const anchors: string[] = [];
  const seen = new Map<string, number>();
  const links: MarkdownLink[] = [];
  // The prose: every line of a fence (fences included) blanked, so that offsets keep their lines.
  const prose: string[] = [];
  let fence: string | undefined;

  text.split('\n').forEach((raw, index) => {
    const opening = FENCE.exec(raw)?.[1];
    if (fence !== undefined || opening) {
      if (fence === undefined) fence = opening;
      else if (opening && opening[0] === fence[0] && opening.length >= fence.length && raw.trim() === opening) fence = undefined;
      prose.push('');
      return;
    }
    prose.push(raw);

    const heading = HEADING.exec(raw);
    if (heading) {
      // github-slugger: a slug met before gets `-1`, `-2`, … counted per slug, until it is unused.
      const slug = headingSlug(heading[2]);
      let unique = slug;
      while (seen.has(unique)) {
        const count = (seen.get(slug) ?? 0) + 1;
        seen.set(slug, count);
        unique = `${slug}-${count}`;
      }
      seen.set(unique, 0);
      anchors.push(unique);
    }

    const definition = REFERENCE_DEFINITION.exec(raw);
    if (definition) links.push({ target: definition[1], line: index + 1 });
  });

  // Code spans may run over lines too: each is blanked but for its line breaks.
  const outside = prose.join('\n').replace(CODE_SPAN, (span) => span.replace(/[^\n]/g, ' '));
  for (const match of outside.matchAll(INLINE_LINK)) {
    // The line of the destination, where a wrapped link's text ends.
    const line = outside.slice(0, match.index + match[0].lastIndexOf('](')).split('\n').length;
    links.push({ target: match[1], line });
  }
  links.sort((a, b) => a.line - b.line);

  return { anchors, links };
};
