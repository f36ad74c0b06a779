// The shape of a session id: a UUID this service issued (`crypto.randomUUID()`). Only such an id may name a workflow (`session/<id>`).
export const SESSION_ID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
