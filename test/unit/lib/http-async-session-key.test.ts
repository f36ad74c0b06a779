// The canonical session key of the HTTP-async channel and the conversation workflow id it names.
import { canonicalSessionKey, conversationWorkflowId, parseSessionKey } from '../../../lib/http-async/session-key';

it('reads a caller key, this subscription\'s canonical key, and refuses another project\'s or subscription\'s', () => {
  expect(canonicalSessionKey('p1', 'whs-a', 'cust:42')).toBe('http_async:p1:whs-a:cust:42');
  expect(parseSessionKey('cust-42', 'p1', 'whs-a')).toEqual({ kind: 'caller', callerKey: 'cust-42' });
  // Colons in the caller's key survive the round trip.
  expect(parseSessionKey('http_async:p1:whs-a:cust:42', 'p1', 'whs-a')).toEqual({ kind: 'canonical', callerKey: 'cust:42' });
  expect(parseSessionKey('http_async:p2:whs-a:cust', 'p1', 'whs-a')).toEqual({ kind: 'foreign' });
  expect(parseSessionKey('http_async:p1:whs-b:cust', 'p1', 'whs-a')).toEqual({ kind: 'foreign' });
  // The prefix with no caller key after it names nothing.
  expect(parseSessionKey('http_async:p1:whs-a:', 'p1', 'whs-a')).toEqual({ kind: 'foreign' });
  // A project id that is a prefix of another's does not match it.
  expect(parseSessionKey('http_async:p10:whs-a:x', 'p1', 'whs-a')).toEqual({ kind: 'foreign' });
});

it('names one workflow per canonical key, without the caller key in the id', () => {
  const id = conversationWorkflowId('http_async:p1:whs-a:secret-customer-ref');
  expect(id).toMatch(/^http-async\/[0-9a-f]{64}$/);
  expect(id).not.toContain('secret-customer-ref');
  expect(conversationWorkflowId('http_async:p1:whs-a:secret-customer-ref')).toBe(id);
  expect(conversationWorkflowId('http_async:p1:whs-a:other')).not.toBe(id);
});
