// JWE for the session-analytics API (docs/session-analytics.md "Encryption"): per platform key,
// request bodies may have to be encrypted to the project's key pair, and answers encrypted to the
// public key the client registered. Algorithms: RSA-OAEP-256 key wrapping, A256GCM content
// encryption, flattened JSON serialisation. The project's private key is made on first use and
// kept sealed under the tenant's data key; it never leaves this module in clear.
import { calculateJwkThumbprint, exportJWK, exportPKCS8, FlattenedEncrypt, flattenedDecrypt, generateKeyPair, importJWK, importPKCS8, type FlattenedJWE, type JWK } from 'jose';
import { type KeyObject } from 'node:crypto';
import { isDuplicateKey } from '../../db/duplicate-key';
import { tenantDataKey } from '../../db/tenant-data-key';
import { DomainError } from '../../lib/errors';
import { seal, unseal } from '../../lib/secret-envelope';
import { type CoreContext } from '../context';
import { requireMasterKeys } from '../tool-secrets/secrets';

/** The key management algorithm and the content encryption of every JWE of this API. */
export const JWE_ALG = 'RSA-OAEP-256';
export const JWE_ENC = 'A256GCM';
/** Size of the project's own RSA key; a client's key must have at least MIN_CLIENT_KEY_BITS. */
const PROJECT_KEY_BITS = 3072;
export const MIN_CLIENT_KEY_BITS = 2048;
const MAX_CLIENT_KEY_BITS = 8192;

export interface KeyEncryption {
  request: boolean;
  response: boolean;
  clientJwk: Record<string, string> | null;
  clientKid: string | null;
}

const OFF: KeyEncryption = { request: false, response: false, clientJwk: null, clientKid: null };

/** A platform key's encryption switches (both off for a key that never set them). */
export async function keyEncryption(ctx: CoreContext, tenantId: string, keyId: string): Promise<KeyEncryption> {
  const key = await ctx.models.ApiKey.findOne({ _id: keyId, tenantId }, { encryption: 1 }).lean();
  return key?.encryption ? { ...OFF, ...key.encryption } : OFF;
}

const aad = (tenantId: string, projectId: string, kid: string) => `switchboard/session-analytics-jwe/v1/${tenantId}/${projectId}/${kid}`;

/** The project's public key (made with its sealed private key on first use). */
export async function projectPublicJwk(ctx: CoreContext, tenantId: string, projectId: string): Promise<{ kid: string; jwk: Record<string, string> }> {
  const existing = await ctx.models.SessionEncryptionKey.findOne({ tenantId, projectId }, { publicJwk: 1 }).lean();
  if (existing) return { kid: existing._id, jwk: existing.publicJwk };
  const ring = requireMasterKeys(ctx);
  const { publicKey, privateKey } = await generateKeyPair(JWE_ALG, { modulusLength: PROJECT_KEY_BITS, extractable: true });
  const exported = await exportJWK(publicKey);
  const publicJwk = { kty: exported.kty!, n: exported.n!, e: exported.e! };
  const kid = await calculateJwkThumbprint(publicJwk);
  const pem = await exportPKCS8(privateKey);
  const dataKey = await tenantDataKey(ctx.models.TenantDataKey, ring, tenantId);
  const sealed = seal(dataKey, aad(tenantId, projectId, kid), Buffer.from(pem, 'utf8'));
  try {
    await ctx.models.SessionEncryptionKey.create({ _id: kid, tenantId, projectId, publicJwk, privateKey: sealed, createdAt: new Date() });
    return { kid, jwk: publicJwk };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    // A concurrent first use stored its pair first: that one is the project's.
    const winner = await ctx.models.SessionEncryptionKey.findOne({ tenantId, projectId }, { publicJwk: 1 }).lean();
    if (!winner) throw err;
    return { kid: winner._id, jwk: winner.publicJwk };
  }
}

const badJwe = (message: string) => new DomainError('INVALID_ENCRYPTED_BODY', message);

/**
 * The JSON object a client encrypted to the project's key. 422 INVALID_ENCRYPTED_BODY for
 * another algorithm, another key, an altered or undecryptable object, or a plaintext that is not
 * a JSON object; the reason is not told beyond that (no decryption oracle).
 */
export async function decryptRequestBody(ctx: CoreContext, tenantId: string, projectId: string, jwe: FlattenedJWE): Promise<Record<string, unknown>> {
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(jwe.protected ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    throw badJwe('The encrypted body has no readable protected header');
  }
  if (header.alg !== JWE_ALG || header.enc !== JWE_ENC) throw badJwe(`The encrypted body must use alg ${JWE_ALG} and enc ${JWE_ENC}`);
  if (header.zip !== undefined) throw badJwe('Compressed encrypted bodies are not accepted');
  const stored = await ctx.models.SessionEncryptionKey.findOne({ tenantId, projectId }).lean();
  if (!stored || (header.kid !== undefined && header.kid !== stored._id)) throw badJwe("The body is not encrypted to this project's key: fetch it from the jwks route");
  const dataKey = await tenantDataKey(ctx.models.TenantDataKey, requireMasterKeys(ctx), tenantId);
  const privateKey = (await importPKCS8(unseal(dataKey, aad(tenantId, projectId, stored._id), stored.privateKey).toString('utf8'), JWE_ALG)) as KeyObject;
  let plaintext: Uint8Array;
  try {
    ({ plaintext } = await flattenedDecrypt(jwe, privateKey, { keyManagementAlgorithms: [JWE_ALG], contentEncryptionAlgorithms: [JWE_ENC] }));
  } catch {
    throw badJwe('The encrypted body could not be decrypted');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(plaintext).toString('utf8'));
  } catch {
    throw badJwe('The decrypted body is not JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw badJwe('The decrypted body must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** The answer encrypted to the client's registered public key (flattened JWE, `kid` its thumbprint). */
export async function encryptForClient(encryption: KeyEncryption, payload: unknown): Promise<FlattenedJWE> {
  if (!encryption.clientJwk) throw new DomainError('INTERNAL_ERROR', 'response encryption is on without a client key');
  const key = await importJWK({ ...(encryption.clientJwk as unknown as JWK), alg: JWE_ALG }, JWE_ALG);
  return new FlattenedEncrypt(Buffer.from(JSON.stringify(payload), 'utf8'))
    .setProtectedHeader({ alg: JWE_ALG, enc: JWE_ENC, cty: 'application/json', ...(encryption.clientKid ? { kid: encryption.clientKid } : {}) })
    .encrypt(key);
}

/**
 * A client's public key as it may be registered: RSA, public members only, 2048 to 8192 bits, one
 * that imports. 422 otherwise (the request's schema holds; the key in it is not usable).
 */
export async function checkClientPublicJwk(jwk: Record<string, unknown>): Promise<{ jwk: Record<string, string>; kid: string }> {
  const invalid = (why: string) => new DomainError('UNPROCESSABLE_ENTITY', `body.publicKey: ${why}`);
  if (jwk.kty !== 'RSA' || typeof jwk.n !== 'string' || typeof jwk.e !== 'string') throw invalid(`must be an RSA public JWK ({ kty: "RSA", n, e }) for ${JWE_ALG}`);
  for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth']) if (member in jwk) throw invalid('must hold the public key only: never send a private key');
  const bits = Buffer.from(jwk.n, 'base64url').length * 8;
  if (bits < MIN_CLIENT_KEY_BITS || bits > MAX_CLIENT_KEY_BITS) throw invalid(`the RSA modulus must have ${MIN_CLIENT_KEY_BITS} to ${MAX_CLIENT_KEY_BITS} bits`);
  const clean = { kty: 'RSA', n: jwk.n, e: jwk.e };
  try {
    await importJWK({ ...clean, alg: JWE_ALG }, JWE_ALG);
  } catch {
    throw invalid('is not a usable RSA public key');
  }
  return { jwk: clean, kid: await calculateJwkThumbprint(clean) };
}
