// Injected into the CommonJS build only (see build.mjs): import.meta.url for
// code that needs a module URL, such as createRequire(import.meta.url).
export const import_meta_url = require("node:url").pathToFileURL(__filename).href;
