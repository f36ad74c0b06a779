// SIP destinations: only a plain user@host URI with safe parameters is taken; masks and the blind index's spelling.
import { maskCallSid, maskSipUri, normalizedDestination, sipUriRefusal } from '../../../lib/phone';

describe('sipUriRefusal', () => {
  it.each(['sip:alice@example.com', 'sips:+15551234567@pbx.example.com:5061', 'sip:bob@10.0.0.5;transport=tls', 'sip:carol@[2001:db8::1];user=phone'])('takes %s', (uri) => {
    expect(sipUriRefusal(uri)).toBeNull();
  });

  it.each([
    ['headers', 'sip:alice@example.com?X-Evil=1'],
    ['a CR/LF', 'sip:alice@example.com\r\nVia: x'],
    ['angle brackets', '<sip:alice@example.com>'],
    ['an unsafe parameter', 'sip:alice@example.com;maddr=10.0.0.1'],
    ['an unsafe transport value', 'sip:alice@example.com;transport=sctp'],
    ['a repeated parameter', 'sip:alice@example.com;transport=tls;transport=udp'],
    ['another scheme', 'tel:+15551234567'],
    ['no user', 'sip:example.com'],
    ['a space', 'sip:al ice@example.com'],
    ['a quote', 'sip:"alice"@example.com'],
    ['a port out of range', 'sip:alice@example.com:70000'],
    ['too long', `sip:${'a'.repeat(60)}@${'b'.repeat(250)}.com`],
  ])('refuses %s', (_what, uri) => {
    expect(sipUriRefusal(uri)).toEqual(expect.any(String));
  });
});

describe('masks and normal forms', () => {
  it('masks a SIP user part like a number and keeps the host', () => {
    expect(maskSipUri('sip:alice.smith@pbx.example.com;transport=tls')).toBe('sip:a********th@pbx.example.com');
    expect(maskSipUri('sip:+15551234567@pbx.example.com')).toBe('sip:+*********67@pbx.example.com');
  });
  it('masks a call sid but its prefix and last four', () => {
    expect(maskCallSid('CA0123456789abcdef0123456789abcdef')).toBe('CA' + '*'.repeat(28) + 'cdef');
  });
  it('gives one spelling per destination: the host in lower case, no parameters', () => {
    expect(normalizedDestination('sip', 'SIP:alice@PBX.Example.com;transport=tls')).toBe(normalizedDestination('sip', 'sip:alice@pbx.example.com'));
    expect(normalizedDestination('phone', '+15551234567')).toBe('phone:+15551234567');
  });
});
