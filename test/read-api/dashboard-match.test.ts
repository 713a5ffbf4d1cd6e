import { describeDashboardMatch, transports } from "./dashboard-match.js";

// The read API's figures equal QueryService's over Connect, gRPC and gRPC-Web, on the embedded store.
describeDashboardMatch("embedded", transports, [900, 60, 300]);
