// What this API process knows about the sessions that run HTTP-async conversations' delivery
// lanes: the conversation's workflow id and the session it last sent a follow-up to. A follow-up
// for a remembered conversation goes straight to that session without reading the conversation's
// record or its project (a project's deletion ends its sessions before it deletes anything, as for
// chat turns: core/sessions/running-sessions.ts). The session is the judge: one that has ended
// refuses the message, which then goes by the record as any other (and the entry is forgotten).
import { type CoreContext } from '../context';
import { rememberedPerProcess } from '../remembered';

const laneSessions = rememberedPerProcess<string>(10_000);

/** The session that ran the conversation's lane when this process last sent it a message, or null. */
export const recallLaneSession = (ctx: CoreContext, tenantId: string, conversationId: string): string | null => laneSessions.recall(ctx, tenantId, conversationId);

export const rememberLaneSession = (ctx: CoreContext, tenantId: string, conversationId: string, sessionId: string): void => laneSessions.remember(ctx, tenantId, conversationId, sessionId);

export const forgetLaneSession = (ctx: CoreContext, tenantId: string, conversationId: string): void => laneSessions.forget(ctx, tenantId, conversationId);
