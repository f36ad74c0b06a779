// The scenario-test route: runs a scenario file against a project's agent, its draft or a version,
// through the session interpreter (core/abl-tests; docs/abl-tests.md).
import { defineRoute, type AnyRoute } from '../http/route';
import { ZAgentParams } from '../agents/schemas';
import { runProjectScenarios } from '../../core/abl-tests/project-run';
import { formatJunit } from '../../core/abl-tests/report';
import { ZRunScenariosRequest, ZRunScenariosResponse } from './schemas';

export const ablTestRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/agents/:agentName/scenarios/run',
    operationId: 'runAgentScenarios',
    summary: "Run scenario tests against an agent's draft or version",
    description:
      'Runs each scenario as its own in-memory session of the session interpreter on the project\'s models; tool calls are answered only by the scenarios\' mocks. ' +
      'Answers 200 with the report whether or not the scenarios passed (`passed`). 422 with `error.details.errors` [{ scenario, path, line, message }] for a scenario file that does not validate ' +
      '(or asks for more than 20 scenarios or 200 user turns), and with `error.details.diagnostics` when the draft does not compile; 503 when the project has no model.',
    tags: ['Agents'],
    auth: 'agent:write',
    params: ZAgentParams,
    body: ZRunScenariosRequest,
    bodyExample: {
      scenarios: 'scenarios:\n  - name: greets\n    turns:\n      - user: hello\n        expect:\n          response: { contains: "Hi" }\n',
    },
    errorStatuses: [404, 422, 503],
    response: ZRunScenariosResponse,
    async handler({ ctx, project, params, body }) {
      const source = body.version === undefined ? ('draft' as const) : ('version' as const);
      const { report, version } = await runProjectScenarios(ctx, { tenantId: project!.tenantId, projectId: project!._id }, {
        agentName: params.agentName,
        source,
        ...(body.version !== undefined && body.version !== 'latest' ? { version: body.version } : {}),
        scenarios: body.scenarios,
        ...(body.judgeModel ? { judgeModel: body.judgeModel } : {}),
      });
      const scenarios = report.files.flatMap((f) => f.scenarios).map(({ file: _file, ...s }) => s);
      return {
        success: true as const,
        passed: report.failed === 0,
        source,
        version,
        summary: { total: report.total, passed: report.passed, failed: report.failed, durationMs: report.durationMs },
        scenarios,
        ...(body.junit ? { junit: formatJunit(report) } : {}),
      };
    },
  }),
];
