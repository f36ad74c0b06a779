// Voice settings: the agent's VOICE section and a flow step's VOICE block, which shape what the
// voice channel answers a phone call with (the TTS voice and language of <Say>, and how <Gather>
// listens: barge-in, the end-of-speech and the no-speech timeouts). Keys are the same in both
// places; a step's settings apply while the session waits in that step, over the agent's.
import type { PairNode, ValueNode } from '../ast';
import type { VoiceConfigIR, VoiceOutputIR } from '../ir';
import { type CompileContext, type Fields } from './context';

/** The keys the voice channel reads. */
export const VOICE_KEYS = ['voice', 'language', 'barge_in', 'speech_timeout', 'silence_timeout'] as const;
/**
 * The voice form of a step's RESPOND (ABL reference, "Voice configuration"): what a call says
 * instead of the text. `instructions` (a speaking style for realtime speech models) is read too,
 * but no voice channel here can use it: W510.
 */
export const VOICE_OUTPUT_KEYS = ['ssml', 'plain_text', 'instructions'] as const;

/** Longest timeout a voice setting may ask for, in seconds (Twilio's <Gather> allows 60). */
const MAX_TIMEOUT_S = 60;
/** A BCP 47 language tag such as en-US, es, pt-BR. */
const LANGUAGE_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

/**
 * Compiles one VOICE block. Keys outside VOICE_KEYS are returned in `unused` (the caller reports
 * them: W213 in the agent's section, W509 in a step) and kept nowhere the channel reads.
 */
export function compileVoiceBlock(
  ctx: CompileContext, node: ValueNode | null, where: string, opts: { output?: boolean } = {},
): { config: VoiceConfigIR; output: VoiceOutputIR; instructions: PairNode | null; unused: Array<{ key: string; pair: PairNode }> } {
  const config: VoiceConfigIR = {};
  const output: VoiceOutputIR = {};
  let instructions: PairNode | null = null;
  const unused: Array<{ key: string; pair: PairNode }> = [];
  if (!node) return { config, output, instructions, unused };
  if (node.kind !== 'Map') {
    const keys = opts.output ? [...VOICE_KEYS, ...VOICE_OUTPUT_KEYS] : VOICE_KEYS;
    ctx.report('E210', node.loc, { what: where, expected: `key: value lines (${keys.join(', ')})`, found: 'a value' });
    return { config, output, instructions, unused };
  }
  const f: Fields = ctx.fields(node);
  for (const key of f.order) {
    const pair = f.map.get(key) as PairNode;
    const value = ctx.value(pair);
    switch (key) {
      case 'voice': {
        const v = ctx.str(value, `${where} voice`);
        if (v !== null && v.trim() !== '') config.voice = v.trim();
        break;
      }
      case 'language': {
        const v = ctx.str(value, `${where} language`);
        if (v === null) break;
        if (LANGUAGE_TAG.test(v.trim())) config.language = v.trim();
        else ctx.report('E211', pair.loc, { what: `${where} language`, allowed: 'a BCP 47 language tag (en-US, es, pt-BR)', value: v });
        break;
      }
      case 'barge_in': {
        const v = ctx.bool(value, `${where} barge_in`);
        if (v !== null) config.barge_in = v;
        break;
      }
      case 'speech_timeout': {
        if (value?.kind === 'Scalar' && String(value.value).toLowerCase() === 'auto') {
          config.speech_timeout = 'auto';
          break;
        }
        const ms = ctx.duration(value, `${where} speech_timeout`, 's');
        if (ms !== null) config.speech_timeout = timeoutSeconds(ctx, pair, `${where} speech_timeout`, ms);
        break;
      }
      case 'silence_timeout': {
        const ms = ctx.duration(value, `${where} silence_timeout`, 's');
        if (ms !== null) config.silence_timeout = timeoutSeconds(ctx, pair, `${where} silence_timeout`, ms);
        break;
      }
      case 'ssml':
      case 'plain_text': {
        if (!opts.output) {
          unused.push({ key: pair.key, pair });
          break;
        }
        // A template like RESPOND's: ctx.text checks its {{ }} and expands TEMPLATE(name).
        const v = ctx.text(value, `${where} ${key}`);
        if (v === null || v.trim() === '') break;
        output[key] = v;
        break;
      }
      case 'instructions':
        if (opts.output) instructions = pair;
        else unused.push({ key: pair.key, pair });
        break;
      default:
        unused.push({ key: pair.key, pair });
    }
  }
  return { config, output, instructions, unused };
}

/** Whole seconds between 1 and 60 (Twilio's <Gather> counts in seconds); out of range is E214. */
function timeoutSeconds(ctx: CompileContext, pair: PairNode, what: string, ms: number): number | undefined {
  const s = Math.round(ms / 1000);
  if (s >= 1 && s <= MAX_TIMEOUT_S) return s;
  ctx.report('E214', pair.loc, { what, expected: `a duration from 1s to ${MAX_TIMEOUT_S}s`, value: `${ms}ms` });
  return undefined;
}

/** The agent's VOICE section, or undefined without one (so the IR of other agents is unchanged). */
export function compileAgentVoice(ctx: CompileContext, node: ValueNode | null): VoiceConfigIR | undefined {
  if (!node) return undefined;
  const { config, unused } = compileVoiceBlock(ctx, node, 'VOICE');
  for (const u of unused) ctx.report('W213', u.pair.loc, { key: u.key, where: 'VOICE' });
  return config;
}
