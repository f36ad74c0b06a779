// A failed chat turn is classified by error class and failure type, never by message text:
// one case per class, plus messages that would have fooled the old text matching.
import { ServiceError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, RetryState, WorkflowNotFoundError } from '@temporalio/common';
import { mongo } from 'mongoose';
import { toApiError, UPDATE_OUTLIVED_WORKFLOW } from '../../../core/chat/turns';
import { ApiError } from '../../../lib/errors';

const updateFailed = (cause: Error) => new WorkflowUpdateFailedError('Workflow Update failed', cause);
const grpc = (code: number, message: string) => Object.assign(new Error(message), { code });
const summary = (err: ApiError) => ({ code: err.code, message: err.message });

describe('toApiError', () => {
  it('keeps an ApplicationFailure whose type is one of our codes, with its message', () => {
    expect(summary(toApiError(updateFailed(ApplicationFailure.nonRetryable('Session has ended; start a new session', 'CONFLICT'))))).toEqual({
      code: 'CONFLICT',
      message: 'Session has ended; start a new session',
    });
    expect(summary(toApiError(updateFailed(ApplicationFailure.nonRetryable('body.message: must not be empty', 'VALIDATION_ERROR'))))).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'body.message: must not be empty',
    });
  });

  it("finds our code under an activity's failure", () => {
    const activity = new ActivityFailure('Activity task failed', 'loadSessionBundle', '1', RetryState.NON_RETRYABLE_FAILURE, undefined, ApplicationFailure.nonRetryable('Project not found or has no agents', 'NOT_FOUND'));
    expect(toApiError(updateFailed(activity)).code).toBe('NOT_FOUND');
  });

  it('reads an update outlived by its workflow as an ended session', () => {
    const failure = ApplicationFailure.create({ message: 'Workflow Update failed because the Workflow completed before the Update completed.', type: UPDATE_OUTLIVED_WORKFLOW, nonRetryable: true });
    expect(summary(toApiError(updateFailed(failure)))).toEqual({ code: 'CONFLICT', message: 'Session has ended; start a new session' });
  });

  it('does not classify by message: an untyped or foreign failure that says "has ended" is a 500 without its text', () => {
    for (const failure of [
      ApplicationFailure.create({ message: 'the session has ended' }),
      ApplicationFailure.create({ message: 'the session has ended', type: 'Error' }),
      new Error('session has ended'),
    ]) {
      expect(summary(toApiError(updateFailed(failure)))).toEqual({ code: 'INTERNAL_ERROR', message: 'The turn failed' });
    }
  });

  it('answers an update that timed out or was cancelled with 503', () => {
    expect(toApiError(new WorkflowUpdateRPCTimeoutOrCancelledError('Timed out waiting for update response')).code).toBe('SERVICE_UNAVAILABLE');
  });

  it('reads a missing workflow as an ended session, by class or by gRPC NOT_FOUND', () => {
    expect(toApiError(new WorkflowNotFoundError('workflow not found', 'session/x', undefined)).code).toBe('CONFLICT');
    expect(toApiError(new ServiceError('update failed', { cause: grpc(5, '5 NOT_FOUND: workflow execution already completed') })).code).toBe('CONFLICT');
  });

  it('answers Temporal or the database not answering with 503, by gRPC code or driver class', () => {
    expect(toApiError(new ServiceError('update failed', { cause: grpc(14, '14 UNAVAILABLE: no connection') })).code).toBe('SERVICE_UNAVAILABLE');
    expect(toApiError(new ServiceError('update failed', { cause: grpc(4, '4 DEADLINE_EXCEEDED') })).code).toBe('SERVICE_UNAVAILABLE');
    // A session holding Temporal's limit of in-flight updates (its workflow task not running) refuses one more: nothing was accepted.
    const busy = toApiError(new ServiceError('Workflow Update failed', { cause: grpc(8, '8 RESOURCE_EXHAUSTED: limit on number of concurrent in-flight updates has been reached (10)') }));
    expect(busy.code).toBe('SERVICE_UNAVAILABLE');
    expect(busy.headers).toMatchObject({ 'Retry-After': expect.any(String) });
    expect(toApiError(new mongo.MongoServerSelectionError('Server selection timed out', {} as never)).code).toBe('SERVICE_UNAVAILABLE');
    expect(toApiError(new mongo.MongoNetworkError('connection reset')).code).toBe('SERVICE_UNAVAILABLE');
  });

  it('does not classify by message: text that mentions deadlines or connections is a plain 500', () => {
    for (const err of [new Error('deadline exceeded'), new Error('UNAVAILABLE'), new TypeError('cannot connect the dots')]) {
      expect(summary(toApiError(err))).toEqual({ code: 'INTERNAL_ERROR', message: 'The turn failed' });
    }
    expect(toApiError(new ServiceError('update failed', { cause: grpc(3, '3 INVALID_ARGUMENT: deadline UNAVAILABLE connect') })).code).toBe('INTERNAL_ERROR');
  });

  it('passes an ApiError through unchanged', () => {
    const err = new ApiError('QUEUE_FULL', 'Execution queue full');
    expect(toApiError(err)).toBe(err);
  });
});
