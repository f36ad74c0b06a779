// `npm run admin -- <command> [--flags]`: tenant management straight against MongoDB, using the
// same operations (core/tenancy, core/platform-keys) as the admin routes. MONGODB_URI defaults to the local dev stack.
// The commands are in admin/commands.ts.
import { runAdmin } from './admin/commands';

void runAdmin(process.argv.slice(2), {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
}).then((code) => {
  process.exitCode = code;
});
