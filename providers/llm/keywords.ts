// The offline `local` model's notion of a word: lower-cased words of 3+ letters, stopwords removed,
// lightly stemmed. It matches tools to messages (local.ts) and messages to NLU examples (local-nlu.ts).

const STOPWORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between both but by ' +
    'can could did do does doing down during each few for from further had has have having he her here hers herself him ' +
    'himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other ' +
    'our ours ourselves out over own same she should so some such than that the their theirs them themselves then there ' +
    'these they this those through to too under until up very was we were what when where which while who whom why will ' +
    'with would you your yours yourself yourselves please want need like get got help thanks thank hello hi hey can cannot ' +
    'agent agents tool tools handoff hand delegate transfer route user users question questions conversation chat talk speak ' +
    'someone somebody person team'
  ).split(' '),
);

/** Lower-cased words of 3+ letters, stopwords removed, lightly stemmed so `refunds`/`refunded`/`refund` meet. */
export function keywords(text: string): string[] {
  const words = text
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length >= 3 && !STOPWORDS.has(word));
  const stems = words.map(stem).filter((word) => word.length >= 3);
  return [...new Set(stems)];
}

export function stem(word: string): string {
  let w = word;
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  else if (w.length >= 6 && w.endsWith('ing')) w = w.slice(0, -3);
  else if (w.length >= 5 && w.endsWith('ed')) w = w.slice(0, -2);
  else if (w.length >= 4 && w.endsWith('s') && !w.endsWith('ss')) w = w.slice(0, -1);
  if (w.length >= 4 && w.endsWith('e')) w = w.slice(0, -1);
  const last = w.at(-1);
  if (w.length >= 4 && last !== undefined && last === w.at(-2) && !'lsz'.includes(last)) w = w.slice(0, -1);
  return w;
}
