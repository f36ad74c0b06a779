// A message that carries attachments, as the agent gets it: the user's text, then one block per
// attachment with its name, type and size, and the content of a text file (bounded: the start of
// each file, and of all of them together). The same list goes in the turn's metadata as
// `attachments`, so an agent can read it as `session.messageMetadata.attachments`.
import { type AttachmentDoc } from '../../db/attachment';
import { type Models } from '../../db/models';
import { presentAttachment, readAttachmentText, type AttachmentView } from './store';

/** Characters of one text attachment the agent is given at most. */
export const ATTACHMENT_TEXT_MAX_CHARS = 16_000;
/** Characters of all of a message's text attachments together. */
export const MESSAGE_ATTACHMENT_TEXT_MAX_CHARS = 48_000;
/** Attachments one message may carry. */
export const MESSAGE_MAX_ATTACHMENTS = 10;

export interface MessageWithAttachments {
  message: string;
  attachments: AttachmentView[];
}

/** The message text with every attachment's block after it, in the order named. */
export async function composeAttachmentMessage(models: Models, text: string, docs: readonly AttachmentDoc[]): Promise<MessageWithAttachments> {
  let room = MESSAGE_ATTACHMENT_TEXT_MAX_CHARS;
  const blocks: string[] = [];
  for (const [i, doc] of docs.entries()) {
    const view = presentAttachment(doc);
    const label = `Attachment ${i + 1}: ${view.filename} (${view.mimeType}, ${view.sizeBytes} bytes)`;
    if (!doc.metadata.text) {
      blocks.push(`[${label}; its content is not text and is not included]`);
      continue;
    }
    if (room === 0) {
      blocks.push(`[${label}; not included: the message's attachments reached ${MESSAGE_ATTACHMENT_TEXT_MAX_CHARS} characters]`);
      continue;
    }
    const { text: content, truncated } = await readAttachmentText(models, doc, Math.min(ATTACHMENT_TEXT_MAX_CHARS, room));
    room = Math.max(0, room - content.length);
    const note = truncated ? `\n[Attachment ${i + 1} is cut here: only its first ${content.length} characters are included]` : '';
    blocks.push(`[${label}]\n${content}${note}\n[End of attachment ${i + 1}]`);
  }
  return { message: blocks.length > 0 ? `${text}\n\n${blocks.join('\n\n')}` : text, attachments: docs.map(presentAttachment) };
}
