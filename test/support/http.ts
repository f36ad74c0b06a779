// A tiny real-HTTP client for tests: JSON in, status + parsed body + headers out.
export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface RequestOptions {
  key?: string;
  token?: string;
  headers?: Record<string, string>;
  /** Raw body; when given, `json` is ignored and no content type is added. */
  raw?: string | Buffer;
  json?: unknown;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function request<T = any>(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | Buffer | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(baseUrl + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON; keep the text.
  }
  return { status: res.status, body: parsed as T, headers: res.headers, text };
}

export const client = (baseUrl: string) => ({
  get: <T = any>(path: string, o?: RequestOptions) => request<T>(baseUrl, 'GET', path, o), // eslint-disable-line @typescript-eslint/no-explicit-any
  post: <T = any>(path: string, o?: RequestOptions) => request<T>(baseUrl, 'POST', path, o), // eslint-disable-line @typescript-eslint/no-explicit-any
  put: <T = any>(path: string, o?: RequestOptions) => request<T>(baseUrl, 'PUT', path, o), // eslint-disable-line @typescript-eslint/no-explicit-any
  patch: <T = any>(path: string, o?: RequestOptions) => request<T>(baseUrl, 'PATCH', path, o), // eslint-disable-line @typescript-eslint/no-explicit-any
  delete: <T = any>(path: string, o?: RequestOptions) => request<T>(baseUrl, 'DELETE', path, o), // eslint-disable-line @typescript-eslint/no-explicit-any
});
