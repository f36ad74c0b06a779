// Zod schemas of the public widget key routes and the SDK bootstrap (docs/widget.md).
import { z } from 'zod';
import { ZProjectIdParam } from '../http/schemas';
import { KEY_ENVIRONMENTS } from '../../core/platform-keys/environments';
import { WIDGET_POSITIONS } from '../../db/public-key';
import { MAX_ALLOWED_AGENTS } from '../../core/sdk/start-agents';

/** Most origins one key may list. */
export const MAX_ALLOWED_ORIGINS = 50;

/**
 * An origin as a browser sends it: `scheme://host[:port]`, http or https, lower case, no path,
 * no trailing slash (`new URL(x).origin` gives back the same text).
 */
const ORIGIN_MESSAGE = 'must be an origin such as https://shop.example.com (scheme, host and port only, lower case, no path or trailing slash)';
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const PORT = '(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
/**
 * The shape the OpenAPI document states: a lower-case host name whose last label starts with a
 * letter (so it is never read as a number) or a dotted IPv4 address, and an optional port.
 */
export const ORIGIN_PATTERN = new RegExp(`^https?://(?:(?:${LABEL}\\.)*[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?|${OCTET}(?:\\.${OCTET}){3})(?::${PORT})?$`);

export const ZOrigin = z
  .string()
  .max(300)
  .regex(ORIGIN_PATTERN, ORIGIN_MESSAGE)
  .refine((value) => {
    try {
      const url = new URL(value);
      // A default port (`:443`, `:80`) is the same origin written longer; browsers send it without.
      const origin = url.origin;
      return (url.protocol === 'https:' || url.protocol === 'http:') && (origin === value || `${origin}:${url.protocol === 'https:' ? 443 : 80}` === value);
    } catch {
      return false;
    }
  }, ORIGIN_MESSAGE);

// One line of text the widget shows: no control characters, not blank.
// eslint-disable-next-line no-control-regex -- control characters are what this refuses
const LINE = /^[^\u0000-\u001f\u007f]*$/;
// A greeting may hold line breaks, nothing else below U+0020.
// eslint-disable-next-line no-control-regex -- control characters are what this refuses
const PARAGRAPHS = /^[^\u0000-\u0009\u000b-\u001f\u007f]*$/;
const widgetText = (max: number, pattern: RegExp, message: string) => z.string().trim().min(1).max(max).regex(pattern, message);

const ZWidgetGreeting = widgetText(1000, PARAGRAPHS, 'must not contain control characters other than line breaks').describe(
  'Shown as the first message when the widget opens, before the agent has said anything (1–1000 characters; line breaks allowed)',
);
const ZWidgetTitle = widgetText(80, LINE, 'must be one line without control characters').describe("The chat window's heading (1–80 characters, one line)");
const ZPrimaryColor = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour written #rrggbb')
  .transform((value) => value.toLowerCase())
  .describe('The launcher and header colour, `#rrggbb` (stored in lower case)');
const ZPosition = z.enum(WIDGET_POSITIONS).describe('The corner the launcher sits in (default bottom-right)');
const ZLauncherLabel = widgetText(40, LINE, 'must be one line without control characters').describe(
  "Visible text beside the launcher's icon (1–40 characters); its accessible name stays \"Open chat\"",
);

/** Widget settings when a key is made: each optional. */
export const ZWidgetSettings = z
  .object({
    greeting: ZWidgetGreeting.optional(),
    title: ZWidgetTitle.optional(),
    theme: z.object({ primaryColor: ZPrimaryColor.optional(), position: ZPosition.optional(), launcherLabel: ZLauncherLabel.optional() }).strict().optional(),
  })
  .strict()
  .describe('What the widget shows (GET /api/v1/sdk/config); every field optional');

/** A change to the widget settings: a field left out stays, null clears it. */
export const ZWidgetSettingsChange = z
  .object({
    greeting: ZWidgetGreeting.nullable().optional(),
    title: ZWidgetTitle.nullable().optional(),
    theme: z
      .object({ primaryColor: ZPrimaryColor.nullable().optional(), position: ZPosition.nullable().optional(), launcherLabel: ZLauncherLabel.nullable().optional() })
      .strict()
      .optional(),
  })
  .strict()
  .describe('Fields left out stay as they are; null clears one');

/** Agents a page may name in `agentId`, besides the entry agent. */
const ZAllowedAgents = z
  .array(z.string().trim().min(1).max(200))
  .max(MAX_ALLOWED_AGENTS)
  .describe(
    "Agents (ids or names) a page may start a conversation with by naming it in `agentId`, besides the entry agent of the key's environment, which it always may. Empty (the default): the entry agent only; any other `agentId` from the key's SDK tokens is 403",
  );

export const ZCreatePublicKeyRequest = z
  .object({
    name: z.string().trim().min(1).max(200),
    allowedOrigins: z.array(ZOrigin).min(1).max(MAX_ALLOWED_ORIGINS).describe('Pages allowed to use the key; at least one'),
    environment: z.enum(KEY_ENVIRONMENTS).default('production').describe('Environment the chats started through the key run in'),
    allowedAgents: ZAllowedAgents.optional(),
    widget: ZWidgetSettings.optional(),
  })
  .strict();

export const ZUpdatePublicKeyRequest = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    allowedOrigins: z.array(ZOrigin).min(1).max(MAX_ALLOWED_ORIGINS).optional().describe('Replaces the list; tokens issued to an origin taken off it stop working at once'),
    allowedAgents: ZAllowedAgents.optional().describe('Replaces the list (`[]`: the entry agent only); in force for the tokens already issued at their next request'),
    widget: ZWidgetSettingsChange.optional(),
  })
  .strict()
  .refine(
    (body) => body.name !== undefined || body.allowedOrigins !== undefined || body.allowedAgents !== undefined || body.widget !== undefined,
    'name, allowedOrigins, allowedAgents or widget is required',
  )
  // The document states the refine: an empty object changes nothing and is refused.
  .openapi({ minProperties: 1 } as Record<string, unknown>);

export const ZPublicKeyParams = ZProjectIdParam.extend({ keyId: z.string().min(1).max(100) });

export const ZPublicKey = z.object({
  id: z.string(),
  projectId: z.string(),
  name: z.string(),
  keyPrefix: z.string(),
  allowedOrigins: z.array(z.string()),
  environment: z.string(),
  allowedAgents: z.array(z.string()).describe('Agents a page may start with besides the entry agent (empty: the entry agent only)'),
  widget: z.object({
    greeting: z.string().nullable(),
    title: z.string().nullable(),
    theme: z.object({ primaryColor: z.string().nullable(), position: z.enum(WIDGET_POSITIONS).nullable(), launcherLabel: z.string().nullable() }),
  }),
  permissions: z.array(z.literal('chat')),
  status: z.enum(['active', 'revoked']),
  revokedAt: z.string().nullable(),
  createdAt: z.string(),
});

export const ZCreatedPublicKeyResponse = z.object({
  success: z.literal(true),
  publicKey: ZPublicKey.extend({
    key: z.string().describe('The key (`pk_…`); shown only now'),
    identitySecret: z.string().describe("Your backend signs user assertions with it (`pkis_…`); keep it on the server; shown only now"),
  }),
});
export const ZPublicKeyResponse = z.object({ success: z.literal(true), publicKey: ZPublicKey });
export const ZPublicKeyListResponse = z.object({ success: z.literal(true), publicKeys: z.array(ZPublicKey) });

export const ZSdkInitRequest = z
  .object({
    projectId: z.string().min(1).max(100),
    userAssertion: z.string().min(1).max(8192).optional().describe("The customer's backend's signed user assertion (docs/widget.md); without it the end user is anonymous"),
    previousToken: z
      .string()
      .min(1)
      .max(8192)
      .optional()
      .describe(
        'The SDK token this page held before, expired or not (up to 30 days past its expiry): an anonymous end user it names is kept when it was issued by this key, for this project, to this origin (`renewed: true`); otherwise a new end user',
      ),
  })
  .strict();

export const ZSdkInitResponse = z.object({
  success: z.literal(true),
  token: z.string().describe('Send as X-SDK-Token'),
  expiresAt: z.string(),
  endUserId: z.string(),
  identified: z.boolean(),
  renewed: z.boolean().describe("Whether the end user is the one `previousToken` named (false without one)"),
  projectId: z.string(),
  environment: z.string(),
});

export const ZSdkConfigResponse = z.object({
  success: z.literal(true),
  projectId: z.string(),
  environment: z.string().describe("The key's environment, which the widget's chats run in"),
  entryAgent: z.object({ id: z.string(), name: z.string() }).nullable().describe('The agent a new chat starts with; null while the environment has none'),
  greeting: z.string().nullable(),
  title: z.string().nullable(),
  theme: z.object({
    primaryColor: z.string().nullable().describe('`#rrggbb`, or null for the widget\'s own'),
    position: z.enum(WIDGET_POSITIONS),
    launcherLabel: z.string().nullable(),
  }),
  voice: z.object({ enabled: z.boolean() }).describe('Whether the widget offers a voice call (its microphone button): real-time voice is configured on this deployment (LIVEKIT_URL) and the key reaches an entry agent (docs/voice.md)'),
  uploads: z.object({
    enabled: z.boolean(),
    maxFileSize: z.number().int().describe('Bytes per file (ATTACHMENT_MAX_BYTES)'),
    maxFilesPerSession: z.number().int().describe('ATTACHMENTS_MAX_PER_SESSION'),
    allowedMimeTypes: z.array(z.string()),
  }),
  streaming: z.literal(true).describe('Agent turns can be streamed to the widget'),
});

export const ZIdentitySecretResponse = z.object({ success: z.literal(true), keyId: z.string(), identitySecret: z.string() });
