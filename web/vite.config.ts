import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The dashboard is served by the calltrace server itself under /app/ (src/dashboard/static-assets.ts).
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/app/",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The world map's country outlines are large; they load only with the geography page.
    chunkSizeWarningLimit: 1500,
  },
  logLevel: "warn",
});
