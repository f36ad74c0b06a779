// The export manifest's entryAgent is read from the drafts' headers without compiling; it must be
// the agent the compiler itself picks as the entry of the same files.
import { compileProject } from '../../../abl';
import { entryAgentOf } from '../../../core/project-io/export';

const agent = (name: string, goal = 'Help') => `AGENT: ${name}\nGOAL: "${goal}"\n`;
const supervisor = (name: string, target: string) => `# Routes people\n\nsupervisor: ${name}\nGOAL: "Route"\nHANDOFF:\n  - TO: ${target}\n    WHEN: "needs help"\n`;

const projects: Array<Array<{ name: string; content: string }>> = [
  [],
  [{ name: 'Solo', content: agent('Solo') }],
  [
    { name: 'Alpha', content: agent('Alpha') },
    { name: 'Beta', content: agent('Beta') },
  ],
  [
    { name: 'A_Helper', content: agent('A_Helper') },
    { name: 'Hub', content: supervisor('Hub', 'A_Helper') },
    { name: 'Zed', content: supervisor('Zed', 'A_Helper') },
  ],
  [
    { name: 'Ab', content: agent('Ab') },
    { name: 'A_b', content: agent('A_b') },
  ],
];

describe('entryAgentOf', () => {
  it.each(projects.map((p, i) => [i, p] as const))('agrees with the compiler on project %i', (_i, project) => {
    const sorted = [...project].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const compiled = compileProject(sorted.map((a) => ({ path: `agents/${a.name}.agent.abl`, content: a.content })));
    expect(entryAgentOf(sorted)).toBe(compiled.entry_agent);
  });

  it('picks a supervisor over agents that sort before it, and skips comments before the header', () => {
    expect(entryAgentOf(projects[3]!)).toBe('Hub');
  });
});
