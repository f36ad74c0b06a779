// The offline speech to text of the development stack: pocketsphinx (PyPI, its US English model in
// the wheel) in a long-lived Python helper (pocketsphinx-helper.py) from the virtual environment
// that infra/bootstrap.js makes. Grammar mode when the caller gives hints, the language model
// otherwise. For development and tests: rough on free speech, exact on a grammar of known phrases.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ProviderError } from '../llm/errors';
import { VoiceConfigError } from './errors';
import { pcmBytes, resample } from './pcm';
import { type PcmAudio, type SpeechToText, type TranscribeOptions, type Transcript } from './types';

/** The rate the bundled acoustic model was trained at; audio is resampled to it here. */
export const POCKETSPHINX_SAMPLE_RATE = 16000;

const ROOT = resolve(__dirname, '..', '..');
/** Where infra/bootstrap.js installs pocketsphinx (keep in step with it). */
export const VOICE_VENV_PYTHON = join(ROOT, '.tools', 'voice-venv', 'bin', 'python');
const HELPER = join(__dirname, 'pocketsphinx-helper.py');
/** Phrases one grammar may hold. */
const MAX_HINTS = 500;

export interface OfflineSpeechToTextOptions {
  /** The Python that has pocketsphinx. @default .tools/voice-venv/bin/python */
  python?: string;
  /** How long the helper may take to load its model (ms). @default 30000 */
  startTimeoutMs?: number;
  /** How long one utterance may take to decode before the helper is restarted (ms). @default 30000 */
  requestTimeoutMs?: number;
  /** Told about hint phrases the recogniser cannot use (a word outside its dictionary). */
  onWarning?: (message: string) => void;
}

interface HelperAnswer {
  id?: number | null;
  ready?: boolean;
  text?: string;
  confidence?: number | null;
  dropped?: string[];
  error?: string;
}

interface Pending {
  resolve: (answer: HelperAnswer) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

interface Helper {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  stderr: string[];
  /** Requests sent to this helper and not answered yet. */
  pending: Map<number, Pending>;
  startTimer?: NodeJS.Timeout;
  /** Fails `ready` (no-op once it resolved). */
  failStart: (err: Error) => void;
}

/** The offline recogniser's model is US English: other languages are refused, never misheard. */
function checkLanguage(language: string): void {
  if (!/^en(-|_|$)/i.test(language.trim())) {
    throw new VoiceConfigError(`the offline speech to text (pocketsphinx) recognises English only, not "${language}"`);
  }
}

export class OfflineSpeechToText implements SpeechToText {
  readonly name = 'offline';
  private readonly python: string;
  private readonly startTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly onWarning: (message: string) => void;
  private helper: Helper | null = null;
  private nextId = 1;
  private closed = false;
  private readonly warned = new Set<string>();

  constructor(options: OfflineSpeechToTextOptions = {}) {
    this.python = options.python ?? VOICE_VENV_PYTHON;
    this.startTimeoutMs = options.startTimeoutMs ?? 30_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.onWarning = options.onWarning ?? (() => undefined);
  }

  /** @throws VoiceConfigError for a language the offline model does not recognise. */
  validate(options: Pick<TranscribeOptions, 'language'>): void {
    checkLanguage(options.language);
  }

  /** The helper's process id while one runs. */
  get helperPid(): number | null {
    return this.helper?.child.pid ?? null;
  }

  /** Starts the helper and loads the model now (a second or two) rather than on the first utterance. */
  async warmUp(): Promise<void> {
    await this.start().ready;
  }

  async transcribe(audio: PcmAudio, options: TranscribeOptions): Promise<Transcript> {
    checkLanguage(options.language);
    options.signal?.throwIfAborted();
    const hints = (options.hints ?? []).map((h) => h.trim()).filter((h) => h.length > 0);
    if (hints.length > MAX_HINTS) throw new VoiceConfigError(`the offline speech to text takes at most ${MAX_HINTS} hint phrases, got ${hints.length}`);
    const pcm = pcmBytes(resample(audio, POCKETSPHINX_SAMPLE_RATE).samples).toString('base64');
    const helper = this.start();
    await helper.ready;
    if (this.helper !== helper) throw new ProviderError('the speech recogniser stopped before the utterance was sent', { kind: 'unknown', provider: this.name, retryable: true });
    const id = this.nextId++;
    const answer = await new Promise<HelperAnswer>((resolve, reject) => {
      const onAbort = (): void => {
        const p = helper.pending.get(id);
        if (!p) return;
        clearTimeout(p.timer);
        helper.pending.delete(id);
        reject(new ProviderError('the transcription was aborted', { kind: 'aborted', provider: this.name, retryable: false }));
      };
      const timer = setTimeout(() => {
        // A helper that sits on one utterance this long is stuck: it goes, and the next call starts another.
        this.stop(helper, `the speech recogniser took longer than ${this.requestTimeoutMs} ms on one utterance`);
      }, this.requestTimeoutMs);
      // Left referenced: a request in flight keeps the process alive until it is answered.
      helper.pending.set(id, {
        resolve: (a) => {
          options.signal?.removeEventListener('abort', onAbort);
          resolve(a);
        },
        reject: (e) => {
          options.signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
        timer,
      });
      options.signal?.addEventListener('abort', onAbort, { once: true });
      helper.child.stdin.write(JSON.stringify({ id, sampleRate: POCKETSPHINX_SAMPLE_RATE, pcm, phrases: hints.length ? hints : null }) + '\n');
    });
    if (answer.error) throw new ProviderError(`the speech recogniser refused the utterance: ${answer.error}`, { kind: 'bad_request', provider: this.name, retryable: false });
    if (answer.dropped && answer.dropped.length > 0) {
      const key = answer.dropped.join('\n');
      if (!this.warned.has(key)) {
        this.warned.add(key);
        const all = answer.dropped.length === hints.length;
        this.onWarning(
          `offline speech to text: ${answer.dropped.length} hint phrase(s) have words outside the recogniser's dictionary and were left out of its grammar` +
            (all ? ', so the language model was used' : '') +
            `: ${answer.dropped.map((d) => JSON.stringify(d)).join(', ')}`,
        );
      }
    }
    const confidence = typeof answer.confidence === 'number' && Number.isFinite(answer.confidence) ? Math.min(1, Math.max(0, answer.confidence)) : null;
    return { text: answer.text ?? '', confidence };
  }

  async close(): Promise<void> {
    this.closed = true;
    const helper = this.helper;
    if (!helper) return;
    this.helper = null;
    this.failAll(helper, new ProviderError('the offline speech to text was closed', { kind: 'aborted', provider: this.name, retryable: false }));
    const exited = new Promise<void>((done) => {
      if (helper.child.exitCode !== null || helper.child.signalCode !== null) return done();
      helper.child.once('exit', () => done());
    });
    // End of input ends the helper's loop; a helper that does not go within a second is killed.
    helper.child.stdin.end();
    const kill = setTimeout(() => helper.child.kill('SIGKILL'), 1000);
    await exited;
    clearTimeout(kill);
  }

  /** The running helper, or a new one (after none yet, or after the last one died). */
  private start(): Helper {
    if (this.closed) throw new ProviderError('the offline speech to text is closed', { kind: 'aborted', provider: this.name, retryable: false });
    if (this.helper) return this.helper;
    if (!existsSync(this.python)) {
      throw new ProviderError(`the offline speech to text is not installed (no ${this.python}): run \`node infra/bootstrap.js\`, which installs pocketsphinx into .tools/voice-venv`, {
        kind: 'unknown',
        provider: this.name,
        retryable: false,
      });
    }
    const child = spawn(this.python, ['-u', HELPER], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' } });
    const stderr: string[] = [];
    let readyResolve!: () => void;
    let readyReject!: (err: Error) => void;
    const ready = new Promise<void>((res, rej) => {
      readyResolve = res;
      readyReject = rej;
    });
    // Awaited by each caller; this keeps a start failure nobody waits for from going unhandled.
    ready.catch(() => undefined);
    const helper: Helper = { child, ready, stderr, pending: new Map(), failStart: readyReject };
    const startTimer = setTimeout(() => this.stop(helper, `the speech recogniser did not load within ${this.startTimeoutMs} ms`), this.startTimeoutMs);
    helper.startTimer = startTimer;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr.push(chunk);
      if (stderr.length > 20) stderr.shift();
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      let answer: HelperAnswer;
      try {
        answer = JSON.parse(line) as HelperAnswer;
      } catch {
        return;
      }
      if (answer.ready) {
        clearTimeout(startTimer);
        readyResolve();
        return;
      }
      if (typeof answer.id !== 'number') return;
      const p = helper.pending.get(answer.id);
      if (!p) return;
      helper.pending.delete(answer.id);
      clearTimeout(p.timer);
      p.resolve(answer);
    });
    // A write to a helper that just died fails here; its exit fails the request.
    child.stdin.on('error', () => undefined);
    child.on('error', (err) => this.stop(helper, `the speech recogniser could not start: ${err.message}`));
    child.on('exit', (code, signal) => {
      clearTimeout(startTimer);
      const tail = stderr.join('').trim().split('\n').slice(-3).join(' | ');
      this.stop(helper, `the speech recogniser stopped (${signal ?? `exit code ${code}`})${tail ? `: ${tail}` : ''}`);
    });
    // Only requests in flight keep the process alive: an idle helper does not.
    child.unref();
    (child.stdout as unknown as { unref?: () => void }).unref?.();
    (child.stderr as unknown as { unref?: () => void }).unref?.();
    (child.stdin as unknown as { unref?: () => void }).unref?.();
    this.helper = helper;
    return helper;
  }

  /** Ends this helper (if it is still the current one) and fails what was sent to it. */
  private stop(helper: Helper, why: string): void {
    if (this.helper === helper) this.helper = null;
    if (helper.child.exitCode === null && helper.child.signalCode === null) helper.child.kill('SIGKILL');
    clearTimeout(helper.startTimer);
    this.failAll(helper, new ProviderError(why, { kind: 'unknown', provider: this.name, retryable: true }));
    helper.failStart(new ProviderError(why, { kind: 'unknown', provider: this.name, retryable: true }));
  }

  private failAll(helper: Helper, err: Error): void {
    const pending = [...helper.pending.values()];
    helper.pending.clear();
    for (const p of pending) {
      clearTimeout(p.timer);
      p.reject(err);
    }
  }
}
