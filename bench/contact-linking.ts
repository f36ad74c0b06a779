// What linking a session's caller to their contact costs a session start (core/contacts/linking.ts):
// the find-or-create for an identity seen before and for a new one, the session link, concurrent
// first starts of one identity, and a whole startSession with a caller beside one without, over a
// tenant that already holds --contacts contacts (the store filters them by tenant and liveKey).
//   node --import tsx bench/contact-linking.ts [--contacts 10000] [--samples 200]
// Figures: docs/performance.md, "Contact linking".
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createProject, createTenant } from '../core/tenancy/accounts';
import { findSessionContact, linkSessionToContact } from '../core/contacts/linking';
import { startSession } from '../core/sessions/start';
import { identityKey } from '../core/contacts/identity';
import { newContactId } from '../db/contact';
import { countMongoCommands, countsSince, perOpCounts, snapshotCounts } from './support/mongo-commands';
import { startBenchStack } from './support/stack';

const { values } = parseArgs({ options: { contacts: { type: 'string', default: '10000' }, samples: { type: 'string', default: '200' } } });
const CONTACTS = Number(values.contacts);
const SAMPLES = Number(values.samples);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
function line(label: string, samples: number[], commands: string): string {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${label.padEnd(44)} n=${sorted.length}  p50 ${percentile(sorted, 50).toFixed(2)} ms  p99 ${percentile(sorted, 99).toFixed(2)} ms  store commands per op ${commands}`;
}

async function main(): Promise<void> {
  const stack = await startBenchStack({ name: 'contact-linking', worker: 'none', monitorApiCommands: true });
  const { ctx } = stack;
  const counts = countMongoCommands(ctx);
  try {
    const tenant = await createTenant(ctx.models, { name: 'Contact linking bench', slug: 'contact-linking-bench' });
    const project = await createProject(ctx.models, tenant._id, { name: 'Contacts' });
    const tenantId = tenant._id;
    // The tenant's existing contacts, inserted in batches.
    const now = new Date();
    for (let i = 0; i < CONTACTS; i += 1000) {
      await ctx.models.Contact.insertMany(
        Array.from({ length: Math.min(1000, CONTACTS - i) }, (_, j) => {
          const identity = `existing-${i + j}`;
          return { _id: newContactId(), tenantId, type: 'customer', identity, identityType: 'external', liveKey: identityKey(identity, 'external'), firstSeenAt: now, lastSeenAt: now, deletedAt: null };
        }),
      );
    }
    const out = (s: string) => process.stdout.write(s + '\n');
    out(`tenant with ${CONTACTS} contacts; ${SAMPLES} samples per phase, one at a time`);

    async function phase(label: string, op: (i: number) => Promise<unknown>, n = SAMPLES): Promise<void> {
      const before = snapshotCounts(counts);
      const samples: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await op(i);
        samples.push(performance.now() - t0);
      }
      out(line(label, samples, perOpCounts(countsSince(counts, before), n, true)));
    }

    const caller = (identity: string) => ({ tenantId, channel: 'api' as const, identity, identityType: 'external' as const });
    await phase('find-or-create, new identity', (i) => findSessionContact(ctx, caller(`new-${i}-${randomUUID()}`)));
    await phase('find-or-create, identity seen before', (i) => findSessionContact(ctx, caller(`existing-${(i * 37) % CONTACTS}`)));
    const contact = (await findSessionContact(ctx, caller('existing-0')))!;
    await phase('session link', () => linkSessionToContact(ctx, { tenantId, contactId: contact.contactId, sessionId: randomUUID() }));

    // Twenty first starts of one identity at once, ten times: one contact each time.
    const rounds: number[] = [];
    let made = 0;
    for (let r = 0; r < 10; r++) {
      const identity = `burst-${r}-${randomUUID()}`;
      const t0 = performance.now();
      const found = await Promise.all(Array.from({ length: 20 }, () => findSessionContact(ctx, caller(identity))));
      rounds.push(performance.now() - t0);
      made += new Set(found.map((c) => c?.contactId)).size;
    }
    out(line('20 first starts of one identity at once (all)', rounds, '-') + `; contacts made per round: ${made / 10}`);

    // A whole start (capacity, record, workflow start) with and without a caller, alternating.
    const agent = { agentId: null, agentName: 'Bench' };
    const base = { tenantId, projectId: project._id, ...agent, channel: 'api' as const };
    const withCaller: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < Math.min(SAMPLES, 100); i++) {
      let t0 = performance.now();
      await startSession(ctx, base);
      without.push(performance.now() - t0);
      t0 = performance.now();
      await startSession(ctx, { ...base, caller: { identity: `existing-${(i * 53) % CONTACTS}`, identityType: 'external' } });
      withCaller.push(performance.now() - t0);
    }
    out(line('startSession, no caller', without, '-'));
    out(line('startSession, caller seen before', withCaller, '-'));
  } finally {
    await stack.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
