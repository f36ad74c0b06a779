// `type: workflow` tools: what the compiler makes of them, which workflow a tool may start (only the
// worker's allow-list, at the deployment's version) and the input its param_mapping builds.
import { compileProject } from '../../../abl';
import { AGENT_WORKFLOWS, mapWorkflowInput, resolveAgentWorkflow } from '../../../workflows/agent-workflows';
import * as registered from '../../../workflows';

const agent = (binding: string) => compileProject([{ path: 'agents/Ops.agent.abl', content: `AGENT: Ops
GOAL: "Notify."
TOOLS:
  notify(target: string, note: string) -> {status: number}
${binding}
` }]);

describe('compiling a workflow tool', () => {
  it('keeps workflow_id, mode, timeout_ms and param_mapping, with no warning', () => {
    const c = agent(`    type: workflow
    workflow_id: deliver_webhook
    mode: async
    timeout_ms: 5000
    param_mapping:
      url: target
      payload: note`);
    expect(c.diagnostics).toEqual([]);
    const tool = c.agents.Ops!.tools[0]!;
    expect(tool.binding).toEqual({ type: 'workflow', workflow_id: 'deliver_webhook', mode: 'async', timeout_ms: 5000, param_mapping: { url: 'target', payload: 'note' } });
    expect(tool.timeout_ms).toBe(5000);
  });

  it('defaults to sync with 30 s, and needs a workflow_id (E403)', () => {
    const c = agent(`    type: workflow`);
    expect(c.diagnostics.map((d) => d.code)).toEqual(['E403']);
    expect(c.agents.Ops!.tools[0]!.binding).toMatchObject({ mode: 'sync', timeout_ms: 30_000, param_mapping: {} });
  });
});

describe('the allow-list', () => {
  it('resolves an offered workflow at the manifest version, latest for none or auto', () => {
    expect(resolveAgentWorkflow('deliver_webhook', null)).toEqual({ ok: true, type: 'deliverWebhookWorkflow', version: '1' });
    expect(resolveAgentWorkflow('deliver_webhook', 'auto')).toEqual({ ok: true, type: 'deliverWebhookWorkflow', version: '1' });
    expect(resolveAgentWorkflow('deliver_webhook', '7')).toEqual({ ok: false, error: 'Workflow deliver_webhook has no version 7 (offered: 1)' });
  });

  it('refuses platform workflows and inherited names', () => {
    for (const name of ['agentSession', 'humanTaskWorkflow', 'deliverWebhookWorkflow', 'constructor', '__proto__']) {
      expect(resolveAgentWorkflow(name, null)).toEqual({ ok: false, error: `Workflow ${name} is not offered to agents by this worker` });
    }
  });

  it('offers only workflow types the worker registers', () => {
    const types = Object.values(AGENT_WORKFLOWS).flatMap((e) => Object.values(e.versions));
    for (const type of types) expect(typeof (registered as Record<string, unknown>)[type]).toBe('function');
  });
});

describe('param_mapping', () => {
  it('builds the input from argument paths, or passes the arguments as they are', () => {
    const args = { target: 'https://x.example/h', order: { id: 42 }, note: 'n' };
    expect(mapWorkflowInput(args, { url: 'target', payload: 'order.id', missing: 'nope.x' })).toEqual({ url: 'https://x.example/h', payload: 42 });
    expect(mapWorkflowInput(args, {})).toBe(args);
  });
});
