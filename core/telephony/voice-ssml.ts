// A reply's voice form on a call: VOICE `plain_text` said as it is, VOICE `ssml` parsed (by
// @xmldom/xmldom) and rebuilt inside <Say> with the twilio SDK, keeping only the SSML Twilio's
// <Say> accepts (break emphasis lang p phoneme prosody s say-as sub w, with their attributes).
// An SSML that does not parse, or holds anything else, is not said: plain_text is, else the text.
import { DOMParser, type Element, type Node } from '@xmldom/xmldom';
import VoiceResponse from 'twilio/lib/twiml/VoiceResponse';
import { type VoiceSegment } from '../../workflows/definitions';

/** Longest SSML document read (characters); a longer one falls back. */
export const SSML_MAX_CHARS = 20_000;
/** Deepest nesting of elements under <speak>. */
export const SSML_MAX_DEPTH = 8;
/** Most elements in one document. */
export const SSML_MAX_ELEMENTS = 300;

/** Why an SSML was not said (logged; never its content). */
export type SsmlRejection = 'too_large' | 'not_xml' | 'doctype' | 'not_speak' | 'element' | 'attribute' | 'nesting' | 'too_deep' | 'too_many_elements' | 'empty';

export class SsmlRejected extends Error {
  constructor(readonly reason: SsmlRejection) {
    super(`SSML not said: ${reason}`);
  }
}

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;
const CDATA_SECTION_NODE = 4;
const COMMENT_NODE = 8;
const DOCUMENT_TYPE_NODE = 10;

const WORD = /^[A-Za-z0-9:._%+-]{1,32}$/;
const LANG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;
const TIME = /^\d{1,5}(\.\d{1,3})?(ms|s)$/;
const TEXT_ATTR = /^[^<>&]{1,200}$/;

/** The SSML elements Twilio's <Say> takes, each with the SDK method and the attributes allowed. */
const ELEMENTS: Record<string, { method: string; attributes: Record<string, RegExp> }> = {
  break: { method: 'break', attributes: { strength: /^(none|x-weak|weak|medium|strong|x-strong)$/, time: TIME } },
  emphasis: { method: 'emphasis', attributes: { level: /^(strong|moderate|reduced)$/ } },
  lang: { method: 'lang', attributes: { 'xml:lang': LANG } },
  p: { method: 'p', attributes: {} },
  phoneme: { method: 'phoneme', attributes: { alphabet: /^(ipa|x-sampa|x-amazon-jyutping|x-amazon-pinyin|x-amazon-yale)$/, ph: TEXT_ATTR } },
  prosody: { method: 'prosody', attributes: { pitch: WORD, rate: WORD, volume: WORD } },
  s: { method: 's', attributes: {} },
  'say-as': { method: 'sayAs', attributes: { 'interpret-as': WORD, format: WORD } },
  sub: { method: 'sub', attributes: { alias: TEXT_ATTR } },
  w: { method: 'w', attributes: { role: WORD } },
};

/** What is said: text, and the elements above with their attributes, in order. */
type SsmlNode = { text: string } | { element: string; attributes: Record<string, string>; children: SsmlNode[] };

/** Parses and checks an SSML document; throws SsmlRejected. */
export function parseSsml(ssml: string): SsmlNode[] {
  if (ssml.length > SSML_MAX_CHARS) throw new SsmlRejected('too_large');
  // No DTD at all: no entity of its own, internal or external, is ever defined.
  if (/<!DOCTYPE/i.test(ssml)) throw new SsmlRejected('doctype');
  let root: Element | null;
  let doctype = false;
  try {
    const doc = new DOMParser({
      onError: (level) => {
        if (level !== 'warning') throw new SsmlRejected('not_xml');
      },
    }).parseFromString(ssml.trim(), 'text/xml');
    for (let n: Node | null = doc.firstChild; n; n = n.nextSibling) if (n.nodeType === DOCUMENT_TYPE_NODE) doctype = true;
    root = doc.documentElement;
  } catch (err) {
    throw err instanceof SsmlRejected ? err : new SsmlRejected('not_xml');
  }
  if (doctype) throw new SsmlRejected('doctype');
  if (!root || root.tagName !== 'speak') throw new SsmlRejected('not_speak');
  const count = { elements: 0 };
  const nodes = children(root, 0, count);
  // The document's own indentation around its words is not said.
  const first = nodes[0];
  if (first && 'text' in first) first.text = first.text.trimStart();
  const last = nodes[nodes.length - 1];
  if (last && 'text' in last) last.text = last.text.trimEnd();
  const said = nodes.filter((n) => !('text' in n) || n.text !== '');
  if (!said.some(hasWords)) throw new SsmlRejected('empty');
  return said;
}

function hasWords(n: SsmlNode): boolean {
  return 'text' in n ? n.text.trim() !== '' : n.children.some(hasWords) || n.element === 'break';
}

function children(parent: Element, depth: number, count: { elements: number }): SsmlNode[] {
  const out: SsmlNode[] = [];
  for (let child: Node | null = parent.firstChild; child; child = child.nextSibling) {
    if (child.nodeType === TEXT_NODE || child.nodeType === CDATA_SECTION_NODE) {
      const text = (child.nodeValue ?? '').replace(/\s+/g, ' ');
      if (text) out.push({ text });
    } else if (child.nodeType === ELEMENT_NODE) {
      if (depth + 1 > SSML_MAX_DEPTH) throw new SsmlRejected('too_deep');
      if (++count.elements > SSML_MAX_ELEMENTS) throw new SsmlRejected('too_many_elements');
      out.push(element(child as Element, depth + 1, count));
    } else if (child.nodeType !== COMMENT_NODE) throw new SsmlRejected('element');
  }
  return out;
}

function element(el: Element, depth: number, count: { elements: number }): SsmlNode {
  const spec = Object.hasOwn(ELEMENTS, el.tagName) ? ELEMENTS[el.tagName] : undefined;
  if (!spec) throw new SsmlRejected('element');
  const attributes: Record<string, string> = {};
  for (let i = 0; i < el.attributes.length; i++) {
    const attr = el.attributes.item(i);
    if (!attr) continue;
    const rule = Object.hasOwn(spec.attributes, attr.name) ? spec.attributes[attr.name] : undefined;
    if (!rule || !rule.test(attr.value)) throw new SsmlRejected('attribute');
    attributes[attr.name] = attr.value;
  }
  return { element: el.tagName, attributes, children: children(el, depth, count) };
}

/** A node of the SDK's TwiML that takes text and, for some, SSML children by method. */
interface TwimlTarget {
  addText(text: string): void;
}

function build(target: TwimlTarget, nodes: SsmlNode[]): void {
  for (const n of nodes) {
    if ('text' in n) {
      target.addText(n.text);
      continue;
    }
    const method = (ELEMENTS[n.element] as { method: string }).method;
    const make = (target as unknown as Record<string, unknown>)[method];
    // The SDK knows which element may hold which (say-as holds only text, for one).
    if (typeof make !== 'function') throw new SsmlRejected('nesting');
    const child = (n.element === 'break' ? make.call(target, n.attributes) : make.call(target, n.attributes, '')) as TwimlTarget;
    if (n.element === 'break') {
      if (n.children.length > 0) throw new SsmlRejected('nesting');
      continue;
    }
    build(child, n.children);
  }
}

/** Something a <Say> can be added to: the response, or a <Gather>. */
export interface SayParent {
  say(attributes: VoiceResponse.SayAttributes, message: string): VoiceResponse.Say;
}

/**
 * Adds the <Say> of one reply to `parent`: its SSML when that is usable, else its plain_text,
 * else its text. `onFallback` hears why an SSML was not said. Returns false when nothing is said.
 */
export function sayVoiceSegment(parent: SayParent, attributes: VoiceResponse.SayAttributes, segment: VoiceSegment, onFallback: (reason: SsmlRejection) => void): boolean {
  if (segment.ssml !== undefined) {
    try {
      const nodes = parseSsml(segment.ssml);
      // Built twice: first where a failure leaves nothing behind, then for real.
      build(new VoiceResponse().say(attributes, ''), nodes);
      build(parent.say(attributes, ''), nodes);
      return true;
    } catch (err) {
      onFallback(err instanceof SsmlRejected ? err.reason : 'not_xml');
    }
  }
  const text = (segment.plainText ?? segment.text).trim();
  if (!text) return false;
  parent.say(attributes, text);
  return true;
}
