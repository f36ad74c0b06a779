// GATHER `STRATEGY: llm|hybrid` in the interpreter: one `call_llm` command (purpose `extraction`)
// for the fields still open, its answer parsed defensively and validated like pattern values.
// The request/answer protocol lives in abl/gather-llm.ts (shared with the offline `local` model).

import { acceptExtracted, extractionMessages, parseExtractionAnswer } from '../gather-llm';
import type { AgentIR, GatherFieldIR } from '../ir';
import type { RuntimeCommand, RuntimeEvent } from './contract';

export type ExtractionCall = Omit<Extract<RuntimeCommand, { type: 'call_llm' }>, 'id'>;

/** What the extraction needs of the turn: its effect (journalled LLM call) and its trace. */
export interface ExtractionHost {
  call(draft: ExtractionCall): RuntimeEvent;
  error(kind: string, message: string): void;
}

/**
 * Asks the model for `fields` in `text`. A failed call or an unreadable answer extracts nothing and
 * records an `extraction_error` trace event; the step then asks again as after any empty answer.
 */
export function llmExtract(
  host: ExtractionHost,
  agent: AgentIR,
  fields: readonly GatherFieldIR[],
  text: string,
  expecting: string | null,
): ReturnType<typeof acceptExtracted> {
  const { system, user } = extractionMessages(fields, text, expecting && fields.some((f) => f.name === expecting) ? expecting : null);
  const ev = host.call({
    type: 'call_llm',
    agent: agent.metadata.name,
    purpose: 'extraction',
    request: {
      model: agent.execution.model,
      tier: 'fast',
      temperature: 0,
      messages: [{ role: 'system', content: system }, { role: 'user', content: user }],
      tools: [],
    },
  });
  const none = { values: {}, invalid: [] };
  if (ev.type !== 'llm_result' || !ev.ok) {
    host.error('extraction_error', `Extraction call failed: ${ev.type === 'llm_result' && !ev.ok ? ev.error.message : `unexpected ${ev.type}`}`);
    return none;
  }
  const parsed = parseExtractionAnswer(ev.content, ev.toolCalls);
  if (!parsed.ok) {
    host.error('extraction_error', `Unreadable extraction answer (${parsed.error}); nothing extracted`);
    return none;
  }
  return acceptExtracted(fields, parsed.values);
}
