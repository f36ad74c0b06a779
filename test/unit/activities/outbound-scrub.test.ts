// A provider's error message is kept on the call (failureReason) only with its numbers masked.
import { scrubNumbers } from '../../../core/telephony/provider-calls';

it('masks the destination and anything that looks like a number in a provider message', () => {
  const out = scrubNumbers("The 'To' number +15005550001 is not a valid phone number (also 15005550001).", '+15005550001');
  expect(out).not.toMatch(/5005550001/);
  expect(out).toContain('+1********01');
});

it('masks a SIP destination in full', () => {
  expect(scrubNumbers('Cannot reach sip:alice@pbx.example.com', 'sip:alice@pbx.example.com')).toBe('Cannot reach ***');
});
