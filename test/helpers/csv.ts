/**
 * Reads CSV as RFC 4180 §2 defines it: records end in CRLF, a field in double quotes may hold
 * commas, CR, LF and doubled double quotes. Written apart from the export's own writer, so that a
 * test reading an export back checks its quoting rather than repeating it.
 * @throws Error at the first character the grammar does not allow.
 */
export const parseCsv = (text: string): string[][] => {
  const records: string[][] = [];
  let record: string[] = [];
  let at = 0;
  while (at < text.length) {
    let field = '';
    if (text[at] === '"') {
      at++;
      for (;;) {
        const quote = text.indexOf('"', at);
        if (quote < 0) throw new Error(`an unclosed quoted field at ${at}`);
        field += text.slice(at, quote);
        at = quote + 1;
        if (text[at] !== '"') break;
        field += '"';
        at++;
      }
    } else {
      const end = text.slice(at).search(/[,\r\n"]/);
      const stop = end < 0 ? text.length : at + end;
      if (text[stop] === '"') throw new Error(`a double quote inside an unquoted field at ${stop}`);
      field = text.slice(at, stop);
      at = stop;
    }
    record.push(field);
    if (text[at] === ',') at++;
    else if (text.startsWith('\r\n', at)) {
      records.push(record);
      record = [];
      at += 2;
    } else if (at < text.length) throw new Error(`${JSON.stringify(text[at])} after a field at ${at} (records end in CRLF)`);
  }
  if (record.length) throw new Error('the last record does not end in CRLF');
  return records;
};
