import { describeDashboardMatch, transports } from "./dashboard-match.js";

// The read API's figures equal QueryService's on MongoDB (FerretDB, or the server of MONGODB_URI),
// read over Connect: the other protocols' authentication is no store's business.
describeDashboardMatch("mongodb", transports.slice(0, 1), [150, 20, 50]);
