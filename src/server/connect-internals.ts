/**
 * The connect-es functions the direct unary path (direct-unary.ts) uses that connect-es marks
 * `@private` (outside semver): imported here and nowhere else, so that an upgrade that changes one
 * fails test/ingest/connect-internals.test.ts, which pins what each does, before it changes the wire.
 * Each keeps the direct path's answers byte for byte connect-es's.
 */
export { compressionNegotiate, envelopeDecompress, readAllBytes } from "@connectrpc/connect/protocol";
export {
  codeToHttpStatus,
  errorToJsonBytes,
  parseTimeout as parseConnectTimeout,
  trailerMux,
} from "@connectrpc/connect/protocol-connect";
export { parseTimeout as parseGrpcTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
