// The worker thread of the offline text to speech (offline-tts.ts): one espeak-ng WebAssembly
// instance, reused for every phrase. espeak-ng is a command-line program (the npm build exports
// only main), so each phrase runs main once; the instance's memory is put back to what it was
// before the first run, which resets the C library's and espeak-ng's globals (getopt's index, the
// voice tables, the heap) as a fresh instance would have them, at the cost of one 32 MB copy
// rather than a new instance (its embedded voice data alone is 18 MB). ESM, because the package is.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parentPort } from 'node:worker_threads';
import ESpeakNg from 'espeak-ng';

const WASM = join(dirname(createRequire(import.meta.url).resolve('espeak-ng')), 'espeak-ng.wasm');

let instance = null;
let output = [];
const encoder = new TextEncoder();

const espeak = await ESpeakNg({
  noInitialRun: true,
  print: (line) => output.push(line),
  // Emscripten's own note that exit() left the runtime up (it is meant to) is no output of espeak-ng's.
  printErr: (line) => (line.startsWith('program exited') ? undefined : output.push(line)),
  instantiateWasm(imports, done) {
    readFile(WASM)
      .then((bytes) => WebAssembly.instantiate(bytes, imports))
      .then(({ instance: made, module }) => {
        instance = made;
        done(made, module);
      })
      .catch((err) => parentPort.postMessage({ type: 'broken', message: String(err) }));
    return {};
  },
});
const exports = instance.exports;
const memory = exports.memory;
const pristine = new Uint8Array(memory.buffer.slice(0));
const stackTop = exports.stackSave();

/** Runs espeak-ng's main with `args`; its exit status and what it printed. */
function runMain(args) {
  new Uint8Array(memory.buffer).set(pristine);
  exports.stackRestore(stackTop);
  output = [];
  const argv = ['espeak-ng', ...args].map((arg) => {
    const bytes = encoder.encode(arg + '\0');
    const at = exports.stackAlloc(bytes.length);
    new Uint8Array(memory.buffer).set(bytes, at);
    return at;
  });
  const table = exports.stackAlloc((argv.length + 1) * 4);
  const words = new Uint32Array(memory.buffer, table, argv.length + 1);
  argv.forEach((at, i) => (words[i] = at));
  words[argv.length] = 0;
  let status;
  try {
    status = exports.__main_argc_argv(argv.length, table);
  } catch (err) {
    // exit(n) from C arrives as Emscripten's ExitStatus.
    status = typeof err?.status === 'number' ? err.status : -1;
    if (status === -1) output.push(String(err?.message ?? err));
  }
  return { status, output };
}

parentPort.on('message', (msg) => {
  if (msg.type === 'ping') {
    parentPort.postMessage({ type: 'pong', id: msg.id });
    return;
  }
  if (msg.type === 'voices') {
    const languages = runMain(['--voices']).output;
    const variants = runMain(['--voices=variant']).output;
    parentPort.postMessage({ type: 'voices', id: msg.id, languages, variants });
    return;
  }
  const started = performance.now();
  espeak.FS.writeFile('/in.txt', msg.text);
  const { status, output: said } = runMain(['-b', '1', '-v', msg.voice, '-f', '/in.txt', '-w', '/out.wav']);
  let wav = null;
  try {
    wav = espeak.FS.readFile('/out.wav');
    espeak.FS.unlink('/out.wav');
  } catch {
    // No file: the status and output say why.
  }
  if (status !== 0 || !wav) {
    parentPort.postMessage({ type: 'failed', id: msg.id, message: said.filter(Boolean).join(' ').slice(0, 500) || `espeak-ng exited with status ${status}` });
    return;
  }
  parentPort.postMessage({ type: 'spoken', id: msg.id, wav, ms: performance.now() - started }, [wav.buffer]);
});
parentPort.postMessage({ type: 'ready' });
