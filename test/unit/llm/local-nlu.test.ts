// The offline `local` model's answer to an NLU classification request: the same request always
// gives the same intent, confidence and entities, by PATTERNS first, then example overlap.
import { compileProject } from '../../../abl';
import { classificationMessages } from '../../../abl/nlu';
import { LocalProvider } from '../../../providers/llm/local';

const nlu = compileProject([
  {
    path: 'agents/A.agent.abl',
    content: `AGENT: A
GOAL: "g"
NLU:
  intents:
    - NAME: send_wire
      PATTERNS: ["wire transfer"]
      EXAMPLES: ["I need to wire money to Germany"]
    - NAME: book_flight
      EXAMPLES: ["I want to fly to Paris next Tuesday", "Find me a round trip to London"]
  entities:
    - NAME: currency
      TYPE: enum
      VALUES: [USD, EUR]
      SYNONYMS:
        USD: [dollars, us dollars]
        EUR: [euros]
    - NAME: day
      TYPE: date
    - NAME: place
      TYPE: location
`,
  },
]).agents.A!.nlu!;

async function classify(text: string): Promise<unknown> {
  const { system, user } = classificationMessages(nlu, text);
  const r = await new LocalProvider().complete({ model: 'local', messages: [{ role: 'system', content: system }, { role: 'user', content: user }] });
  expect(r.finishReason).toBe('stop');
  return JSON.parse(r.content);
}

describe('local model: NLU classification', () => {
  it('a pattern wins with confidence 1, and enum synonyms give their value', async () => {
    expect(await classify('A wire transfer of 300 US dollars please')).toEqual({ intent: 'send_wire', confidence: 1, entities: { currency: 'USD' } });
  });

  it('otherwise the best example overlap, with a date and no location (left to a real model)', async () => {
    expect(await classify('fly me to Paris on 2026-05-01')).toEqual({ intent: 'book_flight', confidence: 0.67, entities: { day: '2026-05-01' } });
    expect(await classify('a round trip somewhere warm, paying in euros')).toEqual({ intent: 'book_flight', confidence: 0.5, entities: { currency: 'EUR' } });
  });

  it('nothing in common is a null intent with confidence 0, and the answer is the same every time', async () => {
    const first = await classify('what is the weather like');
    expect(first).toEqual({ intent: null, confidence: 0, entities: {} });
    expect(await classify('what is the weather like')).toEqual(first);
  });
});
