// NLU in a turn: an agent with an NLU section classifies each user message with its model (one
// `call_llm`, purpose `classification`) before anything else of its turn runs, and the result is
// `intent` (category, confidence, entities, source) for that agent for the rest of the turn. The
// request and the reading of the answer are in abl/nlu.ts.

import { classificationMessages, modelResult, parseClassificationAnswer, patternResult, type IntentResult } from '../nlu';
import type { AgentIR } from '../ir';
import type { ThreadState } from './contract';
import { nluOn } from './options';
import type { TurnContext } from './turn-context';
import { llmLimits } from './values';

export class Nlu {
  /** Thread id → its classification of this turn's message (`intent` in that thread's expressions). */
  private readonly results: Record<string, IntentResult> = {};

  constructor(private readonly t: TurnContext) {}

  /** `intent` for the thread this turn, or undefined when its agent classified nothing. */
  intentOf(th: ThreadState): IntentResult | undefined {
    return Object.hasOwn(this.results, th.id) ? this.results[th.id] : undefined;
  }

  /**
   * Classifies `input` for `th` when its agent has NLU intents: once per thread and turn (an agent
   * handed the same message again keeps its result), not when the message's metadata already
   * carries an `intent` (the caller classified it), and not in runs recorded before NLU ran.
   */
  classify(th: ThreadState, agent: AgentIR, input: string): void {
    const nlu = agent.nlu;
    if (!nlu || nlu.intents.length === 0 || Object.hasOwn(this.results, th.id) || Object.hasOwn(this.t.meta, 'intent')) return;
    if (!nluOn(this.t.options)) return;
    const { system, user } = classificationMessages(nlu, input);
    const ev = this.t.effect(
      {
        type: 'call_llm',
        agent: agent.metadata.name,
        purpose: 'classification',
        request: {
          model: nlu.model ?? agent.execution.model,
          tier: 'fast',
          temperature: 0,
          ...llmLimits(agent),
          messages: [{ role: 'system', content: system }, { role: 'user', content: user }],
          tools: [],
        },
      },
      null,
    );
    let result: IntentResult;
    if (ev.type !== 'llm_result' || !ev.ok) {
      this.t.error(th, 'nlu_error', `Classification call failed: ${ev.type === 'llm_result' && !ev.ok ? ev.error.message : `unexpected ${ev.type}`}; the message is classified by PATTERNS`);
      result = patternResult(nlu, input);
    } else {
      const parsed = parseClassificationAnswer(nlu, ev.content, ev.toolCalls);
      if (!parsed.ok) {
        this.t.error(th, 'nlu_error', `Unreadable classification answer (${parsed.error}); the message is classified by PATTERNS`);
        result = patternResult(nlu, input);
      } else {
        if (parsed.dropped.length > 0) this.t.error(th, 'nlu_error', `Entities not kept (not declared, or not of their type): ${parsed.dropped.join(', ')}`);
        result = modelResult(nlu, parsed);
        if (parsed.intent !== null && result.source === 'none') {
          this.t.decision(th, 'intent', `${parsed.intent}: not used`, `confidence ${parsed.confidence.toFixed(2)}, threshold ${nlu.threshold}`);
        }
      }
    }
    this.results[th.id] = result;
    this.t.decision(th, 'intent', result.category ?? 'none', `${result.source}, confidence ${result.confidence.toFixed(2)}${Object.keys(result.entities).length ? `, entities ${Object.keys(result.entities).join(', ')}` : ''}`);
  }

}
