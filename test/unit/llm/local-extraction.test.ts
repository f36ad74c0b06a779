// The offline `local` model answers GATHER extraction requests (abl/gather-llm.ts) with the
// deterministic pattern extractor, so flows with STRATEGY llm|hybrid work in the offline dev stack.
import { compileProject, type GatherFieldIR } from '../../../abl';
import { extractGatherValues } from '../../../abl/gather';
import { extractionMessages, parseExtractionAnswer, parseValidationAnswer, validationMessages } from '../../../abl/gather-llm';
import { decideLocalReply, LocalProvider } from '../../../providers/llm/local';

const AGENT = `AGENT: Intake
GOAL: "Take a claim."
FLOW:
  steps: [ask]
  ask:
    REASONING: false
    GATHER:
      - amount: required
        type: number
      - contact: required
        type: email
      - plan: required
        validate: enum(basic, premium)
      - policy: required
        validate: pattern(^POL-\\d{4}$)
      - when: optional
        type: date
      - phone: optional
        type: phone
      - nickname: optional
        extraction_hints: ["call me"]
    STRATEGY: llm
`;

function fields(): GatherFieldIR[] {
  const compiled = compileProject([{ path: 'agents/Intake.agent.abl', content: AGENT }]);
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  return compiled.agents.Intake?.flow?.steps.ask?.gather?.fields ?? [];
}

const request = (text: string, expecting: string | null = null) => {
  const { system, user } = extractionMessages(fields(), text, expecting);
  return { model: 'local', messages: [{ role: 'system' as const, content: system }, { role: 'user' as const, content: user }] };
};

describe('local model: GATHER extraction requests', () => {
  const text = 'Claim of $1,250.50 for POL-1234, premium plan, reach me at Ann@Example.com or +1 555 123 4567, call me Annie';

  it('answers with the values the pattern extractor finds, as one JSON object', async () => {
    const res = await new LocalProvider().complete(request(text));
    expect(res.toolCalls).toEqual([]);
    expect(res.finishReason).toBe('stop');
    const parsed = parseExtractionAnswer(res.content);
    expect(parsed).toEqual({
      ok: true,
      values: { amount: 1250.5, contact: 'ann@example.com', plan: 'premium', policy: 'POL-1234', phone: '+15551234567', nickname: 'Annie' },
    });
    // The same values as STRATEGY: pattern on that text.
    expect(parsed.ok && parsed.values).toEqual(extractGatherValues(fields(), text).values);
  });

  it('is deterministic and leaves out what the message does not give', () => {
    const a = decideLocalReply(request('premium please'));
    const b = decideLocalReply(request('premium please'));
    expect(a).toEqual(b);
    expect(JSON.parse(a.content)).toEqual({ plan: 'premium' });
    expect(JSON.parse(decideLocalReply(request('basic, from 14 March 2025')).content)).toEqual({ plan: 'basic', when: '2025-03-14' });
  });

  it('gives the expected plain string field the whole message, like the pattern strategy', () => {
    const one = fields().filter((f) => f.name === 'nickname');
    const { system, user } = extractionMessages(one, 'Annie B', 'nickname');
    expect(JSON.parse(decideLocalReply({ messages: [{ role: 'system', content: system }, { role: 'user', content: user }] }).content)).toEqual({ nickname: 'Annie B' });
  });

  it('answers other requests with its ordinary rules', () => {
    const reply = decideLocalReply({ messages: [{ role: 'system', content: 'GOAL: help' }, { role: 'user', content: 'amount is 5' }] });
    expect(reply.content).toContain('[local model]');
  });
});

describe('local model: LLM-judged validation requests', () => {
  it('accepts the value and says it did not judge the rule', () => {
    const { system, user } = validationMessages({ name: 'pet', type: 'string', validate: [{ kind: 'llm', rule: 'sounds like a pet name' }] }, 'Rex');
    const reply = decideLocalReply({ messages: [{ role: 'system', content: system }, { role: 'user', content: user }] });
    const verdict = parseValidationAnswer(reply.content);
    expect(verdict).toEqual({ ok: true, valid: true, reason: expect.stringContaining('offline local model') });
  });
});
