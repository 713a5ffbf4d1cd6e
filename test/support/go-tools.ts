import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The Go tools the tests run, with how to install each (`.ci/run` does). */
export const goTools = {
  grpcurl: "go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3",
  // The Go codegen consumer's plugins (test/codegen, docs/codegen.md).
  "protoc-gen-go": "go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12",
  "protoc-gen-go-grpc": "go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2",
  "protoc-gen-connect-go": "go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1",
  // The SMTP server invitation mail is sent to (test/teams/invitation-mail.test.ts).
  mailpit: "go install github.com/axllent/mailpit@v1.33.1",
} as const;

/** GOPATH/bin, where `go install` puts tools. */
export function goBin(): string {
  const gopath = spawnSync("go", ["env", "GOPATH"], { encoding: "utf8" }).stdout?.trim() || join(homedir(), "go");
  return join(gopath, "bin");
}

/** The path of a Go tool, on PATH or in GOPATH/bin; a missing one fails with its install command. */
export function goTool(name: keyof typeof goTools): string {
  const onPath = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
  if (onPath) return onPath;
  const candidate = join(goBin(), name);
  if (existsSync(candidate)) return candidate;
  throw new Error(`${name} is missing: ${goTools[name]}`);
}

export const grpcurl = () => goTool("grpcurl");
