// A strict RFC 4180 reader for tests: fields separated by commas, records by CRLF, quoted fields
// with doubled quotes. Anything else (a bare quote inside a field, a lone LF between records,
// text after a closing quote) throws, so a test fails on CSV a standard reader would misread.
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let i = 0;
  const n = text.length;
  if (n === 0) return records;
  for (;;) {
    let field = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= n) throw new Error('unterminated quoted field');
        const c = text[i]!;
        if (c === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += c;
        i++;
      }
      if (i < n && text[i] !== ',' && !(text[i] === '\r' && text[i + 1] === '\n')) throw new Error(`text after a closing quote at ${i}`);
    } else {
      while (i < n && text[i] !== ',' && text[i] !== '\r') {
        if (text[i] === '"') throw new Error(`bare quote in an unquoted field at ${i}`);
        if (text[i] === '\n') throw new Error(`bare LF at ${i}`);
        field += text[i];
        i++;
      }
      if (text[i] === '\r' && text[i + 1] !== '\n') throw new Error(`bare CR at ${i}`);
    }
    record.push(field);
    if (i >= n) {
      records.push(record);
      return records;
    }
    if (text[i] === ',') {
      i++;
      continue;
    }
    // CRLF: end of record.
    i += 2;
    records.push(record);
    record = [];
    if (i >= n) return records;
  }
}
