// Writes docs/openapi.json from src/openapi (the Trace schema is derived from the contract).
import { writeFileSync } from "node:fs";
import { openApiJson } from "../src/openapi/openapi-document.js";

writeFileSync(new URL("../docs/openapi.json", import.meta.url), openApiJson());
