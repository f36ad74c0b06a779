// GATHER's `llm` / `hybrid` strategies: the extraction request the interpreter sends as a
// `call_llm` command (purpose `extraction`), the defensive parser for the model's answer, and the
// deterministic answer the offline `local` model gives to such a request. Pure; no LLM here.
//
// Protocol (docs/runtime-interpreter.md): a strict JSON answer, no tools. The system message starts
// with EXTRACTION_MARKER and holds a JSON Schema of the wanted fields; the user message is the
// user's text. The model answers with one JSON object (field → value, fields it cannot find left
// out). Works with every adapter of the provider layer, including ones without tool calling.

import { extractGatherValues, validateGatherValue, type ExtractableField } from './gather';
import type { GatherFieldIR, GatherType, Json, ValidationIR } from './ir';

export const EXTRACTION_MARKER = 'ABL-GATHER-EXTRACTION/1';
/** How much of the user's message is sent for extraction. */
const MAX_TEXT = 4000;

const FORMAT: Partial<Record<GatherType, string>> = { email: 'email', phone: 'phone', date: 'date', datetime: 'date-time' };
const TYPE_OF_FORMAT: Record<string, GatherType> = { email: 'email', phone: 'phone', date: 'date', 'date-time': 'datetime' };

/** How many recent conversation lines an inference request carries. */
const CONTEXT_LINES = 8;

/** JSON Schema of the answer: one optional property per field (`x-infer` marks fields the model may infer). */
export function extractionSchema(fields: readonly GatherFieldIR[], expecting: string | null, inferOn = false): Record<string, Json> {
  const properties: Record<string, Json> = {};
  for (const f of fields) {
    const p: Record<string, Json> = { type: f.type === 'number' ? 'number' : f.type === 'boolean' ? 'boolean' : 'string' };
    const format = FORMAT[f.type];
    if (format) p.format = format;
    const en = f.validate.find((v): v is Extract<ValidationIR, { kind: 'enum' }> => v.kind === 'enum');
    if (en) p.enum = [...en.values];
    const pattern = f.validate.find((v): v is Extract<ValidationIR, { kind: 'pattern' }> => v.kind === 'pattern');
    if (pattern) p.pattern = pattern.pattern;
    const rules = llmRules(f);
    const desc = [f.prompt, rules.length ? `Must satisfy: ${rules.join('; ')}` : null].filter(Boolean).join(' ');
    if (desc) p.description = desc;
    if (f.extraction_hints.length) p['x-extraction-hints'] = [...f.extraction_hints];
    if (inferOn && f.infer) p['x-infer'] = true;
    // A list field is answered with an array of such values.
    properties[f.name] = f.list ? { type: 'array', items: p, ...(p.description !== undefined ? { description: p.description } : {}) } : p;
  }
  return { type: 'object', properties, additionalProperties: false, 'x-expecting': expecting };
}

/**
 * The system and user messages of an extraction request. With `context` (the conversation so far,
 * one line per message), fields with `infer: true` may be inferred from it: the request says how
 * to answer an inferred value, with a confidence.
 */
export function extractionMessages(fields: readonly GatherFieldIR[], text: string, expecting: string | null, context: readonly string[] | null = null): { system: string; user: string } {
  const inferring = context !== null && fields.some((f) => f.infer);
  const system = [
    EXTRACTION_MARKER,
    "Extract the values of the fields below from the user's message.",
    'Answer with ONE JSON object and nothing else (no prose, no code fence): each key is a field name, each value of the',
    `type the schema gives. Leave out every field the message does not state; never guess${inferring ? ', except as below' : ''}.`,
    ...(inferring
      ? [
          'A field marked "x-infer" that the message does not state may be inferred from the message or the conversation',
          'when they make it likely. Give such a value as {"value": <value>, "inferred": true, "confidence": <0 to 1>}.',
          'Conversation so far (oldest first):',
          ...context.slice(-CONTEXT_LINES).map((line) => `  ${line.slice(0, 300)}`),
        ]
      : []),
    ...(expecting ? [`The user was just asked for: ${expecting}.`] : []),
    'Fields (JSON Schema of the answer):',
    JSON.stringify(extractionSchema(fields, expecting, inferring)),
  ].join('\n');
  return { system, user: text.slice(0, MAX_TEXT) };
}

export type ParsedExtraction = { ok: true; values: Record<string, Json> } | { ok: false; error: string };

/**
 * Reads the model's answer: a JSON object in the content (a code fence or text around it is
 * tolerated), or the arguments of a tool call when the model chose to answer with one.
 */
/**
 * The first JSON object of a model's answer: in its content (a code fence or prose around it is
 * tolerated), else in one of its tool calls' arguments. Extraction and NLU classification both read it.
 */
export function firstJsonObject(content: string, toolCalls: readonly { arguments: string }[] = []): { ok: true; value: Record<string, Json> } | { ok: false; error: string } {
  let lastError = 'empty answer';
  for (const raw of [content, ...toolCalls.map((c) => c.arguments)]) {
    const text = (raw ?? '').trim();
    if (!text) continue;
    const start = text.indexOf('{');
    const end = text.lastIndexOf('}');
    if (start < 0 || end <= start) {
      lastError = 'no JSON object in the answer';
      continue;
    }
    try {
      const v: unknown = JSON.parse(text.slice(start, end + 1));
      if (v && typeof v === 'object' && !Array.isArray(v)) return { ok: true, value: v as Record<string, Json> };
      lastError = 'the answer is not a JSON object';
    } catch (err) {
      lastError = `bad JSON: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  return { ok: false, error: lastError };
}

export function parseExtractionAnswer(content: string, toolCalls: readonly { arguments: string }[] = []): ParsedExtraction {
  const got = firstJsonObject(content, toolCalls);
  return got.ok ? { ok: true, values: got.value } : got;
}

/** A value the model inferred rather than read, with its confidence (0–1). */
export interface InferredValue {
  field: string;
  value: unknown;
  confidence: number;
}

export interface AcceptedExtraction {
  values: Record<string, unknown>;
  invalid: Array<{ field: string; raw: string; error: string }>;
  /** Valid inferred values of `infer` fields (only when inference was asked for). */
  inferred: InferredValue[];
}

/**
 * Coerces and validates the answered values exactly like pattern-extracted ones. Keys that are not
 * asked-for fields, and null/empty values, are ignored. With `inferOn`, an `infer` field may be
 * answered `{value, inferred, confidence}`: an inferred value goes to `inferred` (an invalid one is
 * dropped: nobody said it), a value marked not inferred counts as stated.
 */
export function acceptExtracted(fields: readonly GatherFieldIR[], values: Record<string, Json>, inferOn = false): AcceptedExtraction {
  const out: AcceptedExtraction = { values: {}, invalid: [], inferred: [] };
  for (const f of fields) {
    if (!Object.hasOwn(values, f.name)) continue;
    let raw = values[f.name];
    if (inferOn && f.infer && raw && typeof raw === 'object' && !Array.isArray(raw) && Object.hasOwn(raw, 'value')) {
      const answer = raw as Record<string, Json>;
      if (answer.inferred === true) {
        const v = answer.value === null || answer.value === '' ? null : validateGatherValue(f, answer.value);
        const confidence = typeof answer.confidence === 'number' && Number.isFinite(answer.confidence) ? Math.min(1, Math.max(0, answer.confidence)) : 0;
        if (v?.ok) out.inferred.push({ field: f.name, value: v.value, confidence });
        continue;
      }
      raw = answer.value ?? null;
    }
    if (raw === null || raw === undefined || raw === '' || (typeof raw === 'object' && !(f.list && Array.isArray(raw)))) continue;
    const v = validateGatherValue(f, raw);
    if (v.ok) out.values[f.name] = v.value;
    else out.invalid.push({ field: f.name, raw: String(raw), error: v.error ?? 'invalid' });
  }
  return out;
}

// ------------------------------------------------------------------ the offline model's answer

function fieldFromSchema(name: string, schema: Record<string, unknown>): ExtractableField {
  const list = schema.type === 'array' && !!schema.items && typeof schema.items === 'object';
  const p = list ? (schema.items as Record<string, unknown>) : schema;
  const format = typeof p.format === 'string' ? p.format : '';
  const type: GatherType = TYPE_OF_FORMAT[format] ?? (p.type === 'number' ? 'number' : p.type === 'boolean' ? 'boolean' : 'string');
  const validate: ValidationIR[] = [];
  if (Array.isArray(p.enum)) validate.push({ kind: 'enum', values: p.enum.map(String) });
  if (typeof p.pattern === 'string') validate.push({ kind: 'pattern', pattern: p.pattern });
  const hints = Array.isArray(p['x-extraction-hints']) ? p['x-extraction-hints'].map(String) : [];
  return { name, type, required: true, validate, extraction_hints: hints, list };
}

/**
 * The `local` model's answer to an extraction request: the deterministic pattern extractor run on
 * the user's text, as the JSON object the protocol asks for. Null when `system` is not an
 * extraction request.
 */
export function localExtractionAnswer(system: string, user: string): string | null {
  if (!system.startsWith(EXTRACTION_MARKER)) return null;
  const line = system.split('\n').find((l) => l.startsWith('{'));
  let schema: Record<string, unknown>;
  try {
    schema = JSON.parse(line ?? '') as Record<string, unknown>;
  } catch {
    return '{}';
  }
  const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const fields = Object.entries(props).map(([name, p]) => fieldFromSchema(name, p ?? {}));
  const expecting = typeof schema['x-expecting'] === 'string' ? schema['x-expecting'] : null;
  const ex = extractGatherValues(fields, user, { expecting });
  return JSON.stringify(ex.values);
}

// ------------------------------------------------------------------ LLM-judged validate rules

export const VALIDATION_MARKER = 'ABL-GATHER-VALIDATION/1';

/** A field's validate rules the model judges (any text that is not min/max/enum/email/pattern). */
export function llmRules(field: Pick<GatherFieldIR, 'validate'>): string[] {
  return field.validate.filter((v): v is Extract<ValidationIR, { kind: 'llm' }> => v.kind === 'llm').map((v) => v.rule);
}

/** The system and user messages asking whether `value` satisfies the field's LLM-judged rules. */
export function validationMessages(field: Pick<GatherFieldIR, 'name' | 'type' | 'validate'>, value: unknown): { system: string; user: string } {
  const system = [
    VALIDATION_MARKER,
    `Judge whether the value the user gave for the field "${field.name}" (type ${field.type}) satisfies every rule below.`,
    'Answer with ONE JSON object and nothing else: {"valid": true or false, "reason": "<one short sentence>"}.',
    'Rules:',
    ...llmRules(field).map((r) => `- ${r}`),
  ].join('\n');
  return { system, user: (typeof value === 'string' ? value : JSON.stringify(value) ?? '').slice(0, MAX_TEXT) };
}

/** The messages asking whether a text satisfies a guardrail's `llm_check` (the offline model accepts it, as a validate rule). */
export function guardrailJudgeMessages(name: string, kind: string, check: string, text: string): { system: string; user: string } {
  const system = [
    VALIDATION_MARKER,
    `Judge whether the ${kind === 'output' ? "agent's reply" : kind === 'input' ? "user's message" : 'text'} below satisfies the rule of the guardrail "${name}".`,
    'Answer with ONE JSON object and nothing else: {"valid": true or false, "reason": "<one short sentence>"}.',
    'Rule:',
    `- ${check}`,
  ].join('\n');
  return { system, user: text.slice(0, MAX_TEXT) };
}

export type ParsedVerdict = { ok: true; valid: boolean; reason: string } | { ok: false; error: string };

/** Reads `{"valid": bool, "reason": string}`; anything else is an error (the caller decides). */
export function parseValidationAnswer(content: string, toolCalls: readonly { arguments: string }[] = []): ParsedVerdict {
  const parsed = parseExtractionAnswer(content, toolCalls);
  if (!parsed.ok) return parsed;
  const valid = parsed.values.valid;
  if (typeof valid !== 'boolean') return { ok: false, error: 'the answer has no boolean "valid"' };
  const reason = typeof parsed.values.reason === 'string' ? parsed.values.reason : '';
  return { ok: true, valid, reason };
}

/** The `local` model's verdict: it cannot judge free text, so it accepts, and says so. Null for other requests. */
export function localValidationAnswer(system: string): string | null {
  if (!system.startsWith(VALIDATION_MARKER)) return null;
  return JSON.stringify({ valid: true, reason: 'Accepted without judging: the offline local model cannot judge free-text rules.' });
}
