// Benchmark: what the Temporal payload codec (lib/payload-codec.ts) costs per payload, encode and
// decode, for the sizes a session's history carries: a chat turn, a tool result, the compiled
// project (~60 KB, once per run), and a 1 MB worst case. Prints figures, asserts nothing.
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { parseKeyRing } from '../lib/key-ring';
import { AesGcmPayloadCodec } from '../lib/payload-codec';

const SIZES = [200, 2_000, 60_000, 1_000_000];
const codec = new AesGcmPayloadCodec(parseKeyRing(`k1:${randomBytes(32).toString('base64')}`));

async function time(runs: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(50, runs); i++) await fn(); // warm up
  const started = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) await fn();
  return Number(process.hrtime.bigint() - started) / 1000 / runs;
}

async function main(): Promise<void> {
  process.stdout.write('payload bytes | encode µs | decode µs | stored bytes\n');
  for (const size of SIZES) {
    const payload = defaultPayloadConverter.toPayload({ text: 'x'.repeat(size) })!;
    const [encoded] = await codec.encode([payload]);
    const runs = size >= 1_000_000 ? 50 : 2_000;
    const encodeUs = await time(runs, () => codec.encode([payload]));
    const decodeUs = await time(runs, () => codec.decode([encoded!]));
    const stored = encoded!.data!.length + Object.entries(encoded!.metadata!).reduce((n, [k, v]) => n + k.length + v!.length, 0);
    process.stdout.write(`${payload.data!.length} | ${encodeUs.toFixed(1)} | ${decodeUs.toFixed(1)} | ${stored}\n`);
  }
}

void main();
