// The model vocabulary requests are judged by (model ids with a known provider, tiers), and the
// tier map a project gets: the platform's tiers (LLM_TIER_*) under the project's own overrides.
import { type Config } from '../../lib/config';
import { effectiveTierMap, platformLlmConfig, type ProjectLlmConfig, type TierMap } from '../../providers/llm';

export { MODEL_ID_PATTERN, MODEL_OR_TIER_PATTERN, MODEL_TIERS } from '../../providers/llm';

/** The project's tier → model map: the platform's, with the project's overrides on top. */
export function effectiveProjectTiers(config: Config, overrides: ProjectLlmConfig['tierOverrides']): TierMap {
  return effectiveTierMap(platformLlmConfig(config).tierMap, overrides);
}
