// CSV cells as RFC 4180 writes them, with formula-looking text neutralised, read back by a
// strict reader: whatever a cell holds, the reader gets it back (plus the neutralising quote).
import { csvCell, csvRow } from '../../../lib/csv';
import { parseCsv } from '../../support/csv';

it('quotes cells holding a comma, a quote, CR or LF, doubling the quotes', () => {
  expect(csvCell('plain')).toBe('plain');
  expect(csvCell('a,b')).toBe('"a,b"');
  expect(csvCell('say "hi"')).toBe('"say ""hi"""');
  expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
  expect(csvCell('cr\rlf')).toBe('"cr\rlf"');
  expect(csvCell(null)).toBe('');
  expect(csvCell(undefined)).toBe('');
  expect(csvCell(42)).toBe('42');
  expect(csvCell(-3.5)).toBe('-3.5');
  expect(csvCell(Number.NaN)).toBe('');
});

it.each(['=1+1', '+1', '-2', '@SUM(A1:A2)', '\tx', '\rx', '=HYPERLINK("http://evil.example","x")'])('neutralises text starting like a formula: %j', (text) => {
  const cell = csvCell(text);
  const [[read]] = parseCsv(cell) as [[string]];
  expect(read).toBe(`'${text}`);
});

it('leaves numbers, negative ones included, as numbers', () => {
  expect(parseCsv(csvRow([-7, 0, 1.25]))).toEqual([['-7', '0', '1.25']]);
});

it('round-trips awkward text through a strict reader', () => {
  const awkward = ['', ' spaced ', 'a,b,c', '"', '""', 'x"y', 'multi\r\nline\nand\rmore', 'ünïcødé ✓', '{"json":"value, with comma"}', "'already quoted"];
  const text = csvRow(awkward) + csvRow(['second', 'row']);
  expect(parseCsv(text)).toEqual([awkward, ['second', 'row']]);
});

it('the reader refuses what RFC 4180 does not allow, so the round trip proves something', () => {
  expect(() => parseCsv('a"b\r\n')).toThrow();
  expect(() => parseCsv('"a"b\r\n')).toThrow();
  expect(() => parseCsv('"open\r\n')).toThrow();
  expect(() => parseCsv('a\nb')).toThrow();
});
