// A reply's voice form on a call (core/telephony/voice-ssml.ts): plain_text said as it is, SSML
// rebuilt inside <Say> with only the elements Twilio's <Say> takes, and anything else (not XML,
// another element or attribute, a DOCTYPE, too deep, too large) falling back to plain_text.
import twilio from 'twilio';
import { parseSsml, sayVoiceSegment, SSML_MAX_CHARS, SSML_MAX_DEPTH, type SsmlRejection } from '../../../core/telephony/voice-ssml';
import { sayAndGather, sayAndHangUp } from '../../../core/telephony/voice-twiml';

/** The TwiML of one segment said, and the reasons any SSML was not. */
function said(segment: { text: string; ssml?: string; plainText?: string }) {
  const response = new twilio.twiml.VoiceResponse();
  const reasons: SsmlRejection[] = [];
  sayVoiceSegment(response, { voice: 'Polly.Joanna' }, segment, (r) => reasons.push(r));
  const xml = response.toString().replace('<?xml version="1.0" encoding="UTF-8"?>', '');
  return { xml, reasons };
}

const TEXT = 'Your booking is confirmed for December 15th.';
const PLAIN = 'Your booking is confirmed for December fifteenth.';

it('says the SSML inside <Say>, with its say-as', () => {
  const { xml, reasons } = said({
    text: TEXT,
    plainText: PLAIN,
    ssml: `<speak>
      Your booking is confirmed for <say-as interpret-as="date" format="mdy">12/15/2025</say-as>.
    </speak>`,
  });
  expect(reasons).toEqual([]);
  expect(xml).toBe('<Response><Say voice="Polly.Joanna">Your booking is confirmed for <say-as interpret-as="date" format="mdy">12/15/2025</say-as>.</Say></Response>');
});

it('keeps every element of the subset, nested where the SDK allows it', () => {
  const { xml, reasons } = said({
    text: TEXT,
    ssml:
      '<speak><p><s>Hello <emphasis level="strong">there</emphasis></s><s><prosody rate="slow" pitch="+10%" volume="loud">slowly' +
      '<break time="500ms"/></prosody></s></p><lang xml:lang="fr-FR">bonjour</lang><phoneme alphabet="ipa" ph="təmeɪtoʊ">tomato</phoneme>' +
      '<sub alias="World Wide Web">WWW</sub><w role="amazon:VBD">read</w><break strength="strong"/></speak>',
  });
  expect(reasons).toEqual([]);
  expect(xml).toBe(
    '<Response><Say voice="Polly.Joanna"><p><s>Hello <emphasis level="strong">there</emphasis></s><s><prosody rate="slow" pitch="+10%" volume="loud">slowly' +
      '<break time="500ms"/></prosody></s></p><lang xml:lang="fr-FR">bonjour</lang><phoneme alphabet="ipa" ph="təmeɪtoʊ">tomato</phoneme>' +
      '<sub alias="World Wide Web">WWW</sub><w role="amazon:VBD">read</w><break strength="strong"/></Say></Response>',
  );
});

it('says plain_text when there is no SSML, else the text', () => {
  expect(said({ text: TEXT, plainText: PLAIN }).xml).toBe(`<Response><Say voice="Polly.Joanna">${PLAIN}</Say></Response>`);
  expect(said({ text: TEXT }).xml).toBe(`<Response><Say voice="Polly.Joanna">${TEXT}</Say></Response>`);
});

describe('an SSML that cannot be said falls back to plain_text (or the text), saying nothing of it', () => {
  const cases: Array<[string, string, SsmlRejection]> = [
    ['not XML', '<speak>Hello <emphasis>there</speak>', 'not_xml'],
    ['not SSML', 'Hello there', 'not_xml'],
    ['another root', '<say>Hello</say>', 'not_speak'],
    ['<audio src>', '<speak>Hi <audio src="https://evil.example/a.mp3">x</audio></speak>', 'element'],
    ['<script>', '<speak>Hi <script>alert(1)</script></speak>', 'element'],
    ['a TwiML verb smuggled in', '<speak>Hi <Dial>+15550001111</Dial></speak>', 'element'],
    ['an attribute outside the subset', '<speak><prosody onload="x" rate="slow">Hi</prosody></speak>', 'attribute'],
    ['a bad attribute value', '<speak><break time="forever"/></speak>', 'attribute'],
    ['a DOCTYPE with entities', '<!DOCTYPE speak [<!ENTITY x "boom">]><speak>Hi &x;</speak>', 'doctype'],
    ['an external entity', '<!DOCTYPE speak [<!ENTITY x SYSTEM "file:///etc/passwd">]><speak>&x;</speak>', 'doctype'],
    ['an undefined entity', '<speak>Hi &nope;</speak>', 'not_xml'],
    ['a processing instruction', '<speak>Hi <?php echo 1; ?></speak>', 'element'],
    ['an element inside say-as', '<speak><say-as interpret-as="date"><emphasis>12/15</emphasis></say-as></speak>', 'nesting'],
    ['deeply nested', `<speak>${'<s>'.repeat(SSML_MAX_DEPTH + 1)}deep${'</s>'.repeat(SSML_MAX_DEPTH + 1)}</speak>`, 'too_deep'],
    ['far too deeply nested', `<speak>${'<p>'.repeat(2000)}deep${'</p>'.repeat(2000)}</speak>`, 'too_deep'],
    ['huge', `<speak>${'word '.repeat(SSML_MAX_CHARS / 5)}</speak>`, 'too_large'],
    ['many elements', `<speak>${'<break/>'.repeat(301)}</speak>`, 'too_many_elements'],
    ['nothing to say', '<speak>  <!-- only a comment --> </speak>', 'empty'],
  ];
  it.each(cases)('%s', (_name, ssml, reason) => {
    const { xml, reasons } = said({ text: TEXT, plainText: PLAIN, ssml });
    expect(reasons).toEqual([reason]);
    expect(xml).toBe(`<Response><Say voice="Polly.Joanna">${PLAIN}</Say></Response>`);
    const bare = said({ text: TEXT, ssml });
    expect(bare.xml).toBe(`<Response><Say voice="Polly.Joanna">${TEXT}</Say></Response>`);
  });
});

it('keeps character entities as text, escaped again in the TwiML', () => {
  const { xml, reasons } = said({ text: TEXT, ssml: '<speak>Fish &amp; chips &lt;b&gt; &#65;</speak>' });
  expect(reasons).toEqual([]);
  expect(xml).toBe('<Response><Say voice="Polly.Joanna">Fish &amp; chips &lt;b&gt; A</Say></Response>');
});

it('reads a parsed tree, not text: markup in a text node never becomes an element', () => {
  expect(parseSsml('<speak>&lt;audio src="x"/&gt;</speak>')).toEqual([{ text: '<audio src="x"/>' }]);
});

it('says each reply of a turn in its own <Say>, inside the <Gather> with barge-in', () => {
  const xml = sayAndGather(
    { voice: 'alice' },
    { segments: [{ text: 'Hello.' }, { text: TEXT, ssml: '<speak>Booked <say-as interpret-as="date">12/15</say-as>.</speak>' }], onFallback: () => undefined },
    'https://x.example/gather',
    'https://x.example/silence',
  );
  expect(xml).toContain('<Gather');
  expect(xml).toContain('<Say voice="alice">Hello.</Say><Say voice="alice">Booked <say-as interpret-as="date">12/15</say-as>.</Say></Gather>');
  expect(sayAndHangUp({}, { segments: [{ text: TEXT, plainText: PLAIN }], onFallback: () => undefined })).toContain(`<Say>${PLAIN}</Say><Hangup/>`);
});
