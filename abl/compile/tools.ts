// TOOLS reducer (ABL.md §5): signatures, bindings (http/async/sandbox/mcp/lambda/contract),
// library defaults and imports. Used for both tool libraries and an agent's TOOLS section.

import type { ItemNode, Loc, PairNode, ValueNode } from '../ast';
import type { BindingIR, ConfirmationIR, Json, ParamIR, ToolIR } from '../ir';
import { compileSet } from './actions';
import { describe, pairValue, toJson, type CompileContext, type Fields } from './context';
import { compileType } from './types';
import { splitTopLevel } from '../lexer';
import { readToolAccess } from '../tool-access';

export interface ToolImport {
  file: string;
  /** null = import everything. */
  names: string[] | null;
  loc: Loc;
}

export interface CompiledTools {
  defaults: Record<string, Json>;
  tools: ToolIR[];
  /** Tools whose timeout was not given (filled from EXECUTION.tool_timeout by the agent). */
  defaultTimeout: Set<string>;
  imports: ToolImport[];
}

const DEFAULT_KEYS = ['base_url', 'auth', 'timeout', 'retry', 'retry_delay', 'rate_limit', 'headers', 'auth_config'];

const TOOL_KEYS = [
  'description', 'type', 'timeout', 'hints', 'confirmation', 'confirm', 'immutable', 'store_result', 'on_result', 'on_error',
  'parameters', 'endpoint', 'method', 'auth', 'auth_config', 'headers', 'query_params', 'body_template', 'body_type', 'retry',
  'retry_delay', 'rate_limit', 'circuit_breaker', 'async', 'callback_url_field', 'timeout_seconds', 'runtime', 'code',
  'entrypoint', 'memory_mb', 'server', 'tool', 'server_tool', 'function', 'returns', 'pii_access', 'context_access',
];

function defaultValue(text: string): Json {
  const t = text.trim();
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  if (/^(true|false)$/i.test(t)) return t.toLowerCase() === 'true';
  if (/^null$/i.test(t)) return null;
  const q = /^(["'])([\s\S]*)\1$/.exec(t);
  return q ? (q[2] as string) : t;
}

/** Signature := name ("(" params ")")? ("->" Type)? */
function parseSignature(ctx: CompileContext, head: ItemNode['head']): { name: string; params: ParamIR[]; returns: ToolIR['returns'] } | null {
  const text = String(head.value ?? '').trim();
  const m = /^([A-Za-z_]\w*)\s*(?:\(([\s\S]*)\))?\s*(?:->\s*([\s\S]+))?$/.exec(text);
  if (!m) {
    ctx.report('E400', head.loc, { src: text, detail: 'expected name(param: type) -> ReturnType' });
    return null;
  }
  const name = m[1] as string;
  const params: ParamIR[] = [];
  const seen = new Set<string>();
  for (const part of splitTopLevel(m[2] ?? '', { angleBrackets: true })) {
    const pm = /^\s*([A-Za-z_]\w*)(\?)?\s*(?::\s*([^=]+?))?\s*(?:=\s*([\s\S]+))?\s*$/.exec(part);
    if (!pm) {
      ctx.report('E400', head.loc, { src: text, detail: `cannot read parameter "${part.trim()}"` });
      continue;
    }
    const pname = pm[1] as string;
    if (seen.has(pname)) ctx.report('E412', head.loc, { name: pname, tool: name });
    seen.add(pname);
    const hasDefault = pm[4] !== undefined;
    params.push({
      name: pname,
      type: pm[3] ? compileType(ctx, pm[3], head.loc) : { kind: 'primitive', name: 'any' },
      required: !hasDefault && pm[2] !== '?',
      default: hasDefault ? defaultValue(pm[4] as string) : undefined,
      description: null,
    });
  }
  const returns = m[3] ? compileType(ctx, m[3], head.loc) : ({ kind: 'primitive', name: 'object' } as const);
  return { name, params, returns };
}

function stringMap(ctx: CompileContext, node: ValueNode | null, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!node) return out;
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what, expected: 'key: value lines', found: 'a value' });
    return out;
  }
  for (const e of ctx.pairs(node, what, 'key: value lines')) out[e.key] = ctx.str(ctx.value(e), `${what}.${e.key}`) ?? '';
  return out;
}

function compileTool(ctx: CompileContext, item: ItemNode, defaults: Record<string, Json>, defaultTimeout: Set<string>): ToolIR | null {
  const sig = parseSignature(ctx, item.head);
  if (!sig) return null;
  const f: Fields = ctx.fields(item.children);
  const get = (k: string): ValueNode | null => {
    const p = f.map.get(k);
    return p ? ctx.value(p) : null;
  };
  const where = `tool ${sig.name}`;
  const extra = ctx.extras(f, TOOL_KEYS, where);
  const typeNode = get('type');
  const typeText = (ctx.str(typeNode, 'type') ?? '').toLowerCase();
  const timeoutNode = get('timeout');
  let timeout = ctx.duration(timeoutNode, `${where} timeout`, 'ms');
  if (timeout === null && typeof defaults.timeout === 'number') timeout = defaults.timeout;
  const need = (key: string, kind: string): string | null => {
    const v = ctx.str(get(key), `${where} ${key}`);
    if (!v) ctx.report('E403', f.map.get(key)?.loc ?? item.loc, { type: kind, name: sig.name, key });
    return v;
  };
  let binding: BindingIR;
  switch (typeText) {
    case '':
      binding = { type: 'contract' };
      break;
    case 'http':
    case 'async_webhook':
    case 'webhook': {
      const endpoint = need('endpoint', typeText) ?? '';
      const base = typeof defaults.base_url === 'string' ? defaults.base_url.replace(/\/+$/, '') : '';
      const isAsync = typeText === 'async_webhook' || ctx.bool(get('async'), `${where} async`) === true;
      const cb = f.map.get('circuit_breaker');
      const cbFields = ctx.fields(cb?.children ?? (cb?.value?.kind === 'Map' ? cb.value : null));
      binding = {
        type: 'http',
        endpoint: base && endpoint && !/^[a-z]+:\/\//i.test(endpoint) ? `${base}/${endpoint.replace(/^\/+/, '')}` : endpoint,
        method: ctx.oneOf(get('method'), ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const, `${where} method`) ?? 'GET',
        auth: ctx.oneOf(get('auth'), ['none', 'bearer', 'api_key', 'oauth2_client', 'oauth2_user', 'saml', 'custom'] as const, `${where} auth`)
          ?? (typeof defaults.auth === 'string' ? (defaults.auth as 'none') : 'none'),
        auth_config: (toJson(get('auth_config')) as Record<string, Json> | null) ?? ((defaults.auth_config as Record<string, Json> | undefined) ?? {}),
        headers: { ...((defaults.headers as Record<string, string> | undefined) ?? {}), ...stringMap(ctx, get('headers'), 'headers') },
        query_params: stringMap(ctx, get('query_params'), 'query_params'),
        body_template: ctx.str(get('body_template'), 'body_template'),
        body_type: ctx.oneOf(get('body_type'), ['json', 'form', 'xml', 'text'] as const, `${where} body_type`) ?? 'json',
        retry: ctx.num(get('retry'), 'retry') ?? (typeof defaults.retry === 'number' ? defaults.retry : 0),
        retry_delay_ms: ctx.duration(get('retry_delay'), 'retry_delay', 'ms') ?? (typeof defaults.retry_delay === 'number' ? defaults.retry_delay : 1000),
        rate_limit: ctx.num(get('rate_limit'), 'rate_limit') ?? (typeof defaults.rate_limit === 'number' ? defaults.rate_limit : null),
        circuit_breaker: cb
          ? {
              threshold: ctx.num(cbFields.map.get('threshold')?.value, 'circuit_breaker.threshold') ?? 5,
              reset_ms: ctx.duration(cbFields.map.get('reset_ms')?.value, 'circuit_breaker.reset_ms', 'ms') ?? 30000,
            }
          : null,
        async: isAsync
          ? {
              callbackUrlField: ctx.str(get('callback_url_field'), 'callback_url_field') ?? 'callbackUrl',
              timeoutMs:
                typeText === 'async_webhook'
                  ? (ctx.duration(get('timeout_seconds'), 'timeout_seconds', 's') ?? timeout ?? 3_600_000)
                  : (timeout ?? 3_600_000),
            }
          : null,
      };
      break;
    }
    case 'sandbox': {
      const runtime = ctx.oneOf(get('runtime'), ['javascript', 'python'] as const, `${where} runtime`);
      const code = ctx.str(get('code'), 'code');
      const entrypoint = ctx.str(get('entrypoint'), 'entrypoint');
      if (!runtime && !f.map.has('runtime')) ctx.report('E404', item.loc, { name: sig.name, detail: 'runtime is missing' });
      if (!code && !entrypoint) ctx.report('E404', item.loc, { name: sig.name, detail: 'neither code nor entrypoint is given' });
      binding = { type: 'sandbox', runtime: runtime ?? 'javascript', code, entrypoint, timeout_ms: timeout ?? 5000, memory_mb: ctx.num(get('memory_mb'), 'memory_mb') ?? 128 };
      if (timeout === null) timeout = 5000;
      break;
    }
    case 'mcp':
      // `server_tool` is the published reference's spelling of `tool`.
      binding = { type: 'mcp', server: need('server', 'mcp') ?? '', tool: ctx.str(get('tool'), 'tool') ?? ctx.str(get('server_tool'), 'server_tool') ?? sig.name };
      break;
    case 'lambda':
      binding = { type: 'lambda', function: need('function', 'lambda') ?? '', runtime: ctx.str(get('runtime'), 'runtime') };
      break;
    default:
      ctx.report('E402', typeNode?.loc ?? item.loc, { name: sig.name, type: typeText });
      binding = { type: 'contract' };
  }
  if (timeout === null) defaultTimeout.add(sig.name);
  // A contract-only tool has no executor (only a test mock answers it); say so now, not at the first call.
  const unknownType = typeText !== '' && binding.type === 'contract'; // already E402
  if (binding.type === 'contract' && !unknownType) {
    ctx.report('W415', typeNode?.loc ?? item.loc, { name: sig.name, what: 'contract-only (no type)' });
  }
  // A call must never go out without the credential its author asked for.
  if (binding.type === 'http' && binding.auth === 'oauth2_client') {
    const missing = ['token_url', 'client_id', 'client_secret'].find((k) => typeof binding.auth_config[k] !== 'string' || (binding.auth_config[k] as string).trim() === '');
    if (missing) ctx.report('E418', f.map.get('auth_config')?.loc ?? f.map.get('auth')?.loc ?? item.loc, { name: sig.name, key: missing });
  }
  // A scheme the executor does not apply must not look as if it did (auth: custom sends only its custom_headers).
  if (binding.type === 'http' && (binding.auth === 'saml' || binding.auth === 'custom')) {
    const custom = binding.auth_config.custom_headers;
    const hasCustom = custom !== null && typeof custom === 'object' && !Array.isArray(custom) && Object.keys(custom).length > 0;
    if (binding.auth === 'saml' || !hasCustom) {
      ctx.report('W419', f.map.get('auth')?.loc ?? item.loc, {
        name: sig.name,
        kind: binding.auth,
        what: binding.auth === 'saml' ? 'with no SAML assertion, only the headers the tool writes itself' : 'with no credential: auth_config has no custom_headers',
      });
    }
  }
  // Async bindings suspend the session, but nothing sends their request or delivers a callback yet.

  // parameters: extra metadata per param
  const paramsNode = get('parameters');
  if (paramsNode && paramsNode.kind !== 'Map') ctx.report('E210', paramsNode.loc, { what: `${where} parameters`, expected: 'name: type lines or name: blocks', found: describe(paramsNode) });
  if (paramsNode?.kind === 'Map') {
    for (const e of ctx.pairs(paramsNode, `${where} parameters`, 'name: type lines or name: blocks')) {
      let p = sig.params.find((x) => x.name === e.key);
      if (!p) {
        p = { name: e.key, type: { kind: 'primitive', name: 'any' }, required: true, default: undefined, description: null };
        sig.params.push(p);
      }
      const pf = ctx.fields(e.children);
      const t = pf.map.get('type');
      const tText = t ? ctx.str(pairValue(t), 'parameter type') : e.value && e.value.kind === 'Scalar' ? String(e.value.value) : null;
      if (tText) p.type = compileType(ctx, tText, (t ?? e).loc);
      const d = pf.map.get('description');
      if (d) p.description = ctx.str(pairValue(d), 'parameter description');
      const r = pf.map.get('required');
      if (r) p.required = ctx.bool(pairValue(r), 'parameter required') ?? p.required;
    }
  }

  const hintsNode = get('hints');
  if (hintsNode && hintsNode.kind !== 'Map') ctx.report('E210', hintsNode.loc, { what: `${where} hints`, expected: 'side_effects:/cacheable:/latency:/requires_auth: lines', found: describe(hintsNode) });
  const hintsF = ctx.fields(hintsNode?.kind === 'Map' ? hintsNode : null);
  ctx.extras(hintsF, ['side_effects', 'cacheable', 'latency', 'requires_auth'], `${where} hints`);
  const hint = (k: string): boolean => ctx.bool(hintsF.map.get(k)?.value, `hints.${k}`) ?? false;
  let confirmation: ConfirmationIR | null = null;
  const conf = get('confirmation');
  if (conf) {
    if (conf.kind === 'Map') {
      const cf = ctx.fields(conf);
      confirmation = {
        require: ctx.oneOf(cf.map.get('require')?.value, ['always', 'never', 'when_side_effects'] as const, 'confirmation.require') ?? 'always',
        immutable_params: ctx.strList(pairValue(cf.map.get('immutable_params') ?? ({ value: null } as unknown as PairNode)), 'immutable_params'),
      };
    } else {
      confirmation = { require: ctx.oneOf(conf, ['always', 'never', 'when_side_effects'] as const, 'confirmation') ?? 'always', immutable_params: [] };
    }
  } else if (f.map.has('confirm') || f.map.has('immutable')) {
    const c = get('confirm');
    const b = c && c.kind === 'Scalar' && typeof c.value === 'boolean' ? (c.value ? 'always' : 'never') : ctx.oneOf(c, ['always', 'never', 'when_side_effects'] as const, 'confirm');
    confirmation = { require: b ?? 'always', immutable_params: ctx.strList(get('immutable'), 'immutable') };
  }
  const setOf = (k: string): ToolIR['on_result'] => {
    const n = get(k);
    if (!n) return [];
    if (n.kind === 'Map') {
      const sf = ctx.fields(n);
      const s = sf.map.get('set');
      if (s) return compileSet(ctx, pairValue(s));
    }
    return compileSet(ctx, n);
  };
  const access = compileAccess(ctx, f, sig.name);
  reportNotApplied(ctx, f, item, sig.name, defaults, binding, confirmation, hint('side_effects'), hint('cacheable') ? (hintsF.map.get('cacheable')?.loc ?? item.loc) : null);
  return {
    name: sig.name,
    description: ctx.str(get('description'), 'description'),
    params: sig.params,
    returns: sig.returns,
    binding,
    timeout_ms: timeout ?? 30000,
    hints: {
      cacheable: hint('cacheable'),
      latency: ctx.str(hintsF.map.get('latency')?.value, 'hints.latency'),
      side_effects: hint('side_effects'),
      requires_auth: hint('requires_auth'),
    },
    confirmation,
    store_result: ctx.bool(get('store_result'), 'store_result') ?? true,
    on_result: setOf('on_result'),
    on_error: setOf('on_error'),
    imported_from: null,
    ...(access ? { access } : {}),
    extra,
    loc: ctx.loc(item.loc),
  };
}

/** A scalar's text as written, for messages. */
const written = (node: ValueNode | null | undefined): string => (node?.kind === 'Scalar' ? node.raw : '…');

/**
 * Settings a tool may write that the runtime does not apply yet (docs/not-supported.md): each gets
 * its warning where it is written, or at the tool when it comes from its library's defaults.
 */
function reportNotApplied(
  ctx: CompileContext, f: Fields, item: ItemNode, name: string, defaults: Record<string, Json>, binding: BindingIR,
  confirmation: ConfirmationIR | null, sideEffects: boolean, cacheableAt: Loc | null,
): void {
  const own = (k: string): PairNode | undefined => f.map.get(k);
  const inherited = (k: string): boolean => !own(k) && defaults[k] !== undefined && defaults[k] !== null;
  for (const [key, code] of [['rate_limit', 'W421'], ['retry_delay', 'W422']] as const) {
    const p = own(key);
    if (p) ctx.report(code, p.loc, { name, value: written(ctx.value(p)) });
    else if (inherited(key)) ctx.report(code, item.loc, { name, value: `${String(defaults[key])}${key === 'retry_delay' ? 'ms' : ''} (its file's default)` });
  }
  const cb = own('circuit_breaker');
  if (cb) ctx.report('W423', cb.loc, { name });
  if (confirmation && (confirmation.require === 'always' || (confirmation.require === 'when_side_effects' && sideEffects) || confirmation.immutable_params.length > 0)) {
    const at = own('confirmation') ?? own('confirm') ?? own('immutable');
    const what = confirmation.immutable_params.length > 0 && confirmation.require === 'never'
      ? `immutable_params ${confirmation.immutable_params.join(', ')}`
      : `require: ${confirmation.require}`;
    ctx.report('W420', at?.loc ?? item.loc, { name, what });
  }
  if (cacheableAt) ctx.report('W424', cacheableAt, { name });
  if (binding.type === 'http') {
    // form encodes the arguments itself; xml and text have no encoding of arguments, only a template.
    const typeAt = own('body_type');
    if (typeAt && (binding.body_type === 'xml' || binding.body_type === 'text') && !binding.body_template) {
      ctx.report('W425', typeAt.loc, { name, type: binding.body_type, what: 'without a body_template its arguments go as JSON (in the query string for GET and DELETE)' });
    }
  }
}

/** `pii_access` / `context_access`: what the tool receives (undefined when neither is written). */
function compileAccess(ctx: CompileContext, f: Fields, name: string): ToolIR['access'] {
  const raw = (k: string): Json | undefined => {
    const p = f.map.get(k);
    return p ? toJson(ctx.value(p)) : undefined;
  };
  const { access, problems } = readToolAccess(raw('pii_access'), raw('context_access'));
  for (const p of problems) ctx.report('E417', (f.map.get(p.key) as PairNode).loc, { name, key: p.key, detail: p.detail });
  return access;
}

function parseImport(ctx: CompileContext, pair: PairNode): ToolImport | null {
  const key = pair.key.trim();
  const from = /^FROM\s+(["'])(.+?)\1\s+USE$/i.exec(key);
  if (from) {
    return { file: from[2] as string, names: ctx.strList(pair.value, 'USE'), loc: pair.loc };
  }
  if (/^file$/i.test(key)) {
    const raw = pair.value?.kind === 'Scalar' ? pair.value.raw : '';
    const m = /^(["'])(.+?)\1\s*(?:\[(.*)\])?\s*$/.exec(raw);
    if (!m) {
      ctx.report('E414', pair.loc, { src: `${key}: ${raw}` });
      return null;
    }
    const names = m[3] === undefined ? null : (m[3] as string).split(',').map((s) => s.trim().replace(/^["']|["']$/g, '')).filter(Boolean);
    return { file: m[2] as string, names, loc: pair.loc };
  }
  return null;
}

/** Compiles a TOOLS block: defaults (libraries), imports (agents) and tool declarations. */
export function compileTools(ctx: CompileContext, node: ValueNode | null, opts: { library: boolean }): CompiledTools {
  const out: CompiledTools = { defaults: {}, tools: [], defaultTimeout: new Set(), imports: [] };
  if (!node) return out;
  const entries = node.kind === 'Map' ? node.entries : node.kind === 'List' ? node.items : [node];
  // Defaults first, so they apply to tools declared above them too.
  for (const e of entries) {
    if (e.kind !== 'Pair') continue;
    const k = e.key.toLowerCase();
    if (DEFAULT_KEYS.includes(k)) {
      const v = pairValue(e);
      out.defaults[k] = k === 'timeout' || k === 'retry_delay' ? ctx.duration(v, k, 'ms') : toJson(v);
    }
  }
  const firstLine = new Map<string, number>();
  for (const e of entries) {
    if (e.kind === 'Pair') {
      const k = e.key.toLowerCase();
      if (DEFAULT_KEYS.includes(k)) continue;
      const imp = parseImport(ctx, e);
      if (imp) out.imports.push(imp);
      else if (/^from\b/i.test(e.key)) ctx.report('E414', e.loc, { src: e.key });
      else ctx.report('E400', e.loc, { src: `${e.key}: …`, detail: 'a tool is declared as a signature line, not as "key: value"' });
      continue;
    }
    if (e.kind !== 'Item') {
      if (e.kind === 'Scalar') {
        // `- name(...)` list form or a property-less one-liner
        const t = compileTool(ctx, { kind: 'Item', head: e, children: null, loc: e.loc }, out.defaults, out.defaultTimeout);
        if (t) pushTool(ctx, out, t, firstLine, e.loc);
      } else ctx.report('E400', e.loc, { src: '…', detail: 'expected a tool signature' });
      continue;
    }
    const t = compileTool(ctx, e, out.defaults, out.defaultTimeout);
    if (t) pushTool(ctx, out, t, firstLine, e.loc);
  }
  if (!opts.library) out.defaults = {};
  return out;
}

function pushTool(ctx: CompileContext, out: CompiledTools, t: ToolIR, firstLine: Map<string, number>, at: Loc): void {
  const first = firstLine.get(t.name);
  if (first !== undefined) {
    ctx.report('E401', at, { name: t.name, first });
    return;
  }
  firstLine.set(t.name, at.line);
  out.tools.push(t);
}
