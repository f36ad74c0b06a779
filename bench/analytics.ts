// Event analytics at size: loads N analytics events (default 1,000,000; bulk, through the one write
// path) into the embedded store (FerretDB on PostgreSQL, its own cluster in a temp dir) and prints
// the latency of the three hot reads, each next to the store's floor, the same question asked
// straight through the driver:
//   - grouped metrics over 24 hours (groupBy category, count + error_rate + avg_duration);
//   - p95 of durations by agent over 24 hours;
//   - a filtered events page (category + agent, 24 hours, 100 events, with its total).
// Ours is timed cold (the first read builds the closed hours' rollups) and warm (median), and
// with the rollups off (every hour scanned raw).
//   node --import tsx bench/analytics.ts [--events 1000000] [--samples 7] [--slow-samples 1] [--batch 5000]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import mongoose from 'mongoose';
import { startFerretDb } from '../infra/processes';
import { createModels, syncIndexes } from '../db/models';
import { recordAnalyticsEvents, type NewAnalyticsEvent } from '../core/analytics/ingest';
import { mongoAnalyticsStore } from '../core/analytics/store';
import { analyticsMetrics } from '../core/analytics/metrics';
import { driverCollection } from '../db/driver-collection';
import { type AnalyticsCategory } from '../db/analytics-event';

const { values } = parseArgs({
  options: { events: { type: 'string', default: '1000000' }, samples: { type: 'string', default: '7' }, 'slow-samples': { type: 'string', default: '1' }, batch: { type: 'string', default: '5000' } },
});
const EVENTS = Number(values.events);
const SAMPLES = Number(values.samples);
/** Samples of the reads that scan (rollups off, and the floors): at 1,000,000 events each takes up to minutes on FerretDB. */
const SLOW_SAMPLES = Number(values['slow-samples']);
const BATCH = Number(values.batch);
const DAYS = 7;
const HOUR = 3_600_000;
const DB = 'bench_analytics';
// 70% of the events are the measured project's; the rest are three other projects of two tenants.
const SCOPES = [
  { tenantId: 'ten_a', projectId: 'prj_a1', share: 0.7 },
  { tenantId: 'ten_a', projectId: 'prj_a2', share: 0.1 },
  { tenantId: 'ten_b', projectId: 'prj_b1', share: 0.1 },
  { tenantId: 'ten_b', projectId: 'prj_b2', share: 0.1 },
];
const SCOPE = { tenantId: 'ten_a', projectId: 'prj_a1' };
const CATEGORIES: AnalyticsCategory[] = ['session', 'message', 'message', 'llm', 'llm', 'tool', 'tool', 'agent', 'flow', 'channel'];
const AGENTS = ['Support_Agent', 'Billing_Agent', 'Triage_Agent', 'Returns_Agent', 'Sales_Agent'];
const CHANNELS = ['api', 'web_debug', 'voice', 'http_async'];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function eventAt(n: number, now: number): NewAnalyticsEvent {
  let r = (n * 2654435761) >>> 0;
  const next = () => (r = (Math.imul(r ^ (r >>> 15), 2246822507) + 0x9e3779b9) >>> 0) / 4294967296;
  const u = next();
  let acc = 0;
  const scope = SCOPES.find((s) => (acc += s.share) > u) ?? SCOPES[0]!;
  const category = CATEGORIES[Math.floor(next() * CATEGORIES.length)]!;
  const llm = category === 'llm';
  const tokensIn = llm ? Math.floor(next() * 3000) : 0;
  const tokensOut = llm ? Math.floor(next() * 600) : 0;
  const cost = llm ? Math.round(next() * 20_000) / 1_000_000 : 0;
  return {
    id: `ev_${n}`,
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    category,
    eventType: `${category}.${next() < 0.5 ? 'a' : 'b'}`,
    agentName: AGENTS[Math.floor(next() * AGENTS.length)]!,
    sessionId: `ses_${Math.floor(n / 20)}`,
    channel: CHANNELS[Math.floor(next() * CHANNELS.length)]!,
    // Spread evenly over the last DAYS days, up to now.
    timestamp: new Date(now - Math.floor((n / EVENTS) * DAYS * 24 * HOUR)),
    durationMs: next() < 0.8 ? Math.floor(next() < 0.05 ? next() * 30_000 : next() * 1500) : null,
    error: next() < 0.05 ? 'failed' : null,
    tokens: tokensIn + tokensOut,
    cost,
    metadata: llm ? { model: 'gpt-4o', provider: 'openai', tokens_in: tokensIn, tokens_out: tokensOut, cost } : {},
  };
}

async function time<T>(run: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const out = await run();
  return [performance.now() - t0, out];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sb-bench-analytics-'));
  const store = await startFerretDb({ dataDir: path.join(dir, 'store'), port: 0 });
  const connection = await mongoose.createConnection(`${store.uri.replace(/\/$/, '')}/${DB}`).asPromise();
  const models = createModels(connection);
  try {
    await syncIndexes(models);
    const now = Date.now();
    const t0 = Date.now();
    let lastReport = t0;
    for (let i = 0; i < EVENTS; i += BATCH) {
      await recordAnalyticsEvents(models, Array.from({ length: Math.min(BATCH, EVENTS - i) }, (_, k) => eventAt(i + k, now)));
      if (Date.now() - lastReport > 10_000 || i + BATCH >= EVENTS) {
        lastReport = Date.now();
        const done = Math.min(i + BATCH, EVENTS);
        const rate = done / ((Date.now() - t0) / 1000);
        console.log(`  loaded ${done.toLocaleString('en')} / ${EVENTS.toLocaleString('en')} events (${Math.round(rate)} events/s, ~${Math.round((EVENTS - done) / rate)} s left)`);
      }
    }
    const loadSeconds = (Date.now() - t0) / 1000;
    console.log(`${EVENTS.toLocaleString('en')} events loaded in ${loadSeconds.toFixed(0)} s (${Math.round(EVENTS / loadSeconds)} events/s, batches of ${BATCH}); measured project: ~${Math.round(EVENTS * 0.7).toLocaleString('en')} events over ${DAYS} days`);

    const to = new Date();
    const from = new Date(to.getTime() - 24 * HOUR);
    const ours = mongoAnalyticsStore(models);
    const raw = mongoAnalyticsStore(models, { rollups: false });
    const events = driverCollection(models.AnalyticsEvent);
    const rollups = driverCollection(models.AnalyticsRollup);
    const inRange = { ...SCOPE, timestamp: { $gte: from, $lt: to } };
    const pageFilter = { category: 'llm' as const, agentName: 'Billing_Agent' };

    const cases: { name: string; ours: (s: typeof ours) => Promise<unknown>; floors: [string, () => Promise<unknown>][] }[] = [
      {
        name: 'grouped metrics, 24 h (groupBy category; count, error_rate, avg_duration)',
        ours: (s) => analyticsMetrics(s, SCOPE, { range: { from, to }, groupBy: ['category'], metrics: ['count', 'error_rate', 'avg_duration'] }),
        floors: [
          ['driver: aggregate $match + $group (count and duration sum: FerretDB has neither $avg nor $cond) over the raw events', () => events.aggregate([{ $match: inRange }, { $group: { _id: '$category', count: { $sum: 1 }, duration: { $sum: '$durationMs' } } }]).toArray()],
          ['driver: find of the 24 h of rollup documents', () => Promise.all([from, to].map((d) => rollups.find({ ...SCOPE, day: d.toISOString().slice(0, 10) }).toArray()))],
        ],
      },
      {
        name: 'p95 duration by agent, 24 h',
        ours: (s) => analyticsMetrics(s, SCOPE, { range: { from, to }, groupBy: ['agent_name'], metrics: ['p95_duration'] }),
        floors: [
          [
            'driver: find of the durations, exact p95 in the client',
            async () => {
              const by = new Map<string, number[]>();
              for await (const e of events.find({ ...inRange, durationMs: { $ne: null } }, { projection: { agentName: 1, durationMs: 1 } })) by.set(e.agentName!, [...(by.get(e.agentName!) ?? []), e.durationMs!]);
              return [...by].map(([a, xs]) => [a, xs.sort((x, y) => x - y)[Math.ceil(0.95 * xs.length) - 1]]);
            },
          ],
        ],
      },
      {
        name: 'events page, 24 h, category llm + agent, 100 events and the total',
        ours: (s) => s.events(SCOPE, { from, to }, pageFilter, { limit: 100, offset: 0 }),
        floors: [['driver: find sort timestamp limit 100 + countDocuments', () => Promise.all([events.find({ ...inRange, ...pageFilter }).sort({ timestamp: -1, _id: -1 }).limit(100).toArray(), events.countDocuments({ ...inRange, ...pageFilter })])]],
      },
    ];

    for (const c of cases) {
      console.log(`\n${c.name}`);
      const [cold] = await time(() => c.ours(ours));
      const warm: number[] = [];
      for (let k = 0; k < SAMPLES; k++) warm.push((await time(() => c.ours(ours)))[0]);
      console.log(`  ours (rollups), first read: ${cold.toFixed(0)} ms`);
      console.log(`  ours (rollups), median of ${SAMPLES}: ${median(warm).toFixed(0)} ms`);
      const rawTimes: number[] = [];
      for (let k = 0; k < SLOW_SAMPLES; k++) rawTimes.push((await time(() => c.ours(raw)))[0]);
      console.log(`  ours, rollups off (every hour raw), median of ${rawTimes.length}: ${median(rawTimes).toFixed(0)} ms`);
      for (const [label, run] of c.floors) {
        const ts: number[] = [];
        for (let k = 0; k < SLOW_SAMPLES; k++) ts.push((await time(run))[0]);
        console.log(`  floor, ${label}, median of ${ts.length}: ${median(ts).toFixed(0)} ms`);
      }
    }
  } finally {
    await connection.close();
    await store.process.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
