// Whether `npm start` runs the Twilio fake: on by default, off when the environment points the
// SDK elsewhere or carries Twilio credentials, and TWILIO_FAKE says so outright either way.
import { twilioFakeWanted } from '../../../infra/dev-stack-env';

describe('twilioFakeWanted', () => {
  it('is on when nothing says otherwise', () => {
    expect(twilioFakeWanted({})).toBe(true);
  });

  it('is off when the environment points the SDK elsewhere or has Twilio credentials of its own', () => {
    expect(twilioFakeWanted({ TWILIO_API_BASE_URL: 'http://127.0.0.1:4000' })).toBe(false);
    expect(twilioFakeWanted({ TWILIO_ACCOUNT_SID: 'AC123' })).toBe(false);
  });

  it('follows TWILIO_FAKE over the rest', () => {
    expect(twilioFakeWanted({ TWILIO_FAKE: '0' })).toBe(false);
    expect(twilioFakeWanted({ TWILIO_FAKE: 'false' })).toBe(false);
    expect(twilioFakeWanted({ TWILIO_FAKE: '1', TWILIO_API_BASE_URL: 'http://127.0.0.1:4000' })).toBe(true);
    expect(twilioFakeWanted({ TWILIO_FAKE: '', TWILIO_ACCOUNT_SID: 'AC123' })).toBe(false);
  });

  it('refuses a TWILIO_FAKE that is neither on nor off', () => {
    expect(() => twilioFakeWanted({ TWILIO_FAKE: 'maybe' })).toThrow('TWILIO_FAKE must be 1 or 0, got "maybe"');
  });
});
