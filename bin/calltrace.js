#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so there is no build step between install and start.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
