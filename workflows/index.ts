// The workflow bundle's entry: every workflow type the worker registers.
export { probeWorkflow } from './probe';
export { agentSession } from './agent-session';
export { delegationWorkflow } from './delegation';
export { deploymentDrain } from './deployment-drain';
export { humanTaskWorkflow } from './human-task';
export { appRun } from './app-run';
export { httpAsyncConversation } from './http-async-conversation';
export { outboundCall } from './outbound-call';
export { recordingFetch } from './recording-fetch';
export { agentAssistConversation } from './agent-assist-conversation';
export { deliverWebhookWorkflow } from './agent-workflows';
export { dataDeletion } from './data-deletion';
export { retentionSweep } from './retention-sweep';
export { voiceRoom } from './voice-room';
