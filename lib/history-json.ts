// Workflow histories to and from the proto3 JSON that Temporal's tools write (`temporal workflow
// show --output json`, the Web UI's download): `npm run admin -- replay-history` and the replay
// fixtures of the tests.
//
// The SDK's historyToJSON / historyFromJSON (@temporalio/common/lib/proto-utils) are used when they
// work. In this install they do not: @temporalio/common and @temporalio/proto each carry their own
// copy of protobufjs 8 (npm did not dedupe them under the root's protobufjs 7), so common's
// protojson rejects proto's message types with "type must be a Type". The fallback uses the
// protojson of the protobufjs copy @temporalio/proto itself was built with, which reads and
// writes the same format.
import path from 'node:path';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils';
import { type temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.History;
type IHistory = temporal.api.history.v1.IHistory;

interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
}

let fallback: { protojson: ProtoJson; historyType: { fromObject(o: unknown): unknown } } | null = null;
function protoCopy() {
  if (!fallback) {
    const protoDir = path.dirname(require.resolve('@temporalio/proto'));
    /* eslint-disable @typescript-eslint/no-require-imports */
    const protojson = require(require.resolve('protobufjs/ext/protojson', { paths: [protoDir] })) as ProtoJson;
    const { patchProtobufRoot } = require('@temporalio/proto/lib/patch-protobuf-root') as { patchProtobufRoot<T>(root: T): T & { lookupType(name: string): never } };
    const root = patchProtobufRoot(require('@temporalio/proto'));
    /* eslint-enable @typescript-eslint/no-require-imports */
    fallback = { protojson, historyType: root.lookupType('temporal.api.history.v1.History') };
  }
  return fallback;
}

const isDuplicateProtobufError = (err: unknown) => err instanceof TypeError && /must be a Type/.test(err.message);

/** The history as a proto3 JSON object (what `historyToJSON` produces, parsed). */
export function historyToJsonObject(history: IHistory): unknown {
  try {
    return JSON.parse(historyToJSON(history as History));
  } catch (err) {
    if (!isDuplicateProtobufError(err)) throw err;
    const { protojson, historyType } = protoCopy();
    return protojson.toJson(historyType, historyType.fromObject(history));
  }
}

/** A History from its proto3 JSON object, ready for Worker.runReplayHistory. */
export function historyFromJsonObject(json: unknown): History {
  try {
    return historyFromJSON(json) as History;
  } catch (err) {
    if (!isDuplicateProtobufError(err)) throw err;
    const { protojson, historyType } = protoCopy();
    const history = protojson.fromJson(historyType, json, { ignoreUnknownFields: true });
    if (!history) throw new TypeError('Invalid history');
    return history as History;
  }
}
