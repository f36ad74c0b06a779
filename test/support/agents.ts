// Test setup through the real API: an agent with a version (so a session can run it), and a
// project whose model calls go to a fake OpenAI-compatible server.
import { type client } from './http';

type Api = ReturnType<typeof client>;
interface Owner {
  adminKey: string;
  projectId: string;
}

/** Creates the agent from ABL source and saves a version of it; throws on any other status than 201. */
export async function publishAgent(api: Api, owner: Owner, name: string, dslContent: string): Promise<void> {
  const created = await api.post(`/api/projects/${owner.projectId}/agents`, { key: owner.adminKey, json: { name, dslContent } });
  if (created.status !== 201) throw new Error(`creating agent ${name}: ${created.status} ${created.text}`);
  const version = await api.post(`/api/projects/${owner.projectId}/agents/${name}/versions`, { key: owner.adminKey, json: {} });
  if (version.status !== 201) throw new Error(`saving a version of ${name}: ${version.status} ${version.text}`);
}

/** Stores an OpenAI credential pointing at `baseURL` and makes `openai:gpt-4o-mini` the project's default model. */
export async function useFakeOpenAI(api: Api, owner: Owner, baseURL: string, apiKey = 'sk-test'): Promise<void> {
  const cred = await api.put(`/api/projects/${owner.projectId}/llm-credentials/openai`, { key: owner.adminKey, json: { apiKey, baseURL } });
  if (cred.status !== 200 && cred.status !== 201) throw new Error(`storing the credential: ${cred.status} ${cred.text}`);
  const settings = await api.put(`/api/projects/${owner.projectId}/llm-settings`, { key: owner.adminKey, json: { defaultModel: 'openai:gpt-4o-mini' } });
  if (settings.status !== 200) throw new Error(`setting the default model: ${settings.status} ${settings.text}`);
}

/**
 * An agent that stays in its one step and answers every message without a model: "Noted <n>."
 * with the message's metadata `n` (empty when none), plus `extra` lines in the step (e.g.
 * RICH_CONTENT). Used by the HTTP-async tests and bench.
 */
export function echoAgent(extra = ''): string {
  return `AGENT: Echo
GOAL: "Acknowledge every message."
FLOW:
  steps: [echo]
  echo:
    REASONING: false
    RESPOND: "Noted {{session.messageMetadata.n}}."
${extra}    ON_INPUT:
      - ELSE:
        THEN: echo
`;
}
