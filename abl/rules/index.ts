// The project rules, run in this order after every file is compiled.

import type { Rule } from './context';
import { delegationCycles } from './delegationCycles';
import { entryAgent } from './entryAgent';
import { handoffCycles } from './handoffCycles';
import { knownAgents } from './knownAgents';
import { knownSteps } from './knownSteps';
import { knownTools } from './knownTools';
import { persistentWrites } from './persistentWrites';
import { reachableSteps } from './reachableSteps';
import { toolConfirmation } from './toolConfirmation';
import { uniqueAgentNames } from './uniqueAgentNames';
import { unusedTemplates } from './unusedTemplates';

export const PROJECT_RULES: readonly Rule[] = [
  uniqueAgentNames,
  entryAgent,
  knownAgents,
  knownTools,
  knownSteps,
  reachableSteps,
  handoffCycles,
  delegationCycles,
  toolConfirmation,
  unusedTemplates,
  persistentWrites,
];

export type { Rule, RuleContext } from './context';
