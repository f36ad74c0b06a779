// Search attributes set on every workflow so an operator can filter any tenant's work in the
// Temporal Web UI (e.g. `TenantId = "…" AND AgentName = "Billing_Agent"`).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const TenantIdKey = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const ProjectIdKey = defineSearchAttributeKey('ProjectId', SearchAttributeType.KEYWORD);
export const SessionIdKey = defineSearchAttributeKey('SessionId', SearchAttributeType.KEYWORD);
export const AgentNameKey = defineSearchAttributeKey('AgentName', SearchAttributeType.KEYWORD);
export const ChannelKey = defineSearchAttributeKey('Channel', SearchAttributeType.KEYWORD);
export const EnvironmentKey = defineSearchAttributeKey('Environment', SearchAttributeType.KEYWORD);
/** `suspended` while a session waits on an async tool's callback, `active` once it resumed (unset before its first wait). */
export const SessionStatusKey = defineSearchAttributeKey('SessionStatus', SearchAttributeType.KEYWORD);
/** Set on sessions pinned to a deployment and on that deployment's drain workflow. */
export const DeploymentIdKey = defineSearchAttributeKey('DeploymentId', SearchAttributeType.KEYWORD);

/** Every custom attribute; registered at dev-server start and by `ensureSearchAttributes`. */
export const SEARCH_ATTRIBUTE_KEYS = [TenantIdKey, ProjectIdKey, SessionIdKey, AgentNameKey, ChannelKey, EnvironmentKey, SessionStatusKey, DeploymentIdKey];
