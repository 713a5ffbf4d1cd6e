import type { connectNodeAdapter } from "@connectrpc/connect-node";

type NodeHandler = ReturnType<typeof connectNodeAdapter>;

/** An HTTP/1.1 or HTTP/2 request, typed as Connect's Node adapter takes it. */
export type NodeRequest = Parameters<NodeHandler>[0];
/** An HTTP/1.1 or HTTP/2 response, typed as Connect's Node adapter takes it. */
export type NodeResponse = Parameters<NodeHandler>[1];
