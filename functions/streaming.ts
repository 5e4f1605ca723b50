/**
 * Lambda response streaming (a function URL in invoke mode RESPONSE_STREAM), typed.
 *
 * The Node.js runtime gives a streaming handler through the global `awslambda`, which is
 * not on npm and has no types: `awslambda.streamifyResponse(handler)` marks the handler,
 * the runtime then calls it as `(event, responseStream, context)`, and
 * `awslambda.HttpResponseStream.from(responseStream, {statusCode, headers})` makes the
 * stream send that status and those headers first. This module uses the global when the
 * runtime defines it, and otherwise (tests, a bundle run outside Lambda) a local
 * implementation of the same contract, as the runtime implements it
 * (aws-lambda-nodejs-runtime-interface-client, src/stream/http-response-stream.ts and
 * src/function: streamifyResponse): the handler is marked with the symbol
 * `aws.lambda.runtime.handler.streaming` = "response"; the stream's content type becomes
 * `application/vnd.awslambda.http-integration-response`, and just before the first write
 * the prelude goes out as JSON followed by 8 NUL bytes. The function URL takes the
 * prelude apart and sends the rest as the body.
 */

/** What the runtime hands a streaming handler: a Node.js Writable (the parts used here). */
export interface LambdaResponseStream {
  write(chunk: Uint8Array | string): boolean;
  end(): unknown;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  removeListener(event: 'drain' | 'close', listener: () => void): unknown;
  readonly destroyed?: boolean;
  readonly writableFinished?: boolean;
  setContentType?(contentType: string): void;
}

/** The status and headers a function URL answers with, sent before the body. */
export interface HttpResponsePrelude {
  statusCode: number;
  headers?: Record<string, string>;
  cookies?: string[];
}

export type StreamingHandler<E> = (event: E, responseStream: LambdaResponseStream, context?: unknown) => Promise<void>;

interface AwsLambdaGlobal {
  streamifyResponse<E>(handler: StreamingHandler<E>, options?: { highWaterMark?: number }): StreamingHandler<E>;
  HttpResponseStream: { from(stream: LambdaResponseStream, prelude: HttpResponsePrelude): LambdaResponseStream };
}

/** The runtime's mark of a streaming handler (it then passes the response stream as the second argument). */
export const streamingHandlerMark = Symbol.for('aws.lambda.runtime.handler.streaming');
export const preludeContentType = 'application/vnd.awslambda.http-integration-response';
/** The NUL bytes between the JSON prelude and the body (JSON text never holds a NUL). */
export const preludeDelimiterBytes = 8;

const local: AwsLambdaGlobal = {
  streamifyResponse(handler) {
    Object.defineProperty(handler, streamingHandlerMark, { value: 'response' });
    return handler;
  },
  HttpResponseStream: {
    from(stream, prelude) {
      stream.setContentType?.(preludeContentType);
      const write = stream.write.bind(stream);
      let started = false;
      // As the runtime does: the prelude is written by the first write, so a handler that
      // fails before writing anything has sent nothing yet.
      stream.write = (chunk) => {
        if (!started) {
          started = true;
          write(JSON.stringify(prelude));
          write(new Uint8Array(preludeDelimiterBytes));
        }
        return write(chunk);
      };
      return stream;
    },
  },
};

/**
 * The runtime's `awslambda` when there is one, else the local implementation of its
 * contract. Outside Lambda a global `awslambda` may exist without them: Powertools'
 * @aws/lambda-invoke-store makes an empty one to keep its store in.
 */
export function awslambda(): AwsLambdaGlobal {
  const runtime = (globalThis as { awslambda?: Partial<AwsLambdaGlobal> }).awslambda;
  return runtime?.streamifyResponse && runtime.HttpResponseStream ? (runtime as AwsLambdaGlobal) : local;
}
