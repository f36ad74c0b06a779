// The `meta` block of every platform-key answer: the request's id and the time of the answer.
import { type Response } from 'express';
import { publicRequestId } from '../middleware/request-id';

export const metaOf = (res: Response) => ({ requestId: publicRequestId(res), timestamp: new Date().toISOString() });
