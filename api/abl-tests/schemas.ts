// Request and response schemas of the scenario-test route (docs/abl-tests.md).
import { z } from 'zod';
import '../openapi/registry';
import { SCENARIO_LIMITS } from '../../core/abl-tests/schema';
import { VERSION_PATTERN } from '../../core/agents/names';

export const ZRunScenariosRequest = z
  .object({
    scenarios: z
      .union([
        z
          .string()
          .min(1)
          .max(SCENARIO_LIMITS.fileBytes)
          .refine((s) => Buffer.byteLength(s, 'utf8') <= SCENARIO_LIMITS.fileBytes, `must be at most ${SCENARIO_LIMITS.fileBytes} bytes`)
          .describe('A scenario file (YAML text), as kept in agents/<Agent>.scenarios.yaml'),
        z.record(z.string(), z.unknown()).describe('The same structure as JSON'),
      ])
      .describe('The scenarios to run; their agent defaults to the path\'s agent. At most 20 scenarios and 200 user turns.'),
    version: z
      .union([z.literal('latest'), z.string().regex(VERSION_PATTERN, 'must be a version label such as 1.0.0, or latest')])
      .optional()
      .describe("A version of the agent to run (`latest`, or a label), with the other agents' latest versions; absent: the saved drafts"),
    judgeModel: z.string().min(1).max(200).optional().describe("The judge's and personas' model (default: the project's default model)"),
    junit: z.boolean().optional().describe('Also answer the report as JUnit XML (`junit`)'),
  })
  .strict();

const ZExpectationResult = z.object({
  expectation: z.string().describe('What was checked, e.g. `response.contains "refund"`'),
  passed: z.boolean(),
  message: z.string().describe("Why it failed, or the judge's reasoning"),
});

const ZScenarioResult = z.object({
  name: z.string(),
  agent: z.string().describe('The entry agent'),
  passed: z.boolean(),
  durationMs: z.number(),
  turns: z.array(z.object({ user: z.string(), response: z.string(), agent: z.string(), expectations: z.array(ZExpectationResult) })),
  expectations: z.array(ZExpectationResult).describe("The scenario's own expect block, checked after the last turn"),
  errors: z.array(z.string()).describe('Problems of the run itself: an unmocked tool call, a model failure'),
});

export const ZRunScenariosResponse = z.object({
  success: z.literal(true),
  passed: z.boolean().describe('Every scenario passed'),
  source: z.enum(['draft', 'version']),
  version: z.string().nullable().describe('The version run (source `version`)'),
  summary: z.object({ total: z.number(), passed: z.number(), failed: z.number(), durationMs: z.number() }),
  scenarios: z.array(ZScenarioResult),
  junit: z.string().optional().describe('The report as JUnit XML, when asked for'),
});
