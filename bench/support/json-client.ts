// A light load generator's HTTP client: JSON over node:http with kept-alive connections. The
// benches measure the API, and on a 2-core machine the client's own CPU competes with it;
// `fetch` (undici, web streams) costs about 2 ms of CPU per request here, node:http a fraction.
import http from 'node:http';

export interface JsonResponse {
  status: number;
  body: unknown;
}

export function jsonClient(baseUrl: string, maxSockets = 64) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const send = (method: string, path: string, headers: Record<string, string>, payload?: unknown) =>
    new Promise<JsonResponse>((resolve, reject) => {
      const body = payload === undefined ? undefined : Buffer.from(JSON.stringify(payload));
      const req = http.request(
        `${baseUrl}${path}`,
        {
          method,
          agent,
          headers: { ...headers, ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            try {
              resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
            } catch (err) {
              reject(err instanceof Error ? err : new Error(String(err)));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return {
    get: (path: string, headers: Record<string, string> = {}) => send('GET', path, headers),
    post: (path: string, payload: unknown, headers: Record<string, string> = {}) => send('POST', path, headers, payload),
    close: () => agent.destroy(),
  };
}
