// Tool calls: arguments, the constraints and tool guardrails around a call, the `call_tool` or
// `suspend_for_callback` effect, what comes back, and binding results to variables.

import { sensitiveFields } from '../gather';
import type { CallIR, FlowStepIR, Json, ToolIR } from '../ir';
import type { RuntimeEvent, ThreadState } from './contract';
import { isSetValue, toJson } from './values';
import type { ToolOutcome, TurnContext } from './turn-context';
import { errorType } from './on-error';
import type { Guards } from './guards';
import { applyPiiAccess, limitsAnything, toolAccessOf } from '../tool-access';
import { toolAccessOn, toolConfirmationOn } from './options';
import { SENSITIVE_MASK } from '../gather';

export class ToolCalls {
  constructor(private readonly t: TurnContext) {}

  /** Argument names whose value is that of one of the agent's `sensitive` GATHER fields. */
  private sensitiveArgs(th: ThreadState, args: Record<string, Json>): string[] {
    const names = sensitiveFields(this.t.agent(th));
    if (names.size === 0) return [];
    const secrets = new Set([...names].map((n) => th.vars[n]).filter(isSetValue).map((v) => JSON.stringify(v)));
    return Object.keys(args).filter((k) => secrets.has(JSON.stringify(args[k])));
  }

  /**
   * What the tool may receive (`pii_access`, `context_access`): its arguments with PII and
   * sensitive values masked or withheld, and the message metadata keys the workflow may send it.
   */
  private limitAccess(th: ThreadState, tool: ToolIR, args: Record<string, Json>): { args: Record<string, Json>; contextKeys?: string[] } {
    const access = toolAccessOf(tool);
    if (!limitsAnything(access) || !toolAccessOn(this.t.options)) return { args };
    const sensitive = new Map<string, Json>();
    for (const name of sensitiveFields(this.t.agent(th))) if (isSetValue(th.vars[name])) sensitive.set(name, toJson(th.vars[name]));
    return { args: applyPiiAccess(args, access.pii, sensitive), ...(access.context ? { contextKeys: access.context } : {}) };
  }

  toolOf(th: ThreadState, name: string): ToolIR | undefined {
    return this.t.agent(th).tools.find((t) => t.name === name);
  }

  /** Executes one tool call (constraints, then a call_tool or suspend_for_callback effect). */
  invokeTool(th: ThreadState, tool: ToolIR, rawArgs: Record<string, Json>): ToolOutcome {
    // A batch checked the constraints and input guardrails when it issued the call (toolBatch);
    // binding finds the call's result by its issued id, whatever the arguments.
    const binding = this.t.batch?.mode === 'bind';
    if (!binding && !this.t.guards.constraintsOk(th, tool.name, `call ${tool.name}`)) {
      return { ok: false, blocked: true, error: { kind: 'constraint', message: `The call to ${tool.name} was blocked by a constraint.` } };
    }
    const guarded: ReturnType<Guards['guardTool']> = binding ? { value: rawArgs } : this.t.guards.guardTool(th, 'tool_input', tool, rawArgs);
    if ('blocked' in guarded) return guarded.blocked;
    const { args, contextKeys } = this.limitAccess(th, tool, guarded.value as Record<string, Json>);
    const context = contextKeys ? { contextKeys } : {};
    const agent = this.t.agent(th);
    // `confirmation`: the user says yes before the call goes out (not within a batch of parallel calls, which are never such tools).
    if (!binding && needsConfirmation(tool) && toolConfirmationOn(this.t.options)) {
      const declined = this.confirm(th, tool, args);
      if (declined) {
        this.t.error(th, declined.error.kind, declined.error.message, tool.name);
        return declined;
      }
    }
    // A mocked tool is answered by the workflow at once, so even an async one is a plain call_tool.
    const async = tool.binding.type === 'http' && !this.t.options.mockedTools?.has(tool.name) ? tool.binding.async : null;
    let ev: RuntimeEvent;
    if (async) {
      const prev = th.status;
      th.status = 'suspended';
      ev = this.t.effect(
        { type: 'suspend_for_callback', agent: th.agent, tool: tool.name, args, timeoutMs: async.timeoutMs, ...context },
        { kind: 'callback', tool: tool.name, expiresAtMs: this.t.ctx.now() + async.timeoutMs },
      );
      th.status = prev;
      this.t.s.status = 'active';
      this.t.s.pending = null;
    } else {
      const sensitiveArgs = this.sensitiveArgs(th, args);
      ev = this.t.effect({
        type: 'call_tool',
        agent: th.agent,
        tool: tool.name,
        args,
        timeoutMs: tool.timeout_ms || agent.execution.tool_timeout_ms,
        retries: tool.binding.type === 'http' ? tool.binding.retry : 0,
        ...(sensitiveArgs.length > 0 ? { sensitiveArgs } : {}),
        ...context,
      }, null);
    }
    let out: ToolOutcome;
    if (ev.type === 'callback') {
      const p = ev.payload;
      const status = p && typeof p === 'object' && !Array.isArray(p) ? p.status : undefined;
      out = status === 'failed' || status === 'error'
        ? { ok: false, error: { kind: 'tool_error', message: `${tool.name} reported ${String(status)}` } }
        : { ok: true, value: p };
    } else if (ev.type === 'wait_expired') {
      out = { ok: false, error: { kind: 'tool_timeout', message: `${tool.name} did not call back in time` } };
    } else if (ev.type === 'tool_result') {
      out = ev.ok ? { ok: true, value: ev.value } : { ok: false, error: ev.error };
    } else {
      out = { ok: false, error: { kind: 'tool_error', message: `Unexpected ${ev.type} for ${tool.name}` } };
    }
    if (out.ok && (out.value === null || out.value === '')) out = { ok: false, error: { kind: 'tool_error', message: `${tool.name} returned an empty result` } };
    if (out.ok) {
      const seen = this.t.guards.guardTool(th, 'tool_output', tool, out.value);
      const changed = 'blocked' in seen || (seen.value !== out.value && JSON.stringify(seen.value) !== JSON.stringify(out.value));
      // The workflow recorded the raw result in its tool_result event: have it keep only this.
      if (changed && ev.type === 'tool_result') {
        this.t.trace.push({ type: 'tool_output_guarded', data: { commandId: ev.commandId, output: 'blocked' in seen ? null : seen.value, blocked: 'blocked' in seen } });
      }
      out = 'blocked' in seen ? seen.blocked : { ok: true, value: seen.value };
    }
    if (!out.ok && !out.blocked) this.t.error(th, out.error.kind, out.error.message, tool.name);
    if (out.ok) this.t.memory.recall(th, `tool:${tool.name}:after`);
    return out;
  }

  /**
   * Asks the user to confirm the call, showing its arguments (sensitive values masked), and waits
   * for the next message. Null once the user said yes; the failed outcome when they did not, or
   * when no user can answer (a delegated agent).
   */
  private confirm(th: ThreadState, tool: ToolIR, args: Record<string, Json>): Extract<ToolOutcome, { ok: false }> | null {
    if (this.t.s.mode === 'delegate') {
      return { ok: false, error: { kind: 'tool_error', message: `${tool.name} needs the user's confirmation, which a delegated agent cannot ask for` } };
    }
    const sensitive = new Set(this.sensitiveArgs(th, args));
    const shown = Object.entries(args).map(([k, v]) => `${k}: ${sensitive.has(k) ? SENSITIVE_MASK : typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
    const question = this.t.message(th, 'confirm_tool', 'Please confirm: {{tool}}{{#if arguments}} with {{arguments}}{{/if}}. Reply yes to go ahead or no to cancel.');
    const text = this.t.render(th, question, { tool: tool.description ? `${tool.name} (${tool.description})` : tool.name, arguments: shown });
    // The replay of this turn with the answer says it again, but only what follows is returned.
    this.t.guards.respond(th, text);
    const ev = this.t.effect({ type: 'confirm_tool', agent: th.agent, tool: tool.name, args }, { kind: 'confirmation', tool: tool.name });
    if (ev.type === 'confirmation_result' && ev.confirmed) {
      this.t.trace.push({ type: 'decision', data: { decisionKind: 'tool_confirmation', decision: 'confirmed', agent: th.agent, reasoning: `${tool.name}: the user confirmed the call` } });
      return null;
    }
    this.t.trace.push({ type: 'decision', data: { decisionKind: 'tool_confirmation', decision: 'declined', agent: th.agent, reasoning: `${tool.name}: the user did not confirm the call` } });
    return { ok: false, error: { kind: 'tool_error', message: `The user did not confirm the call to ${tool.name}` } };
  }

  private callArgs(th: ThreadState, tool: ToolIR | undefined, call: CallIR): Record<string, Json> {
    const args: Record<string, Json> = {};
    for (const [k, e] of Object.entries(call.with)) args[k] = toJson(this.t.eval(th, e));
    const free = (tool?.params ?? []).filter((p) => !Object.hasOwn(args, p.name));
    call.positional.forEach((e, i) => {
      const p = free[i];
      if (p) args[p.name] = toJson(this.t.eval(th, e));
    });
    for (const p of tool?.params ?? []) if (args[p.name] === undefined && p.default !== undefined) args[p.name] = toJson(p.default);
    return args;
  }

  bindResult(th: ThreadState, tool: ToolIR, as: string | null, out: ToolOutcome): void {
    if (out.ok) {
      if (tool.store_result) {
        const names = [...new Set([as ?? tool.name, 'result', tool.name, `last_${tool.name}_result`])];
        for (const n of names) {
          if (n === (as ?? tool.name)) this.t.setVar(th, n, out.value);
          else th.vars[n] = out.value;
        }
      }
      for (const set of tool.on_result) this.t.setVar(th, set.target, this.t.eval(th, set.value, { result: out.value }));
    } else {
      for (const set of tool.on_error) this.t.setVar(th, set.target, this.t.eval(th, set.value, { error: out.error }));
    }
  }

  /** A flow or lifecycle CALL: arguments, the call (with ON_ERROR retries) and result binding. */
  runCall(th: ThreadState, call: CallIR, step: FlowStepIR | null): ToolOutcome {
    const tool = this.toolOf(th, call.tool);
    if (!tool) {
      this.t.error(th, 'tool_error', `Tool ${call.tool} is not available to ${th.agent}`);
      return { ok: false, error: { kind: 'tool_error', message: `Tool ${call.tool} not found` } };
    }
    const args = this.callArgs(th, tool, call);
    let out = this.invokeTool(th, tool, args);
    if (!out.ok && !out.blocked) {
      const h = this.t.errors.errorHandler(th, step, errorType(out.error));
      for (let i = 0; i < (h?.retry ?? 0) && !out.ok; i++) out = this.invokeTool(th, tool, args);
    }
    this.bindResult(th, tool, call.as, out);
    return out;
  }
}

/** `confirmation`: `always`, or `when_side_effects` on a tool hinted `side_effects: true`. */
export function needsConfirmation(tool: ToolIR): boolean {
  const c = tool.confirmation;
  return c !== null && (c.require === 'always' || (c.require === 'when_side_effects' && tool.hints.side_effects));
}
