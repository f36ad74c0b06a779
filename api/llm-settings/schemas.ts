// Zod schemas of the per-project LLM settings and provider credential routes (docs/llm-settings.md).
import { z } from 'zod';
import { MODEL_ID_PATTERN, MODEL_OR_TIER_PATTERN } from '../../core/llm/models';
import { CREDENTIAL_PROVIDERS } from '../../db/llm-credential';
import '../openapi/registry';
import { trimmedText } from '../http/schemas';

const ZModelId = z
  .string()
  .min(1)
  .max(200)
  .regex(MODEL_ID_PATTERN, 'names no known provider; write provider:model (openai:, anthropic:, local)');

const ZModelOrTier = z
  .string()
  .min(1)
  .max(200)
  .regex(MODEL_OR_TIER_PATTERN, 'must be a tier (fast, balanced, powerful) or a model id with a known provider');

const ZTierModels = z.object({
  fast: z.string().nullable(),
  balanced: z.string().nullable(),
  powerful: z.string().nullable(),
});

export const ZPutLlmSettingsRequestSchema = z
  .object({
    defaultModel: ZModelOrTier.nullable().default(null).describe('Model id or tier name used when a call names neither; null to use the balanced tier'),
    tierOverrides: z
      .object({ fast: ZModelId.nullable().optional(), balanced: ZModelId.nullable().optional(), powerful: ZModelId.nullable().optional() })
      .strict()
      .default({})
      .describe('Tier → model id for this project; null or absent keeps the platform mapping'),
  })
  .strict()
  .openapi('PutLlmSettingsRequest');

export const ZLlmSettingsSchema = z
  .object({
    defaultModel: z.string().nullable(),
    tierOverrides: ZTierModels,
    effectiveTiers: ZTierModels.describe('The tier map calls of this project use: platform LLM_TIER_* with the overrides applied'),
    updatedAt: z.string().nullable(),
  })
  .openapi('LlmSettings');

export const ZLlmSettingsResponseSchema = z.object({ success: z.literal(true), settings: ZLlmSettingsSchema });

export const ZProviderParam = z.object({
  projectId: z.string().min(1).max(64),
  provider: z.enum(CREDENTIAL_PROVIDERS).describe('openai or anthropic'),
});

export const ZPutLlmCredentialRequestSchema = z
  .object({
    apiKey: trimmedText(4096).describe('Stored encrypted; never returned'),
    baseURL: z.url({ protocol: /^https?$/ }).max(2048).nullable().optional().describe('OpenAI-compatible endpoint or Anthropic proxy; omit for the public API'),
  })
  .strict()
  .openapi('PutLlmCredentialRequest');

export const ZLlmCredentialSchema = z
  .object({
    provider: z.enum(CREDENTIAL_PROVIDERS),
    baseURL: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('LlmCredential');
