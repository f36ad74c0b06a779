// What a Temporal namespace needs before the API or a worker may use it: the namespace itself and
// every custom search attribute the workflows set (workflows/search-attributes.ts), each of its
// type. `npm run admin -- temporal-setup` creates what is missing; the API and the worker check
// at start (one listSearchAttributes call) and refuse to run without it.
import type { Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { msToTs } from '@temporalio/common/lib/time';

/** One custom search attribute: its name, its type's name and the operator API's IndexedValueType. */
export interface SearchAttributeSpec {
  name: string;
  typeName: string;
  indexedValueType: number;
}

type Services = Pick<Connection | NativeConnection, 'operatorService' | 'workflowService'>;

/** The command that creates what is missing (printed in every refusal). */
export const TEMPORAL_SETUP_COMMAND = 'npm run admin -- temporal-setup';

export interface SearchAttributeProblem {
  /** The attributes not registered, or registered with another type. */
  missing: SearchAttributeSpec[];
  wrongType: { spec: SearchAttributeSpec; registered: number }[];
  namespaceMissing: boolean;
}

const isNotFound = (err: unknown) => (err as { code?: unknown })?.code === 5;

/** What the namespace lacks of `specs` (one listSearchAttributes call). */
export async function checkSearchAttributes(connection: Services, namespace: string, specs: SearchAttributeSpec[]): Promise<SearchAttributeProblem> {
  let registered: Record<string, number>;
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    registered = (listed.customAttributes ?? {}) as Record<string, number>;
  } catch (err) {
    if (isNotFound(err)) return { missing: specs, wrongType: [], namespaceMissing: true };
    throw err;
  }
  return {
    missing: specs.filter((s) => registered[s.name] === undefined),
    wrongType: specs.filter((s) => registered[s.name] !== undefined && registered[s.name] !== s.indexedValueType).map((spec) => ({ spec, registered: registered[spec.name]! })),
    namespaceMissing: false,
  };
}

/** The refusal's text, or null when nothing is missing. */
export function searchAttributeRefusal(namespace: string, problem: SearchAttributeProblem): string | null {
  if (problem.namespaceMissing) {
    return `Temporal namespace "${namespace}" does not exist. Run \`${TEMPORAL_SETUP_COMMAND}\` (with the same TEMPORAL_* settings) to create it and its search attributes.`;
  }
  if (problem.missing.length === 0 && problem.wrongType.length === 0) return null;
  const lines = [
    ...problem.missing.map((s) => `  ${s.name} (${s.typeName}): not registered`),
    ...problem.wrongType.map((w) => `  ${w.spec.name}: registered with another type (IndexedValueType ${w.registered}); it must be ${w.spec.typeName}`),
  ];
  return `Temporal namespace "${namespace}" lacks search attributes the workflows set:\n${lines.join('\n')}\nRun \`${TEMPORAL_SETUP_COMMAND}\` (with the same TEMPORAL_* settings) to add them.`;
}

export interface TemporalSetupResult {
  namespace: string;
  namespaceCreated: boolean;
  added: string[];
  alreadyPresent: string[];
}

/**
 * Creates the namespace when missing (retention `retentionDays`) and adds every missing search
 * attribute; running it again changes nothing. A namespace just created takes a few seconds to
 * be usable: adding its attributes is retried until then (`waitMs`).
 */
export async function setUpTemporalNamespace(
  connection: Services,
  namespace: string,
  specs: SearchAttributeSpec[],
  options: { retentionDays: number; waitMs?: number },
): Promise<TemporalSetupResult> {
  let namespaceCreated = false;
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(options.retentionDays * 24 * 3600 * 1000) });
      namespaceCreated = true;
    } catch (registerErr) {
      // Created meanwhile by another run (gRPC ALREADY_EXISTS).
      if ((registerErr as { code?: unknown })?.code !== 6) throw registerErr;
    }
  }
  const deadline = Date.now() + (options.waitMs ?? 60_000);
  for (;;) {
    try {
      const problem = await checkSearchAttributes(connection, namespace, specs);
      if (problem.wrongType.length > 0) throw new Error(searchAttributeRefusal(namespace, { ...problem, missing: [] })!.split('\nRun')[0] + '\nRemove or rename them first: a search attribute cannot change type.');
      if (problem.namespaceMissing) throw Object.assign(new Error(`namespace "${namespace}" is not usable yet`), { code: 5 });
      if (problem.missing.length > 0) {
        await connection.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(problem.missing.map((s) => [s.name, s.indexedValueType])),
        });
      }
      const added = problem.missing.map((s) => s.name);
      return { namespace, namespaceCreated, added, alreadyPresent: specs.map((s) => s.name).filter((n) => !added.includes(n)) };
    } catch (err) {
      // A namespace just registered is unknown to the server's cache for a few seconds.
      if (!isNotFound(err) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** A process refusing to start: the namespace or some of its search attributes are missing. */
export class TemporalSetupError extends Error {
  override readonly name = 'TemporalSetupError';
}

/**
 * Throws TemporalSetupError naming what is missing; one listSearchAttributes call. A server that
 * does not let these credentials list them (gRPC PERMISSION_DENIED or UNIMPLEMENTED, as some
 * hosted services answer) is not a refusal: `onUnchecked` is told, and the process starts.
 */
export async function assertTemporalSetUp(connection: Services, namespace: string, specs: SearchAttributeSpec[], onUnchecked: (err: unknown) => void = () => undefined): Promise<void> {
  let problem: SearchAttributeProblem;
  try {
    problem = await checkSearchAttributes(connection, namespace, specs);
  } catch (err) {
    const code = (err as { code?: unknown })?.code;
    if (code === 7 || code === 12) return onUnchecked(err);
    throw err;
  }
  const refusal = searchAttributeRefusal(namespace, problem);
  if (refusal) throw new TemporalSetupError(refusal);
}
