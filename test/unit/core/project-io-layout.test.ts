// The import's path rules: unsafe paths are named by the rule they break, and the pattern the
// OpenAPI document states accepts exactly the paths the import classifies as files it takes.
import { classifyImportPath, IMPORT_PATH_PATTERN, unsafePathReason } from '../../../core/project-io/layout';

describe('unsafePathReason', () => {
  it.each([
    ['../x.abl', 'contains ".."'],
    ['agents/..hidden.abl', 'contains ".."'],
    ['/agents/A.abl', 'starts with "/"'],
    ['agents/A\u0000.abl', 'contains a NUL byte'],
    ['agents\\A.abl', 'contains a backslash'],
    ['', 'is empty'],
  ])('refuses %j: %s', (path, reason) => {
    expect(unsafePathReason(path)).toBe(reason);
  });

  it('lets ordinary paths through', () => {
    for (const path of ['agents/A.abl', 'tools/a-b.tools.abl', 'README.md', 'agents/a.b.abl']) expect(unsafePathReason(path)).toBeNull();
  });
});

describe('classifyImportPath and the documented pattern', () => {
  const pattern = new RegExp(IMPORT_PATH_PATTERN);
  const paths = [
    'agents/Billing_Agent.abl',
    'agents/a.abl',
    'agents/1st.abl',
    'agents/Billing_Agent.agent.abl',
    'agents/Billing_Agent.yaml',
    'agents/Billing_Agent.yml',
    'agents/Billing_Agent.agent.yaml',
    'agents/x.tools.abl',
    'agents/sub/A.abl',
    'tools/billing-api.tools.abl',
    'tools/_x.tools.abl',
    'tools/a.abl',
    'manifest.json',
    'lockfile.json',
    'deployments.json',
    'agents/Billing_Agent.scenarios.yaml',
    'agents/Billing_Agent.scenarios.yml',
    'agents/1st.scenarios.yaml',
    'tools/x.scenarios.yaml',
    'project.json',
    'Agents/A.abl',
    `agents/A${'b'.repeat(99)}.abl`,
    `agents/A${'b'.repeat(100)}.abl`,
  ];

  it.each(paths)('agree on %j', (path) => {
    expect(classifyImportPath(path).kind !== 'unknown').toBe(pattern.test(path));
  });

  it('names agents and tool libraries after their file', () => {
    expect(classifyImportPath('agents/Billing_Agent.abl')).toEqual({ kind: 'agent', name: 'Billing_Agent' });
    expect(classifyImportPath('agents/Billing_Agent.yaml')).toEqual({ kind: 'agent', name: 'Billing_Agent' });
    expect(classifyImportPath('tools/billing-api.tools.abl')).toEqual({ kind: 'tool', name: 'billing-api' });
    expect(classifyImportPath('lockfile.json')).toEqual({ kind: 'lockfile' });
    expect(classifyImportPath('agents/Billing_Agent.scenarios.yaml')).toEqual({ kind: 'scenarios', agent: 'Billing_Agent' });
  });
});
