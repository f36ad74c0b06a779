// Agents whose one flow step calls a `type: sandbox` tool and answers with its result, or with
// "Failed." when the call fails (the step's ON_FAIL). Shared by the code-tool tests.
import { type TraceEvent } from './agents';

export interface SandboxAgentOptions {
  /** The tool's signature line, e.g. `shout(city: string) -> {c: string}`. */
  signature: string;
  /** The CALL, e.g. `shout(city = "Paris")`. */
  call: string;
  code: string;
  /** Extra binding lines (`timeout: 500`, `entrypoint: handler`). */
  binding?: string[];
  runtime?: 'javascript' | 'python';
  /** The reply on success; `{{out...}}` reads the result. */
  respond: string;
}

export function sandboxAgent(name: string, o: SandboxAgentOptions): string {
  const code = o.code
    .trim()
    .split('\n')
    .map((l) => `      ${l}`)
    .join('\n');
  const binding = (o.binding ?? []).map((l) => `    ${l}\n`).join('');
  return `AGENT: ${name}
GOAL: "Run a piece of code."
TOOLS:
  ${o.signature}
    type: sandbox
    runtime: ${o.runtime ?? 'javascript'}
${binding}    code: |
${code}
FLOW:
  steps: [go]
  go:
    REASONING: false
    CALL: ${o.call}
    AS: out
    ON_SUCCESS:
      RESPOND: "${o.respond}"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "Failed."
      THEN: COMPLETE
`;
}

/** The first tool_result trace event's data. */
export function toolResult(events: TraceEvent[]): Record<string, unknown> {
  const found = events.find((e) => e.type === 'tool_result');
  if (!found) throw new Error(`no tool_result in ${events.map((e) => e.type).join(', ')}`);
  return found.data;
}
