// CSV as RFC 4180 writes it (comma, CRLF, quotes doubled), with text cells that a spreadsheet
// would run as a formula neutralised (docs/sessions-api.md, "CSV export").

/** Characters that make a spreadsheet read a cell as a formula when they open it (OWASP CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One cell. null/undefined: empty. Numbers are written as they are. Text starting with `=`, `+`,
 * `-`, `@`, a tab or a carriage return gets a leading `'`, so a spreadsheet shows it as text
 * instead of evaluating it. A cell holding a comma, a quote, CR or LF is quoted, its quotes doubled.
 */
export function csvCell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  let text = String(value);
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One record, CRLF-terminated. */
export function csvRow(cells: readonly (string | number | boolean | null | undefined)[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
