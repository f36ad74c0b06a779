/**
 * A fake of OpenAI's audio endpoints speaking the real wire protocol, so the official `openai` SDK
 * path (multipart upload, streamed binary response, error shapes) runs in tests:
 *   POST /v1/audio/transcriptions  multipart form (file, model, language, prompt, include[]...)
 *   POST /v1/audio/speech          JSON body; `response_format: pcm` answers 24 kHz 16-bit mono
 *                                  PCM, streamed in odd-sized chunks (a sample split across two)
 *
 *   const fake = await startFakeOpenAIAudio({ apiKey: 'sk-test' });
 *   fake.transcript = (req) => ({ text: 'book a meeting', logprobs: [{ token: 'book', logprob: -0.1 }] });
 *   fake.speech = (input) => tone(input.length * 60);         // samples at 24 kHz
 *   fake.failNext(503);                                       // next request only
 *   expect(fake.requests[0]?.fields.model).toBe('gpt-4o-mini-transcribe');
 *
 * A request without `Authorization: Bearer <apiKey>` (when set) gets a 401 in OpenAI's error shape;
 * another path gets a 404. Each request is recorded with its path, headers, form fields (or JSON
 * body) and the uploaded file's bytes.
 */
import busboy from 'busboy';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';

export interface FakeAudioRequest {
  path: string;
  headers: Record<string, string>;
  /** Multipart fields (a repeated field such as `include[]` joined with commas), or the JSON body's. */
  fields: Record<string, unknown>;
  /** The uploaded file (transcriptions). */
  file?: { name: string; type: string; bytes: Buffer };
  /** The client closed the connection before the response ended. */
  aborted: boolean;
  /** Resolves when the response finished or the connection closed. */
  settled: Promise<void>;
}

export interface FakeTranscript {
  text: string;
  logprobs?: { token: string; logprob: number; bytes?: number[] }[];
}

export interface FakeOpenAIAudioServer {
  /** Pass to the SDK as `baseURL` (ends in `/v1`). */
  readonly baseURL: string;
  readonly requests: FakeAudioRequest[];
  /** What a transcription answers. @default { text: 'hello from the fake transcriber' } */
  transcript: (request: FakeAudioRequest) => FakeTranscript;
  /** The speech for an input text, as 24 kHz samples. @default 40 ms of a 440 Hz tone per character */
  speech: (input: string) => Int16Array;
  /** Speech responses send this many chunks and then hold the rest until the client goes away (null: send all). */
  holdAfterChunks: number | null;
  /** Answer the next `times` requests with this HTTP status (OpenAI's error body). */
  failNext(status: number, times?: number): void;
  close(): Promise<void>;
}

/** `ms` of a sine tone at 24 kHz (amplitude 8000). */
export function tone(ms: number, hz = 440, rate = 24000): Int16Array {
  const out = new Int16Array(Math.round((ms * rate) / 1000));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}

export async function startFakeOpenAIAudio(options: { apiKey?: string } = {}): Promise<FakeOpenAIAudioServer> {
  const requests: FakeAudioRequest[] = [];
  const failures: number[] = [];
  let transcript: FakeOpenAIAudioServer['transcript'] = () => ({ text: 'hello from the fake transcriber' });
  let speech: FakeOpenAIAudioServer['speech'] = (input) => tone(input.length * 40);
  let holdAfterChunks: number | null = null;
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const error = (message: string, type: string) => ({ error: { message, type, param: null, code: null } });

  async function read(req: IncomingMessage): Promise<Pick<FakeAudioRequest, 'fields' | 'file'>> {
    const type = req.headers['content-type'] ?? '';
    if (type.startsWith('multipart/form-data')) {
      return new Promise((resolve, reject) => {
        const fields: Record<string, unknown> = {};
        let file: FakeAudioRequest['file'];
        const parser = busboy({ headers: req.headers });
        parser.on('field', (name, value) => {
          fields[name] = fields[name] === undefined ? value : `${String(fields[name])},${value}`;
        });
        parser.on('file', (_name, stream, info) => {
          const parts: Buffer[] = [];
          stream.on('data', (c: Buffer) => parts.push(c));
          stream.on('end', () => (file = { name: info.filename, type: info.mimeType, bytes: Buffer.concat(parts) }));
        });
        parser.on('close', () => resolve({ fields, ...(file ? { file } : {}) }));
        parser.on('error', reject);
        req.pipe(parser);
      });
    }
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const raw = Buffer.concat(parts).toString('utf8');
    return { fields: raw ? (JSON.parse(raw) as Record<string, unknown>) : {} };
  }

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    read(req).then(
      ({ fields, file }) => {
        const known = req.method === 'POST' && (path === '/v1/audio/transcriptions' || path === '/v1/audio/speech');
        if (!known) return send(res, 404, error('Not found', 'invalid_request_error'));
        let settle!: () => void;
        const request: FakeAudioRequest = { path, headers, fields, ...(file ? { file } : {}), aborted: false, settled: new Promise<void>((done) => (settle = done)) };
        res.on('close', () => {
          request.aborted = !res.writableFinished;
          settle();
        });
        requests.push(request);
        if (options.apiKey && headers.authorization !== `Bearer ${options.apiKey}`) return send(res, 401, error('Incorrect API key provided', 'invalid_request_error'));
        const failure = failures.shift();
        if (failure !== undefined) return send(res, failure, error('The server had an error while processing your request.', 'server_error'));
        if (path === '/v1/audio/transcriptions') {
          if (!file) return send(res, 400, error("'file' is a required property", 'invalid_request_error'));
          const answer = transcript(request);
          const wantsLogprobs = String(fields['include[]'] ?? '').split(',').includes('logprobs');
          return send(res, 200, { text: answer.text, ...(wantsLogprobs && answer.logprobs ? { logprobs: answer.logprobs } : {}), usage: { type: 'duration', seconds: 1 } });
        }
        if (fields.response_format !== 'pcm') return send(res, 400, error('this fake answers response_format pcm only', 'invalid_request_error'));
        const samples = speech(String(fields.input ?? ''));
        const bytes = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
        res.writeHead(200, { 'content-type': 'audio/pcm', 'transfer-encoding': 'chunked' });
        // Odd-sized chunks: the client must join samples split across two.
        const step = 4801;
        const hold = holdAfterChunks;
        let at = 0;
        let sent = 0;
        const next = (): void => {
          if (res.destroyed || (hold !== null && sent >= hold)) return;
          sent++;
          if (at >= bytes.length) {
            res.end();
            return;
          }
          res.write(bytes.subarray(at, at + step));
          at += step;
          setImmediate(next);
        };
        next();
      },
      () => send(res, 400, error('Could not parse the request body', 'invalid_request_error')),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseURL: `${origin}/v1`,
    requests,
    get transcript() {
      return transcript;
    },
    set transcript(fn) {
      transcript = fn;
    },
    get speech() {
      return speech;
    },
    set speech(fn) {
      speech = fn;
    },
    get holdAfterChunks() {
      return holdAfterChunks;
    },
    set holdAfterChunks(n) {
      holdAfterChunks = n;
    },
    failNext(status, times = 1) {
      for (let i = 0; i < times; i++) failures.push(status);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
