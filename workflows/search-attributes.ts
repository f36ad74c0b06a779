// Search attributes set on the workflows (which sets which: docs/architecture.md, "Workflows") so
// an operator can filter any tenant's work in the Temporal Web UI (e.g. `TenantId = "…" AND AgentName = "Billing_Agent"`).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const TenantIdKey = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const ProjectIdKey = defineSearchAttributeKey('ProjectId', SearchAttributeType.KEYWORD);
export const SessionIdKey = defineSearchAttributeKey('SessionId', SearchAttributeType.KEYWORD);
export const AgentNameKey = defineSearchAttributeKey('AgentName', SearchAttributeType.KEYWORD);
export const ChannelKey = defineSearchAttributeKey('Channel', SearchAttributeType.KEYWORD);
export const EnvironmentKey = defineSearchAttributeKey('Environment', SearchAttributeType.KEYWORD);
/** `suspended` while a session waits on an async tool's callback or a human task, `active` once it resumed (unset before its first wait). */
export const SessionStatusKey = defineSearchAttributeKey('SessionStatus', SearchAttributeType.KEYWORD);
/** Set on sessions pinned to a deployment and on that deployment's drain workflow. */
export const DeploymentIdKey = defineSearchAttributeKey('DeploymentId', SearchAttributeType.KEYWORD);
// A human task's workflow (`human-task/<taskId>`). Temporal's SQL visibility holds at most ten
// Keyword attributes (a KeywordList counts as one; all ten are used), so the priority is a number and the assignee a list.
export const TaskStatusKey = defineSearchAttributeKey('TaskStatus', SearchAttributeType.KEYWORD);
export const TaskTypeKey = defineSearchAttributeKey('TaskType', SearchAttributeType.KEYWORD);
/** 1 low, 2 medium, 3 high, 4 critical (`TaskPriority >= 3` finds the urgent ones). */
export const TaskPriorityKey = defineSearchAttributeKey('TaskPriority', SearchAttributeType.INT);
/** Who holds the task: the assigned or claiming user id and/or `team:<name>` (`Assignee = 'ada'`). */
export const AssigneeKey = defineSearchAttributeKey('Assignee', SearchAttributeType.KEYWORD_LIST);
// An outbound call's workflow (`outbound-call/<id>`). No Keyword slot is left, so both are lists:
// the phase and, once terminal, the outcome in one (their values never overlap: `CallStatus = 'terminal'
// AND CallStatus = 'busy'`), and the channel connection the call went out on.
export const CallStatusKey = defineSearchAttributeKey('CallStatus', SearchAttributeType.KEYWORD_LIST);
export const ChannelConnectionIdKey = defineSearchAttributeKey('ChannelConnectionId', SearchAttributeType.KEYWORD_LIST);

/** Every custom attribute; registered at dev-server start, by `ensureSearchAttributes` and by `npm run admin -- temporal-setup`. */
export const SEARCH_ATTRIBUTE_KEYS: ReturnType<typeof defineSearchAttributeKey<SearchAttributeType>>[] = [
  TenantIdKey, ProjectIdKey, SessionIdKey, AgentNameKey, ChannelKey, EnvironmentKey, SessionStatusKey, DeploymentIdKey,
  TaskStatusKey, TaskTypeKey, TaskPriorityKey, AssigneeKey, CallStatusKey, ChannelConnectionIdKey,
];

/** The name `temporal server start-dev --search-attribute` and the operator API give each type. */
export const SEARCH_ATTRIBUTE_TYPE_NAMES: Partial<Record<SearchAttributeType, { cli: string; indexedValueType: number }>> = {
  [SearchAttributeType.KEYWORD]: { cli: 'Keyword', indexedValueType: 2 },
  [SearchAttributeType.INT]: { cli: 'Int', indexedValueType: 3 },
  [SearchAttributeType.KEYWORD_LIST]: { cli: 'KeywordList', indexedValueType: 7 },
};

/** Each attribute's name, type name and IndexedValueType, as lib/temporal-setup.ts checks and registers them. */
export function searchAttributeSpecs(): { name: string; typeName: string; indexedValueType: number }[] {
  return SEARCH_ATTRIBUTE_KEYS.map((k) => ({ name: k.name, typeName: SEARCH_ATTRIBUTE_TYPE_NAMES[k.type]!.cli, indexedValueType: SEARCH_ATTRIBUTE_TYPE_NAMES[k.type]!.indexedValueType }));
}
