// Writes an export as a zip archive: manifest.json, lockfile.json and the file map, each entry
// stamped with the export time so the same export always zips the same way.
import { ZipFile } from 'yazl';
import { LOCKFILE_FILE, MANIFEST_FILE } from './layout';
import { type ProjectExport } from './export';

export async function zipProjectExport(exported: ProjectExport): Promise<Buffer> {
  const mtime = new Date(exported.manifest.exportedAt);
  const zip = new ZipFile();
  const add = (name: string, content: string) => zip.addBuffer(Buffer.from(content, 'utf8'), name, { mtime, mode: 0o100644 });
  add(MANIFEST_FILE, `${JSON.stringify(exported.manifest, null, 2)}\n`);
  add(LOCKFILE_FILE, `${JSON.stringify(exported.lockfile, null, 2)}\n`);
  for (const [path, content] of Object.entries(exported.files)) add(path, content);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
