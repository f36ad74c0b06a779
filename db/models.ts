// Binds every collection's model to one connection. Services receive `Models`, never globals,
// so tests and several processes can hold separate connections.
import { type Connection } from 'mongoose';
import { agentModel } from './agent';
import { agentVersionModel } from './agent-version';
import { deploymentModel } from './deployment';
import { sessionBundleModel } from './session-bundle';
import { toolFileModel } from './tool-file';
import { apiKeyModel } from './api-key';
import { publicKeyModel } from './public-key';
import { apiKeyUsageModel } from './api-key-usage';
import { apiScopeModel } from './api-scope';
import { apiKeyClaimModel } from './api-key-claim';
import { projectModel } from './project';
import { tenantModel } from './tenant';
import { userModel } from './user';
import { sessionModel } from './session';
import { traceEventModel } from './trace-event';
import { transcriptMessageModel } from './transcript-message';
import { llmCredentialModel } from './llm-credential';
import { llmSettingsModel } from './llm-settings';
import { llmUsageModel } from './llm-usage';
import { sessionCapacityCountModel } from './session-capacity-count';
import { sessionSlotModel } from './session-slot';
import { tenantDataKeyModel } from './tenant-data-key';
import { toolSecretAuditModel, toolSecretModel } from './tool-secret';
import { agentAssistBotModel } from './agent-assist-bot';
import { suspensionModel } from './suspension';
import { importLockModel } from './import-lock';
import { humanTaskModel } from './human-task';
import { appSessionModel } from './app-session';
import { appRunModel } from './app-run';
import { httpAsyncDeliveryModel, httpAsyncSubscriptionModel } from './http-async-subscription';
import { httpAsyncConversationModel } from './http-async-conversation';
import { channelConnectionModel } from './channel-connection';
import { voiceEventModel } from './voice-event';
import { voiceRoomModel } from './voice-room';
import { outboundCallModel } from './outbound-call';
import { recordingModel } from './recording';
import { analyticsEventModel } from './analytics-event';
import { sessionEncryptionKeyModel } from './session-encryption-key';
import { attachmentModel } from './attachment';
import { contactModel, contactSessionModel } from './contact';
import { memoryFactModel } from './memory-fact';
import { analyticsMinuteRollupModel, analyticsRollupModel } from './analytics-rollup';
import { mcpServerModel } from './mcp-server';
import { projectFunctionModel } from './project-function';
import { memoryStoreModel } from './memory-store';
import { turnStreamEventModel, turnStreamModel } from './turn-stream';
import { toolCircuitModel } from './tool-circuit';
import { toolVaultModel } from './tool-vault';
import { retentionPolicyModel } from './retention-policy';
import { deletionJobModel } from './deletion-job';

export function createModels(connection: Connection) {
  return {
    connection,
    Tenant: tenantModel(connection),
    Project: projectModel(connection),
    User: userModel(connection),
    ApiKey: apiKeyModel(connection),
    ApiKeyUsage: apiKeyUsageModel(connection),
    ApiScope: apiScopeModel(connection),
    ApiKeyClaim: apiKeyClaimModel(connection),
    PublicKey: publicKeyModel(connection),
    Agent: agentModel(connection),
    AgentVersion: agentVersionModel(connection),
    ToolFile: toolFileModel(connection),
    Deployment: deploymentModel(connection),
    SessionBundle: sessionBundleModel(connection),
    Session: sessionModel(connection),
    TraceEvent: traceEventModel(connection),
    TranscriptMessage: transcriptMessageModel(connection),
    LlmCredential: llmCredentialModel(connection),
    LlmSettings: llmSettingsModel(connection),
    LlmUsage: llmUsageModel(connection),
    SessionCapacityCount: sessionCapacityCountModel(connection),
    SessionSlot: sessionSlotModel(connection),
    TenantDataKey: tenantDataKeyModel(connection),
    ToolSecret: toolSecretModel(connection),
    ToolSecretAudit: toolSecretAuditModel(connection),
    AgentAssistBot: agentAssistBotModel(connection),
    Suspension: suspensionModel(connection),
    ImportLock: importLockModel(connection),
    HumanTask: humanTaskModel(connection),
    AppSession: appSessionModel(connection),
    AppRun: appRunModel(connection),
    HttpAsyncSubscription: httpAsyncSubscriptionModel(connection),
    HttpAsyncDelivery: httpAsyncDeliveryModel(connection),
    HttpAsyncConversation: httpAsyncConversationModel(connection),
    ChannelConnection: channelConnectionModel(connection),
    VoiceEvent: voiceEventModel(connection),
    VoiceRoom: voiceRoomModel(connection),
    OutboundCall: outboundCallModel(connection),
    Recording: recordingModel(connection),
    AnalyticsEvent: analyticsEventModel(connection),
    SessionEncryptionKey: sessionEncryptionKeyModel(connection),
    Attachment: attachmentModel(connection),
    Contact: contactModel(connection),
    ContactSession: contactSessionModel(connection),
    MemoryFact: memoryFactModel(connection),
    AnalyticsRollup: analyticsRollupModel(connection),
    AnalyticsMinuteRollup: analyticsMinuteRollupModel(connection),
    MemoryStore: memoryStoreModel(connection),
    McpServer: mcpServerModel(connection),
    ProjectFunction: projectFunctionModel(connection),
    TurnStream: turnStreamModel(connection),
    TurnStreamEvent: turnStreamEventModel(connection),
    ToolCircuit: toolCircuitModel(connection),
    ToolVault: toolVaultModel(connection),
    RetentionPolicy: retentionPolicyModel(connection),
    DeletionJob: deletionJobModel(connection),
  };
}

export type Models = ReturnType<typeof createModels>;

/** Builds every declared index (unique constraints must exist before the first write). */
export async function syncIndexes(models: Models): Promise<void> {
  for (const model of Object.values(models)) {
    if (typeof model === 'function' && 'createIndexes' in model) await model.createIndexes();
  }
}
