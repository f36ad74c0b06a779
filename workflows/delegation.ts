// Delegation: a child workflow that runs one delegated agent to completion with the same
// interpreter and effects as the session, seeded only with the DELEGATE entry's INPUT. Its
// trace events and usage are returned to the parent, which records them in the session.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import { createInterpreter, delegateOutcome } from '../abl/runtime';
import type { DelegationInput, DelegationOutput } from './delegation-contract';
import { driveInterpreter, LOCAL_ACTIVITIES_PATCH, type EffectContext } from './effects';
import { interpreterFlags, runFlags } from './interpreter-flags';
import { TurnTrace } from './session-trace';
import { pinnedBundleRef } from './bundle-ref';
import { sharedBundle } from './shared-bundles';
import { contactAsUser, memoryPlan, saveSessionMemory, type MemoryOwner } from './agent-memory';

const BUNDLE_OPTIONS = { startToCloseTimeout: '30 seconds', retry: { maximumAttempts: 5 } } as const;
const { loadSessionBundle } = wf.proxyActivities<Activities>(BUNDLE_OPTIONS);
const { loadSessionBundle: loadSessionBundleLocally } = wf.proxyLocalActivities<Activities>(BUNDLE_OPTIONS);

export async function delegationWorkflow(input: DelegationInput): Promise<DelegationOutput> {
  const bundleQuery = { tenantId: input.tenantId, projectId: input.projectId, bundleRef: input.bundleRef };
  const compiled = sharedBundle(wf.patched(LOCAL_ACTIVITIES_PATCH) ? await loadSessionBundleLocally(bundleQuery) : await loadSessionBundle(bundleQuery));
  // The parent named its exact bundle; a child of a run recorded before that named what it started with.
  const bundleRef = pinnedBundleRef(input.bundleRef, compiled);
  const trace = new TurnTrace(0, 0, input.rootSpan);
  const stats = { messageCount: 0, traceEventCount: 0, tokenCount: 0, errorCount: 0, estimatedCost: 0, handoffCount: 0 };
  const interpreter = createInterpreter(
    { ...compiled, entry_agent: input.agent },
    {
      now: () => Date.now(),
      random: () => Math.random(),
      mockedTools: new Set(input.toolMocks.map((m) => m.toolName)),
      // One interpreter for the child's whole run: every flag is decided once.
      ...interpreterFlags(runFlags()),
    },
  );
  const ctx: EffectContext = {
    tenantId: input.tenantId,
    projectId: input.projectId,
    sessionId: input.sessionId,
    ...(input.environment ? { environment: input.environment } : {}),
    ...(input.deploymentId ? { deploymentId: input.deploymentId } : {}),
    bundleRef,
    compiled,
    trace,
    stats,
    mocks: new Map(input.toolMocks.map((m) => [m.toolName, m])),
    childIdPrefix: wf.workflowInfo().workflowId,
    delegationChain: input.chain ?? [input.parentAgent],
    ...(input.memory ? { memory: () => input.memory } : {}),
  };
  const state = interpreter.initDelegateState(input.agent, input.input);
  // The session's facts over the child's DEFAULTs, and its contact as user.* (runs with agent memory only).
  if (input.memory) {
    Object.assign(state.memory, input.memory.facts);
    state.user = contactAsUser(input.memory.contact);
  }
  const responses: string[] = [];
  const final = await driveInterpreter(ctx, interpreter, interpreter.advance(state, { type: 'start' }), responses);
  if (input.memory && final.state.memoryWrites) {
    const owner: MemoryOwner = { tenantId: input.tenantId, projectId: input.projectId, sessionId: input.sessionId, ...(input.memory.contact ? { contact: input.memory.contact } : {}) };
    await saveSessionMemory(owner, memoryPlan(compiled), final.state, trace, input.agent);
  }
  return {
    result: delegateOutcome(final.state, input.returns ?? undefined),
    traceEvents: trace.events.map(({ seq: _seq, ...event }) => event),
    tokenCount: stats.tokenCount,
    estimatedCost: stats.estimatedCost,
    errorCount: stats.errorCount,
  };
}
