// The voice tests' and the voice bench's agent: a fixed greeting, then the same fixed answer to
// whatever the caller says, so what is measured or asserted is the voice path, never a model.
export function helpDeskAgent(greeting: string, answer: string): string {
  return `AGENT: Help_Desk
GOAL: "Answer callers."
VOICE:
  language: en-US
  silence_timeout: 60
FLOW:
  steps: [greet, answer]
  greet:
    REASONING: false
    RESPOND: "${greeting}"
    ON_INPUT:
      - ELSE:
        THEN: answer
  answer:
    REASONING: false
    RESPOND: "${answer}"
    ON_INPUT:
      - ELSE:
        THEN: answer
`;
}
