// The corpus of NLU sections (test/fixtures/abl-corpus/nlu): the documented form, `- name` items,
// the KEYWORDS/REGEX spellings and the YAML map form compile with no error and the one expected
// warning, into the IR the runtime classifies with.

import { join } from 'node:path';
import { compileProject } from '../../../abl';
import { decideLocalReply } from '../../../providers/llm/local';
import { Driver, llmText, scripted } from '../runtime/driver';
import { readProject } from './helpers';

const out = compileProject(readProject(join(__dirname, '../../fixtures/abl-corpus/nlu')));

it('compiles every file with no error and exactly the expected warnings', () => {
  expect(out.diagnostics.map((d) => `${d.code} ${d.path}:${d.line}:${d.column}`)).toEqual([
    'W861 agents/Bank_Router.agent.abl:45:3', // embeddings: stored, not run
  ]);
  expect(out.ok).toBe(true);
  expect(Object.keys(out.agents).sort()).toEqual(['Bank_Router', 'Travel_Desk', 'Wire_Desk']);
});

it('keeps what each form means', () => {
  const router = out.agents.Bank_Router!.nlu!;
  expect(router.intents.map((i) => [i.name, i.patterns.length, i.examples.length, i.entities])).toEqual([
    ['send_wire', 3, 2, ['currency_code', 'amount']],
    ['book_flight', 4, 3, ['destination', 'travel_date', 'passenger_count']],
    ['other', 0, 0, []],
  ]);
  expect(router.entities.map((e) => e.type)).toEqual(['enum', 'number', 'location', 'date', 'number', 'pattern']);
  expect(router).toMatchObject({ threshold: 0.6, fallback_intent: 'other', other: { embeddings: { enabled: true } } });
  expect(router.glossary).toHaveLength(2);
  const wire = out.agents.Wire_Desk!.nlu!;
  expect(wire.intents.map((i) => [i.name, i.patterns])).toEqual([['confirm_wire', ['yes, send it', 'confirm']], ['cancel_wire', ['cancel', 'stop the wire']]]);
  expect(wire.entities[0]).toMatchObject({ name: 'wire_reference', type: 'pattern', pattern: 'WR-[0-9]{6}' });
  const travel = out.agents.Travel_Desk!.nlu!;
  expect(travel.intents.map((i) => i.name)).toEqual(['change_flight', 'cancel_flight']);
  expect(travel).toMatchObject({ fallback_intent: 'change_flight', threshold: 0.5 });
  expect(out.agents.Travel_Desk!.coordination.escalation?.triggers[0]?.when.src).toBe('intent.category == "cancel_flight"');
});

it('runs with the offline local model: routed by examples, a flow branch on intent, a pattern entity in the reply', () => {
  const d = new Driver(
    scripted({ llm: (cmd) => llmText(cmd.id, decideLocalReply({ messages: cmd.request.messages as never, tools: [] }).content) }),
    { ...out, entry_agent: 'Bank_Router' },
  );
  d.start();
  expect(d.send('Can I send a wire to Germany?')).toEqual(['Send the wire?']);
  expect(d.active()).toBe('Wire_Desk');
  expect(d.send('Yes, send it: WR-123456')).toEqual(['Sent WR-123456.']);
  expect(d.commands.filter((c) => c.type === 'call_llm').map((c) => (c.type === 'call_llm' ? [c.agent, c.purpose] : null))).toEqual([
    ['Bank_Router', 'classification'],
    ['Wire_Desk', 'classification'],
    ['Wire_Desk', 'classification'],
  ]);
});
