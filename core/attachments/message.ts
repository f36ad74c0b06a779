// A message that carries attachments, as the agent gets it: the user's text, then one block per
// attachment with its name, type and size, and the start of a text file's content. The same list goes in the turn's metadata as
// `attachments`, so an agent can read it as `session.messageMetadata.attachments`. The whole
// message fits the part of a user message the agent reads (MESSAGE_AGENT_CHARS).
import { type AttachmentDoc } from '../../db/attachment';
import { type Models } from '../../db/models';
import { presentAttachment, readAttachmentText, type AttachmentView } from './store';
import { USER_MESSAGE_HISTORY_CHARS } from '../../abl/runtime/turn-order';

/**
 * Characters of a message the agent reads (the runtime keeps this much of a user message in the
 * conversation, abl/runtime/turn-order.ts): text attachments get what the message and the
 * attachments' labels leave of it, in the order named.
 */
export const MESSAGE_AGENT_CHARS = USER_MESSAGE_HISTORY_CHARS;
/** Room each attachment's block takes besides its content (label, end marker, a cut note). */
const BLOCK_OVERHEAD_CHARS = 120;
/** Attachments one message may carry. */
export const MESSAGE_MAX_ATTACHMENTS = 10;

export interface MessageWithAttachments {
  message: string;
  attachments: AttachmentView[];
}

/** The message text with every attachment's block after it, in the order named. */
export async function composeAttachmentMessage(models: Models, text: string, docs: readonly AttachmentDoc[]): Promise<MessageWithAttachments> {
  const labels = docs.map((doc, i) => {
    const view = presentAttachment(doc);
    return `Attachment ${i + 1}: ${view.filename} (${view.mimeType}, ${view.sizeBytes} bytes)`;
  });
  let room = Math.max(0, MESSAGE_AGENT_CHARS - text.length - labels.reduce((sum, label) => sum + label.length + BLOCK_OVERHEAD_CHARS, 0));
  const blocks: string[] = [];
  for (const [i, doc] of docs.entries()) {
    const label = labels[i]!;
    if (!doc.metadata.text) {
      blocks.push(`[${label}; its content is not text and is not included]`);
      continue;
    }
    if (room === 0) {
      blocks.push(`[${label}; its content is not included: the message has no room left (${MESSAGE_AGENT_CHARS} characters)]`);
      continue;
    }
    const { text: content, truncated } = await readAttachmentText(models, doc, room);
    room = Math.max(0, room - content.length);
    const note = truncated ? `\n[Attachment ${i + 1} is cut here: only its first ${content.length} characters are included]` : '';
    blocks.push(`[${label}]\n${content}${note}\n[End of attachment ${i + 1}]`);
  }
  return { message: blocks.length > 0 ? `${text}\n\n${blocks.join('\n\n')}` : text, attachments: docs.map(presentAttachment) };
}
