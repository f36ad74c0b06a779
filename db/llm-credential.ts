// Per-project LLM provider credentials: the API key encrypted at rest (per-tenant AES-256-GCM),
// an optional base URL, one record per project and provider. The key is never returned.
import { Schema, type Connection, type Model } from 'mongoose';
import { EncryptedValueSchema } from './encrypted-value';
import { type EncryptedValue, type Encryptor } from '../lib/encryption';
import { UnknownMasterKeyError } from '../lib/master-keys';
import { newId } from '../lib/ids';

/** Providers that take a credential (`local` needs none). */
export const CREDENTIAL_PROVIDERS = ['openai', 'anthropic'] as const;
export type CredentialProvider = (typeof CREDENTIAL_PROVIDERS)[number];

export function isCredentialProvider(value: string): value is CredentialProvider {
  return (CREDENTIAL_PROVIDERS as readonly string[]).includes(value);
}

/** Purpose string for the encryptor, so these ciphertexts cannot be opened as tool secrets. */
export const LLM_CREDENTIAL_PURPOSE = 'llm-credential';

export interface LlmCredentialDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  provider: CredentialProvider;
  apiKey: EncryptedValue;
  baseURL: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const LlmCredentialSchema = new Schema<LlmCredentialDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    provider: { type: String, required: true, enum: CREDENTIAL_PROVIDERS },
    apiKey: { type: EncryptedValueSchema, required: true },
    baseURL: { type: String, default: null },
  },
  { timestamps: true, versionKey: false },
);
LlmCredentialSchema.index({ tenantId: 1, projectId: 1, provider: 1 }, { unique: true });

export type LlmCredentialModel = Model<LlmCredentialDoc>;
export const llmCredentialModel = (c: Connection): LlmCredentialModel =>
  c.model<LlmCredentialDoc>('LlmCredential', LlmCredentialSchema, 'llm_credentials');

/** What may be shown about a credential: everything but the key. */
export interface LlmCredentialMetadata {
  provider: CredentialProvider;
  baseURL: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export function credentialMetadata(doc: LlmCredentialDoc): LlmCredentialMetadata {
  return { provider: doc.provider, baseURL: doc.baseURL, createdAt: doc.createdAt, updatedAt: doc.updatedAt };
}

/** Creates or replaces the project's credential for `provider`; returns its metadata. */
export async function upsertLlmCredential(
  model: LlmCredentialModel,
  encryptor: Encryptor,
  scope: { tenantId: string; projectId: string },
  input: { provider: CredentialProvider; apiKey: string; baseURL?: string | null },
): Promise<{ created: boolean; credential: LlmCredentialMetadata }> {
  const filter = { tenantId: scope.tenantId, projectId: scope.projectId, provider: input.provider };
  const apiKey = encryptor.encrypt(scope.tenantId, LLM_CREDENTIAL_PURPOSE, input.apiKey);
  const result = await model
    .findOneAndUpdate(
      filter,
      { $set: { apiKey, baseURL: input.baseURL ?? null }, $setOnInsert: { _id: newId() } },
      { upsert: true, new: true, includeResultMetadata: true, lean: true },
    )
    .exec();
  const doc = result.value as LlmCredentialDoc;
  return { created: result.lastErrorObject?.updatedExisting === false, credential: credentialMetadata(doc) };
}

export async function listLlmCredentials(model: LlmCredentialModel, tenantId: string, projectId: string): Promise<LlmCredentialMetadata[]> {
  const docs = await model.find({ tenantId, projectId }).sort({ provider: 1 }).lean();
  return docs.map(credentialMetadata);
}

/** @returns whether a credential was removed. */
export async function deleteLlmCredential(
  model: LlmCredentialModel,
  scope: { tenantId: string; projectId: string },
  provider: CredentialProvider,
): Promise<boolean> {
  const result = await model.deleteOne({ tenantId: scope.tenantId, projectId: scope.projectId, provider });
  return result.deletedCount > 0;
}

/** A credential ready to hand to a provider. Lives only in memory, for one call. */
export interface DecryptedLlmCredential {
  provider: CredentialProvider;
  apiKey: string;
  baseURL: string | null;
}

export class CredentialDecryptionError extends Error {
  constructor(
    readonly provider: CredentialProvider,
    cause?: unknown,
  ) {
    super(
      cause instanceof UnknownMasterKeyError
        ? `The stored ${provider} credential cannot be decrypted: ${cause.message}`
        : `The stored ${provider} credential cannot be decrypted (was its master key removed from ENCRYPTION_KEYS, or ENCRYPTION_KEY changed?)`,
    );
    this.name = 'CredentialDecryptionError';
  }
}

/**
 * The project's credentials, decrypted. With no encryptor (no master key configured) none can be
 * read, so the project has none. @throws CredentialDecryptionError when a value cannot be opened.
 */
export async function loadDecryptedLlmCredentials(
  model: LlmCredentialModel,
  encryptor: Encryptor | null,
  tenantId: string,
  projectId: string,
): Promise<DecryptedLlmCredential[]> {
  if (!encryptor) return [];
  const docs = await model.find({ tenantId, projectId }).lean();
  return docs.map((doc) => {
    try {
      return { provider: doc.provider, apiKey: encryptor.decrypt(tenantId, LLM_CREDENTIAL_PURPOSE, doc.apiKey), baseURL: doc.baseURL };
    } catch (err) {
      throw new CredentialDecryptionError(doc.provider, err);
    }
  });
}
