// TwiML as the Twilio fake reads it: the document parsed (by @xmldom/xmldom) into a small tree of
// verbs with their attributes, text and nested nouns. What each verb does is the call
// simulation's business (calls.ts); this module only reads the XML and refuses what Twilio
// refuses (not XML, or a root other than <Response>: Twilio's error 12100).
import { DOMParser, type Element, type Node } from '@xmldom/xmldom';

export interface TwimlNode {
  name: string;
  attributes: Record<string, string>;
  /** The element's text, trimmed (a <Say>'s words, a <Redirect>'s URL, a <Dial>'s number). */
  text: string;
  children: TwimlNode[];
}

export class TwimlError extends Error {}

const ELEMENT_NODE = 1;

function toNode(element: Element): TwimlNode {
  const attributes: Record<string, string> = {};
  for (let i = 0; i < element.attributes.length; i++) {
    const attr = element.attributes.item(i);
    if (attr) attributes[attr.name] = attr.value;
  }
  const children: TwimlNode[] = [];
  for (let child: Node | null = element.firstChild; child; child = child.nextSibling) {
    if (child.nodeType === ELEMENT_NODE) children.push(toNode(child as Element));
  }
  return { name: element.tagName, attributes, text: (element.textContent ?? '').trim(), children };
}

/** The verbs of a TwiML document (the children of its <Response>). */
export function parseTwiml(xml: string): TwimlNode[] {
  let root: Element | null;
  try {
    const doc = new DOMParser({
      onError: (level, message) => {
        if (level !== 'warning') throw new TwimlError(message);
      },
    }).parseFromString(xml, 'text/xml');
    root = doc.documentElement;
  } catch (err) {
    throw new TwimlError(`Document parse failure: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!root || root.tagName !== 'Response') throw new TwimlError(`Document parse failure: the root element is <${root?.tagName ?? ''}>, not <Response>`);
  return toNode(root).children;
}

/** An attribute as a number of seconds (Twilio's `timeout`, `length`…), or `fallback`. */
export function seconds(node: TwimlNode, name: string, fallback: number): number {
  const value = Number(node.attributes[name]);
  return node.attributes[name] !== undefined && Number.isFinite(value) && value >= 0 ? value : fallback;
}

/** `method` attribute, POST unless GET. */
export function methodOf(value: string | undefined): 'GET' | 'POST' {
  return value?.toUpperCase() === 'GET' ? 'GET' : 'POST';
}
