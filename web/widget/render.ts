// Turns what an agent's reply carries besides its text into DOM: the step's ACTIONS as buttons and
// its RICH_CONTENT as cards, images and links. Everything is written as text or checked URLs,
// never as HTML, so an agent's content cannot run script in the page.

export interface ActionButton {
  id: string;
  label: string;
  value?: unknown;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);
const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v : typeof v === 'number' ? String(v) : null);

/** The buttons of a reply's `actions`: a list (`{ items: [...] }` or an array) or a map of id to button. */
export function actionButtons(actions: unknown): ActionButton[] {
  if (!actions) return [];
  const items: unknown[] = Array.isArray(actions)
    ? actions
    : isObj(actions) && Array.isArray(actions.items)
      ? actions.items
      : isObj(actions)
        ? Object.entries(actions).map(([id, v]) => (isObj(v) ? { id, ...v } : { id, label: v }))
        : [];
  const buttons: ActionButton[] = [];
  for (const item of items) {
    if (!isObj(item)) continue;
    const id = text(item.id) ?? text(item.ACTION) ?? text(item.ACTION_ID) ?? text(item.action);
    if (!id) continue;
    buttons.push({ id, label: text(item.label) ?? text(item.title) ?? text(item.text) ?? id, ...('value' in item ? { value: item.value } : {}) });
  }
  return buttons.slice(0, 20);
}

/** A link or image address the widget will use: http(s) only. */
export function safeUrl(v: unknown): string | null {
  const s = text(v);
  if (!s) return null;
  try {
    const url = new URL(s, document.baseURI);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

/** The variant of RICH_CONTENT meant for a web chat, else the default one, else plain text (markdown shown as written), else the whole value. */
function variantOf(rich: Json): unknown {
  for (const key of ['web', 'widget', 'chat', 'WEB', 'DEFAULT', 'default', 'text', 'markdown']) if (key in rich) return rich[key];
  return rich;
}

function node(part: unknown, depth: number): HTMLElement | null {
  if (depth > 4 || part === null || part === undefined) return null;
  const plain = text(part);
  if (plain) {
    const p = document.createElement('div');
    p.textContent = plain;
    return p;
  }
  if (Array.isArray(part)) {
    const box = document.createElement('div');
    box.className = 'rich';
    for (const item of part.slice(0, 20)) {
      const child = node(item, depth + 1);
      if (child) box.append(child);
    }
    return box.childElementCount > 0 ? box : null;
  }
  if (!isObj(part)) return null;
  const image = safeUrl(part.image ?? part.imageUrl ?? part.src ?? (part.type === 'image' ? part.url : undefined));
  const link = safeUrl(part.href ?? part.link ?? (part.type !== 'image' ? part.url : undefined));
  const title = text(part.title) ?? text(part.heading);
  const body = text(part.text) ?? text(part.body) ?? text(part.subtitle) ?? text(part.description);
  if (!image && !link && !title && !body) {
    // A container of further parts (cards, items, elements).
    const inner = part.items ?? part.cards ?? part.elements ?? part.content;
    return inner === undefined ? null : node(inner, depth + 1);
  }
  const card = document.createElement('div');
  card.className = 'card';
  if (image) {
    const img = document.createElement('img');
    img.src = image;
    img.alt = text(part.alt) ?? title ?? '';
    img.loading = 'lazy';
    card.append(img);
  }
  if (title) {
    const strong = document.createElement('strong');
    strong.textContent = title;
    card.append(strong);
  }
  if (body) {
    const p = document.createElement('div');
    p.textContent = body;
    card.append(p);
  }
  if (link) {
    const a = document.createElement('a');
    a.href = link;
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
    a.textContent = text(part.linkText) ?? text(part.label) ?? link;
    card.append(a);
  }
  return card;
}

/** The DOM of a reply's `richContent`, or null when it holds nothing the widget can show. */
export function richContent(rich: unknown): HTMLElement | null {
  if (!rich) return null;
  const content = node(isObj(rich) ? variantOf(rich) : rich, 0);
  if (!content) return null;
  if (content.className === 'rich') return content;
  const box = document.createElement('div');
  box.className = 'rich';
  box.append(content);
  return box;
}

/** How an agent's name reads in the log: `Billing_Agent` as "Billing Agent". */
export const agentLabel = (name: string) => name.replace(/_/g, ' ');
