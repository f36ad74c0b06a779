// Reads a tool's HTTP response body as a stream and stops at a byte cap (TOOL_RESPONSE_MAX_BYTES),
// so a tool that answers gigabytes, or never stops answering, costs the worker at most the cap.

export interface CappedBody {
  /** The body, or its first `maxBytes` bytes when it was longer (UTF-8, cut at a character boundary). */
  text: string;
  /** True when the body was longer than the cap; the rest was never read. */
  overflow: boolean;
}

/** Reads at most `maxBytes` of the body, then cancels the stream, which closes the connection. */
export async function readBodyCapped(res: Response, maxBytes: number): Promise<CappedBody> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return { text: '', overflow: true };
  }
  if (!res.body) return { text: '', overflow: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let overflow = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.byteLength > maxBytes) {
      chunks.push(value.subarray(0, maxBytes - size));
      size = maxBytes;
      overflow = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  // A character cut in two at the cap decodes to U+FFFD; drop it rather than invent one.
  const text = new TextDecoder().decode(Buffer.concat(chunks, size));
  return { text: overflow ? text.replace(/\uFFFD$/, '') : text, overflow };
}
