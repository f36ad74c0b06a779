// Which espeak-ng voice speaks a BCP 47 language and an optional voice name: the voices and
// variants of the pinned npm `espeak-ng` build (its `--voices` and `--voices=variant` lists; a unit
// test checks the tables against the build), and the rules that map a tag onto them.
import { VoiceConfigError } from './errors';

/** The language voices of the build, by the name `-v` takes. */
export const ESPEAK_LANGUAGE_VOICES: readonly string[] = (
  'af am an ar as az ba be bg bn bpy bs ca cmn cmn-latn-pinyin cs cv cy da de el en-029 en-gb en-gb-scotland ' +
  'en-gb-x-gbclan en-gb-x-gbcwmd en-gb-x-rp en-us en-us-nyc eo es es-419 et eu fa fa-latn fi fr-be fr-ch fr-fr ga gd ' +
  'gn grc gu hak haw he hi hr ht hu hy hyw ia id io is it ja jbo ka kk kl kn ko kok ku ky la lb lfn lt ltg lv mi ' +
  'mk ml mr ms mt mto my nb nci ne nl nog om or pa pap piqd pl pt pt-br py qdb qu quc qya ro ru ru-cl ru-lv sd shn ' +
  'si sjn sk sl smj sq sr sv sw ta te th tk tn tr tt ug uk ur uz vi vi-vn-x-central vi-vn-x-south yue'
).split(' ');

/** The variants (`<voice>+<variant>`), spelled as the build's files are: espeak-ng ignores a misspelt one silently. */
export const ESPEAK_VARIANTS: readonly string[] = (
  'adam Alex Alicia Andrea Andy Annie antonio aunty belinda benjamin boris caleb david Demonic Denis Diogo ed edward ' +
  'edward2 Gene Gene2 gustave announcer Henrique Hugo ian iven iven2 iven3 iven4 Jacky john kaukovalta Lee linda marcelo ' +
  'Marco Mario max Michael michel miguel Mike mike2 Mr Nguyen pablo paul pedro quincy Reed RicishayMax RicishayMax2 ' +
  'RicishayMax3 rob robert robosoft robosoft2 robosoft3 robosoft4 robosoft5 robosoft6 robosoft7 robosoft8 steph steph2 ' +
  'steph3 Storm Tweaky UniRobot zac anika anikaRobot AnxiousAndy fast f2 f3 f4 f5 whisperf grandpa klatt klatt2 klatt3 ' +
  'klatt4 klatt5 klatt6 m2 m3 m4 m5 m6 m7 norbert sandro shelby travis victor whisper m8 f1 croak m1 grandma'
).split(' ');

/**
 * Tags that are no voice's own name but that espeak-ng's voice list gives another voice for
 * ("Other Languages"), and a few regional forms of the same choice.
 */
const LANGUAGE_ALIASES: Readonly<Record<string, string>> = {
  en: 'en-gb',
  fr: 'fr-fr',
  zh: 'cmn',
  'zh-cmn': 'cmn',
  'zh-yue': 'yue',
  'zh-hk': 'yue',
  'es-mx': 'es-419',
  'pt-pt': 'pt',
  no: 'nb',
  hbs: 'hr',
  'hy-arevela': 'hy',
  'hy-arevmda': 'hyw',
};

const voiceSet = new Set(ESPEAK_LANGUAGE_VOICES);
const variantByLower = new Map(ESPEAK_VARIANTS.map((v) => [v.toLowerCase(), v]));

/** The language voice for a BCP 47 tag, or null when espeak-ng has none for it. */
export function espeakVoiceForLanguage(language: string): string | null {
  const tag = language.trim().toLowerCase().replace(/_/g, '-');
  if (!/^[a-z]{2,3}(-[a-z0-9]{1,8})*$/.test(tag)) return null;
  const [primary, ...rest] = tag.split('-') as [string, ...string[]];
  // Drop a script subtag (zh-Hans-CN → zh-cn) and anything after the region.
  const region = rest.find((part) => /^([a-z]{2}|[0-9]{3})$/.test(part));
  const candidates = [tag, region ? `${primary}-${region}` : null, primary].filter((c): c is string => c !== null);
  for (const c of candidates) {
    if (voiceSet.has(c)) return c;
    const alias = LANGUAGE_ALIASES[c];
    if (alias) return alias;
    // Spanish outside Spain is the Latin American voice (espeak-ng names es-mx only).
    if (primary === 'es' && c !== 'es' && region !== 'es') return 'es-419';
  }
  return null;
}

/**
 * The `-v` argument that speaks `language` with `voice`: a language voice (`en-us`), a variant
 * spoken in the language's voice (`f3`, `Annie`) or both (`en-us+f3`); no voice: the language's.
 * @throws VoiceConfigError for a language or voice espeak-ng does not have.
 */
export function resolveEspeakVoice(options: { voice?: string | undefined; language: string }): string {
  const voice = options.voice?.trim();
  const base = (): string => {
    const found = espeakVoiceForLanguage(options.language);
    if (!found) throw new VoiceConfigError(`the offline text to speech (espeak-ng) has no voice for language "${options.language}"`);
    return found;
  };
  if (!voice) return base();
  const [name, variant, extra] = voice.split('+');
  if (extra === undefined && name !== undefined) {
    const lower = name.toLowerCase();
    if (variant === undefined) {
      if (voiceSet.has(lower)) return lower;
      const only = variantByLower.get(lower);
      if (only) return `${base()}+${only}`;
    } else {
      const known = variantByLower.get(variant.toLowerCase());
      if (voiceSet.has(lower) && known) return `${lower}+${known}`;
    }
  }
  throw new VoiceConfigError(
    `the offline text to speech (espeak-ng) has no voice "${voice}": give an espeak-ng voice (en-us, en-gb, fr-fr, …), a variant (f1–f5, m1–m8, Annie, …) or both (en-us+f3), or no voice for the language's own`,
  );
}
