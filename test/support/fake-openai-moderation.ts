/**
 * A fake of OpenAI's moderation endpoint speaking the real wire protocol (`POST /v1/moderations`,
 * OpenAI's response and error shapes), so the official `openai` SDK path runs in tests.
 *
 *   const fake = await startFakeModeration({ apiKey: 'sk-test' });
 *   fake.scores = (text) => (text.includes('hurt') ? { violence: 0.93 } : {});   // per input text
 *   fake.failNext(503);                                                        // next request only
 *   const provider = new OpenAIModerationProvider({ apiKey: 'sk-test', baseURL: fake.baseURL });
 *   expect(fake.requests[0]?.body).toEqual({ model: 'omni-moderation-latest', input: ['…'] });
 *
 * Every category of the answer gets a score (0 unless `scores` gives one) and is flagged at 0.5
 * or more; `flagged` is true when any category is. A request without `Authorization: Bearer
 * <apiKey>` (when set) gets a 401; `failNext(status)` answers the next requests with that status.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { MODERATION_CATEGORIES } from '../../abl/moderation';

export interface FakeModerationRequest {
  path: string;
  headers: Record<string, string>;
  body: { model?: string; input?: string | string[] };
}

export interface FakeModerationServer {
  /** Pass to the SDK as `baseURL` (ends in `/v1`). */
  readonly baseURL: string;
  readonly requests: FakeModerationRequest[];
  /** Scores per category for one input text. */
  scores: (text: string) => Record<string, number>;
  /** Answer the next `times` requests with this HTTP status (OpenAI's error body). */
  failNext(status: number, times?: number): void;
  close(): Promise<void>;
}

export async function startFakeModeration(options: { apiKey?: string } = {}): Promise<FakeModerationServer> {
  const requests: FakeModerationRequest[] = [];
  const failures: number[] = [];
  let scores: (text: string) => Record<string, number> = () => ({});
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const error = (status: number, message: string, type: string) => ({ error: { message, type, param: null, code: null } });
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      let body: FakeModerationRequest['body'] = {};
      try {
        body = JSON.parse(raw || '{}') as FakeModerationRequest['body'];
      } catch {
        return send(res, 400, error(400, 'Invalid JSON', 'invalid_request_error'));
      }
      if (req.method !== 'POST' || (path !== '/v1/moderations' && path !== '/moderations')) return send(res, 404, error(404, 'Not found', 'invalid_request_error'));
      requests.push({ path, headers, body });
      if (options.apiKey && headers.authorization !== `Bearer ${options.apiKey}`) return send(res, 401, error(401, 'Incorrect API key provided', 'invalid_request_error'));
      const failure = failures.shift();
      if (failure !== undefined) return send(res, failure, error(failure, 'The server had an error while processing your request.', 'server_error'));
      const inputs = Array.isArray(body.input) ? body.input : [body.input ?? ''];
      send(res, 200, {
        id: `modr-${requests.length}`,
        model: body.model ?? 'omni-moderation-latest',
        results: inputs.map((text) => {
          const given = scores(String(text));
          const category_scores = Object.fromEntries(MODERATION_CATEGORIES.map((c) => [c, given[c] ?? 0]));
          const categories = Object.fromEntries(MODERATION_CATEGORIES.map((c) => [c, (given[c] ?? 0) >= 0.5]));
          return { flagged: Object.values(categories).some(Boolean), categories, category_scores, category_applied_input_types: {} };
        }),
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseURL: `${origin}/v1`,
    requests,
    get scores() {
      return scores;
    },
    set scores(fn) {
      scores = fn;
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
