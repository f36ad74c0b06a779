// What counts as a unique index's refusal: MongoDB's code, the dev store's update form, and a bulk
// insert refused only on ids already written.
import { isDuplicateKey, isOnlyDuplicateKeys } from '../../../db/duplicate-key';

describe('duplicate keys', () => {
  it('knows MongoDB code 11000 and the dev store\'s unique violation on an update, nothing else', () => {
    expect(isDuplicateKey({ code: 11000 })).toBe(true);
    expect(isDuplicateKey(Object.assign(new Error('ERROR: duplicate key value violates unique constraint "contacts_tenantId_liveKey" (SQLSTATE 23505)'), { code: 1 }))).toBe(true);
    for (const other of [null, undefined, 'E11000', { code: 11001 }, new Error('connection reset'), { message: 42 }]) expect(isDuplicateKey(other)).toBe(false);
  });

  it('takes a bulk insert as retried only when every write error is a duplicate', () => {
    expect(isOnlyDuplicateKeys({ writeErrors: [{ code: 11000 }, { err: { code: 11000 } }] })).toBe(true);
    expect(isOnlyDuplicateKeys({ writeErrors: { code: 11000 } })).toBe(true);
    expect(isOnlyDuplicateKeys({ code: 11000 })).toBe(true);
    expect(isOnlyDuplicateKeys({ writeErrors: [{ code: 11000 }, { code: 121 }] })).toBe(false);
    expect(isOnlyDuplicateKeys(new Error('timeout'))).toBe(false);
    expect(isOnlyDuplicateKeys(null)).toBe(false);
  });
});
