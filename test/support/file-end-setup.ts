import { runAtFileEnd } from "./file-end.js";

// Each test file's clean-ups (test/support/file-end.ts), after its own afterAll hooks.
runAtFileEnd();
