// The scenario file format (`<Agent>.scenarios.yaml`, kept beside the agent): zod schemas for a
// file's personas, scenarios, tool mocks and expectations, and the parser that reports every
// problem with its file, scenario, field path and line (docs/abl-tests.md).
import { LineCounter, parseDocument, isNode, type Node } from 'yaml';
import { z } from 'zod';
import { patternProblem } from '../../abl/regex';

/** What a run accepts at most; the route and the CLI share them (so one file behaves the same in both). */
export const SCENARIO_LIMITS = {
  /** Scenarios in one file. */
  scenariosPerFile: 100,
  /** User turns in one scenario, scripted or persona-driven. */
  turnsPerScenario: 30,
  /** One user message. */
  messageChars: 4_000,
  /** Tool mocks in one scenario (file-level ones included). */
  toolMocks: 50,
  /** Expectations in one `expect` block. */
  expectationsPerBlock: 50,
  /** One file's YAML text. */
  fileBytes: 512 * 1024,
} as const;

const ZJson: z.ZodType<unknown> = z.json();
const ZName = z.string().min(1).max(200);
const ZAgentName = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,99}$/, 'an agent name (letters, digits and _; starts with a letter)');
const ZRegexText = z
  .string()
  .min(1)
  .max(1_000)
  .superRefine((source, ctx) => {
    // Matched by the linear-time engine the runtime uses (abl/regex.ts), so no pattern can stall a run.
    const problem = patternProblem(source);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.kind === 'invalid' ? `not a valid regular expression: ${problem.detail}` : `not supported: ${problem.detail}` });
  });
const ZOneOrMany = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1).max(20)]);

/** A persona: who the simulated user is. With `driver: persona` its model writes the user's messages after the first. */
export const ZPersona = z
  .object({
    name: ZName,
    description: z.string().max(2_000).optional(),
    style: z.string().max(500).optional(),
    domainKnowledge: z.string().max(500).optional(),
    traits: z.array(z.string().max(200)).max(20).optional(),
    goals: z.array(z.string().min(1).max(SCENARIO_LIMITS.messageChars)).max(SCENARIO_LIMITS.turnsPerScenario).optional(),
    constraints: z.array(z.string().max(500)).max(20).optional(),
    /** The persona's model (`provider:model` or a tier); the run's judge model when absent. */
    model: z.string().min(1).max(200).optional(),
  })
  .strict();

export const ZToolMock = z
  .object({
    tool: z.string().min(1).max(200),
    /** The tool's answer (for an async tool, the callback's payload). */
    response: ZJson.optional(),
    /** The call fails with this message instead. */
    error: z.string().min(1).max(2_000).optional(),
    /** Only calls whose arguments contain these values (deep, partial) get this mock. */
    when: z.object({ args: z.record(z.string(), ZJson) }).strict().optional(),
  })
  .strict()
  .refine((m) => !(m.response !== undefined && m.error !== undefined), 'give either response or error, not both');

/** An LLM-judged expectation: the rubric the judge applies to the response. */
export const ZJudge = z.union([
  z.string().min(1).max(4_000),
  z.object({ rubric: z.string().min(1).max(4_000), model: z.string().min(1).max(200).optional() }).strict(),
]);

export const ZResponseExpectation = z
  .object({
    equals: z.string().max(20_000).optional(),
    contains: ZOneOrMany(z.string().min(1).max(4_000)).optional(),
    notContains: ZOneOrMany(z.string().min(1).max(4_000)).optional(),
    regex: ZOneOrMany(ZRegexText).optional(),
    judge: ZJudge.optional(),
  })
  .strict()
  .refine((r) => Object.values(r).some((v) => v !== undefined), 'give at least one of equals, contains, notContains, regex, judge');

const ZHandoffExpectation = z.union([ZAgentName, z.object({ to: ZAgentName, from: ZAgentName.optional() }).strict()]);
const ZToolCallExpectation = z.union([
  z.string().min(1).max(200),
  z
    .object({
      tool: z.string().min(1).max(200),
      /** Arguments that must be present with these values (deep, partial). */
      args: z.record(z.string(), ZJson).optional(),
      /** Arguments whose text must match these regular expressions. */
      argsMatch: z.record(z.string(), ZRegexText).optional(),
    })
    .strict(),
]);

/** Expectations after a turn (on that turn) or after the scenario (on the whole conversation). */
export const ZExpect = z
  .object({
    response: ZResponseExpectation.optional(),
    /** The agent that holds the conversation afterwards. */
    agent: ZAgentName.optional(),
    status: z.enum(['active', 'completed', 'escalated', 'suspended']).optional(),
    /** The agents that held the conversation, in order (consecutive repeats counted once). */
    agentPath: z.array(ZAgentName).min(1).max(50).optional(),
    /** Handoffs that happened, in this order (others may come between); `[]`: none happened. */
    handoffs: z.array(ZHandoffExpectation).max(SCENARIO_LIMITS.expectationsPerBlock).optional(),
    /** Tool calls that happened, in this order (others may come between); `[]`: no tool was called. */
    toolCalls: z.array(ZToolCallExpectation).max(SCENARIO_LIMITS.expectationsPerBlock).optional(),
    /** Tools that must not have been called. */
    notCalled: z.array(z.string().min(1).max(200)).max(SCENARIO_LIMITS.expectationsPerBlock).optional(),
    /** Session variables of the active agent, compared deeply and partially. */
    state: z.record(z.string(), ZJson).optional(),
    /** Trace events that happened, in order: a type and part of its data. */
    events: z
      .array(z.object({ type: z.string().min(1).max(50), data: z.record(z.string(), ZJson).optional() }).strict())
      .max(SCENARIO_LIMITS.expectationsPerBlock)
      .optional(),
  })
  .strict();

export const ZTurn = z
  .object({
    user: z.string().min(1).max(SCENARIO_LIMITS.messageChars),
    /** Message metadata, as a channel sends it (`intent`, …). */
    metadata: z.record(z.string(), ZJson).optional(),
    expect: ZExpect.optional(),
  })
  .strict();

/** Who writes the user's messages when `driver` is not given: the persona when it has a first message and there is no script. */
function driverOf(s: { driver?: 'script' | 'persona'; turns?: unknown; initialMessage?: string }): 'script' | 'persona' {
  return s.driver ?? (s.initialMessage !== undefined && s.turns === undefined ? 'persona' : 'script');
}

export const ZScenario = z
  .object({
    name: ZName,
    description: z.string().max(2_000).optional(),
    category: z.string().max(100).optional(),
    difficulty: z.enum(['Easy', 'Medium', 'Hard']).optional(),
    tags: z.array(z.string().min(1).max(50)).max(20).optional(),
    /** The entry agent; the file's agent when absent. */
    agent: ZAgentName.optional(),
    persona: z.union([ZName, ZPersona]).optional(),
    /** Who writes the user's messages: the script (`turns`), or the persona's model after `initialMessage`. */
    driver: z.enum(['script', 'persona']).optional(),
    initialMessage: z.string().min(1).max(SCENARIO_LIMITS.messageChars).optional(),
    maxTurns: z.number().int().min(1).max(SCENARIO_LIMITS.turnsPerScenario).optional(),
    sessionVariables: z.record(z.string(), ZJson).optional(),
    /** ON_START is not run (as testContext.skipOnStart). */
    skipOnStart: z.boolean().optional(),
    toolMocks: z.array(ZToolMock).max(SCENARIO_LIMITS.toolMocks).optional(),
    turns: z.array(ZTurn).min(1).max(SCENARIO_LIMITS.turnsPerScenario).optional(),
    /** Expectations on the whole conversation, checked after the last turn. */
    expect: ZExpect.optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    const driver = driverOf(s);
    if (driver === 'script' && !s.turns) ctx.addIssue({ code: 'custom', path: ['turns'], message: 'a scripted scenario needs turns' });
    if (driver === 'persona') {
      if (s.turns) ctx.addIssue({ code: 'custom', path: ['turns'], message: 'a persona-driven scenario has no turns: its persona writes them after initialMessage' });
      if (!s.initialMessage) ctx.addIssue({ code: 'custom', path: ['initialMessage'], message: 'a persona-driven scenario needs initialMessage' });
      if (!s.persona) ctx.addIssue({ code: 'custom', path: ['persona'], message: 'a persona-driven scenario needs a persona' });
    }
  });

export const ZScenarioFile = z
  .object({
    /** The agent the scenarios start with; the file name's (`<Agent>.scenarios.yaml`) when absent. */
    agent: ZAgentName.optional(),
    /** Personas the scenarios name. */
    personas: z.array(ZPersona).max(20).optional(),
    /** Mocks every scenario of the file gets (a scenario's own come first). */
    toolMocks: z.array(ZToolMock).max(SCENARIO_LIMITS.toolMocks).optional(),
    scenarios: z.array(ZScenario).min(1).max(SCENARIO_LIMITS.scenariosPerFile),
  })
  .strict()
  .superRefine((f, ctx) => {
    const names = new Set<string>();
    f.scenarios.forEach((s, i) => {
      if (names.has(s.name)) ctx.addIssue({ code: 'custom', path: ['scenarios', i, 'name'], message: `duplicate scenario name "${s.name}"` });
      names.add(s.name);
      if (typeof s.persona === 'string' && !f.personas?.some((p) => p.name === s.persona)) {
        ctx.addIssue({ code: 'custom', path: ['scenarios', i, 'persona'], message: `no persona named "${s.persona}" in personas` });
      }
    });
  });

export type Persona = z.infer<typeof ZPersona>;
export type ToolMock = z.infer<typeof ZToolMock>;
export type Expect = z.infer<typeof ZExpect>;
export type ResponseExpectation = z.infer<typeof ZResponseExpectation>;
export type ScenarioTurn = z.infer<typeof ZTurn>;
export type ScenarioInput = z.infer<typeof ZScenario>;
export type ScenarioFileInput = z.infer<typeof ZScenarioFile>;

/** A scenario ready to run: its entry agent, persona and mocks resolved from the file. */
export interface Scenario extends Omit<ScenarioInput, 'persona' | 'toolMocks' | 'agent' | 'driver'> {
  agent: string;
  driver: 'script' | 'persona';
  persona: Persona | null;
  toolMocks: ToolMock[];
}

export interface ScenarioFile {
  /** As given (a project-relative path, or a name for the route). */
  file: string;
  agent: string;
  scenarios: Scenario[];
}

/** One problem in a scenario file. */
export interface ScenarioFileError {
  file: string;
  /** The scenario's name when the problem is inside one. */
  scenario: string | null;
  /** Dotted path to the field (`scenarios[2].turns[0].expect.response.regex`). */
  path: string;
  line: number | null;
  message: string;
}

export function formatScenarioError(e: ScenarioFileError): string {
  const where = `${e.file}${e.line !== null ? `:${e.line}` : ''}`;
  return `${where}: ${e.scenario !== null ? `scenario "${e.scenario}": ` : ''}${e.path ? `${e.path}: ` : ''}${e.message}`;
}

export type ParsedScenarioFile = { ok: true; file: ScenarioFile } | { ok: false; errors: ScenarioFileError[] };

/** The agent a file's name gives (`agents/Billing_Agent.scenarios.yaml` → Billing_Agent), or null. */
export function agentOfScenarioPath(path: string): string | null {
  const m = /(?:^|\/)([A-Za-z][A-Za-z0-9_]{0,99})\.scenarios\.ya?ml$/.exec(path);
  return m?.[1] ?? null;
}

export const isScenarioPath = (path: string): boolean => /\.scenarios\.ya?ml$/.test(path);

function pathText(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key)), '');
}

/** Parses and validates one scenario file's text (YAML, or the same structure as an object). */
export function parseScenarioFile(file: string, source: string | unknown): ParsedScenarioFile {
  const lines = new LineCounter();
  let data: unknown = source;
  let lineOf = (_path: readonly PropertyKey[]): number | null => null;
  if (typeof source === 'string') {
    if (Buffer.byteLength(source, 'utf8') > SCENARIO_LIMITS.fileBytes) {
      return { ok: false, errors: [{ file, scenario: null, path: '', line: null, message: `larger than ${SCENARIO_LIMITS.fileBytes} bytes` }] };
    }
    const doc = parseDocument(source, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
    if (doc.errors.length > 0) {
      return {
        ok: false,
        errors: doc.errors.map((e) => ({ file, scenario: null, path: '', line: e.linePos?.[0]?.line ?? null, message: `YAML: ${e.message.split('\n')[0]}` })),
      };
    }
    data = doc.toJS({ maxAliasCount: 100 }) as unknown;
    lineOf = (path) => {
      // The deepest node that exists on the path: an error about a missing key points at its parent.
      for (let n = path.length; n >= 0; n--) {
        const node = doc.getIn(path.slice(0, n) as unknown[], true) as Node | undefined;
        if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
      }
      return null;
    };
  }
  const parsed = ZScenarioFile.safeParse(data);
  if (!parsed.success) {
    const raw = (data ?? {}) as { scenarios?: unknown };
    const scenarioName = (path: readonly PropertyKey[]): string | null => {
      if (path[0] !== 'scenarios' || typeof path[1] !== 'number' || !Array.isArray(raw.scenarios)) return null;
      const s = raw.scenarios[path[1]] as { name?: unknown } | undefined;
      return typeof s?.name === 'string' ? s.name : `#${path[1] + 1}`;
    };
    return {
      ok: false,
      errors: parsed.error.issues.map((issue) => {
        // An unknown key is pointed at where it is written, not at its parent.
        const at = issue.code === 'unrecognized_keys' && issue.keys[0] !== undefined ? [...issue.path, issue.keys[0]] : issue.path;
        return { file, scenario: scenarioName(issue.path), path: pathText(issue.path), line: lineOf(at), message: issue.message };
      }),
    };
  }
  const input = parsed.data;
  const agent = input.agent ?? agentOfScenarioPath(file);
  if (!agent) {
    return { ok: false, errors: [{ file, scenario: null, path: 'agent', line: lineOf([]), message: 'name the agent (agent:), or name the file <Agent>.scenarios.yaml' }] };
  }
  const scenarios = input.scenarios.map((s): Scenario => {
    const persona = typeof s.persona === 'string' ? (input.personas?.find((p) => p.name === s.persona) ?? null) : (s.persona ?? null);
    const { persona: _p, toolMocks, agent: own, driver: _driver, ...rest } = s;
    return {
      ...rest,
      agent: own ?? agent,
      driver: driverOf(s),
      persona,
      toolMocks: [...(toolMocks ?? []), ...(input.toolMocks ?? [])].slice(0, SCENARIO_LIMITS.toolMocks),
    };
  });
  return { ok: true, file: { file, agent, scenarios } };
}
