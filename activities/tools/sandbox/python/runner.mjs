// The sandbox child of the Python engine: loads Pyodide, says it is ready, runs exactly one call it
// reads from fd 0, answers on fd 3 and exits. It runs under Node's permission model (reads only its
// own folder), with code generation from strings disallowed, an empty environment and, normally,
// in its own network, PID and user namespaces (python.ts starts it). Every line it writes is a
// JSON message; the parent trusts none of them further than its own call.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CALLS = 0; // parent -> child: the call, then memory answers
const EVENTS = 3; // child -> parent: ready, output, memory requests, the outcome
const MEMORY_DEVICE = '/dev/memory-stores';

const readSync = fs.readSync;
const writeSync = fs.writeSync;
const exit = process.exit.bind(process);
const pause = new Int32Array(new SharedArrayBuffer(4));

function retrying(op) {
  for (;;) {
    try {
      return op();
    } catch (err) {
      if (err && err.code === 'EAGAIN') {
        Atomics.wait(pause, 0, 0, 2);
        continue;
      }
      throw err;
    }
  }
}

function writeLine(text) {
  const bytes = Buffer.from(`${text}\n`, 'utf8');
  let done = 0;
  while (done < bytes.length) done += retrying(() => writeSync(EVENTS, bytes, done, bytes.length - done));
}

const send = (message) => writeLine(JSON.stringify(message));

let inbox = Buffer.alloc(0);
/** The next line from the parent; the parent gone means there is nothing left to do. */
function readLine() {
  const chunk = Buffer.alloc(65536);
  for (;;) {
    const end = inbox.indexOf(10);
    if (end >= 0) {
      const line = inbox.subarray(0, end).toString('utf8');
      inbox = inbox.subarray(end + 1);
      return line;
    }
    const n = retrying(() => readSync(CALLS, chunk, 0, chunk.length, null));
    if (n === 0) exit(0);
    inbox = Buffer.concat([inbox, chunk.subarray(0, n)]);
  }
}

// Pyodide's Node file system support asks process.binding for the open flags, which the permission
// model refuses; the same constants are public.
const binding = process.binding;
process.binding = (name) => (name === 'constants' ? { fs: fs.constants, os: os.constants } : binding.call(process, name));

const { loadPyodide } = await import('./pyodide/pyodide.mjs');
const making = process.argv.includes('--make-snapshot');
let snapshot;
try {
  if (!making) snapshot = fs.readFileSync(path.join(HERE, 'snapshot.bin'));
} catch {
  snapshot = undefined; // none made: a full load
}
const pyodide = await loadPyodide({
  indexURL: `${HERE}/pyodide/`,
  // Packages would come from here; it does not exist, so nothing is ever fetched.
  packageBaseUrl: `${HERE}/no-packages/`,
  jsglobals: {},
  env: {},
  stdin: () => null,
  // A memory image of a freshly loaded interpreter, made once per stage (python.ts): loading from
  // it costs a fifth of the CPU of a full load. Nothing but Pyodide's own start has run in it.
  ...(making ? { _makeSnapshot: true } : snapshot ? { _loadSnapshot: snapshot } : {}),
});
if (making) {
  const image = pyodide.makeMemorySnapshot();
  let done = 0;
  while (done < image.length) done += retrying(() => writeSync(EVENTS, image, done, image.length - done));
  exit(0);
}
pyodide.loadPackage = async () => {
  throw new Error('packages cannot be loaded in the sandbox');
};

// Console output: counted against the call's limit as it is written, and passed on as it comes.
let outputLimit = Infinity;
let outputBytes = 0;
const decoder = new TextDecoder('utf-8');
const writer = {
  write(buffer) {
    outputBytes += buffer.length;
    if (outputBytes > outputLimit) {
      send({ t: 'limit', k: 'output', m: `console output exceeded ${outputLimit} bytes` });
      exit(0);
    }
    const text = decoder.decode(buffer, { stream: true });
    if (text) send({ t: 'log', s: text });
    return buffer.length;
  },
};
pyodide.setStdout(writer);
pyodide.setStderr(writer);

// The memory-store helpers reach the parent through a character device: a request line written to
// it is passed on, and the answer line is read back from it. Python never holds a JavaScript object.
let request = Buffer.alloc(0);
let answer = Buffer.alloc(0);
const FS = pyodide.FS;
const device = FS.makedev(64, 0);
FS.registerDevice(device, {
  open() {},
  close() {},
  read(_stream, buffer, offset, length) {
    const n = Math.min(length, answer.length);
    buffer.set(answer.subarray(0, n), offset);
    answer = answer.subarray(n);
    return n;
  },
  write(_stream, buffer, offset, length) {
    request = Buffer.concat([request, Buffer.from(buffer.subarray(offset, offset + length))]);
    const end = request.indexOf(10);
    if (end >= 0) {
      const line = request.subarray(0, end).toString('utf8');
      request = Buffer.alloc(0);
      let reply;
      try {
        const { a, n, c } = JSON.parse(line);
        send({ t: 'mem', a, n, c });
        reply = readLine();
      } catch {
        reply = JSON.stringify({ ok: false, e: 'malformed memory request' });
      }
      answer = Buffer.from(`${reply}\n`, 'utf8');
    }
    return length;
  },
});
FS.mkdev(MEMORY_DEVICE, 0o666, device);

pyodide.runPython(fs.readFileSync(path.join(HERE, 'prelude.py'), 'utf8'), { filename: '<sandbox>' });
const run = pyodide.globals.get('_sandbox_run');
// The JavaScript modules Pyodide offers Python are withdrawn: the prelude has dropped its own
// references, and the import hook forgets them.
pyodide.unregisterJsModule('js');
pyodide.unregisterJsModule('pyodide_js');

send({ t: 'ready' });
const line = readLine();
let call;
try {
  call = JSON.parse(line);
} catch {
  exit(2);
}
outputLimit = call.maxOutputBytes;
let outcome;
try {
  outcome = run(line);
} catch (err) {
  // Python could not even report: the interpreter itself failed (a stack overflow in WebAssembly).
  send({ t: 'error', m: String((err && err.message) || err).split('\n').filter(Boolean).pop() ?? 'the interpreter failed' });
  exit(0);
}
const rest = decoder.decode();
if (rest) send({ t: 'log', s: rest });
if (outcome.startsWith('o')) {
  const text = outcome.slice(1);
  const size = Buffer.byteLength(text, 'utf8');
  if (size > call.maxOutputBytes) send({ t: 'limit', k: 'output', m: `the result is ${size} bytes, more than the ${call.maxOutputBytes} allowed` });
  else writeLine(`{"t":"result","v":${text}}`);
} else {
  send({ t: 'error', m: outcome.slice(1) });
}
exit(0);
