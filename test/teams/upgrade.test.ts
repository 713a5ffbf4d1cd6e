import { describe } from "vitest";
import { upgradeSuite } from "./upgrade-suite.js";

describe("upgrading the embedded store from the last release before teams", () => upgradeSuite(false));
