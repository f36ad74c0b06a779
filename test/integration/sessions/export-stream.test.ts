// A large CSV export streams: the server reads the trace events as the client takes the rows.
// 10,000 events (about 20 MB of CSV) precede the last session's; the client stops reading after
// the first bytes, an event is then added to that last session, and the finished export holds
// it. A server that read the set before sending would not have it. The data before the last
// session is several times what the loopback socket buffers can hold while the client does not
// read (the send buffer grows to at most tcp_wmem's 4 MB; the receive buffer of a reader that
// does not read stays near its initial size), so the server cannot have reached it early.
// A client that stops reading altogether is cut after SESSION_EXPORT_IDLE_TIMEOUT_MS.
import http from 'node:http';
import { Writable } from 'node:stream';
import { createLogger } from '../../../lib/logger';
import { EXPORT_COLUMNS } from '../../../core/sessions/export';
import { type SessionDoc } from '../../../db/session';
import { parseCsv } from '../../support/csv';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession } from './fixtures';

jest.setTimeout(300_000);

const SESSIONS = 4;
const EVENTS_PER_SESSION = 2_500;
// Rows of ~2 KB: the same 20 MB as many small rows, for a quarter of the inserts.
const FILLER = 'x'.repeat(1_900);

let stack: TestStack;
let acme: SeededTenant;
let last: SessionDoc;
const logLines: string[] = [];

async function insertEvents(session: SessionDoc, count: number, base: number): Promise<void> {
  for (let start = 0; start < count; start += 2_000) {
    const docs = Array.from({ length: Math.min(2_000, count - start) }, (_, i) => {
      const seq = start + i;
      return {
        _id: `${session._id}:${seq}`,
        tenantId: session.tenantId,
        projectId: session.projectId,
        sessionId: session._id,
        seq,
        turn: Math.floor(seq / 10) + 1,
        type: 'response',
        spanId: `t${Math.floor(seq / 10) + 1}.${seq}`,
        parentSpanId: `t${Math.floor(seq / 10) + 1}`,
        timestamp: new Date(base + seq),
        data: { agent: 'Bulk', text: `row ${seq}, "quoted", ${FILLER}` },
      };
    });
    await stack.ctx.models.TraceEvent.collection.insertMany(docs as never[], { ordered: false });
  }
}

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  // Long enough for the first test's pause (one insert), short enough to wait for in the second.
  stack = await startTestStack({ env: { SESSION_EXPORT_IDLE_TIMEOUT_MS: '10000' }, logger: createLogger({ level: 'info' }, sink) });
  acme = await seedTenant(stack.ctx, 'acme-export-stream');
  const scope = { tenantId: acme.tenantId, projectId: acme.projectId };
  const base = Date.UTC(2026, 0, 1);
  for (let s = 0; s < SESSIONS; s++) {
    const session = await seedSession(stack.ctx, scope, { agentName: 'Bulk', createdAt: new Date(base + s * 3_600_000), lastActivityAt: new Date(base + s * 3_600_000 + 60_000) });
    await insertEvents(session, EVENTS_PER_SESSION, base + s * 3_600_000);
  }
  last = await seedSession(stack.ctx, scope, { agentName: 'Bulk', createdAt: new Date(base + SESSIONS * 3_600_000), lastActivityAt: new Date(base + SESSIONS * 3_600_000 + 60_000) });
  await insertEvents(last, 1, base + SESSIONS * 3_600_000);
});
afterAll(() => stack.close());

it('sends the first rows before it has read the last session, and the rows round-trip through a CSV reader', async () => {
  const url = new URL(`${stack.baseUrl}/api/projects/${acme.projectId}/sessions/export?format=csv`);
  const chunks: Buffer[] = [];
  let bytesAtFirstChunk = 0;
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { authorization: `Bearer ${acme.adminKey}` } }, (res) => {
      let first = true;
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (!first) return;
        first = false;
        bytesAtFirstChunk = chunk.length;
        // Stop reading; add an event to the last session; then take the rest.
        res.pause();
        stack.ctx.models.TraceEvent.collection
          .insertOne({
            _id: `${last._id}:1` as never,
            tenantId: last.tenantId,
            projectId: last.projectId,
            sessionId: last._id,
            seq: 1,
            turn: 1,
            type: 'response',
            spanId: 'late',
            parentSpanId: 't1',
            timestamp: new Date(Date.UTC(2026, 0, 1) + SESSIONS * 3_600_000 + 1),
            data: { agent: 'Bulk', text: 'written after the export started' },
          })
          .then(() => res.resume(), reject);
      });
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  expect(status).toBe(200);
  const text = Buffer.concat(chunks).toString('utf8');
  // The first piece was a small part of the whole.
  expect(bytesAtFirstChunk).toBeLessThan(text.length / 100);
  const rows = parseCsv(text);
  expect(rows[0]).toEqual([...EXPORT_COLUMNS]);
  expect(rows).toHaveLength(1 + SESSIONS * EVENTS_PER_SESSION + 2);
  const span = EXPORT_COLUMNS.indexOf('span_id');
  const data = EXPORT_COLUMNS.indexOf('data');
  expect(rows[rows.length - 1]![span]).toBe('late');
  // Every row's data cell is the JSON that was stored, commas and quotes included.
  expect(JSON.parse(rows[1]![data]!)).toEqual({ agent: 'Bulk', text: `row 0, "quoted", ${FILLER}` });
  expect(JSON.parse(rows[SESSIONS * EVENTS_PER_SESSION]![data]!)).toEqual({ agent: 'Bulk', text: `row ${EVENTS_PER_SESSION - 1}, "quoted", ${FILLER}` });
});

it('cuts an export whose client stops reading, so the file it got is short and unterminated', async () => {
  const url = new URL(`${stack.baseUrl}/api/projects/${acme.projectId}/sessions/export?format=csv`);
  const cutBefore = logLines.filter((l) => l.includes('export cut: the client read nothing')).length;
  const outcome = await new Promise<{ bytes: number; complete: boolean }>((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { authorization: `Bearer ${acme.adminKey}` } }, (res) => {
      let bytes = 0;
      let first = true;
      let poll: NodeJS.Timeout | undefined;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (!first) return;
        first = false;
        res.pause();
        // Read on only once the server says it cut the export.
        poll = setInterval(() => {
          if (logLines.filter((l) => l.includes('export cut: the client read nothing')).length > cutBefore) {
            clearInterval(poll);
            res.resume();
          }
        }, 100);
      });
      res.on('error', () => undefined);
      res.on('close', () => {
        clearInterval(poll);
        resolve({ bytes, complete: res.complete });
      });
    });
    req.on('error', reject);
  });
  expect(outcome.complete).toBe(false);
  // Far from the ~20 MB of the whole export.
  expect(outcome.bytes).toBeLessThan(10 * 1024 * 1024);
});
