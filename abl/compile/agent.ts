// Agent reducer: one AGENT/SUPERVISOR document → AgentIR, section by section, with imports resolved.

import type { DocumentNode, SectionNode, ValueNode } from '../ast';
import { sha256Hex } from '../hash';
import type { AgentIR, LifecycleIR, ToolIR } from '../ir';
import { resolveRelative } from '../paths';
import { compileLifecycle } from './actions';
import { NAME_RE, pairValue, type CompileContext } from './context';
import { compileDelegates, compileEscalation, compileHandoffs } from './coordination';
import { compileErrorHandlers } from './errors';
import { compileFlow } from './flow';
import { compileAgentGatherSection } from './gather';
import { compileExecution, compileIdentity, compileMessages, compileTemplates } from './identity';
import { compileMemory } from './memory';
import { compileNlu } from './nlu';
import { compileAgentVoice } from './voice';
import { compileCompletion, compileConstraints, compileGuardrails } from './rules';
import { checkSections } from './sections';
import type { CompiledTools } from './tools';
import { compileTools } from './tools';
import { forEachCall } from './walk';

/** What the agent compiler needs from the project: tool libraries and file contents by path. */
export interface ProjectFiles {
  libraries: Map<string, CompiledTools>;
  /** Every parsed document by path (to tell "not found" from "not a library"). */
  documents: Map<string, DocumentNode>;
  contents: Map<string, string>;
}

const HOOKS = ['before_agent', 'after_agent', 'before_turn', 'after_turn'] as const;

export function compileAgent(ctx: CompileContext, doc: DocumentNode, project: ProjectFiles): AgentIR {
  const checked = checkSections(ctx, doc);
  const sec = (k: string): SectionNode | undefined => checked.byKey.get(k);
  const val = (k: string): ValueNode | null => {
    const s = sec(k);
    return s ? ctx.value(s) : null;
  };
  const head = doc.sections[0] as SectionNode;
  const kind = doc.docKind === 'supervisor' ? 'supervisor' : 'agent';
  const name = doc.name ?? '';
  if (!NAME_RE.test(name)) ctx.report('E207', head.value?.loc ?? head.loc, { name, what: kind });
  if (sec('AGENT') && sec('SUPERVISOR')) {
    const second = doc.docKind === 'agent' ? sec('SUPERVISOR') : sec('AGENT');
    if (second) ctx.report('E204', second.loc, { name: second.key, first: head.loc.line });
  }
  if (!sec('GOAL') && !sec('IDENTITY')) ctx.report('E201', head.loc, { kind: kind === 'supervisor' ? 'Supervisor' : 'Agent', name });

  // TEMPLATES first: RESPOND: TEMPLATE(x) is expanded while compiling the rest.
  ctx.templates = compileTemplates(ctx, val('TEMPLATES'));

  const execution = compileExecution(ctx, val('EXECUTION'));
  const tools = resolveTools(ctx, sec('TOOLS'), project, execution.tool_timeout_ms);

  const hooks: AgentIR['hooks'] = {};
  const hooksNode = val('HOOKS');
  if (hooksNode) {
    const f = ctx.fields(hooksNode.kind === 'Map' ? hooksNode : null);
    if (hooksNode.kind !== 'Map') ctx.report('E210', hooksNode.loc, { what: 'HOOKS', expected: 'before_agent/after_agent/before_turn/after_turn blocks', found: 'a value' });
    ctx.extras(f, HOOKS, 'HOOKS');
    for (const h of HOOKS) {
      const p = f.map.get(h);
      const block: LifecycleIR | null = p ? compileLifecycle(ctx, pairValue(p), h) : null;
      if (block) hooks[h] = block;
    }
  }

  const versionNode = val('VERSION');
  const languageNode = val('LANGUAGE');
  const language = ctx.str(languageNode, 'LANGUAGE');
  // Kept in the metadata, but no reply or prompt follows it (docs/not-supported.md).
  if (language !== null) ctx.report('W219', languageNode?.loc ?? head.loc, { value: language });
  const agent: AgentIR = {
    metadata: {
      name,
      kind,
      version: versionNode ? (ctx.str(versionNode, 'VERSION') ?? '1.0.0') : '1.0.0',
      description: ctx.text(val('DESCRIPTION'), 'DESCRIPTION'),
      language,
      source_hash: '',
      file: doc.path,
    },
    identity: compileIdentity(ctx, checked.ordered),
    execution,
    tools,
    ...agentGather(ctx, val('GATHER')),
    memory: compileMemory(ctx, val('MEMORY')),
    constraints: compileConstraints(ctx, val('CONSTRAINTS')),
    guardrails: compileGuardrails(ctx, val('GUARDRAILS')),
    coordination: {
      handoffs: compileHandoffs(ctx, val('HANDOFF'), sec('FLOW') !== undefined),
      delegates: compileDelegates(ctx, val('DELEGATE')),
      escalation: compileEscalation(ctx, val('ESCALATE')),
    },
    completion: compileCompletion(ctx, val('COMPLETE')),
    on_start: compileLifecycle(ctx, val('ON_START'), 'ON_START'),
    hooks,
    error_handlers: compileErrorHandlers(ctx, val('ON_ERROR')),
    messages: compileMessages(ctx, val('MESSAGES')),
    flow: sec('FLOW') ? compileFlow(ctx, sec('FLOW') as SectionNode) : null,
    templates: ctx.templates,
    extra: checked.extra,
    loc: ctx.loc(head.loc),
  };
  const nluSection = sec('NLU');
  const nlu = nluSection ? compileNlu(ctx, val('NLU'), nluSection.loc) : undefined;
  // Absent (not null) without NLU, so the IR of an agent without it is what it was before NLU ran.
  if (nlu) agent.nlu = nlu;
  const voice = compileAgentVoice(ctx, val('VOICE'));
  if (voice) agent.voice = voice;
  mapPositionalArgs(agent);
  agent.metadata.source_hash = agentHash(doc.path, agent, project);
  return agent;
}

/** Imported files plus the agent file, hashed together so any change to either shows. */
function agentHash(path: string, agent: AgentIR, project: ProjectFiles): string {
  const files = new Set<string>([path]);
  for (const t of agent.tools) if (t.imported_from) files.add(t.imported_from);
  return sha256Hex([...files].sort().map((f) => `${f}\u0000${project.contents.get(f) ?? ''}\u0000`).join(''));
}

/** `CALL: t(a, b)`: map positional arguments onto the tool's parameters in order. */
function mapPositionalArgs(agent: AgentIR): void {
  const byName = new Map(agent.tools.map((t) => [t.name, t]));
  forEachCall(agent, (call) => {
    const tool = byName.get(call.tool);
    if (!tool || call.positional.length === 0 || call.positional.length > tool.params.length) return;
    call.positional.forEach((e, i) => {
      const p = tool.params[i];
      if (p && !Object.hasOwn(call.with, p.name)) call.with[p.name] = e;
    });
    call.positional = [];
  });
}

function resolveTools(ctx: CompileContext, section: SectionNode | undefined, project: ProjectFiles, defaultTimeout: number): ToolIR[] {
  if (!section) return [];
  const local = compileTools(ctx, pairValue(section), { library: false });
  const out: ToolIR[] = [];
  const seen = new Map<string, number>();
  const add = (t: ToolIR, line: number): void => {
    const first = seen.get(t.name);
    if (first !== undefined) {
      ctx.report('E401', { line, column: t.loc.column }, { name: t.name, first });
      return;
    }
    seen.set(t.name, line);
    out.push(t);
  };
  for (const imp of local.imports) {
    const resolved = resolveRelative(ctx.path, imp.file);
    const lib = project.libraries.get(resolved);
    if (!lib) {
      if (project.documents.has(resolved)) ctx.report('E413', imp.loc, { file: imp.file });
      else ctx.report('E407', imp.loc, { file: imp.file, resolved });
      continue;
    }
    const names = imp.names ?? lib.tools.map((t) => t.name);
    for (const n of names) {
      const tool = lib.tools.find((t) => t.name === n);
      if (!tool) {
        ctx.report('E408', imp.loc, { name: n, file: imp.file });
        continue;
      }
      // Nested parts stay shared with the library's tool: nothing changes a tool once compiled, and
      // the project's output is a deep copy, so no two places in it share them.
      const copy: ToolIR = { ...tool, imported_from: resolved };
      if (lib.defaultTimeout.has(n)) copy.timeout_ms = defaultTimeout;
      add(copy, imp.loc.line);
    }
  }
  for (const t of local.tools) {
    if (local.defaultTimeout.has(t.name)) t.timeout_ms = defaultTimeout;
    add(t, t.loc.line);
  }
  return out;
}

/** The agent's GATHER fields, and its STRATEGY when written (absent otherwise, so other agents' IR is unchanged). */
function agentGather(ctx: CompileContext, node: ValueNode | null): Pick<AgentIR, 'gather' | 'gather_strategy'> {
  const g = compileAgentGatherSection(ctx, node);
  return { gather: g.fields, ...(g.strategy ? { gather_strategy: g.strategy } : {}) };
}
