import { markAt, QUERY_EXAMPLES, type QueryProblem } from '../lib/find';

/** Where a query is wrong: the API's message, and the query with the character it names marked. */
export const QueryError = ({ id, query, problem }: { id: string; query: string; problem: QueryProblem }) => {
  const [before, at, after] = problem.index === undefined ? [query, '', ''] : markAt(query, problem.index);
  return (
    <div id={id} class="error query-error" role="alert" data-testid="query-error">
      <strong>{problem.message}</strong>
      {problem.index !== undefined && (
        <pre aria-label={`The query, character ${problem.index + 1} marked`}>
          <code>
            {before}
            <mark data-testid="query-error-mark">{at}</mark>
            {after}
          </code>
        </pre>
      )}
    </div>
  );
};

/** The query language in short, with examples a click puts in the box. */
export const QueryHelp = ({ onExample }: { onExample: (query: string) => void }) => (
  <details class="hint" data-testid="query-help">
    <summary>How to write a query</summary>
    <p>
      Clauses joined by <code>AND</code>: <code>field op value</code>, <code>field IN (value, …)</code>, <code>EXISTS field</code> or{' '}
      <code>NOT EXISTS field</code>. Fields: <code>name</code>, <code>fleet_id</code>, <code>connected</code>, <code>firmware_version</code>,{' '}
      <code>last_seen_at</code>, <code>last_connected_at</code>, <code>created_at</code>, <code>tags.&lt;key&gt;</code>, <code>state.reported.&lt;key&gt;</code>
      , <code>state.desired.&lt;key&gt;</code>. Operators: <code>= != &lt; &lt;= &gt; &gt;=</code>. Values: <code>"quoted"</code>, numbers, <code>true</code>,{' '}
      <code>false</code>, <code>null</code>; dates compare as instants (<code>"2026-11-01T00:00:00Z"</code>).
    </p>
    <ul>
      {QUERY_EXAMPLES.map(([query, finds]) => (
        <li>
          <button type="button" class="link" onClick={() => onExample(query)}>
            <code>{query}</code>
          </button>{' '}
          {finds}
        </li>
      ))}
    </ul>
  </details>
);

/**
 * A query's text box: what was typed, and under it the API's 400 for the query last run (its
 * message and the character it names), plus the language's help.
 */
export const QueryField = ({
  name,
  label,
  value,
  onInput,
  problem,
  problemQuery,
  required = false,
}: {
  name: string;
  label: string;
  value: string;
  onInput: (text: string) => void;
  problem?: QueryProblem;
  /** The query the problem is about (the one sent, which the box may have changed since). */
  problemQuery: string;
  required?: boolean;
}) => {
  const errorId = `${name}-error`;
  return (
    <div class="field query-box">
      <label for={name}>{label}</label>
      <input
        id={name}
        type="search"
        name={name}
        spellcheck={false}
        autocomplete="off"
        required={required}
        placeholder='tags.site = "milan" AND connected = true'
        value={value}
        aria-invalid={Boolean(problem)}
        aria-describedby={problem ? errorId : undefined}
        onInput={(e) => onInput(e.currentTarget.value)}
      />
      {problem && <QueryError id={errorId} query={problemQuery} problem={problem} />}
      <QueryHelp onExample={onInput} />
    </div>
  );
};
