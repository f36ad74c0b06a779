// The patterns the OpenAPI document states mean what the API checks: a value a client builds
// from the document is accepted, and the checks they replaced agree with them.
import fc from 'fast-check';
import { NOT_BLANK_PATTERN, queryInt, ISO_DATETIME_PATTERN } from '../../../api/http/schemas';
import { ZDslContent } from '../../../api/agents/schemas';
import { isModelTier, MODEL_ID_PATTERN, MODEL_OR_TIER_PATTERN, parseModelId } from '../../../providers/llm';

describe('NOT_BLANK_PATTERN', () => {
  it('matches exactly the strings that trim() leaves non-empty', () => {
    const whitespace = fc.constantFrom(...' \t\n\v\f\r\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff\u180e'.split(''));
    const text = fc.array(fc.oneof(whitespace, fc.string({ minLength: 1, maxLength: 1, unit: 'binary' }))).map((parts) => parts.join(''));
    fc.assert(fc.property(text, (s) => NOT_BLANK_PATTERN.test(s) === s.trim().length > 0));
  });

  it('is what ABL sources are checked with', () => {
    expect(ZDslContent.safeParse(' \u3000\n').success).toBe(false);
    expect(ZDslContent.safeParse(' AGENT: A').success).toBe(true);
  });
});

describe('MODEL_ID_PATTERN', () => {
  it('only matches ids parseModelId reads', () => {
    fc.assert(fc.property(fc.stringMatching(MODEL_ID_PATTERN), (id) => parseModelId(id) !== undefined));
  });

  it('only matches tiers or readable ids in MODEL_OR_TIER_PATTERN', () => {
    fc.assert(fc.property(fc.stringMatching(MODEL_OR_TIER_PATTERN), (v) => isModelTier(v.toLowerCase()) || parseModelId(v) !== undefined));
  });

  it.each(['openai:gpt-4.1-mini', 'OpenAI:llama3.1:8b', 'anthropic:claude-haiku-4-5', 'local', 'LOCAL:anything', 'gpt-4o', 'o3-mini', 'Claude-3'])('takes %s', (id) => {
    expect(MODEL_ID_PATTERN.test(id)).toBe(true);
  });

  it.each(['0', 'llama3', 'openai:', 'Local', ' gpt-4o', 'openai:gpt 4'])('refuses %j', (id) => {
    expect(MODEL_ID_PATTERN.test(id)).toBe(false);
  });
});

describe('queryInt', () => {
  const offset = queryInt(0, Number.MAX_SAFE_INTEGER, 0);

  it('reads digits, and the default when absent', () => {
    expect(offset.parse('42')).toBe(42);
    expect(offset.parse(undefined)).toBe(0);
    expect(offset.parse(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each(['', ' 5', '1e3', '0x10', '-1', '1.5', '9007199254740993'])('refuses %j, which the document does not allow', (value) => {
    expect(offset.safeParse(value).success).toBe(false);
  });
});

describe('ISO_DATETIME_PATTERN', () => {
  it('matches only what Date reads', () => {
    fc.assert(fc.property(fc.stringMatching(ISO_DATETIME_PATTERN), (s) => !Number.isNaN(Date.parse(s))));
  });
});
