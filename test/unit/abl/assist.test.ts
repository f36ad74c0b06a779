// Assist mode's pure parts: the catalogue an agent's IR gives, reading a model's answer into
// bounded suggestions and summaries (whatever the model wrote), and the offline model's answer.
import { assistCatalogue, buildAssistMessages, parseSuggestionAnswer, parseSummaryAnswer, type AssistCatalogue } from '../../../abl/assist';
import { decideLocalReply } from '../../../providers/llm/local';
import { compileAgentBody } from './helpers';

const BODY = `TOOLS:
  get_invoice(invoice_id: string) -> {id: string}
    type: http
    endpoint: "https://billing.example.com/invoices/{invoice_id}"
    method: GET
    description: "Fetch one invoice"
NLU:
  intents:
    - NAME: billing
      PATTERNS: ["invoice"]
FLOW:
  steps: [ask]
  ask:
    REASONING: false
    GATHER:
      - invoice_id: required
        prompt: "Which invoice?"
    THEN: ask
`;

function catalogue(): AssistCatalogue {
  const out = compileAgentBody(BODY);
  return assistCatalogue(out.agents.A!);
}

test('the catalogue lists what the agent declares', () => {
  expect(catalogue()).toMatchObject({
    agent: 'A',
    goal: 'g',
    tools: [{ name: 'get_invoice', description: 'Fetch one invoice', params: [{ name: 'invoice_id', required: true }] }],
    intents: [{ name: 'billing', patterns: ['invoice'] }],
    steps: [{ name: 'ask', prompts: ['Which invoice?'] }],
    handoffs: [],
    escalation: null,
  });
});

test("a model's answer is read bounded, and a name the agent does not declare becomes a hint", () => {
  const c = catalogue();
  const answer = parseSuggestionAnswer(
    '```json\n' +
      JSON.stringify({
        replies: ['one', 'two', 'three', 'four', 7],
        nextBestActions: [
          { kind: 'tool', name: 'get_invoice', label: 'Look it up', reason: 'asked', confidence: 3 },
          { kind: 'tool', name: 'delete_everything', label: 'Delete', reason: 'why not' },
          { kind: 'escalate', label: 'Escalate', reason: 'angry', confidence: 0.4 },
          { kind: 'step' },
        ],
      }) +
      '\n```',
    c,
  );
  expect(answer.replies).toEqual(['one', 'two', 'three']);
  expect(answer.nextBestActions).toEqual([
    { kind: 'tool', name: 'get_invoice', label: 'Look it up', reason: 'asked', confidence: 1 },
    { kind: 'hint', name: null, label: 'Delete', reason: 'why not', confidence: 0.5 },
    // The agent has no ESCALATE: advice, not a declared action.
    { kind: 'hint', name: null, label: 'Escalate', reason: 'angry', confidence: 0.4 },
  ]);
  // Prose instead of JSON is one reply; a summary in prose is the summary.
  expect(parseSuggestionAnswer('Ask for the invoice number.', c)).toEqual({ replies: ['Ask for the invoice number.'], nextBestActions: [] });
  expect(parseSummaryAnswer('They wanted a refund.')).toEqual({ summary: 'They wanted a refund.', disposition: 'other', keyFacts: [] });
  expect(parseSummaryAnswer('{"summary":"s","disposition":"won","keyFacts":["a",""]}')).toEqual({ summary: 's', disposition: 'other', keyFacts: ['a'] });
});

test('the offline model answers an assist request deterministically from the catalogue', () => {
  const c = catalogue();
  const messages = buildAssistMessages('suggest', c, { transcript: [{ author: 'USER', text: 'My invoice looks wrong' }], agents: ['a1'], transfers: [] });
  const ask = () => decideLocalReply({ messages: messages.map((m) => ({ role: m.role, content: m.content })), tools: [] }).content;
  const answer = parseSuggestionAnswer(ask(), c);
  expect(ask()).toBe(ask());
  expect(answer.nextBestActions.map((a) => [a.kind, a.name])).toEqual([
    ['intent', 'billing'],
    ['step', 'ask'],
    ['tool', 'get_invoice'],
  ]);
  // The best actions' own words: the intent, and the step's GATHER prompt.
  expect(answer.replies).toEqual(['Thanks for explaining. I understand: "My invoice looks wrong".', 'I can help you with billing.', 'Which invoice?']);
  const summary = buildAssistMessages('summary', c, { transcript: [{ author: 'USER', text: 'Refund INV-123456 please' }, { author: 'AGENT', text: "I'll call you back tomorrow" }], agents: ['a1'], transfers: [] });
  const parsed = parseSummaryAnswer(decideLocalReply({ messages: summary.map((m) => ({ role: m.role, content: m.content })), tools: [] }).content);
  expect(parsed).toMatchObject({ disposition: 'follow_up', keyFacts: expect.arrayContaining(['Reference: INV-123456']) });
});
