// SHA-256 in plain TypeScript (no Node crypto): content hashes for IR `sourceHash` fields.

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** The message schedule, reused: hashing is synchronous, so no two calls share it at once. */
const W = new Int32Array(64);

/** UTF-8 encodes a string (lone surrogates become U+FFFD). */
export function utf8(text: string): Uint8Array {
  // Every UTF-16 code unit takes at most 3 bytes (a surrogate pair: 2 units, 4 bytes).
  const out = new Uint8Array(text.length * 3);
  return out.slice(0, encodeInto(text, out));
}

/** Writes `text` as UTF-8 into `out` (room for 3 bytes per code unit) and returns the byte count. */
function encodeInto(text: string, out: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      out[n++] = c;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      } else c = 0xfffd;
    } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 63);
    } else if (c < 0x10000) {
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    } else {
      out[n++] = 0xf0 | (c >> 18);
      out[n++] = 0x80 | ((c >> 12) & 63);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    }
  }
  return n;
}

/** Scratch for the message bytes, reused (and grown) across calls: hashing is synchronous. */
let scratch = new Uint8Array(4096);
const MAX_SCRATCH = 4 * 1024 * 1024;

/** SHA-256 of a string (UTF-8), as 64 lowercase hex characters. */
export function sha256Hex(text: string): string {
  // The message, 0x80, zeros, and the bit length (big-endian, 64 bits) fill whole 64-byte blocks.
  const room = text.length * 3 + 72;
  let padded = scratch;
  if (padded.length < room) {
    padded = new Uint8Array(room);
    if (room <= MAX_SCRATCH) scratch = padded; // a larger one is not kept
  }
  const length = encodeInto(text, padded);
  const end = ((length + 9 + 63) >> 6) << 6;
  padded.fill(0, length, end);
  padded[length] = 0x80;
  const bitLen = length * 8;
  const hi = Math.floor(bitLen / 0x100000000);
  const lo = bitLen >>> 0;
  padded[end - 8] = hi >>> 24;
  padded[end - 7] = (hi >>> 16) & 255;
  padded[end - 6] = (hi >>> 8) & 255;
  padded[end - 5] = hi & 255;
  padded[end - 4] = lo >>> 24;
  padded[end - 3] = (lo >>> 16) & 255;
  padded[end - 2] = (lo >>> 8) & 255;
  padded[end - 1] = lo & 255;
  const h = new Int32Array(INITIAL);
  compress(padded, end, h);
  let hex = '';
  for (let i = 0; i < 8; i++) hex += ((h[i] as number) >>> 0).toString(16).padStart(8, '0');
  return hex;
}

const INITIAL = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/** Runs the 64-byte blocks of `bytes[0, end)` through the compression function, updating `h`. */
function compress(bytes: Uint8Array, end: number, h: Int32Array): void {
  // Arithmetic stays in signed 32-bit integers (`| 0`), which the engine keeps unboxed.
  let h0 = h[0] as number, h1 = h[1] as number, h2 = h[2] as number, h3 = h[3] as number;
  let h4 = h[4] as number, h5 = h[5] as number, h6 = h[6] as number, h7 = h[7] as number;
  const w = W;
  for (let off = 0; off < end; off += 64) {
    for (let t = 0; t < 16; t++) {
      const j = off + t * 4;
      w[t] = ((bytes[j] as number) << 24) | ((bytes[j + 1] as number) << 16) | ((bytes[j + 2] as number) << 8) | (bytes[j + 3] as number);
    }
    for (let t = 16; t < 64; t++) {
      const a = w[t - 15] as number;
      const b = w[t - 2] as number;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[t] = ((w[t - 16] as number) + s0 + (w[t - 7] as number) + s1) | 0;
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, hh = h7;
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + (K[t] as number) + (w[t] as number)) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + hh) | 0;
  }
  h[0] = h0; h[1] = h1; h[2] = h2; h[3] = h3; h[4] = h4; h[5] = h5; h[6] = h6; h[7] = h7;
}

/** Hash of a set of files, independent of their order: sha256 over "path\0content\0" sorted by path. */
export function hashFiles(files: ReadonlyArray<{ path: string; content: string }>): string {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return sha256Hex(sorted.map((f) => `${f.path}\u0000${f.content}\u0000`).join(''));
}
