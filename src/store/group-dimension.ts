import { Dimension } from "../../gen/calltrace/v1/query_pb.js";

/** What usage is grouped by: one dimension of a trace (query.proto's Dimension). */
export type GroupDimension =
  | { kind: "user" | "session" | "tag" | "environment" | "service" | "key" | "provider" | "model" | "metadataKey" }
  | { kind: "metadata"; key: string };

/** A request's dimension; the request's rules (protovalidate) guarantee a known one and a key for METADATA. */
export function groupDimension(dimension: Dimension, metadataKey: string): GroupDimension {
  switch (dimension) {
    case Dimension.USER:
      return { kind: "user" };
    case Dimension.SESSION:
      return { kind: "session" };
    case Dimension.TAG:
      return { kind: "tag" };
    case Dimension.METADATA:
      return { kind: "metadata", key: metadataKey };
    case Dimension.ENVIRONMENT:
      return { kind: "environment" };
    case Dimension.KEY:
      return { kind: "key" };
    case Dimension.PROVIDER:
      return { kind: "provider" };
    case Dimension.MODEL:
      return { kind: "model" };
    case Dimension.SERVICE:
      return { kind: "service" };
    case Dimension.METADATA_KEY:
      return { kind: "metadataKey" };
    default:
      throw new RangeError(`no such dimension: ${dimension}`);
  }
}

/**
 * The name a dimension's groups are kept under in the embedded store's roll-ups (`m:` and the key
 * for one metadata key's values), and in any other store that wants one string per dimension.
 */
export function dimensionName(dimension: GroupDimension): string {
  return dimension.kind === "metadata" ? `m:${dimension.key}` : dimension.kind;
}
