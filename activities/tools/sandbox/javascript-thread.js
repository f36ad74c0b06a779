// The JavaScript sandbox's worker thread: runs one call at a time in a fresh QuickJS runtime and
// context (QuickJS compiled to WebAssembly), within the call's deadline, memory, stack and output
// limits, and answers the engine (javascript.ts). Plain CommonJS, so a thread starts without a
// TypeScript loader. The tenant's code sees only what QuickJS itself defines plus `console` and
// `memory`; nothing of Node (process, require, timers, the network, the file system) exists there.
'use strict';
const { parentPort, workerData, receiveMessageOnPort } = require('node:worker_threads');
const { getQuickJS } = require('quickjs-emscripten');

/** Raised by the engine (Atomics.notify) when the answer to a memory-store call is on `replies`. */
const flag = new Int32Array(workerData.flag);
/** The engine's answers to memory-store calls, read synchronously while the code waits for them. */
const replies = workerData.replies;
let memorySeq = 0;

/** Longest exception message handed back (the agent sees it). */
const MAX_MESSAGE_CHARS = 2000;

// Runs first in every fresh context. It captures what it needs before the tenant's code can
// replace globals, removes the host function from the global object, and installs `console` and
// `memory`. Its value is the set of helpers the host calls afterwards.
const PRELUDE = `(function () {
  "use strict";
  const host = globalThis.__sandbox_host;
  delete globalThis.__sandbox_host;
  const stringify = JSON.stringify, parse = JSON.parse, Str = String, ErrorCtor = Error;
  const limit = __LIMIT__;
  const format = (v) => {
    if (typeof v === "string") return v;
    try { const s = stringify(v); return s === undefined ? Str(v) : s; } catch (e) { return Str(v); }
  };
  const line = (level) => function () {
    let text = level;
    for (let i = 0; i < arguments.length; i++) {
      text += " " + format(arguments[i]);
      if (text.length > limit) break;
    }
    host("log", text.length > limit ? text.slice(0, limit + 1) : text);
  };
  const console = Object.freeze({ log: line("log"), info: line("info"), warn: line("warn"), error: line("error"), debug: line("debug") });
  const call = (action) => function (name, content) {
    if (typeof name !== "string" || name === "") throw new TypeError("memory." + action + "_content needs a memory store name");
    const request = stringify({ action: action, memoryStoreName: name, content: content === undefined ? null : content });
    const answer = host("memory", request);
    return answer === undefined ? null : parse(answer);
  };
  const memory = Object.freeze({ get_content: call("get"), set_content: call("set"), delete_content: call("delete") });
  Object.defineProperty(globalThis, "console", { value: console, writable: true, configurable: true });
  Object.defineProperty(globalThis, "memory", { value: memory, writable: true, configurable: true });
  return {
    parse: parse,
    finish: function (value) {
      const s = stringify(value === undefined ? null : value);
      if (s === undefined) return "null";
      return s.length > limit ? s.length : s;
    },
    describe: function (err) {
      let m;
      try {
        m = err !== null && typeof err === "object" && "message" in err ? Str(err.message) : Str(err);
        if (err instanceof ErrorCtor && err.name === "InternalError") m = "InternalError: " + m;
      } catch (e) { m = "exception"; }
      return m.length > ${MAX_MESSAGE_CHARS} ? m.slice(0, ${MAX_MESSAGE_CHARS}) + "…" : m;
    },
  };
})()`;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(
  ('break case catch class const continue debugger default delete do else enum export extends false finally for function if import in ' +
    'instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package ' +
    'private protected public await arguments eval params undefined NaN Infinity globalThis')
    .split(' '),
);

/**
 * The tenant's code wrapped in ABL's calling convention: `main(params)` if the code defines it,
 * else the `entrypoint` function, else the code is a function body (`return` gives the result)
 * with each parameter as a local (and `params` itself).
 */
function program(code, entrypoint, paramNames) {
  const locals = paramNames.filter((k) => IDENTIFIER.test(k) && !RESERVED.has(k)).map((k) => `var ${k} = params[${JSON.stringify(k)}];`).join(' ');
  const entry = entrypoint ? `typeof ${entrypoint} === "function" ? ${entrypoint}(params) : undefined` : 'undefined';
  return `(function (params) { ${locals}\nreturn (function () {\n${code}\n;return typeof main === "function" ? main(params) : ${entry};\n})(); })`;
}

function bytes(s) {
  return Buffer.byteLength(s, 'utf8');
}

/** Waits (blocking this thread only) for the engine's answer to a memory-store call, until the deadline. */
function memoryCall(job, request) {
  if (!job.hasMemory) throw new Error('memory stores are not available here');
  if (Date.now() >= job.deadline) throw new Error('memory store call did not answer before the timeout');
  const seq = ++memorySeq;
  Atomics.store(flag, 0, 0);
  parentPort.postMessage({ type: 'memory', id: job.id, seq, request });
  for (;;) {
    let m;
    while ((m = receiveMessageOnPort(replies))) {
      if (m.message.seq === seq) {
        if (m.message.ok) return m.message.json;
        throw new Error(m.message.message);
      }
    }
    const left = job.deadline - Date.now();
    if (left <= 0) throw new Error('memory store call did not answer before the timeout');
    Atomics.wait(flag, 0, 0, left);
    Atomics.store(flag, 0, 0);
  }
}

function runOne(QuickJS, job) {
  const logs = [];
  let logBytes = 0;
  let outputExceeded = null;
  let recycle = false;
  const owned = [];
  const own = (h) => (owned.push(h), h);
  let rt = null;
  let ctx = null;
  const fail = (kind, message) => ({ ok: false, kind, message, logs });
  try {
    rt = QuickJS.newRuntime();
    rt.setMemoryLimit(job.memoryMb * 1024 * 1024);
    rt.setMaxStackSize(job.stackBytes);
    rt.setInterruptHandler(() => Date.now() >= job.deadline);
    ctx = rt.newContext();

    const hostFn = own(
      ctx.newFunction('host', (opH, argH) => {
        const op = ctx.typeof(opH) === 'string' ? ctx.getString(opH) : '';
        const arg = ctx.typeof(argH) === 'string' ? ctx.getString(argH) : '';
        if (op === 'log') {
          if (outputExceeded) throw new Error(outputExceeded);
          const size = bytes(arg) + 1;
          if (logBytes + size > job.maxOutputBytes) {
            outputExceeded = `console output exceeds the limit of ${job.maxOutputBytes} bytes`;
            throw new Error(outputExceeded);
          }
          logBytes += size;
          logs.push(arg);
          return undefined;
        }
        if (op === 'memory') {
          const json = memoryCall(job, arg);
          return json === null || json === undefined ? undefined : ctx.newString(json);
        }
        throw new Error('unknown host call');
      }),
    );
    ctx.setProp(ctx.global, '__sandbox_host', hostFn);
    const prelude = ctx.evalCode(PRELUDE.replace('__LIMIT__', String(job.maxOutputBytes)), 'prelude.js');
    if (prelude.error) {
      own(prelude.error);
      // Too little time or memory even for the prelude: the limit is what stopped the call.
      if (Date.now() >= job.deadline) return fail('timeout', `exceeded its timeout of ${job.timeoutMs} ms`);
      return fail('memory', `exceeded its memory limit of ${job.memoryMb} MB`);
    }
    const helpers = own(prelude.value);
    const parse = own(ctx.getProp(helpers, 'parse'));
    const finish = own(ctx.getProp(helpers, 'finish'));
    const describe = own(ctx.getProp(helpers, 'describe'));

    const failure = (errHandle) => {
      own(errHandle);
      if (outputExceeded) return fail('output', outputExceeded);
      if (Date.now() >= job.deadline) return fail('timeout', `exceeded its timeout of ${job.timeoutMs} ms`);
      let message = 'exception';
      const described = ctx.callFunction(describe, ctx.undefined, errHandle);
      if (described.error) {
        own(described.error);
        message = 'InternalError: out of memory';
      } else {
        own(described.value);
        message = ctx.typeof(described.value) === 'string' ? ctx.getString(described.value) : message;
      }
      if (Date.now() >= job.deadline) return fail('timeout', `exceeded its timeout of ${job.timeoutMs} ms`);
      if (message === 'InternalError: out of memory') {
        recycle = true;
        return fail('memory', `exceeded its memory limit of ${job.memoryMb} MB`);
      }
      return fail('error', message);
    };

    const compiled = ctx.evalCode(program(job.code, job.entrypoint, Object.keys(job.params)), 'tool.js');
    if (compiled.error) return failure(compiled.error);
    const fn = own(compiled.value);
    const paramsJson = own(ctx.newString(JSON.stringify(job.params)));
    const parsed = ctx.callFunction(parse, ctx.undefined, paramsJson);
    if (parsed.error) return failure(parsed.error);
    const params = own(parsed.value);
    const called = ctx.callFunction(fn, ctx.undefined, params);
    if (called.error) return failure(called.error);
    let result = own(called.value);

    // An async main: its jobs run here (no timers exist, so a promise settles now or never).
    if (ctx.typeof(result) === 'object') {
      for (;;) {
        const current = ctx.getPromiseState(result);
        if (current.type === 'fulfilled') {
          if (!current.notAPromise) result = own(current.value);
          break;
        }
        if (current.type === 'rejected') return failure(current.error);
        const ran = rt.executePendingJobs(-1);
        if (ran.error) return failure(ran.error);
        if (outputExceeded) return fail('output', outputExceeded);
        if (ran.value === 0 && ctx.getPromiseState(result).type === 'pending') {
          if (Date.now() >= job.deadline) return fail('timeout', `exceeded its timeout of ${job.timeoutMs} ms`);
          return fail('error', 'the promise the code returned never settled');
        }
      }
    }
    if (outputExceeded) return fail('output', outputExceeded);

    const finished = ctx.callFunction(finish, ctx.undefined, result);
    if (finished.error) return failure(finished.error);
    own(finished.value);
    if (ctx.typeof(finished.value) !== 'string') return fail('output', `the result exceeds the limit of ${job.maxOutputBytes} bytes`);
    const json = ctx.getString(finished.value);
    if (bytes(json) > job.maxOutputBytes) return fail('output', `the result exceeds the limit of ${job.maxOutputBytes} bytes`);
    return { ok: true, json, logs };
  } catch (err) {
    // Something outside the tenant's code broke (a WebAssembly trap, the host's own stack): this
    // thread's QuickJS instance is no longer trusted.
    recycle = true;
    if (Date.now() >= job.deadline) return fail('timeout', `exceeded its timeout of ${job.timeoutMs} ms`);
    if (err instanceof RangeError) return fail('error', 'InternalError: stack overflow');
    return fail('error', `the sandbox failed: ${err && err.message ? err.message : String(err)}`);
  } finally {
    for (const h of owned.reverse()) {
      try {
        if (h.alive) h.dispose();
      } catch {
        recycle = true;
      }
    }
    try {
      if (ctx) ctx.dispose();
      if (rt) rt.dispose();
    } catch {
      recycle = true;
    }
    job.recycle = recycle;
  }
}

getQuickJS().then(
  (QuickJS) => {
    parentPort.on('message', (job) => {
      if (job.type !== 'run') return;
      const outcome = runOne(QuickJS, job);
      parentPort.postMessage({ type: 'done', id: job.id, outcome, recycle: job.recycle === true });
    });
    parentPort.postMessage({ type: 'ready' });
  },
  (err) => {
    parentPort.postMessage({ type: 'broken', message: err && err.message ? err.message : String(err) });
  },
);
