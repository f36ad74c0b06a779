// TOOLS reducer (ABL.md §5): signatures, bindings (http/async/sandbox/mcp/lambda/contract),
// library defaults and imports. Used for both tool libraries and an agent's TOOLS section.

import type { ItemNode, Loc, PairNode, ValueNode } from '../ast';
import type { BindingIR, ConfirmationIR, Json, ParamIR, ResultSecretIR, ToolIR, ToolRetryPolicyIR } from '../ir';
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

const DEFAULT_KEYS = ['base_url', 'auth', 'timeout', 'retry', 'retry_delay', 'retry_policy', 'rate_limit', 'headers', 'auth_config'];

const TOOL_KEYS = [
  'description', 'type', 'timeout', 'hints', 'confirmation', 'confirm', 'immutable', 'store_result', 'on_result', 'on_error',
  'parameters', 'endpoint', 'method', 'auth', 'auth_config', 'headers', 'query_params', 'body_template', 'body_type', 'retry',
  'retry_delay', 'rate_limit', 'circuit_breaker', 'async', 'callback_url_field', 'timeout_seconds', 'runtime', 'code',
  'entrypoint', 'memory_mb', 'server', 'tool', 'server_tool', 'function', 'returns', 'pii_access', 'context_access',
  'workflow_id', 'mode', 'timeout_ms', 'param_mapping',
  'retry_policy', 'result_secrets', 'secret_access', 'scrub_secrets',
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
      const retryDelay = ctx.duration(get('retry_delay'), 'retry_delay', 'ms') ?? (typeof defaults.retry_delay === 'number' ? defaults.retry_delay : 1000);
      const policy = compileRetryPolicy(ctx, f.map.get('retry_policy') ?? null, defaults.retry_policy, retryDelay);
      binding = {
        type: 'http',
        endpoint: base && endpoint && !/^[a-z]+:\/\//i.test(endpoint) ? `${base}/${endpoint.replace(/^\/+/, '')}` : endpoint,
        method: ctx.oneOf(get('method'), ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const, `${where} method`) ?? 'GET',
        auth: 'none',
        auth_config: (toJson(get('auth_config')) as Record<string, Json> | null) ?? ((defaults.auth_config as Record<string, Json> | undefined) ?? {}),
        headers: { ...((defaults.headers as Record<string, string> | undefined) ?? {}), ...stringMap(ctx, get('headers'), 'headers') },
        query_params: stringMap(ctx, get('query_params'), 'query_params'),
        body_template: ctx.str(get('body_template'), 'body_template'),
        body_type: ctx.oneOf(get('body_type'), ['json', 'form', 'xml', 'text'] as const, `${where} body_type`) ?? 'json',
        retry: policy?.maxRetries ?? ctx.num(get('retry'), 'retry') ?? (typeof defaults.retry === 'number' ? defaults.retry : 0),
        retry_delay_ms: retryDelay,
        ...(policy ? { retry_policy: policy.policy } : {}),
        rate_limit: ctx.num(get('rate_limit'), 'rate_limit') ?? (typeof defaults.rate_limit === 'number' ? defaults.rate_limit : null),
        circuit_breaker: cb
          ? {
              threshold: ctx.num(cbFields.map.get('threshold')?.value, 'circuit_breaker.threshold') ?? 5,
              // `resetMs` (the reference's spelling) and `reset_ms` alike.
              reset_ms: ctx.duration((cbFields.map.get('reset_ms') ?? cbFields.map.get('resetms'))?.value, 'circuit_breaker.reset_ms', 'ms') ?? 30000,
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
      binding.auth = compileAuth(ctx, get('auth'), defaults.auth, binding.auth_config, where);
      checkToolNumbers(ctx, f, binding);
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
    case 'workflow': {
      const ms = ctx.duration(get('timeout_ms'), `${where} timeout_ms`, 'ms') ?? timeout ?? 30_000;
      binding = {
        type: 'workflow',
        workflow_id: need('workflow_id', 'workflow') ?? '',
        mode: ctx.oneOf(get('mode'), ['sync', 'async'] as const, `${where} mode`) ?? 'sync',
        timeout_ms: ms,
        param_mapping: stringMap(ctx, get('param_mapping'), 'param_mapping'),
      };
      if (timeout === null) timeout = ms;
      break;
    }
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
  // A scheme the executor does not apply must not look as if it did.
  if (binding.type === 'http' && binding.auth === 'saml') {
    ctx.report('W419', f.map.get('auth')?.loc ?? item.loc, { name: sig.name, kind: binding.auth, what: 'with no SAML assertion, only the headers the tool writes itself' });
  }
  // auth: custom is the headers its author writes (auth_config.custom_headers or headers): with neither, no credential could go out.
  if (binding.type === 'http' && binding.auth === 'custom') {
    const custom = binding.auth_config.custom_headers;
    const hasCustom = custom !== null && typeof custom === 'object' && !Array.isArray(custom) && Object.keys(custom).length > 0;
    if (!hasCustom && Object.keys(binding.headers).length === 0) ctx.report('E441', f.map.get('auth')?.loc ?? item.loc, { name: sig.name });
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
  const vault = compileVault(ctx, f, sig.name, binding);
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
    ...vault,
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
  void inherited;
  void written;
  // A confirmation asked fixes every argument until the answer; without one, immutable_params hold nothing.
  const asks = confirmation !== null && (confirmation.require === 'always' || (confirmation.require === 'when_side_effects' && sideEffects));
  if (confirmation && !asks && confirmation.immutable_params.length > 0) {
    const at = own('confirmation') ?? own('confirm') ?? own('immutable');
    const why = confirmation.require === 'never' ? 'require: never' : 'require: when_side_effects on a tool without hints.side_effects: true';
    ctx.report('W420', at?.loc ?? item.loc, { name, what: confirmation.immutable_params.join(', '), why });
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

/** `retry_policy {strategy, initial_delay_ms, multiplier, max_delay_ms, max_retries, jitter}` (a file default, or the tool's own). */
function compileRetryPolicy(
  ctx: CompileContext, own: PairNode | null, inherited: Json | undefined, retryDelay: number,
): { policy: ToolRetryPolicyIR; maxRetries: number | null } | null {
  if (!own) {
    // A library's default, already read by the library's own compile: JSON of the same keys.
    if (!inherited || typeof inherited !== 'object' || Array.isArray(inherited)) return null;
    const d = inherited as Record<string, Json>;
    const num = (k: string): number | null => (typeof d[k] === 'number' ? (d[k] as number) : typeof d[k] === 'string' && /^\d+(\.\d+)?$/.test(d[k] as string) ? Number(d[k]) : null);
    const strategy = (['fixed', 'exponential', 'linear'] as const).find((x) => x === String(d.strategy ?? 'exponential').toLowerCase()) ?? 'exponential';
    const jitter = d.jitter === true ? 0.5 : (num('jitter') ?? 0);
    return {
      policy: { strategy, initial_delay_ms: num('initial_delay_ms') ?? retryDelay, multiplier: num('multiplier') ?? 2, max_delay_ms: num('max_delay_ms') ?? 30_000, jitter: Math.min(1, Math.max(0, jitter)) },
      maxRetries: num('max_retries'),
    };
  }
  const node = ctx.value(own);
  if (!node || node.kind !== 'Map') {
    ctx.report('E210', own.loc, { what: 'retry_policy', expected: 'strategy:/initial_delay_ms:/multiplier:/max_delay_ms:/max_retries:/jitter: lines', found: node ? describe(node) : 'nothing' });
    return null;
  }
  const f = ctx.fields(node);
  ctx.extras(f, ['strategy', 'initial_delay_ms', 'multiplier', 'max_delay_ms', 'max_retries', 'jitter'], 'retry_policy');
  const v = (k: string): ValueNode | null => (f.map.get(k) ? ctx.value(f.map.get(k) as PairNode) : null);
  const jitterNode = v('jitter');
  let jitter = 0;
  if (jitterNode?.kind === 'Scalar' && typeof jitterNode.value === 'boolean') jitter = jitterNode.value ? 0.5 : 0;
  else if (jitterNode) {
    const n = ctx.num(jitterNode, 'retry_policy.jitter');
    if (n !== null && (n < 0 || n > 1)) ctx.report('E214', jitterNode.loc, { what: 'retry_policy.jitter', expected: 'true, false or a share from 0 to 1', value: String(n) });
    jitter = Math.min(1, Math.max(0, n ?? 0));
  }
  const maxRetries = ctx.num(v('max_retries'), 'retry_policy.max_retries');
  return {
    policy: {
      strategy: ctx.oneOf(v('strategy'), ['fixed', 'exponential', 'linear'] as const, 'retry_policy.strategy') ?? 'exponential',
      initial_delay_ms: ctx.duration(v('initial_delay_ms'), 'retry_policy.initial_delay_ms', 'ms') ?? retryDelay,
      multiplier: ctx.num(v('multiplier'), 'retry_policy.multiplier') ?? 2,
      max_delay_ms: ctx.duration(v('max_delay_ms'), 'retry_policy.max_delay_ms', 'ms') ?? 30_000,
      jitter,
    },
    maxRetries,
  };
}

type HttpAuth = Extract<BindingIR, { type: 'http' }>['auth'];

/**
 * `auth`: one of the executor's schemes. `oauth2` (the guides' spelling) is the OAuth2 kind its
 * auth_config describes: a `token_url` (or `grant_type: client_credentials`) is `oauth2_client`,
 * an `access_token` (or `grant_type: authorization_code`) is `oauth2_user`; neither is E442.
 */
function compileAuth(ctx: CompileContext, node: ValueNode | null, inherited: Json | undefined, config: Record<string, Json>, where: string): HttpAuth {
  const written = node ? ctx.str(node, `${where} auth`) : typeof inherited === 'string' ? inherited : null;
  if (written === null) return 'none';
  const kind = written.trim().toLowerCase();
  if (kind === 'oauth2' || kind === 'oauth') {
    const grant = typeof config.grant_type === 'string' ? config.grant_type.toLowerCase() : '';
    if (grant === 'client_credentials' || (grant === '' && typeof config.token_url === 'string' && !config.access_token)) return 'oauth2_client';
    if (grant === 'authorization_code' || (grant === '' && (typeof config.access_token === 'string' || typeof config.token === 'string'))) return 'oauth2_user';
    ctx.report('E442', node?.loc ?? { line: 1, column: 1 }, { name: where.replace(/^tool /, '') });
    return 'none';
  }
  const allowed = ['none', 'bearer', 'api_key', 'oauth2_client', 'oauth2_user', 'saml', 'custom'] as const;
  const found = allowed.find((a) => a === kind);
  if (!found) {
    if (node) ctx.report('E211', node.loc, { what: `${where} auth`, allowed: [...allowed, 'oauth2'].join(', '), value: written });
    return 'none';
  }
  return found;
}

/** Values the runtime cannot honour as written: negative retries, a rate of zero, a breaker that never closes. */
function checkToolNumbers(ctx: CompileContext, f: Fields, b: Extract<BindingIR, { type: 'http' }>): void {
  const at = (k: string): Loc => (f.map.get(k) as PairNode | undefined)?.loc ?? { line: 1, column: 1 };
  if (b.retry < 0 || !Number.isInteger(b.retry)) ctx.report('E214', at(f.map.has('retry') ? 'retry' : 'retry_policy'), { what: 'retry', expected: 'a whole number of retries (0 or more)', value: String(b.retry) });
  if (b.rate_limit !== null && !(b.rate_limit > 0)) ctx.report('E214', at('rate_limit'), { what: 'rate_limit', expected: 'calls per second above 0', value: String(b.rate_limit) });
  if (b.circuit_breaker && (!(b.circuit_breaker.threshold >= 1) || !(b.circuit_breaker.reset_ms > 0))) {
    ctx.report('E214', at('circuit_breaker'), { what: 'circuit_breaker', expected: 'threshold of 1 or more and reset_ms above 0', value: `${b.circuit_breaker.threshold}, ${b.circuit_breaker.reset_ms}` });
  }
}

/** Keys only an HTTP tool reads: on any other binding they do nothing (W214). */
const HTTP_ONLY_KEYS = ['retry', 'retry_delay', 'retry_policy', 'rate_limit', 'circuit_breaker', 'result_secrets', 'secret_access', 'scrub_secrets'];
/** Of those, the keys an async HTTP tool (`async: true`, `type: async_webhook`) does not read either (W214). */
const ASYNC_UNREAD_KEYS = HTTP_ONLY_KEYS.filter((k) => k !== 'retry');

const RESULT_SECRET = /^([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*|\[\d+\])*)\s*->\s*([A-Za-z_]\w*)\s*(?:\(([\s\S]*)\))?\s*$/;
const SECRET_PLACEHOLDER = /\{\{[^}]*?\b_secret\s*\.\s*([A-Za-z_]\w*)[^}]*\}\}/g;

/**
 * The SecretRef vault (docs/abl.md, "Secret vault"): `RESULT_SECRETS` (producer), `SECRET_ACCESS
 * READ` (consumer), `scrub_secrets`, and where `{{_secret.key}}` may stand (headers and body_template).
 */
function compileVault(ctx: CompileContext, f: Fields, name: string, binding: BindingIR): Pick<ToolIR, 'result_secrets' | 'secret_access' | 'scrub_secrets'> {
  const out: Pick<ToolIR, 'result_secrets' | 'secret_access' | 'scrub_secrets'> = {};
  if (binding.type === 'http' && binding.async) {
    // An async call is a start and a callback: its start keeps the platform's own retries and passes
    // none of the per-call guards below, so these keys would do nothing.
    for (const k of ASYNC_UNREAD_KEYS) {
      const p = f.map.get(k);
      if (p) ctx.report('W214', p.loc, { key: p.key, where: `async tool ${name}`, known: 'the settings of an async tool (this one is read by ordinary http tools only)' });
    }
    return out;
  }
  if (binding.type !== 'http') {
    for (const k of HTTP_ONLY_KEYS) {
      const p = f.map.get(k);
      if (p) ctx.report('W214', p.loc, { key: p.key, where: `${binding.type} tool ${name}`, known: 'the settings of its binding (this one is read by http tools only)' });
    }
    return out;
  }
  const rs = f.map.get('result_secrets');
  if (rs) {
    const node = ctx.value(rs);
    const lines = !node ? [] : node.kind === 'List' ? node.items : [node];
    const entries: ResultSecretIR[] = [];
    for (const line of lines) {
      const text = line.kind === 'Scalar' ? String(line.value ?? '') : line.kind === 'Text' ? line.value : '';
      const m = RESULT_SECRET.exec(text.trim());
      if (!m) {
        ctx.report('E444', line.loc, { name, src: text || describe(line) });
        continue;
      }
      const opts = m[3] ?? '';
      const consumers = /consumers\s*:\s*\[([^\]]*)\]/i.exec(opts)?.[1]?.split(',').map((s) => s.trim().replace(/^["']|["']$/g, '')).filter(Boolean) ?? [];
      const ttl = /ttl\s*:\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?/i.exec(opts);
      const unit = { ms: 0.001, s: 1, m: 60, h: 3600 }[(ttl?.[2] ?? 's').toLowerCase() as 'ms' | 's' | 'm' | 'h'];
      entries.push({
        path: m[1] as string,
        key: m[2] as string,
        consumers,
        ttl_s: ttl ? Number(ttl[1]) * unit : null,
        single_use: /single_use\s*:\s*true/i.test(opts),
      });
    }
    out.result_secrets = entries;
  }
  const sa = f.map.get('secret_access');
  if (sa) {
    const node = ctx.value(sa);
    const read = node?.kind === 'Map' ? ctx.fields(node).map.get('read') : undefined;
    if (!read) ctx.report('E210', sa.loc, { what: `tool ${name} SECRET_ACCESS`, expected: 'READ: [key, …]', found: node ? describe(node) : 'nothing' });
    else out.secret_access = ctx.strList(ctx.value(read), 'SECRET_ACCESS READ');
  }
  const scrub = f.map.get('scrub_secrets');
  if (scrub) out.scrub_secrets = ctx.bool(ctx.value(scrub), 'scrub_secrets') ?? true;
  // {{_secret.key}} only where a credential travels, and only keys the tool may read.
  const allowedAt = [...Object.values(binding.headers), binding.body_template ?? ''];
  const elsewhere = [binding.endpoint, ...Object.values(binding.query_params), JSON.stringify(binding.auth_config)];
  for (const text of elsewhere) {
    for (const m of text.matchAll(SECRET_PLACEHOLDER)) ctx.report('E443', (f.map.get('endpoint') ?? f.map.get('query_params') ?? f.map.get('auth_config'))?.loc ?? { line: 1, column: 1 }, { name, key: m[1] as string });
  }
  for (const text of allowedAt) {
    for (const m of text.matchAll(SECRET_PLACEHOLDER)) {
      if (!(out.secret_access ?? []).includes(m[1] as string)) ctx.report('E445', (f.map.get('headers') ?? f.map.get('body_template'))?.loc ?? { line: 1, column: 1 }, { name, key: m[1] as string });
    }
  }
  return out;
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
