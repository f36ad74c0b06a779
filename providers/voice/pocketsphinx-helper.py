"""The offline speech recogniser's helper process (providers/voice/offline-stt.ts starts it from
.tools/voice-venv): pocketsphinx with the US English model inside its wheel, kept loaded, speaking
line-delimited JSON over stdin and stdout.

First line out: {"ready": true, "version": "<pocketsphinx version>"}.
Request:  {"id": 1, "sampleRate": 16000, "pcm": "<base64 of 16-bit little-endian mono>",
           "phrases": ["book a meeting", ...] or null}
Answer:   {"id": 1, "text": "...", "confidence": 0.82 or null, "dropped": [...]}
          or {"id": 1, "error": "..."}

With phrases, the utterance is decoded against a JSGF grammar of exactly those phrases (words
outside the dictionary drop their phrase, listed in "dropped"; none left: the language model);
without, against the language model. The confidence is the hypothesis' posterior probability
from the decoder's word lattice (pocketsphinx's `prob`, already 0-1); null when nothing was heard.
"""

import base64
import hashlib
import json
import re
import sys

import pocketsphinx

RATE = 16000
MAX_GRAMMARS = 32


def main():
    decoder = pocketsphinx.Decoder(samprate=RATE, loglevel="FATAL")
    language_model = decoder.current_search()
    grammars = {}  # phrase-set key -> (search name, dropped phrases)

    def grammar_for(phrases):
        words = {}
        kept, dropped = [], []
        for phrase in phrases:
            normal = " ".join(re.sub(r"[^a-z' ]+", " ", phrase.lower()).split())
            known = normal and all(
                words.setdefault(w, decoder.lookup_word(w) is not None) for w in normal.split()
            )
            (kept if known else dropped).append(normal if known else phrase)
        kept = sorted(set(kept))
        key = hashlib.sha1("\n".join(kept).encode()).hexdigest()[:16]
        if not kept:
            return language_model, dropped
        if key not in grammars:
            if len(grammars) >= MAX_GRAMMARS:
                old_key = next(iter(grammars))
                decoder.remove_search(grammars.pop(old_key))
            name = "g" + key
            body = " | ".join(kept)
            decoder.add_jsgf_string(name, "#JSGF V1.0;\ngrammar utterances;\npublic <utterance> = %s ;\n" % body)
            grammars[key] = name
        return grammars[key], dropped

    def answer(message):
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    answer({"ready": True, "version": getattr(pocketsphinx, "__version__", "5")})
    for line in sys.stdin:
        if not line.strip():
            continue
        request_id = None
        try:
            request = json.loads(line)
            request_id = request.get("id")
            if request.get("sampleRate") != RATE:
                raise ValueError("audio must be %d Hz, got %r" % (RATE, request.get("sampleRate")))
            pcm = base64.b64decode(request.get("pcm") or "")
            phrases = request.get("phrases") or []
            search, dropped = grammar_for(phrases) if phrases else (language_model, [])
            decoder.activate_search(search)
            decoder.start_utt()
            if pcm:
                decoder.process_raw(pcm, full_utt=True)
            decoder.end_utt()
            hyp = decoder.hyp()
            text = hyp.hypstr.strip() if hyp is not None else ""
            confidence = min(1.0, max(0.0, float(hyp.prob))) if hyp is not None and text else None
            answer({"id": request_id, "text": text, "confidence": confidence, "dropped": dropped})
        except Exception as err:  # one bad request must not end the helper
            try:
                decoder.end_utt()
            except Exception:
                pass
            answer({"id": request_id, "error": "%s: %s" % (type(err).__name__, err)})


if __name__ == "__main__":
    main()
