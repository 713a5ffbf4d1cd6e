// The baseline: a bare node:http server that reads and parses the same JSON body and answers
// 202 {"status":"ok"}, with nothing else (no auth, limits, validation or storage).
import { createServer } from "node:http";

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const body = '{"status":"ok"}';
    res.writeHead(202, { "content-type": "application/json", "content-length": body.length });
    res.end(body);
  });
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  console.log(JSON.stringify({ msg: "listening", port: typeof address === "object" && address ? address.port : 0 }));
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
