// The section catalogue (ABL.md §3) and the document-level checks: unknown, duplicate,
// lower-case, phase-2 and MODE sections.

import type { DocumentNode, SectionNode } from '../ast';
import type { Json } from '../ir';
import { pairValue, toJson, type CompileContext } from './context';

export const PHASE1_SECTIONS = [
  'AGENT', 'SUPERVISOR', 'VERSION', 'DESCRIPTION', 'LANGUAGE', 'GOAL', 'PERSONA', 'LIMITATIONS', 'INSTRUCTIONS',
  'IDENTITY', 'EXECUTION', 'TOOLS', 'GATHER', 'FLOW', 'MEMORY', 'CONSTRAINTS', 'GUARDRAILS', 'HANDOFF', 'DELEGATE',
  'ESCALATE', 'COMPLETE', 'ON_START', 'ON_ERROR', 'HOOKS', 'TEMPLATES', 'MESSAGES', 'NLU', 'VOICE',
] as const;

export const PHASE2_SECTIONS = [
  'AGENTS', 'ROUTING', 'STATE', 'POLICIES', 'COMMUNICATION', 'BEHAVIOR', 'INTENTS', 'MULTI_INTENT', 'ENTITIES',
  'LOOKUP_TABLES', 'ATTACHMENTS', 'DESTINATIONS', 'ACTION_HANDLERS', 'SYSTEM_PROMPT', 'TESTS', 'USE BEHAVIOR_PROFILE',
] as const;

export interface CheckedSections {
  /** Phase-1 sections by canonical key (first occurrence). */
  byKey: Map<string, SectionNode>;
  /** Phase-1 sections in file order (first occurrences). */
  ordered: SectionNode[];
  /** Phase-2 sections as JSON. */
  extra: Record<string, Json>;
}

/** Reports W205, E204, E202, E203, W206 (and E209 for a tools file) and indexes the sections. */
export function checkSections(ctx: CompileContext, doc: DocumentNode): CheckedSections {
  const byKey = new Map<string, SectionNode>();
  const ordered: SectionNode[] = [];
  const extra: Record<string, Json> = {};
  for (const s of doc.sections) {
    const key = s.key.replace(/\s+/g, ' ');
    if (s.rawKey !== s.rawKey.toUpperCase()) ctx.report('W205', s.loc, { found: s.rawKey, expected: key });
    if (key === 'MODE') {
      ctx.report('E202', s.loc);
      continue;
    }
    const phase1 = (PHASE1_SECTIONS as readonly string[]).includes(key);
    const phase2 = (PHASE2_SECTIONS as readonly string[]).includes(key);
    if (!phase1 && !phase2) {
      ctx.report('E203', s.loc, { name: s.rawKey });
      continue;
    }
    if (doc.docKind === 'tools' && key !== 'TOOLS') {
      ctx.report('E209', s.loc, { name: key, kind: 'tool library', fix: 'A *.tools.abl file holds only TOOLS:; move this section to an agent.' });
      continue;
    }
    const prev = byKey.get(key) ?? (Object.hasOwn(extra, key) ? s : undefined);
    if (prev) {
      ctx.report('E204', s.loc, { name: key, first: prev === s ? '?' : prev.loc.line });
      continue;
    }
    if (phase2) {
      ctx.report('W206', s.loc, { name: key });
      const v = pairValue(s);
      extra[key] = s.value && s.children ? { _value: toJson(s.value), ...(toJson(s.children) as Record<string, Json>) } : toJson(v);
      continue;
    }
    byKey.set(key, s);
    ordered.push(s);
  }
  return { byKey, ordered, extra };
}
