// The status callback URL's ref: it proves one call of one connection, under any key of the ring.
import { randomBytes } from 'node:crypto';
import { isOutboundCallRef, outboundCallRef } from '../../../../core/telephony/call-refs';
import { parseKeyRing } from '../../../../lib/key-ring';

const key = () => randomBytes(32).toString('base64');

describe('outbound call refs', () => {
  const oldKey = key();
  const before = parseKeyRing(`k1:${oldKey}`);
  const rotated = parseKeyRing(`k2:${key()},k1:${oldKey}`);

  it('proves the call and connection it was made for, and nothing else', () => {
    const ref = outboundCallRef(before, 'cc_a', 'oc_1');
    expect(ref).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(isOutboundCallRef(before, 'cc_a', 'oc_1', ref)).toBe(true);
    expect(isOutboundCallRef(before, 'cc_b', 'oc_1', ref)).toBe(false);
    expect(isOutboundCallRef(before, 'cc_a', 'oc_2', ref)).toBe(false);
  });

  it('still proves a call placed before the master key was rotated, while the old key is in the ring', () => {
    const ref = outboundCallRef(before, 'cc_a', 'oc_1');
    expect(isOutboundCallRef(rotated, 'cc_a', 'oc_1', ref)).toBe(true);
    expect(isOutboundCallRef(parseKeyRing(`k3:${key()}`), 'cc_a', 'oc_1', ref)).toBe(false);
  });

  it('refuses a missing, malformed or altered ref', () => {
    const ref = outboundCallRef(before, 'cc_a', 'oc_1');
    const altered = (ref[0] === 'A' ? 'B' : 'A') + ref.slice(1);
    for (const bad of [undefined, '', 'short', `${ref}x`, altered, ref.replace(/./g, '*')]) {
      expect(isOutboundCallRef(before, 'cc_a', 'oc_1', bad)).toBe(false);
    }
  });
});
