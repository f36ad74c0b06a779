// The activities of an agent-assist conversation (workflows/agent-assist-conversation.ts): one
// assist run (the bot's agent, its newest version, asked through the runtime's LLM call for
// suggestions or a disposition summary) and one attempt to push a result to the bot's webhook,
// signed and sent through the HTTP-async destination rules.
import { ApplicationFailure } from '@temporalio/activity';
import type { AgentIR } from '../../abl/ir';
import { assistCatalogue, buildAssistMessages, parseSuggestionAnswer, parseSummaryAnswer, type AssistInput, type AssistMode, type AssistSuggestionAnswer, type AssistSummaryAnswer } from '../../abl/assist';
import { unsealBotWebhookSecret } from '../../db/agent-assist-bot';
import { postSignedCallback } from '../../lib/http-async/callback-post';
import { destinationGuard, httpAsyncDestinationPolicy } from '../../lib/net/destination';
import { secretMasterKeyRing } from '../../lib/secret-envelope';
import { createCallLlm } from '../llm/call-llm';
import { BundleCache } from '../persistence/session-bundles';
import type { ActivityDeps } from '../index';

export interface AgentAssistRunInput extends AssistInput {
  tenantId: string;
  projectId: string;
  botId: string;
  conversationId: string;
  mode: AssistMode;
}

export type AgentAssistRunResult =
  | { ok: true; mode: 'suggest'; answer: AssistSuggestionAnswer; model: string; push: boolean }
  | { ok: true; mode: 'summary'; answer: AssistSummaryAnswer; model: string; push: boolean }
  /** Nothing to run: the bot is gone, or its agent has no saved version. */
  | { ok: false; error: string; push: boolean };

export interface AgentAssistDeliveryInput {
  tenantId: string;
  botId: string;
  event: string;
  body: Record<string, unknown>;
}

/**
 * - `delivered`: the receiver answered 2xx. `failed`: it did not, or could not be reached (retried
 *   on the schedule). `blocked`: the destination rules refuse the URL (not retried). `dropped`: the
 *   bot no longer has a webhook.
 */
export type AgentAssistDeliveryOutcome = { outcome: 'delivered' | 'failed' | 'blocked' | 'dropped'; error: string | null };

/** An assist answer is short; a model that writes more is cut here. */
const ASSIST_MAX_TOKENS = 800;
/** Catalogues kept per worker, by agent version (a version never changes). */
const CATALOGUES_KEPT = 200;

export function createAgentAssistActivities(deps: ActivityDeps) {
  const callLlm = createCallLlm(deps);
  const policy = httpAsyncDestinationPolicy(deps.config);
  const ring = secretMasterKeyRing(deps.config);
  const compiled = new BundleCache<{ execution: AgentIR['execution']; catalogue: ReturnType<typeof assistCatalogue> }>(CATALOGUES_KEPT);

  async function botOf(tenantId: string, botId: string) {
    return deps.models.AgentAssistBot.findOne({ _id: botId, tenantId }).lean();
  }

  return {
    /** One assist run: suggestions after a USER message, or the disposition summary. */
    async runAgentAssist(input: AgentAssistRunInput): Promise<AgentAssistRunResult> {
      const bot = await botOf(input.tenantId, input.botId);
      if (!bot || bot.projectId !== input.projectId) return { ok: false, error: 'the agent-assist bot no longer exists', push: false };
      const push = !!bot.webhookUrl;
      const version = await deps.models.AgentVersion.findOne({ tenantId: bot.tenantId, projectId: bot.projectId, agentName: bot.agentName }).sort({ seq: -1 }).select({ _id: 1 }).lean();
      if (!version) return { ok: false, error: `the agent "${bot.agentName}" has no saved version in the bot's project`, push };
      let entry = compiled.get(version._id);
      if (!entry) {
        const row = await deps.models.AgentVersion.findOne({ _id: version._id, tenantId: bot.tenantId, projectId: bot.projectId }).select({ irJson: 1 }).lean();
        if (!row) return { ok: false, error: `the agent "${bot.agentName}" has no saved version in the bot's project`, push };
        const agent = JSON.parse(row.irJson) as AgentIR;
        entry = { execution: agent.execution, catalogue: assistCatalogue(agent) };
        compiled.set(version._id, entry);
      }
      const { catalogue, execution: exec } = entry;
      const { transcript, agents, transfers, language } = input;
      const result = await callLlm({
        tenantId: bot.tenantId,
        projectId: bot.projectId,
        sessionId: `agent-assist/${bot._id}/${input.conversationId}`,
        agent: bot.agentName,
        request: {
          model: exec.model,
          tier: 'balanced',
          ...(exec.temperature !== null ? { temperature: exec.temperature } : {}),
          maxTokens: Math.min(exec.max_tokens ?? ASSIST_MAX_TOKENS, ASSIST_MAX_TOKENS),
          ...(exec.fallback_model ? { fallbackModel: exec.fallback_model } : {}),
          ...(exec.llm_timeout_ms ? { timeoutMs: exec.llm_timeout_ms } : {}),
          messages: buildAssistMessages(input.mode, catalogue, { transcript, agents, transfers, ...(language ? { language } : {}) }),
          tools: [],
        },
      });
      const model = `${result.provider}:${result.model}`;
      if (input.mode === 'suggest') return { ok: true, mode: 'suggest', answer: parseSuggestionAnswer(result.content, catalogue), model, push };
      return { ok: true, mode: 'summary', answer: parseSummaryAnswer(result.content), model, push };
    },

    /** One signed POST of an assist result to the bot's webhook as it is now. */
    async deliverAgentAssistEvent(input: AgentAssistDeliveryInput): Promise<AgentAssistDeliveryOutcome> {
      const bot = await botOf(input.tenantId, input.botId);
      if (!bot?.webhookUrl || !bot.webhookSecret) return { outcome: 'dropped', error: null };
      if (!ring) throw ApplicationFailure.nonRetryable('No master key: the webhook secret cannot be opened', 'SERVICE_UNAVAILABLE');
      const secret = await unsealBotWebhookSecret(deps.models.TenantDataKey, ring, { _id: bot._id, tenantId: bot.tenantId, webhookSecret: bot.webhookSecret });
      const outcome = await postSignedCallback({ url: bot.webhookUrl, secret, event: input.event, body: input.body, fetch: destinationGuard(policy).fetch });
      if (outcome.ok) return { outcome: 'delivered', error: null };
      if (outcome.blocked) {
        deps.logger.warn({ tenantId: bot.tenantId, botId: bot._id }, 'an agent-assist webhook destination was refused by the destination rules');
        return { outcome: 'blocked', error: outcome.error };
      }
      return { outcome: 'failed', error: outcome.error };
    },
  };
}
