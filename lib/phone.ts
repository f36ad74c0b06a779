// Phone numbers as the platform takes and shows them: E.164 (`+` and up to 15 digits, no leading
// zero) is the only accepted form, and a number is shown masked (its first digit and last two
// visible, every other digit a `*`: `+15551234523` → `+1********23`) wherever it leaves the API.

export const E164_PATTERN = /^\+[1-9]\d{1,14}$/;

export function isE164(value: string): boolean {
  return E164_PATTERN.test(value);
}

/** The number with all but its first digit and last two replaced by `*`, one per digit. */
export function maskPhoneNumber(number: string): string {
  const digits = number.replace(/^\+/, '');
  if (digits.length <= 3) return '+' + '*'.repeat(digits.length);
  return '+' + digits[0] + '*'.repeat(digits.length - 3) + digits.slice(-2);
}
