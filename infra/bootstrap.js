#!/usr/bin/env node
// First step of `npm start` and `npm test`: installs what is missing and nothing else.
//   1. npm dependencies (npm install, which follows package-lock.json; `npm ci` rejects this
//      lock because npm records no other-platform optional packages in it);
//   2. the pinned Go tools, built from source into .tools/bin (Temporal CLI, the FerretDB shim,
//      LiveKit server). Builds are cached per version in ~/.cache/switchboard/tools (override
//      with SWITCHBOARD_TOOLS_CACHE) so a fresh clone on the same machine only copies them;
//   3. with --test, Chromium for the Web UI browser test: Debian's chromium package through
//      apt-get when no Chromium is installed (never a browser downloaded from anywhere else);
//   4. with --fuzz, schemathesis and its pinned dependencies (infra/fuzz/requirements.txt) in a
//      Python virtual environment at .tools/venv, never system-wide (needs python3 >= 3.10);
//   5. for `npm start` and `npm test`, the offline speech recogniser (PyPI pocketsphinx, its
//      English model inside the wheel) in a virtual environment of its own at .tools/voice-venv.
// Plain Node with no dependencies: it runs before `npm ci`.
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const BIN = path.join(ROOT, '.tools', 'bin');
const CACHE = process.env.SWITCHBOARD_TOOLS_CACHE || path.join(os.homedir(), '.cache', 'switchboard', 'tools');

const log = (msg) => process.stdout.write(`[bootstrap] ${msg}\n`);

function sha256(files) {
  const h = createHash('sha256');
  for (const f of files) h.update(fs.readFileSync(f));
  return h.digest('hex').slice(0, 16);
}

function ensureNodeVersion() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 3)) {
    throw new Error(`Node ${process.versions.node} is too old; Switchboard needs Node >= 20.3`);
  }
}

function ensureNpmDependencies() {
  const lock = path.join(ROOT, 'package-lock.json');
  const stamp = path.join(ROOT, 'node_modules', '.switchboard-deps');
  const want = sha256([lock, path.join(ROOT, 'package.json')]);
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === want) return;
  log('installing npm dependencies…');
  const res = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: ROOT, stdio: 'inherit' });
  if (res.status !== 0) throw new Error('npm install failed');
  // npm may have normalised the lock file; stamp what is on disk now. Written aside and renamed
  // in, as npm replaces files: a node_modules copied with hard links keeps the others' stamps.
  fs.writeFileSync(stamp + '.tmp', sha256([lock, path.join(ROOT, 'package.json')]));
  fs.renameSync(stamp + '.tmp', stamp);
}

function requireGo() {
  const res = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error('Go is required to build the pinned tools (https://go.dev/doc/install)');
  return res.stdout.trim();
}

/** Runs a verbose Go build, printing a progress line every 15 s (packages compiled, modules fetched). */
function runGoBuild(label, args, options) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let packages = 0;
    let downloads = 0;
    let tail = [];
    const child = spawn('go', args, { ...options, stdio: ['ignore', 'inherit', 'pipe'] });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      for (const line of chunk.split('\n')) {
        if (!line.trim()) continue;
        if (line.startsWith('go: downloading')) downloads++;
        else packages++;
        tail = [...tail.slice(-30), line];
      }
    });
    const timer = setInterval(() => {
      const secs = Math.round((Date.now() - started) / 1000);
      log(`  building ${label}: ${downloads} modules fetched, ${packages} packages compiled (${Math.floor(secs / 60)}m${secs % 60}s)`);
    }, 15000);
    child.on('error', (err) => {
      clearInterval(timer);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(timer);
      if (code === 0) return resolve(Math.round((Date.now() - started) / 1000));
      process.stderr.write(tail.join('\n') + '\n');
      reject(new Error(`building ${label} failed (go exited ${code})`));
    });
  });
}

const TOOLS = [
  {
    name: 'temporal',
    label: 'Temporal CLI v1.5.1',
    id: () => 'v1.5.1',
    note: 'the Temporal dev server; the first build compiles the whole server and takes several minutes',
    build: (outDir) =>
      runGoBuild('Temporal CLI v1.5.1', ['install', '-v', 'github.com/temporalio/cli/cmd/temporal@v1.5.1'], {
        env: { ...process.env, GOBIN: outDir, CGO_ENABLED: '0' },
      }),
    built: 'temporal',
  },
  {
    name: 'ferretdb',
    label: 'FerretDB v1.24.2 shim',
    // The shim is our own source: rebuild when it changes.
    id: () => {
      const dir = path.join(ROOT, 'infra', 'ferretdb');
      const sources = fs.readdirSync(dir).filter((f) => f.endsWith('.go') || f === 'go.mod' || f === 'go.sum').sort();
      return 'v1.24.2-' + sha256(sources.map((f) => path.join(dir, f)));
    },
    note: 'MongoDB wire protocol on the embedded PostgreSQL, for the dev and test stacks',
    build: (outDir) =>
      runGoBuild('FerretDB v1.24.2 shim', ['build', '-v', '-o', path.join(outDir, 'ferretdb'), '.'], {
        cwd: path.join(ROOT, 'infra', 'ferretdb'),
        env: { ...process.env, CGO_ENABLED: '0' },
      }),
    built: 'ferretdb',
  },
  {
    name: 'livekit-server',
    label: 'LiveKit server v1.13.5',
    id: () => 'v1.13.5',
    note: 'real-time voice rooms',
    build: (outDir) =>
      runGoBuild('LiveKit server v1.13.5', ['install', '-v', 'github.com/livekit/livekit-server/cmd/server@v1.13.5'], {
        env: { ...process.env, GOBIN: outDir, CGO_ENABLED: '0' },
      }),
    built: 'server',
  },
];

async function ensureTool(tool) {
  const id = tool.id();
  const target = path.join(BIN, tool.name);
  const stamp = target + '.version';
  if (fs.existsSync(target) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === id) return;
  const cached = path.join(CACHE, `${tool.name}-${id}`);
  if (!fs.existsSync(cached)) {
    requireGo();
    log(`building ${tool.label}: ${tool.note}…`);
    const work = fs.mkdtempSync(path.join(os.tmpdir(), `sb-build-${tool.name}-`));
    const secs = await tool.build(work);
    fs.mkdirSync(CACHE, { recursive: true });
    fs.copyFileSync(path.join(work, tool.built), cached + '.tmp');
    fs.chmodSync(cached + '.tmp', 0o755);
    fs.renameSync(cached + '.tmp', cached);
    fs.rmSync(work, { recursive: true, force: true });
    log(`built ${tool.label} in ${Math.floor(secs / 60)}m${secs % 60}s`);
  }
  fs.mkdirSync(BIN, { recursive: true });
  fs.copyFileSync(cached, target + '.tmp');
  fs.chmodSync(target + '.tmp', 0o755);
  fs.renameSync(target + '.tmp', target);
  fs.writeFileSync(stamp, id);
  log(`${tool.label} ready at .tools/bin/${tool.name}`);
}

const VENV = path.join(ROOT, '.tools', 'venv');
const FUZZ_REQUIREMENTS = path.join(ROOT, 'infra', 'fuzz', 'requirements.txt');

/**
 * The fuzzer's virtual environment: created with python3's venv, refreshed when the pins change,
 * and made again when it was made at another path (a venv's scripts name their interpreter by
 * absolute path, so a moved or symlinked .tools would leave scripts that cannot start).
 */
function ensureFuzzVenv() {
  const stamp = path.join(VENV, '.switchboard-requirements');
  const want = `${sha256([FUZZ_REQUIREMENTS])} ${VENV}`;
  const had = fs.existsSync(stamp) ? fs.readFileSync(stamp, 'utf8') : null;
  if (had === want) return;
  if (had !== null && had.split(' ').slice(1).join(' ') !== VENV) {
    log('the fuzzer virtual environment was made at another path: making it again…');
    fs.rmSync(VENV, { recursive: true, force: true });
  }
  const python = process.env.PYTHON || 'python3';
  const version = spawnSync(python, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  const [major, minor] = (version.stdout || '').trim().split('.').map(Number);
  if (version.status !== 0 || major !== 3 || minor < 10) {
    throw new Error(`the fuzzer needs python3 >= 3.10 with the venv module (set PYTHON to use another interpreter)`);
  }
  if (!fs.existsSync(path.join(VENV, 'bin', 'python'))) {
    log('creating the fuzzer virtual environment in .tools/venv…');
    const res = spawnSync(python, ['-m', 'venv', VENV], { stdio: 'inherit' });
    if (res.status !== 0) throw new Error('python3 -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)');
  }
  log('installing schemathesis (infra/fuzz/requirements.txt) into .tools/venv…');
  const pip = path.join(VENV, 'bin', 'pip');
  const res = spawnSync(pip, ['install', '--disable-pip-version-check', '--quiet', '--requirement', FUZZ_REQUIREMENTS], { stdio: 'inherit' });
  if (res.status !== 0) throw new Error('pip install of infra/fuzz/requirements.txt failed');
  fs.writeFileSync(stamp, want);
}

const VOICE_VENV = path.join(ROOT, '.tools', 'voice-venv');
// Read by providers/voice/offline-stt.ts too: keep the two in step.
const POCKETSPHINX_PIN = 'pocketsphinx==5.1.1';

/**
 * The offline speech recogniser's virtual environment (providers/voice/offline-stt.ts). Present
 * with the pinned version: nothing to do. Otherwise it is made beside the target and renamed in
 * whole, so a run cut short, or two runs at once (worktrees share .tools), never leave a half
 * environment at .tools/voice-venv. The helper starts it as `<venv>/bin/python <script>`, which
 * does not depend on where the environment was made.
 */
function ensureVoiceVenv() {
  const stamp = path.join(VOICE_VENV, '.switchboard-pocketsphinx');
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === POCKETSPHINX_PIN) return;
  const python = process.env.PYTHON || 'python3';
  const version = spawnSync(python, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  const [major, minor] = (version.stdout || '').trim().split('.').map(Number);
  if (version.status !== 0 || major !== 3 || minor < 8) {
    throw new Error('the offline speech recogniser needs python3 >= 3.8 with the venv module (set PYTHON to use another interpreter)');
  }
  const work = `${VOICE_VENV}.tmp-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  log(`installing the offline speech recogniser (${POCKETSPHINX_PIN}, about 30 MB) into .tools/voice-venv…`);
  try {
    const made = spawnSync(python, ['-m', 'venv', work], { stdio: 'inherit' });
    if (made.status !== 0) throw new Error('python3 -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)');
    const pip = spawnSync(path.join(work, 'bin', 'python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '--quiet', '--only-binary=:all:', POCKETSPHINX_PIN], {
      stdio: 'inherit',
    });
    if (pip.status !== 0) throw new Error(`pip install ${POCKETSPHINX_PIN} failed (it needs a wheel for this Python and platform)`);
    const check = spawnSync(path.join(work, 'bin', 'python'), ['-c', 'import pocketsphinx; pocketsphinx.Decoder.default_config()'], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`pocketsphinx does not load: ${(check.stderr || '').trim().split('\n').pop()}`);
    fs.writeFileSync(path.join(work, '.switchboard-pocketsphinx'), POCKETSPHINX_PIN);
    // A stale environment (another pin) goes first; if another run renamed its own in meanwhile, keep that one.
    if (fs.existsSync(VOICE_VENV) && !(fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === POCKETSPHINX_PIN)) {
      fs.rmSync(VOICE_VENV, { recursive: true, force: true });
    }
    try {
      fs.renameSync(work, VOICE_VENV);
    } catch (err) {
      if (!fs.existsSync(stamp)) throw err;
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  log('offline speech recogniser ready in .tools/voice-venv');
}

// Where Debian's chromium package puts the browser; CHROMIUM_PATH names another one.
const CHROMIUM_PATHS = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'];

/** Chromium for test/integration/web-ui.test.ts: Debian's package, installed as root or through sudo. */
function ensureChromium() {
  if ([process.env.CHROMIUM_PATH, ...CHROMIUM_PATHS].some((p) => p && fs.existsSync(p))) return;
  if (!fs.existsSync('/usr/bin/apt-get')) {
    throw new Error(`the Web UI test needs Chromium (looked for ${CHROMIUM_PATHS.join(', ')}): install it, or set CHROMIUM_PATH`);
  }
  const sudo = process.getuid && process.getuid() !== 0 ? ['sudo', '-n'] : [];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  log('installing Chromium (Debian package chromium) for the Web UI test…');
  for (const args of [['update', '-q'], ['install', '-y', '-q', 'chromium']]) {
    const cmd = [...sudo, 'apt-get', ...args];
    const res = spawnSync(cmd[0], cmd.slice(1), { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (res.status !== 0) throw new Error(`${cmd.join(' ')} failed: install the chromium package as root, or set CHROMIUM_PATH`);
  }
  log('Chromium ready at /usr/bin/chromium');
}

async function main() {
  ensureNodeVersion();
  ensureNpmDependencies();
  // Every stack runs all three, the tests' and the fuzzer's too (the LiveKit server for voice rooms).
  for (const tool of TOOLS) await ensureTool(tool);
  if (!process.argv.includes('--fuzz')) ensureVoiceVenv();
  if (process.argv.includes('--test')) ensureChromium();
  if (process.argv.includes('--fuzz')) ensureFuzzVenv();
}

main().catch((err) => {
  process.stderr.write(`[bootstrap] ${err.message}\n`);
  process.exit(1);
});
