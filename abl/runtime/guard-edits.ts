// The text edits of guardrail actions `fix` (its fix_strategy) and `filter` (the check's pattern
// matches removed), applied to a text or to every string inside a JSON value.

import type { GuardrailFixIR, Json } from '../ir';
import type { SafeRegex } from '../regex';
import { piiPatterns } from './values';

export type TextEdit = (text: string) => string;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };

/** Tags, comments and script/style bodies removed; the common entities decoded. */
export function stripHtml(text: string): string {
  return text
    .replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<\/?[A-Za-z][^>]*>/g, '')
    .replace(/&(amp|lt|gt|quot|apos|nbsp|#39);/g, (_, e: string) => ENTITIES[e] ?? '');
}

/** Unicode NFKC, control characters dropped, runs of blanks made one space, each line trimmed. */
export function normalizeText(text: string): string {
  return text
    .normalize('NFKC')
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\u200B-\u200D\uFEFF]/g, '')
    .replace(/[ \t\u00A0]+/g, ' ')
    .split('\n').map((l) => l.trim()).join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** At most `max` characters (code points), cut at the last word break when there is one near the end. */
export function truncateText(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  const cut = chars.slice(0, max).join('');
  const space = cut.search(/\s\S*$/);
  return (space > max * 0.8 ? cut.slice(0, space) : cut).trimEnd();
}

/** The edit of a fix guardrail; `custom` evaluates its expression on the text through `evalCustom`. */
export function fixEdit(fix: GuardrailFixIR, evalCustom: (text: string) => unknown): TextEdit {
  switch (fix.strategy) {
    case 'truncate': return (t) => truncateText(t, fix.max_length ?? t.length);
    case 'strip_html': return stripHtml;
    case 'normalize': return normalizeText;
    case 'redact_pii': return (t) => piiPatterns().reduce((s, re) => re.replaceAll(s, '[REDACTED]'), t);
    case 'custom': return (t) => {
      const v = evalCustom(t);
      return v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
    };
  }
}

/** The edit of a filter guardrail: the patterns' matches removed, and the blanks they leave closed up. */
export function filterEdit(patterns: readonly SafeRegex[]): TextEdit {
  return (t) => {
    let out = t;
    for (const re of patterns) out = re.replaceAll(out, '');
    return out === t ? t : out.replace(/[ \t]{2,}/g, ' ').replace(/ +([.,;:!?])/g, '$1').trim();
  };
}

/** `edit` applied to every string inside `v` (keys untouched). */
export function editJson(v: Json, edit: TextEdit): Json {
  if (typeof v === 'string') return edit(v);
  if (Array.isArray(v)) return v.map((x) => editJson(x, edit));
  if (v && typeof v === 'object') {
    const out: { [k: string]: Json } = {};
    for (const [k, x] of Object.entries(v)) out[k] = editJson(x, edit);
    return out;
  }
  return v;
}
