// Provider guardrails in the compiler (provider, category, threshold, on_error; the corpus under
// test/fixtures/abl-corpus/moderation), the decision a verdict leads to, and the offline rules.

import { join } from 'node:path';
import { compileProject } from '../../../abl';
import { moderationDecision, normalizeCategory } from '../../../abl/moderation';
import { localModeration } from '../../../providers/moderation/local';
import { compileAgentBody, readProject } from './helpers';

const guardrail = (body: string) => compileAgentBody(`GUARDRAILS:\n  g:\n${body.replace(/^/gm, '    ')}\n`);
const diags = (body: string) => guardrail(body).diagnostics.map((d) => `${d.code} ${d.line}:${d.column} ${d.message}`);

describe('the moderation corpus', () => {
  const out = compileProject(readProject(join(__dirname, '../../fixtures/abl-corpus/moderation')));

  it('compiles with no error and no warning (the llm_check is a judge)', () => {
    expect(out.diagnostics.map((d) => `${d.code} ${d.path}:${d.line}:${d.column}`)).toEqual([]);
    expect(out.ok).toBe(true);
  });

  it('keeps provider, categories, threshold and on_error in the IR, with both expanded', () => {
    const g = Object.fromEntries(out.agents.Content_Safety!.guardrails.map((x) => [x.name, { kind: x.kind, check: x.check, action: x.action, provider: x.provider ?? null }]));
    expect(g).toEqual({
      content_safety: { kind: 'input', check: null, action: 'block', provider: { name: 'openai', categories: ['hate'], threshold: 0.7, on_error: 'block' } },
      no_violence_input: { kind: 'input', check: null, action: 'block', provider: { name: 'openai', categories: ['violence'], threshold: 0.5, on_error: 'block' } },
      no_violence_output: { kind: 'output', check: null, action: 'block', provider: { name: 'openai', categories: ['violence'], threshold: 0.5, on_error: 'block' } },
      self_harm_watch: { kind: 'input', check: null, action: 'warn', provider: { name: 'openai', categories: ['self-harm'], threshold: null, on_error: 'allow' } },
      several: { kind: 'input', check: null, action: 'warn', provider: { name: 'openai', categories: ['harassment/threatening', 'violence/graphic', 'illicit'], threshold: 0.4, on_error: 'block' } },
      flagged_anything: { kind: 'output', check: null, action: 'redact', provider: { name: 'local', categories: [], threshold: null, on_error: 'block' } },
      tool_results: { kind: 'tool_output', check: null, action: 'block', provider: { name: 'openai', categories: ['sexual/minors'], threshold: null, on_error: 'block' } },
      judged: { kind: 'output', check: null, action: 'warn', provider: null },
    });
    // Priority 0 runs first; the rest keep file order.
    expect(out.agents.Content_Safety!.guardrails[0]!.name).toBe('content_safety');
    expect(out.agents.Yaml_Safety!.guardrails[0]!.provider).toEqual({ name: 'openai', categories: ['harassment'], threshold: 0.8, on_error: 'block' });
  });

  it('leaves the IR of check guardrails as it was (no provider key)', () => {
    const out2 = guardrail('kind: input\ncheck: word_count(input) < 8\naction: warn');
    expect(out2.agents.A!.guardrails[0]).not.toHaveProperty('provider');
    expect(out2.diagnostics).toEqual([]);
  });
});

describe('malformed provider guardrails', () => {
  it('refuses an unknown provider, category, a threshold outside 0..1 and a bad on_error, with their location', () => {
    expect(diags('kind: input\nprovider: azure_content_safety\ncategory: hate\naction: block')).toEqual([
      expect.stringMatching(/^E856 6:15 Guardrail "g": unknown provider "azure_content_safety" \(known: openai, openai_moderation, openai-moderation, local\)\. Write provider: openai/),
    ]);
    expect(diags('kind: input\nprovider: openai\ncategory: gambling\naction: block')).toEqual([expect.stringMatching(/^E856 7:15 Guardrail "g": unknown moderation category "gambling" \(known: harassment, /)]);
    expect(diags('kind: input\nprovider: openai\ncategory: hate\nthreshold: 70\naction: block')).toEqual([expect.stringMatching(/^E856 8:16 Guardrail "g": threshold 70 is outside 0\.\.1/)]);
    expect(diags('kind: input\nprovider: openai\nthreshold: high')).toEqual([expect.stringMatching(/^E214 7:16 /)]);
    expect(diags('kind: input\nprovider: openai\non_error: retry')).toEqual([expect.stringMatching(/^E856 7:15 Guardrail "g": on_error must be block \(fail closed\) or allow \(fail open\), found "retry"/)]);
  });

  it('refuses a guardrail with both check and provider, and provider keys without a provider', () => {
    expect(diags('kind: input\nprovider: openai\ncheck: word_count(input) < 8\naction: block')).toEqual([
      expect.stringMatching(/^E856 7:5 Guardrail "g": it has both check and provider/),
    ]);
    expect(diags('kind: input\ncheck: word_count(input) < 8\ncategory: hate\nthreshold: 0.5')).toEqual([
      expect.stringMatching(/^E856 7:5 Guardrail "g": category belongs to a provider guardrail, and this one has no provider/),
      expect.stringMatching(/^E856 8:5 Guardrail "g": threshold belongs to a provider guardrail/),
    ]);
  });

  it('refuses redact on a tool or handoff provider guardrail (it cannot replace part of a JSON value)', () => {
    expect(diags('kind: tool_input\nprovider: openai\naction: redact')).toEqual([expect.stringMatching(/^E856 7:5 Guardrail "g": action redact with a provider replaces the whole text/)]);
    expect(guardrail('kind: both\nprovider: openai\naction: redact').diagnostics).toEqual([]);
  });

  it('still says when neither check nor provider is given', () => {
    expect(diags('kind: input\naction: block')).toEqual([expect.stringMatching(/^E852 .*check is missing/)]);
  });
});

describe('categories and the decision', () => {
  it('reads the spellings people write as the provider ids', () => {
    expect(['hate', 'Self_Harm', 'self-harm', 'self harm', 'violence.graphic', 'harassment_threatening', 'SEXUAL/MINORS'].map(normalizeCategory)).toEqual([
      'hate', 'self-harm', 'self-harm', 'self-harm', 'violence/graphic', 'harassment/threatening', 'sexual/minors',
    ]);
    expect(normalizeCategory('spam')).toBeNull();
  });

  const verdict = { flagged: true, scores: { violence: 0.2, 'violence/graphic': 0.8, hate: 0.6 }, flaggedCategories: ['violence/graphic', 'hate'] };

  it('fires at or above the threshold on the highest score of the categories (subcategories included)', () => {
    expect(moderationDecision({ categories: ['violence'], threshold: 0.8 }, verdict)).toEqual({ fires: true, category: 'violence/graphic', score: 0.8 });
    expect(moderationDecision({ categories: ['violence'], threshold: 0.81 }, verdict)).toEqual({ fires: false, category: 'violence/graphic', score: 0.8 });
    expect(moderationDecision({ categories: ['sexual'], threshold: 0.1 }, verdict)).toEqual({ fires: false, category: null, score: 0 });
    expect(moderationDecision({ categories: [], threshold: 0.7 }, verdict)).toEqual({ fires: true, category: 'violence/graphic', score: 0.8 });
  });

  it('without a threshold, follows the provider’s own flags', () => {
    expect(moderationDecision({ categories: ['hate'], threshold: null }, verdict)).toEqual({ fires: true, category: 'hate', score: 0.6 });
    expect(moderationDecision({ categories: ['sexual'], threshold: null }, verdict).fires).toBe(false);
    expect(moderationDecision({ categories: [], threshold: null }, { flagged: true, scores: {}, flaggedCategories: [] }).fires).toBe(true);
  });
});

describe('the offline moderation rules', () => {
  it('scores a category 0.9 when one of its phrases appears as whole words, else 0', () => {
    const r = localModeration('I will kill you tomorrow');
    expect(r).toMatchObject({ flagged: true, model: 'local-rules' });
    expect(r.scores.violence).toBe(0.9);
    expect(r.scores.hate).toBe(0);
    expect(r.flaggedCategories).toEqual(['violence']);
  });

  it('counts a subcategory toward its parent, and ignores phrases inside other words', () => {
    const r = localModeration('Sometimes I want to end my life');
    expect(r.flaggedCategories).toEqual(['self-harm', 'self-harm/intent']);
    expect(localModeration('The skills of a killer app').flagged).toBe(false);
    expect(localModeration('Where is my order?')).toMatchObject({ flagged: false, flaggedCategories: [] });
  });

  it('is deterministic', () => {
    expect(localModeration('you idiot')).toEqual(localModeration('you idiot'));
  });
});
