// The two-task floor's one activity: a bare POST of a small JSON body.
export async function postFloorReply(url: string): Promise<void> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"event":"floor"}' });
  await res.arrayBuffer();
}
