// The ABL block AST: what the indentation parser produces from one file. Every node has a `loc`.

/** 1-based line and column in the file. */
export interface Loc {
  line: number;
  column: number;
}

export type ScalarValue = string | number | boolean | null;

/** `key: value`, a list item or a bare line's text. `raw` is the source text (expressions read it). */
export interface ScalarNode {
  kind: 'Scalar';
  value: ScalarValue;
  raw: string;
  quoted: boolean;
  loc: Loc;
}

/** A `key: |` pipe block: common indent stripped, newlines kept. */
export interface TextNode {
  kind: 'Text';
  value: string;
  loc: Loc;
}

/** `- a` lines, or an inline `[a, b]`. */
export interface ListNode {
  kind: 'List';
  items: ValueNode[];
  inline: boolean;
  loc: Loc;
}

/** `key: value` lines (and bare lines, kept as items), or an inline `{a: x}`. */
export interface MapNode {
  kind: 'Map';
  entries: EntryNode[];
  inline: boolean;
  loc: Loc;
}

/** `key: value` with an optional deeper block (both may be present: `CALL: t` + `WITH:` lines). */
export interface PairNode {
  kind: 'Pair';
  /** The key as written. */
  key: string;
  value: ValueNode | null;
  children: BlockNode | null;
  loc: Loc;
}

/** A bare line (or `- head`) with optional deeper property lines: `- order_total` + `TYPE: number`. */
export interface ItemNode {
  kind: 'Item';
  head: ScalarNode;
  children: BlockNode | null;
  loc: Loc;
}

export type EntryNode = PairNode | ItemNode;
export type BlockNode = MapNode | ListNode;
export type ValueNode = ScalarNode | TextNode | ListNode | MapNode | ItemNode;

export type DocumentKind = 'agent' | 'supervisor' | 'tools' | 'unknown';

/** One parsed file: its sections (column-0 pairs) in order. */
export interface DocumentNode {
  kind: 'Document';
  path: string;
  docKind: DocumentKind;
  /** The name after AGENT:/SUPERVISOR:, if any. */
  name: string | null;
  /** Section keys are canonical UPPER_SNAKE; the written spelling is in `rawKey`. */
  sections: SectionNode[];
  loc: Loc;
}

export interface SectionNode extends PairNode {
  rawKey: string;
}
