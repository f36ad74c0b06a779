// FLOW reducer (ABL.md §8): steps, their keys in execution order, branches and digressions.

import type { MapNode, PairNode, ValueNode } from '../ast';
import type { DigressionIR, ErrorHandlerIR, FlowIR, FlowStepIR, Json, StepGatherIR, TransformIR } from '../ir';
import { compileActionHandlers, compileActions, compileBranches, compileCall, compileSet, compileTransition } from './actions';
import { pairValue, toJson, type CompileContext, type Fields } from './context';
import { compileErrorHandlers } from './errors';
import { compileStepGather } from './gather';
import { compileVoiceBlock } from './voice';

const STEP_KEYS = [
  'reasoning', 'goal', 'available_tools', 'exit_when', 'max_turns', 'when', 'max_attempts', 'on_exhausted', 'respond',
  'present', 'gather', 'strategy', 'corrections', 'complete_when', 'call', 'with', 'as', 'set', 'clear', 'check', 'on_fail',
  'transform', 'on_result', 'on_success', 'on_input', 'then', 'digressions', 'sub_intents', 'on_error', 'delegate',
  'actions', 'on_action', 'voice', 'rich_content',
];
// ON_ACTION is not among them: its handlers are flow branches (compileActionHandlers).
const CHANNEL_KEYS = ['actions', 'voice', 'rich_content'];

export function compileDigressions(ctx: CompileContext, node: ValueNode | null, resumeDefault: boolean): DigressionIR[] {
  if (!node) return [];
  if (node.kind !== 'List') {
    ctx.report('E210', node.loc, { what: 'DIGRESSIONS', expected: 'a list of - INTENT: entries', found: 'a value' });
    return [];
  }
  const out: DigressionIR[] = [];
  for (const item of node.items) {
    if (item.kind !== 'Map') {
      ctx.report('E210', item.loc, { what: 'A digression', expected: '- INTENT: "name" with KEYWORDS/RESPOND/GOTO', found: 'a value' });
      continue;
    }
    const f = ctx.fields(item);
    const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
    const intent = ctx.str(get('intent'), 'INTENT');
    if (!intent) ctx.report('E212', item.loc, { what: 'A digression', key: 'INTENT' });
    let action: DigressionIR['action'] = resumeDefault ? { kind: 'resume' } : { kind: 'none' };
    const goto = ctx.str(get('goto'), 'GOTO');
    const delegate = ctx.str(get('delegate'), 'DELEGATE');
    const then = compileTransition(ctx, get('then'));
    if (goto) action = { kind: 'goto', step: goto };
    else if (delegate) action = { kind: 'delegate', agent: delegate };
    else if (then?.kind === 'complete') action = { kind: 'complete' };
    else if (then?.kind === 'goto') action = { kind: 'goto', step: then.step };
    else if (ctx.bool(get('resume'), 'RESUME') === true) action = { kind: 'resume' };
    ctx.extras(f, ['intent', 'keywords', 'condition', 'respond', 'goto', 'resume', 'delegate', 'then', 'clear'], 'digression');
    out.push({
      intent: intent ?? '',
      keywords: ctx.strList(get('keywords'), 'KEYWORDS'),
      condition: ctx.expr(get('condition'), 'CONDITION'),
      respond: ctx.text(get('respond'), 'RESPOND'),
      clear: ctx.strList(get('clear'), 'CLEAR'),
      action,
      loc: ctx.loc(item.loc),
    });
  }
  return out;
}

function compileTransform(ctx: CompileContext, node: ValueNode | null): TransformIR | null {
  if (!node) return null;
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: 'TRANSFORM', expected: 'SOURCE/AS/INTO/FILTER/MAP/SORT_BY/LIMIT lines', found: 'a value' });
    return null;
  }
  const f = ctx.fields(node);
  const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
  const source = ctx.expr(get('source'), 'TRANSFORM SOURCE');
  if (!source) ctx.report('E212', node.loc, { what: 'TRANSFORM', key: 'SOURCE' });
  const into = ctx.str(get('into'), 'INTO');
  if (!into) ctx.report('E212', node.loc, { what: 'TRANSFORM', key: 'INTO' });
  const map: Record<string, ReturnType<CompileContext['exprText']>> = {};
  const m = get('map');
  if (m && m.kind !== 'Map') ctx.report('E210', m.loc, { what: 'TRANSFORM MAP', expected: 'field: expression lines', found: 'a value' });
  if (m?.kind === 'Map') for (const e of ctx.pairs(m, 'TRANSFORM MAP', 'field: expression lines')) map[e.key] = ctx.valueExpr(ctx.value(e), `MAP ${e.key}`) ?? { src: '', ast: null };
  const sort = ctx.str(get('sort_by'), 'SORT_BY');
  const sm = sort ? /^\s*([\w.]+)\s*(asc|desc)?\s*$/i.exec(sort) : null;
  return {
    source: source ?? { src: '', ast: null },
    as: ctx.str(get('as'), 'AS') ?? 'item',
    into: into ?? '',
    filter: ctx.expr(get('filter'), 'FILTER'),
    map,
    sort_by: sm ? { field: sm[1] as string, order: (sm[2]?.toLowerCase() as 'asc' | 'desc' | undefined) ?? 'asc' } : null,
    limit: ctx.num(get('limit'), 'LIMIT'),
  };
}

function compileStep(ctx: CompileContext, pair: PairNode): FlowStepIR {
  const node = pair.children;
  const f: Fields = ctx.fields(node?.kind === 'Map' ? node : null, { step: true });
  if (!node || node.kind !== 'Map') ctx.report('E210', pair.loc, { what: `Step '${pair.key}'`, expected: 'a block of step keys (REASONING, RESPOND, THEN, …)', found: node ? 'a list' : 'nothing' });
  const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
  const gather = (n: ValueNode, sf: Fields): StepGatherIR => compileStepGather(ctx, n, sf);
  const reasoningNode = get('reasoning');
  const reasoning = ctx.bool(reasoningNode, 'REASONING');
  if (reasoningNode === null) ctx.report('E500', pair.loc, { name: pair.key });
  const extraAll = ctx.extras(f, STEP_KEYS, `step ${pair.key}`);
  // `RESPOND: "text"` with a voice block under it (`VOICE INSTRUCTIONS:`, `SSML:`, …) is the step's
  // VOICE written at the reply: the text stays RESPOND, the block joins the step's VOICE settings.
  const respondVoice = respondVoiceBlock(f);
  const channel: Record<string, Json> = {};
  for (const k of CHANNEL_KEYS) if (f.map.has(k)) channel[k] = toJson(get(k));
  if (respondVoice && !f.map.has('voice')) channel.voice = toJson(respondVoice.block);
  // The voice channel reads the step's VOICE settings and the voice form of its RESPOND (ssml,
  // plain_text); `instructions` is W510 (no realtime speech model), any other key W509.
  const voicePair = f.map.get('voice') ?? respondVoice?.pair;
  const voiceNode = respondVoice ? mergeVoice(get('voice'), respondVoice.block) : get('voice');
  const voice = voicePair ? compileVoiceBlock(ctx, voiceNode, `Step '${pair.key}' VOICE`, { output: true }) : null;
  if (voicePair && voice && voice.unused.length > 0) ctx.report('W509', voicePair.loc, { name: pair.key, keys: voice.unused.map((u) => u.key).join(', ') });
  if (voice?.instructions) ctx.report('W510', voice.instructions.loc, { name: pair.key });
  const voiceOutput = voice && (voice.output.ssml !== undefined || voice.output.plain_text !== undefined) ? voice.output : null;
  const call = f.map.get('call');
  const exhausted = get('on_exhausted');
  const gatherNode = get('gather');
  return {
    name: pair.key,
    reasoning: reasoning ?? false,
    llm: reasoning
      ? {
          goal: ctx.text(get('goal'), 'GOAL'),
          available_tools: ctx.strList(get('available_tools'), 'AVAILABLE_TOOLS'),
          exit_when: ctx.expr(get('exit_when'), 'EXIT_WHEN'),
          max_turns: ctx.num(get('max_turns'), 'MAX_TURNS') ?? 10,
        }
      : null,
    when: ctx.expr(get('when'), 'WHEN'),
    max_attempts: ctx.num(get('max_attempts'), 'MAX_ATTEMPTS'),
    on_exhausted: exhausted
      ? exhausted.kind === 'Map'
        ? compileActions(ctx, ctx.fields(exhausted, { step: true }), gather)
        : { set: [], clear: [], respond: null, call: null, gather: null, then: compileTransition(ctx, exhausted) }
      : null,
    respond: ctx.text(get('respond'), 'RESPOND'),
    present: ctx.text(get('present'), 'PRESENT'),
    gather: gatherNode ? gather(gatherNode, f) : null,
    delegate: ctx.strList(get('delegate'), 'DELEGATE'),
    call: call ? compileCall(ctx, call, f) : null,
    set: compileSet(ctx, get('set')),
    clear: ctx.strList(get('clear'), 'CLEAR'),
    transform: compileTransform(ctx, get('transform')),
    check: ctx.expr(get('check'), 'CHECK'),
    on_result: compileBranches(ctx, get('on_result'), 'ON_RESULT', gather),
    on_success: compileBranches(ctx, get('on_success'), 'ON_SUCCESS', gather),
    on_fail: compileBranches(ctx, get('on_fail'), 'ON_FAIL', gather),
    // A button's action is matched before any ON_INPUT branch (an ELSE there would take it).
    on_input: [...compileActionHandlers(ctx, get('on_action'), gather), ...compileBranches(ctx, get('on_input'), 'ON_INPUT', gather, { input: true })],
    then: compileTransition(ctx, get('then')),
    digressions: compileDigressions(ctx, get('digressions'), false),
    sub_intents: compileDigressions(ctx, get('sub_intents'), true),
    on_error: compileErrorHandlers(ctx, get('on_error')),
    channel,
    ...(voice ? { voice: voice.config } : {}),
    ...(voiceOutput ? { voice_output: voiceOutput } : {}),
    extra: extraAll,
    loc: ctx.loc(pair.loc),
  } satisfies FlowStepIR & { on_error: ErrorHandlerIR[] };
}

export function compileFlow(ctx: CompileContext, section: PairNode): FlowIR | null {
  const node = pairValue(section);
  const loc = ctx.loc(section.loc);
  if (!node || node.kind !== 'Map') {
    ctx.report('E210', section.loc, { what: 'FLOW', expected: 'steps: [...] and one block per step', found: node ? 'a value' : 'nothing' });
    return null;
  }
  let listed: string[] | null = null;
  let listedLoc = section.loc;
  let entry: string | null = null;
  let entryLoc = section.loc;
  let globals: DigressionIR[] = [];
  const steps: Record<string, FlowStepIR> = {};
  const defined: string[] = [];
  for (const e of node.entries) {
    if (e.kind === 'Item') {
      const text = String(e.head.value ?? '');
      if (text.includes('->')) {
        listed = text.split('->').map((s) => s.trim()).filter(Boolean);
        listedLoc = e.loc;
      } else ctx.report('E210', e.loc, { what: 'FLOW', expected: 'a step block "name:" or steps: [...]', found: `"${text}"` });
      continue;
    }
    const k = e.key.toLowerCase();
    if (k === 'steps') {
      listed = ctx.strList(pairValue(e), 'steps');
      listedLoc = e.loc;
    } else if (k === 'entry_point' || k === 'entry') {
      entry = ctx.str(pairValue(e), 'entry_point');
      entryLoc = e.loc;
    } else if (k === 'global_digressions') globals = compileDigressions(ctx, pairValue(e), false);
    else if (Object.hasOwn(steps, e.key)) ctx.report('E502', e.loc, { name: e.key });
    else {
      steps[e.key] = compileStep(ctx, e);
      defined.push(e.key);
    }
  }
  const order: string[] = [];
  if (listed) {
    const seen = new Set<string>();
    for (const s of listed) {
      if (seen.has(s)) {
        ctx.report('E502', listedLoc, { name: s });
        continue;
      }
      seen.add(s);
      if (!Object.hasOwn(steps, s)) ctx.report('E504', listedLoc, { name: s });
      else order.push(s);
    }
    for (const s of defined) {
      if (!seen.has(s)) {
        ctx.report('W505', steps[s]?.loc ?? section.loc, { name: s });
        order.push(s);
      }
    }
  } else order.push(...defined);
  if (order.length === 0) {
    ctx.report('E508', section.loc);
    return null;
  }
  const first = order[0] as string;
  if (entry !== null && !Object.hasOwn(steps, entry)) {
    ctx.report('E501', entryLoc, { what: 'entry_point', name: entry, steps: order.join(', ') });
    entry = null;
  }
  return { entry: entry ?? first, order, steps, global_digressions: globals, loc };
}

/** Keys of a voice block written under a RESPOND, as the step VOICE keys they stand for. */
const RESPOND_VOICE_KEYS: Record<string, string> = {
  'voice instructions': 'instructions', voice_instructions: 'instructions', instructions: 'instructions',
  'voice ssml': 'ssml', voice_ssml: 'ssml', ssml: 'ssml',
  'voice text': 'plain_text', voice_text: 'plain_text', 'plain text': 'plain_text', plain_text: 'plain_text', 'spoken text': 'plain_text',
  'voice name': 'voice', voice_name: 'voice', 'voice language': 'language', voice_language: 'language',
  barge_in: 'barge_in', speech_timeout: 'speech_timeout', silence_timeout: 'silence_timeout',
};

/**
 * A step's `RESPOND: "text"` with an indented block of voice keys under it: the block (its keys
 * as step VOICE keys, a nested `VOICE:` block flattened into it), and the RESPOND pair left with
 * its text only. Null when RESPOND has no such block (a block of other keys stays E110).
 */
function respondVoiceBlock(f: Fields): { block: MapNode; pair: PairNode } | null {
  const p = f.map.get('respond');
  if (!p?.value || p.children?.kind !== 'Map') return null;
  const entries: MapNode['entries'] = [];
  for (const e of p.children.entries) {
    if (e.kind !== 'Pair') return null;
    const k = e.key.trim().toLowerCase().replace(/\s+/g, ' ');
    if (k === 'voice' && e.children?.kind === 'Map' && !e.value) {
      entries.push(...e.children.entries);
      continue;
    }
    const to = RESPOND_VOICE_KEYS[k];
    if (!to) return null;
    entries.push({ ...e, key: to });
  }
  f.map.set('respond', { ...p, children: null });
  return { block: { ...p.children, entries }, pair: p };
}

/** The step's VOICE block with the RESPOND's voice block added (a key in both: the step's VOICE wins). */
function mergeVoice(stepVoice: ValueNode | null, fromRespond: MapNode): ValueNode {
  if (stepVoice?.kind !== 'Map') return fromRespond;
  const has = new Set(stepVoice.entries.map((e) => (e.kind === 'Pair' ? e.key.toLowerCase() : '')));
  return { ...stepVoice, entries: [...stepVoice.entries, ...fromRespond.entries.filter((e) => e.kind !== 'Pair' || !has.has(e.key.toLowerCase()))] };
}
