// Which identity each channel names as a session's caller (core/contacts/linking.ts): a call's
// number in any spelling, an app client or SIP address, withheld numbers naming nobody; the SDK's
// user by e-mail, then phone, then its own id; the fields a workflow gets of a contact.
import { appUserCaller, httpAsyncCaller, sdkUserCaller, testCaller, toSessionContact, voiceCaller } from '../../../core/contacts/linking';

describe('voiceCaller', () => {
  it('reads an E.164 number in any spelling as a phone identity', () => {
    for (const spelt of ['+15551234567', '+1 (555) 123-4567', '0015551234567', ' +1.555.123.4567 ']) {
      expect(voiceCaller(spelt)).toEqual({ identity: '+15551234567', identityType: 'phone' });
    }
  });
  it('reads an app client or a SIP address as an external identity in one spelling', () => {
    expect(voiceCaller('client:Ada')).toEqual({ identity: 'client:ada', identityType: 'external' });
    expect(voiceCaller('sip:ada@pbx.example.com;transport=tls')).toEqual({ identity: 'sip:ada@pbx.example.com', identityType: 'external' });
  });
  it('names nobody for a withheld number, an empty From or text that is no number', () => {
    for (const from of ['+266696687', '+7378742833', '+8656696', '+86282452253', 'anonymous', 'Restricted', '', '   ', undefined, null, '0555 123 456']) {
      expect(voiceCaller(from)).toBeNull();
    }
  });
});

describe('the other channels', () => {
  it('name an external identity, or nobody when blank', () => {
    expect(httpAsyncCaller('http_async:p:s:k')).toEqual({ identity: 'http_async:p:s:k', identityType: 'external' });
    expect(appUserCaller('customer-42')).toEqual({ identity: 'customer-42', identityType: 'external' });
    expect(testCaller('tester')).toEqual({ identity: 'tester', identityType: 'external' });
    for (const blank of [undefined, null, '', '  ']) {
      expect(httpAsyncCaller(blank)).toBeNull();
      expect(appUserCaller(blank)).toBeNull();
      expect(testCaller(blank)).toBeNull();
    }
  });
  it('the SDK names its user by e-mail, then phone, then its own id', () => {
    expect(sdkUserCaller({ email: 'a@example.com', phone: '+15551234567', userId: 'u1', displayName: 'Ada' })).toEqual({ identity: 'a@example.com', identityType: 'email', displayName: 'Ada' });
    expect(sdkUserCaller({ phone: '+15551234567', userId: 'u1' })).toEqual({ identity: '+15551234567', identityType: 'phone', displayName: null });
    expect(sdkUserCaller({ userId: 'u1' })).toEqual({ identity: 'u1', identityType: 'external', displayName: null });
    expect(sdkUserCaller({})).toBeNull();
    expect(sdkUserCaller(null)).toBeNull();
  });
});

it('a session contact holds no identity', () => {
  const contact = toSessionContact({ _id: 'ct_1', type: 'customer', identityType: 'phone', displayName: null, company: 'Co', department: null, accountRef: null, tags: ['vip'] });
  expect(contact).toEqual({ contactId: 'ct_1', type: 'customer', identityType: 'phone', displayName: null, company: 'Co', department: null, accountRef: null, tags: ['vip'] });
  expect(Object.keys(contact)).not.toContain('identity');
});
