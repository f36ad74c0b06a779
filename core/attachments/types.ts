// Which files a session takes, and what type each is: decided from the content where the format
// has a signature (PDF, images, Office documents), and for text from the declared type or the
// file name's extension (plain text when neither says anything), the content then checked to be
// UTF-8 without NUL bytes as it streams.
// Pure: the upload (core/attachments/store.ts) feeds it the head of the file and then every chunk.

export interface AllowedType {
  mimeType: string;
  /** File name extensions (lower case, no dot) that name this type. */
  extensions: readonly string[];
  /** Text types reach the agent with their content; the others by name, type and size only. */
  text: boolean;
}

/** Every type an attachment may be, in the order the documentation lists them. */
export const ALLOWED_TYPES: readonly AllowedType[] = [
  { mimeType: 'text/plain', extensions: ['txt', 'text', 'log'], text: true },
  { mimeType: 'text/markdown', extensions: ['md', 'markdown'], text: true },
  { mimeType: 'text/csv', extensions: ['csv'], text: true },
  { mimeType: 'application/json', extensions: ['json'], text: true },
  { mimeType: 'application/pdf', extensions: ['pdf'], text: false },
  { mimeType: 'image/png', extensions: ['png'], text: false },
  { mimeType: 'image/jpeg', extensions: ['jpg', 'jpeg'], text: false },
  { mimeType: 'image/gif', extensions: ['gif'], text: false },
  { mimeType: 'image/webp', extensions: ['webp'], text: false },
  { mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', extensions: ['docx'], text: false },
  { mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', extensions: ['xlsx'], text: false },
];

/** The extensions of every allowed type (an agentic-app session's `allowedMimeTypes`). */
export const ALLOWED_EXTENSIONS: readonly string[] = ALLOWED_TYPES.flatMap((t) => t.extensions);

const byMime = new Map(ALLOWED_TYPES.map((t) => [t.mimeType, t]));
const byExtension = new Map(ALLOWED_TYPES.flatMap((t) => t.extensions.map((e) => [e, t] as const)));

/** Bytes of a file's head that decide its signature. */
export const SIGNATURE_BYTES = 16;

const startsWith = (head: Buffer, bytes: number[] | string, at = 0) => {
  const sig = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : Buffer.from(bytes);
  return head.length >= at + sig.length && head.subarray(at, at + sig.length).equals(sig);
};

function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return dot < 0 ? '' : filename.slice(dot + 1).toLowerCase();
}

/** `text/plain; charset=utf-8` → `text/plain`. */
function bareType(declared: string | undefined): string {
  return (declared ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * The type a file's head shows by its signature: an allowed binary type, `forbidden` for a known
 * format that is not taken (executables, archives, other Office files), or null (no signature:
 * possibly text).
 */
function signatureType(head: Buffer, filename: string, declared: string): AllowedType | 'forbidden' | null {
  if (startsWith(head, '%PDF-')) return byMime.get('application/pdf')!;
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return byMime.get('image/png')!;
  if (startsWith(head, [0xff, 0xd8, 0xff])) return byMime.get('image/jpeg')!;
  if (startsWith(head, 'GIF87a') || startsWith(head, 'GIF89a')) return byMime.get('image/gif')!;
  if (startsWith(head, 'RIFF') && startsWith(head, 'WEBP', 8)) return byMime.get('image/webp')!;
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) {
    // A ZIP container: an Office document only when its name or declared type says which one.
    const named = byExtension.get(extensionOf(filename)) ?? byMime.get(declared);
    return named && (named.extensions.includes('docx') || named.extensions.includes('xlsx')) ? named : 'forbidden';
  }
  const other: (number[] | string)[] = [
    [0x7f, 0x45, 0x4c, 0x46], // ELF
    'MZ', // Windows executable
    [0xca, 0xfe, 0xba, 0xbe], // Mach-O universal, Java class
    [0xcf, 0xfa, 0xed, 0xfe], // Mach-O
    [0x1f, 0x8b], // gzip
    'Rar!',
    [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], // 7z
    [0xd0, 0xcf, 0x11, 0xe0], // old Office (OLE)
  ];
  return other.some((sig) => startsWith(head, sig)) ? 'forbidden' : null;
}

export type TypeDecision = { ok: true; type: AllowedType } | { ok: false; reason: string };

/**
 * The type of a file from its head (the first SIGNATURE_BYTES bytes, or all of a shorter file),
 * its name and the type the client declared. A text type still has to pass `TextCheck` over
 * the whole content.
 */
export function decideType(head: Buffer, filename: string, declaredType: string | undefined): TypeDecision {
  const declared = bareType(declaredType);
  const signed = signatureType(head, filename, declared);
  if (signed === 'forbidden') return { ok: false, reason: 'this kind of file is not taken' };
  if (signed) return { ok: true, type: signed };
  // No signature: text, if the declared type or else the extension names a text type we take.
  const claimed = byMime.get(declared);
  if (claimed && !claimed.text) return { ok: false, reason: `the content is not ${claimed.mimeType}` };
  const extension = extensionOf(filename);
  // A file that says nothing of itself (no extension, no type or a generic one) is taken as plain text.
  const generic = extension === '' && (declared === '' || declared === 'application/octet-stream') ? byMime.get('text/plain') : undefined;
  const named = claimed ?? byExtension.get(extension) ?? generic;
  if (!named) return { ok: false, reason: `${declared || 'a file'} named .${extension || '(no extension)'} is not taken` };
  if (!named.text) return { ok: false, reason: `the content is not ${named.mimeType}` };
  return { ok: true, type: named };
}

/** Checks a text file's content chunk by chunk: UTF-8 (a sequence may span chunks) and no NUL byte. */
export class TextCheck {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });

  /** False once the content is not UTF-8 text. */
  push(chunk: Buffer): boolean {
    if (chunk.includes(0)) return false;
    try {
      this.decoder.decode(chunk, { stream: true });
      return true;
    } catch {
      return false;
    }
  }

  /** At the end: false when the content stopped in the middle of a character. */
  end(): boolean {
    try {
      this.decoder.decode();
      return true;
    } catch {
      return false;
    }
  }
}

/** What the documentation and error messages list: `text/plain (.txt, .text, .log), …`. */
export function describeAllowedTypes(): string {
  return ALLOWED_TYPES.map((t) => `${t.mimeType} (.${t.extensions.join(', .')})`).join(', ');
}
