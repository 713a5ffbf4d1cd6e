import { describe } from "vitest";
import { upgradeSuite } from "./upgrade-suite.js";

describe("upgrading a MongoDB database from the last release before teams", () => upgradeSuite(true));
