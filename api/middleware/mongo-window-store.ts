// The API's rate-limit counters live with the other shared stores in db/ (the worker's tool
// rate limits count in the same windows); this keeps the API's import path.
export { ensureRateLimitWindowIndexes, MongoWindowLimiter, RATE_LIMIT_WINDOWS_COLLECTION, type MongoWindowLimiterOptions } from '../../db/rate-limit-windows';
