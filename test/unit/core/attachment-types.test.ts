// The attachment type rules (core/attachments/types.ts): a signature decides a binary type
// whatever was declared; text needs a text type or extension and UTF-8 without NUL bytes.
import { decideType, TextCheck } from '../../../core/attachments/types';

const typeOf = (head: Buffer | string, name: string, declared?: string) => {
  const d = decideType(Buffer.from(head), name, declared);
  return d.ok ? d.type.mimeType : 'refused';
};

describe('decideType', () => {
  it('takes binary types by their signature, whatever the name or declared type says', () => {
    expect(typeOf('%PDF-1.7\n%âãÏÓ', 'scan.bin', 'application/octet-stream')).toBe('application/pdf');
    expect(typeOf(Buffer.from('89504e470d0a1a0a0000000d', 'hex'), 'photo.txt', 'text/plain')).toBe('image/png');
    expect(typeOf(Buffer.from('ffd8ffe000104a464946', 'hex'), 'a.jpeg')).toBe('image/jpeg');
    expect(typeOf('GIF89a\x01\x00', 'a.gif')).toBe('image/gif');
    expect(typeOf('RIFF\x10\x00\x00\x00WEBPVP8 ', 'a.webp')).toBe('image/webp');
  });

  it('takes a ZIP only as a docx or xlsx that says so', () => {
    const zip = Buffer.from('504b0304140000000800', 'hex');
    expect(typeOf(zip, 'report.docx')).toBe('application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect(typeOf(zip, 'sheet.XLSX')).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    expect(typeOf(zip, 'archive.zip', 'application/zip')).toBe('refused');
    expect(typeOf(zip, 'report.txt', 'text/plain')).toBe('refused');
  });

  it('refuses executables and archives even when named or declared as text', () => {
    for (const head of [Buffer.from('7f454c46020101', 'hex'), Buffer.from('MZ\x90\x00'), Buffer.from('1f8b0800', 'hex'), Buffer.from('Rar!\x1a\x07')]) {
      expect(typeOf(head, 'notes.txt', 'text/plain')).toBe('refused');
    }
  });

  it('takes text by its declared type, else its extension; a file saying nothing of itself is plain text', () => {
    expect(typeOf('a,b\n1,2', 'data', 'text/csv; charset=utf-8')).toBe('text/csv');
    expect(typeOf('# Title', 'README.md', 'application/octet-stream')).toBe('text/markdown');
    expect(typeOf('{"a":1}', 'x.json')).toBe('application/json');
    expect(typeOf('hello', 'blob')).toBe('text/plain');
    expect(typeOf('hello', 'blob', 'application/octet-stream')).toBe('text/plain');
  });

  it('refuses other types, and a binary claim without its signature', () => {
    expect(typeOf('<svg onload=alert(1)>', 'x.svg', 'image/svg+xml')).toBe('refused');
    expect(typeOf('<html>', 'x.html', 'text/html')).toBe('refused');
    expect(typeOf('echo hi', 'run.sh')).toBe('refused');
    expect(typeOf('not a pdf', 'x.pdf')).toBe('refused');
    expect(typeOf('not a png', 'x.txt', 'image/png')).toBe('refused');
  });
});

describe('TextCheck', () => {
  it('accepts UTF-8 split anywhere across chunks, and refuses NUL bytes, bad bytes and a cut character', () => {
    const euro = Buffer.from('price: 5 €', 'utf8');
    const ok = new TextCheck();
    expect(ok.push(euro.subarray(0, euro.length - 1))).toBe(true);
    expect(ok.push(euro.subarray(euro.length - 1))).toBe(true);
    expect(ok.end()).toBe(true);
    expect(new TextCheck().push(Buffer.from([0x61, 0x00, 0x62]))).toBe(false);
    expect(new TextCheck().push(Buffer.from([0x63, 0xc3, 0x28]))).toBe(false);
    const cut = new TextCheck();
    expect(cut.push(euro.subarray(0, euro.length - 1))).toBe(true);
    expect(cut.end()).toBe(false);
  });
});
