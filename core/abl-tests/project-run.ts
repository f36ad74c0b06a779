// Scenario tests of a stored project's agent (POST /api/projects/:projectId/agents/:agentName/scenarios/run):
// the agent's draft compiled with the project's other drafts and tool files, or one of its versions
// with the other agents' latest versions, run in-process on the project's own models.
import { compileProject, IR_VERSION, type AgentIR, type CompilationOutput, type ProjectFile } from '../../abl';
import { DomainError } from '../../lib/errors';
import { type CoreContext } from '../context';
import { agentCompilationFrom, agentFilePath, toolFilePath, type ProjectScope } from '../agents/compile';
import { compileErrorToDomainError, getAgent } from '../agents/agents';
import { llmRuntime, runtimeNotConfigured } from '../llm/runtime';
import { modelResolver } from './models';
import { runScenarioFiles, type ResolveModel, type RunReport } from './runner';
import { recordLlmUsage } from '../../db/llm-usage';
import type { LlmProvider, LlmResult } from '../../providers/llm';
import { parseScenarioFile, SCENARIO_LIMITS } from './schema';

/** What one request may ask for: fewer scenarios than a file may hold, so a request stays short. */
export const SCENARIO_RUN_LIMITS = {
  scenarios: 20,
  /** User turns over all the request's scenarios. */
  turns: 200,
  /** Scenarios run at once within one request. */
  concurrency: 4,
} as const;

export interface ProjectScenarioRunInput {
  agentName: string;
  /** `draft` (default): the saved drafts; `version`: a version of the agent (its latest when `version` is absent). */
  source: 'draft' | 'version';
  version?: string;
  /** The scenario file: YAML text, or the same structure as JSON. */
  scenarios: unknown;
  judgeModel?: string;
}

export interface ProjectScenarioRun {
  report: RunReport;
  /** The version run (source `version`), else null. */
  version: string | null;
}

async function draftBundle(ctx: CoreContext, scope: ProjectScope, agentName: string): Promise<CompilationOutput> {
  const agent = await getAgent(ctx.models, scope, agentName);
  const [tools, others] = await Promise.all([
    ctx.models.ToolFile.find(scope).select({ name: 1, dslContent: 1 }).lean(),
    ctx.models.Agent.find({ ...scope, name: { $ne: agentName } }).select({ name: 1, dslContent: 1 }).lean(),
  ]);
  const files: ProjectFile[] = [
    { path: agentFilePath(agentName, agent.dslContent), content: agent.dslContent },
    ...tools.map((t) => ({ path: toolFilePath(t.name), content: t.dslContent })),
    ...others.filter((a) => a.dslContent.trim() !== '').map((a) => ({ path: agentFilePath(a.name, a.dslContent), content: a.dslContent })),
  ];
  const output = compileProject(files);
  // Only the tested agent's own errors (and its tool files') refuse the run, as validating its draft would.
  const own = agentCompilationFrom(output, files, agentName, agent.dslContent);
  if (!own.ok) throw compileErrorToDomainError(agentName, own);
  return output;
}

async function versionBundle(ctx: CoreContext, scope: ProjectScope, agentName: string, label: string | undefined): Promise<{ compiled: CompilationOutput; version: string }> {
  const agent = await getAgent(ctx.models, scope, agentName);
  const rows = await ctx.models.AgentVersion.find(scope).select({ _id: 1, agentId: 1, agentName: 1, version: 1, seq: 1 }).sort({ seq: -1 }).lean();
  const chosen = new Map<string, { _id: string; version: string }>();
  for (const row of rows) {
    if (row.agentId === agent._id && label !== undefined) continue;
    if (!chosen.has(row.agentName)) chosen.set(row.agentName, { _id: String(row._id), version: row.version });
  }
  if (label !== undefined) {
    const own = rows.find((r) => r.agentId === agent._id && r.version === label);
    if (!own) throw DomainError.notFound('Version');
    chosen.set(agentName, { _id: String(own._id), version: own.version });
  }
  const mine = chosen.get(agentName);
  if (!mine) throw new DomainError('NOT_FOUND', `Agent ${agentName} has no version yet`);
  const irs = await ctx.models.AgentVersion.find({ ...scope, _id: { $in: [...chosen.values()].map((c) => c._id) } }).select({ agentName: 1, irJson: 1, irVersion: 1, sourceHash: 1 }).lean();
  const agents: Record<string, AgentIR> = {};
  for (const row of irs) agents[row.agentName] = JSON.parse(row.irJson) as AgentIR;
  const compiled: CompilationOutput = {
    irVersion: irs[0]?.irVersion ?? IR_VERSION,
    sourceHash: irs.map((v) => v.sourceHash).sort().join(':'),
    project: { name: null, entryAgent: agentName, description: null }, agents, tool_libraries: {}, entry_agent: agentName, diagnostics: [], ok: true };
  return { compiled, version: mine.version };
}

/**
 * Every model call of a run (the agents', the judge's, the personas') goes to the project's usage
 * ledger as an API call, as a completion's does; a failed write is logged and never fails the run.
 */
function meteredResolver(ctx: CoreContext, scope: ProjectScope, inner: ResolveModel): ResolveModel {
  const record = (provider: string, model: string, usage: LlmResult['usage'] | null, latencyMs: number, status: 'ok' | 'error') =>
    recordLlmUsage(ctx.models.LlmUsage, {
      ...scope,
      modelId: model,
      servedModel: model,
      provider,
      inputTokens: usage?.inputTokens ?? 0,
      outputTokens: usage?.outputTokens ?? 0,
      cost: usage ? llmRuntime(ctx).cost(provider, model, usage) : null,
      latencyMs,
      source: 'api',
      status,
    }).catch((err: unknown) => ctx.logger.error({ err }, 'failed to record LLM usage'));
  return async (model) => {
    const target = await inner(model);
    const llm: LlmProvider = {
      name: target.llm.name,
      stream: (req) => target.llm.stream(req),
      async complete(req) {
        const started = Date.now();
        try {
          const result = await target.llm.complete(req);
          await record(target.provider, result.model || target.model, result.usage, Date.now() - started, 'ok');
          return result;
        } catch (err) {
          await record(target.provider, target.model, null, Date.now() - started, 'error');
          throw err;
        }
      },
    };
    return { ...target, llm };
  };
}

/** Validates the scenarios (422 with every problem), builds the bundle (404, 422) and runs them. */
export async function runProjectScenarios(ctx: CoreContext, scope: ProjectScope, input: ProjectScenarioRunInput): Promise<ProjectScenarioRun> {
  const parsed = parseScenarioFile(`${input.agentName}.scenarios.yaml`, input.scenarios);
  if (!parsed.ok) {
    const errors = parsed.errors.map(({ file: _file, ...e }) => e);
    const first = errors[0]!;
    throw new DomainError('UNPROCESSABLE_ENTITY', {
      message: `scenarios: ${first.scenario !== null ? `scenario "${first.scenario}": ` : ''}${first.path ? `${first.path}: ` : ''}${first.message}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}`,
      details: { errors },
    });
  }
  const file = parsed.file;
  const turns = file.scenarios.reduce((n, s) => n + (s.turns?.length ?? s.maxTurns ?? 10), 0);
  if (file.scenarios.length > SCENARIO_RUN_LIMITS.scenarios) {
    throw new DomainError('UNPROCESSABLE_ENTITY', `scenarios: at most ${SCENARIO_RUN_LIMITS.scenarios} scenarios per request (got ${file.scenarios.length})`);
  }
  if (turns > SCENARIO_RUN_LIMITS.turns) {
    throw new DomainError('UNPROCESSABLE_ENTITY', `scenarios: at most ${SCENARIO_RUN_LIMITS.turns} user turns per request, persona-driven ones counted at maxTurns (got ${turns})`);
  }
  const { compiled, version } =
    input.source === 'version' ? await versionBundle(ctx, scope, input.agentName, input.version) : { compiled: await draftBundle(ctx, scope, input.agentName), version: null };
  const unknown = file.scenarios.find((s) => !compiled.agents[s.agent]);
  if (unknown) throw new DomainError('UNPROCESSABLE_ENTITY', `scenarios: scenario "${unknown.name}": agent: ${unknown.agent} is not an agent of the project${input.source === 'version' ? ' with a version' : ''}`);

  const resolveModel = meteredResolver(ctx, scope, modelResolver(llmRuntime(ctx).resolve, scope));
  // Fail fast, as a chat turn does, when the project has no model at all.
  await resolveModel(null).catch((err: unknown) => {
    throw runtimeNotConfigured(err instanceof Error ? err.message.replace(/^Runtime not configured: /, '') : String(err));
  });
  const report = await runScenarioFiles([file], {
    compiled,
    resolveModel,
    judgeModel: input.judgeModel ?? null,
    concurrency: Math.min(SCENARIO_RUN_LIMITS.concurrency, SCENARIO_LIMITS.scenariosPerFile),
    // The answer must leave before the server gives up on the request.
    deadlineMs: Date.now() + Math.max(1_000, ctx.config.HTTP_REQUEST_TIMEOUT_MS - 10_000),
  });
  return { report, version };
}
