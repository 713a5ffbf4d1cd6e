import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp-dir.js";

/** A throwaway self-signed certificate for localhost and 127.0.0.1 (P-256, one day), made with openssl. */
export function throwawayCertificate(): { certFile: string; keyFile: string; cert: Buffer } {
  const dir = tempDir();
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout",
        keyFile,
        "-out",
        certFile,
      ],
      { stdio: "pipe" },
    );
  } catch (error) {
    throw new Error(`the TLS tests make a throwaway certificate with openssl (Debian: openssl): ${(error as Error).message}`);
  }
  return { certFile, keyFile, cert: readFileSync(certFile) };
}
