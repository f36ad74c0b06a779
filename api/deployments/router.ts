// Deployment routes (`/api/projects/:projectId/deployments`): the spec's Deployments table and
// the rollback and promote semantics of docs/deployments.md. Changes need `deployment:create`.
import { z } from 'zod';
import { ApiError } from '../../lib/errors';
import { canActInEnvironment, type Principal } from '../../lib/permissions';
import { type DeploymentDoc } from '../../db/deployment';
import { findOwned } from '../../db/owned';
import { type AppContext } from '../context';
import { requireEnvironment } from '../../core/platform-keys/environments';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam } from '../http/schemas';
import { presentDeployment, presentDeploymentListItem, presentRetired } from '../../core/deployments/present';
import {
  ZCreateDeploymentRequestSchema,
  ZDeploymentDetailSchema,
  ZDeploymentListItemSchema,
  ZDeploymentParams,
  ZDeploymentResponse,
  ZListDeploymentsQuery,
  ZPromoteDeploymentRequestSchema,
  ZRetiredDeploymentSchema,
  ZRollbackResponse,
} from './schemas';
import { getDeployment } from '../../core/deployments/resolve';
import { activeSessionCount, createDeployment, listDeployments, promoteDeployment, retireDeployment, rollbackDeployment } from '../../core/deployments/lifecycle';
import { startDeploymentDrain } from '../../core/deployments/drain';
import { deploymentChannelCount } from '../../core/telephony/channel-connections';
import { deploymentEvent, emitOperationEvents } from '../../core/analytics/operations';

const TAGS = ['Deployments'];
const scopeOf = (project: { _id: string; tenantId: string } | null) => ({ tenantId: project!.tenantId, projectId: project!._id });

/** A deployment of an environment the key is not bound to is not visible to it: 404, like another project's. */
function hideOutsideEnvironment(principal: Principal, deployment: Pick<DeploymentDoc, 'environment'>): void {
  if (!canActInEnvironment(principal, deployment.environment)) throw ApiError.notFound('Deployment');
}

/** The same before an operation that reads the deployment itself; a read only for an environment-bound key. */
async function requireDeploymentEnvironment(ctx: AppContext, principal: Principal, scope: { tenantId: string; projectId: string }, id: string): Promise<void> {
  if (!principal.environments?.length) return;
  const deployment = await findOwned(ctx.models.Deployment, id, scope);
  if (deployment) hideOutsideEnvironment(principal, deployment);
}

/** The operations on one deployment, for links from whatever returned it. */
const deploymentLinks = (deploymentId: string) =>
  linksTo(['getDeployment', 'retireDeployment', 'rollbackDeployment', 'promoteDeployment'], { projectId: '$request.path.projectId', deploymentId });

export const deploymentRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/deployments',
    operationId: 'createDeployment',
    summary: "Deploy pinned agent versions to an environment (it becomes the environment's active deployment)",
    description:
      '`auto` pins the agent\'s latest version at creation; the stored manifest holds the resolved labels. The deployment active in that environment until now is retired (`superseded`): its sessions finish on their versions.',
    tags: TAGS,
    auth: 'deployment:create',
    params: ZProjectIdParam,
    body: ZCreateDeploymentRequestSchema,
    bodyExample: { environment: 'production', agentVersionManifest: { Support_Hub: 'auto', Billing_Agent: '1.0.0' }, entryAgentName: 'Support_Hub', label: 'Spring release' },
    links: deploymentLinks('$response.body#/deployment/id'),
    successStatus: 201,
    errorStatuses: [404, 422],
    response: ZDeploymentResponse,
    async handler({ ctx, principal, project, body }) {
      requireEnvironment(principal, body.environment);
      const deployment = await createDeployment(ctx.models, scopeOf(project), body, principal.subjectId);
      await emitOperationEvents(ctx, [deploymentEvent('created', deployment, principal.subjectId)]);
      return { success: true, deployment: presentDeployment(deployment) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/deployments',
    operationId: 'listDeployments',
    summary: "List a project's deployments, newest first",
    tags: TAGS,
    auth: 'agent:read',
    params: ZProjectIdParam,
    query: ZListDeploymentsQuery,
    response: z.object({ success: z.literal(true), total: z.number(), offset: z.number(), limit: z.number(), deployments: z.array(ZDeploymentListItemSchema) }),
    async handler({ ctx, project, query }) {
      const { total, deployments } = await listDeployments(ctx.models, scopeOf(project), query);
      return { success: true, total, offset: query.offset, limit: query.limit, deployments: deployments.map(presentDeploymentListItem) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/deployments/:deploymentId',
    operationId: 'getDeployment',
    summary: 'Get a deployment with its manifest and channel count',
    tags: TAGS,
    auth: 'agent:read',
    params: ZDeploymentParams,
    response: z.object({ success: z.literal(true), deployment: ZDeploymentDetailSchema }),
    async handler({ ctx, principal, project, params }) {
      const scope = scopeOf(project);
      const deployment = await getDeployment(ctx.models, scope, params.deploymentId);
      hideOutsideEnvironment(principal, deployment);
      const [channelCount, sessions] = await Promise.all([deploymentChannelCount(ctx, deployment), activeSessionCount(ctx.models, scope, deployment._id)]);
      return { success: true, deployment: { ...presentDeployment(deployment), channelCount, activeSessionCount: sessions } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/deployments/:deploymentId/retire',
    operationId: 'retireDeployment',
    summary: 'Retire an active deployment and drain its sessions',
    description:
      'New chats naming it get 410. Its sessions finish the turn they are in and end when idle, or at the drain timeout (workflow `deployment-drain/<id>`). 409 when it is already retired.',
    tags: TAGS,
    auth: 'deployment:create',
    params: ZDeploymentParams,
    errorStatuses: [409, 503],
    response: z.object({ success: z.literal(true), deployment: ZRetiredDeploymentSchema }),
    links: linksTo(['rollbackDeployment', 'getDeployment'], { projectId: '$request.path.projectId', deploymentId: '$request.path.deploymentId' }),
    async handler({ ctx, principal, project, params }) {
      const scope = scopeOf(project);
      const current = await getDeployment(ctx.models, scope, params.deploymentId);
      hideOutsideEnvironment(principal, current);
      if (current.status !== 'active') throw new ApiError('CONFLICT', 'Deployment is already retired');
      // The drain first, so a retire Temporal cannot take changes nothing (it waits for the write).
      await startDeploymentDrain(ctx, current);
      const deployment = await retireDeployment(ctx.models, scope, params.deploymentId);
      await emitOperationEvents(ctx, [deploymentEvent('retired', deployment, principal.subjectId)]);
      return { success: true, deployment: presentRetired(deployment) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/deployments/:deploymentId/rollback',
    operationId: 'rollbackDeployment',
    summary: 'Make a retired deployment active again (or, on the active one, the one it replaced)',
    description:
      "On a retired deployment: it becomes its environment's active deployment again and the one active now is retired (`rolled_back`; its sessions finish on their versions). On the active deployment: the same for the deployment it replaced. 409 when there is nothing to roll back to or a pinned version was deleted.",
    tags: TAGS,
    auth: 'deployment:create',
    params: ZDeploymentParams,
    errorStatuses: [409],
    response: ZRollbackResponse,
    links: deploymentLinks('$response.body#/deployment/id'),
    async handler({ ctx, principal, project, params }) {
      await requireDeploymentEnvironment(ctx, principal, scopeOf(project), params.deploymentId);
      const { deployment, retiredDeployment } = await rollbackDeployment(ctx.models, scopeOf(project), params.deploymentId);
      await emitOperationEvents(ctx, [deploymentEvent('rolled_back', deployment, principal.subjectId, { retired_deployment_id: retiredDeployment?._id ?? null })]);
      return { success: true, deployment: presentDeployment(deployment), retiredDeployment: retiredDeployment ? presentRetired(retiredDeployment) : null };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/deployments/:deploymentId/promote',
    operationId: 'promoteDeployment',
    summary: 'Copy a deployment into another environment as its new active deployment',
    description:
      'Copies the manifest, entry agent, model overrides and pinned settings. Into `staging` or `production` the pinned versions must compile together: 400 with `error.details.diagnostics` otherwise. 409 when a pinned version was deleted.',
    tags: TAGS,
    auth: 'deployment:create',
    params: ZDeploymentParams,
    body: ZPromoteDeploymentRequestSchema,
    bodyExample: { targetEnvironment: 'production' },
    successStatus: 201,
    errorStatuses: [409, 422],
    response: ZDeploymentResponse,
    links: deploymentLinks('$response.body#/deployment/id'),
    async handler({ ctx, principal, project, params, body }) {
      await requireDeploymentEnvironment(ctx, principal, scopeOf(project), params.deploymentId);
      requireEnvironment(principal, body.targetEnvironment);
      const deployment = await promoteDeployment(ctx.models, scopeOf(project), params.deploymentId, body, principal.subjectId);
      await emitOperationEvents(ctx, [deploymentEvent('promoted', deployment, principal.subjectId)]);
      return { success: true, deployment: presentDeployment(deployment) };
    },
  }),
];
