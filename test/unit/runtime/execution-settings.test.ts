// EXECUTION `fallback_model`, `llm_timeout` and `session_idle_timeout` in the IR, and in every model
// request the interpreter makes for the agent (reasoning and GATHER extraction): the activity applies
// the timeout and the fallback, the session workflow the idle time.

import { compileProject, type AgentIR } from '../../../abl';
import type { RuntimeCommand } from '../../../abl/runtime';
import { Driver, llmText, scripted } from './driver';

type LlmCommand = Extract<RuntimeCommand, { type: 'call_llm' }>;

function compiled(name: string, body: string) {
  const out = compileProject([{ path: `agents/${name}.agent.abl`, content: `AGENT: ${name}\nGOAL: "Help."\n${body}` }]);
  expect(out.diagnostics).toEqual([]);
  return { ...out, entry_agent: name };
}
const execution = (body: string): AgentIR['execution'] => compiled('A', body).agents.A!.execution;

describe('the IR', () => {
  it('keeps the three settings, in milliseconds', () => {
    expect(execution('EXECUTION:\n  fallback_model: openai:gpt-4o-mini\n  llm_timeout: 12s\n  session_idle_timeout: 5m\n')).toMatchObject({
      fallback_model: 'openai:gpt-4o-mini',
      llm_timeout_ms: 12_000,
      session_idle_timeout_ms: 300_000,
    });
  });

  it('has no fallback and no idle time of its own unless written; llm_timeout defaults to 30 s', () => {
    expect(execution('')).toMatchObject({ fallback_model: null, llm_timeout_ms: 30_000, session_idle_timeout_ms: null });
  });
});

describe('model requests', () => {
  it('a reasoning call carries the fallback model and the timeout', () => {
    const calls: LlmCommand[] = [];
    const d = new Driver(
      scripted({ llm: (cmd) => (calls.push(cmd), llmText(cmd.id, 'Hi.')) }),
      compiled('A', 'EXECUTION:\n  model: openai:gpt-4o\n  fallback_model: anthropic:claude-3-5-haiku\n  llm_timeout: 8s\n'),
    );
    d.start();
    d.send('hello');
    expect(calls.map((c) => c.request)).toEqual([
      expect.objectContaining({ model: 'openai:gpt-4o', fallbackModel: 'anthropic:claude-3-5-haiku', timeoutMs: 8000 }),
    ]);
  });

  it('a GATHER extraction call carries them too; without a fallback there is none in the request', () => {
    const calls: LlmCommand[] = [];
    const d = new Driver(
      scripted({ llm: (cmd) => (calls.push(cmd), llmText(cmd.id, '{"city": "Oslo"}')) }),
      compiled('A', 'EXECUTION:\n  llm_timeout: 3s\nFLOW:\n  ask:\n    REASONING: false\n    GATHER:\n      - city: required\n        prompt: "Which city?"\n    STRATEGY: llm\n    RESPOND: "Off to {{city}}."\n'),
    );
    d.start();
    d.send('Oslo please');
    expect(calls.map((c) => c.purpose)).toContain('extraction');
    for (const c of calls) {
      expect(c.request.timeoutMs).toBe(3000);
      expect(c.request).not.toHaveProperty('fallbackModel');
    }
  });
});
