// Per-project LLM settings: the default model (a model id or a tier name) and tier overrides
// (tier → model id) layered over the platform's LLM_TIER_* map. One record per project.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface LlmTierOverrides {
  fast?: string | null;
  balanced?: string | null;
  powerful?: string | null;
}

export interface LlmSettingsDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  /** A model id (`openai:gpt-4.1-mini`, `claude-haiku-4-5`, `local`) or a tier name. */
  defaultModel: string | null;
  tierOverrides: LlmTierOverrides;
  createdAt: Date;
  updatedAt: Date;
}

const LlmSettingsSchema = new Schema<LlmSettingsDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    defaultModel: { type: String, default: null, maxlength: 200 },
    tierOverrides: {
      type: new Schema<LlmTierOverrides>(
        {
          fast: { type: String, default: null, maxlength: 200 },
          balanced: { type: String, default: null, maxlength: 200 },
          powerful: { type: String, default: null, maxlength: 200 },
        },
        { _id: false },
      ),
      default: () => ({}),
    },
  },
  { timestamps: true, versionKey: false, minimize: false },
);
LlmSettingsSchema.index({ tenantId: 1, projectId: 1 }, { unique: true });

export type LlmSettingsModel = Model<LlmSettingsDoc>;
export const llmSettingsModel = (c: Connection): LlmSettingsModel => c.model<LlmSettingsDoc>('LlmSettings', LlmSettingsSchema, 'llm_settings');

/** Plain settings, as the resolution function takes them. Empty when the project never set any. */
export interface ProjectLlmSettings {
  defaultModel: string | null;
  tierOverrides: { fast: string | null; balanced: string | null; powerful: string | null };
  updatedAt: Date | null;
}

function toSettings(doc: LlmSettingsDoc | null): ProjectLlmSettings {
  return {
    defaultModel: doc?.defaultModel ?? null,
    tierOverrides: {
      fast: doc?.tierOverrides?.fast ?? null,
      balanced: doc?.tierOverrides?.balanced ?? null,
      powerful: doc?.tierOverrides?.powerful ?? null,
    },
    updatedAt: doc?.updatedAt ?? null,
  };
}

export async function getProjectLlmSettings(model: LlmSettingsModel, tenantId: string, projectId: string): Promise<ProjectLlmSettings> {
  return toSettings(await model.findOne({ tenantId, projectId }).lean());
}

/** Replaces the project's settings (fields left out become null). */
export async function putProjectLlmSettings(
  model: LlmSettingsModel,
  scope: { tenantId: string; projectId: string },
  input: { defaultModel: string | null; tierOverrides: LlmTierOverrides },
): Promise<ProjectLlmSettings> {
  const tierOverrides = {
    fast: input.tierOverrides.fast ?? null,
    balanced: input.tierOverrides.balanced ?? null,
    powerful: input.tierOverrides.powerful ?? null,
  };
  const doc = await model
    .findOneAndUpdate(
      { tenantId: scope.tenantId, projectId: scope.projectId },
      { $set: { defaultModel: input.defaultModel, tierOverrides }, $setOnInsert: { _id: newId() } },
      { upsert: true, new: true, lean: true },
    )
    .exec();
  return toSettings(doc);
}
