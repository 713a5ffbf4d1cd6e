// A minimal stand-in for the calltrace service, in a process of its own so
// that receiving traces costs the benchmarked process nothing. Reports its
// endpoint over IPC.
import http from "node:http";

const server = http.createServer((request, response) => {
  request.resume();
  request.on("end", () => response.writeHead(202, { "content-type": "application/json" }).end('{"status":"ok"}'));
});
server.listen(0, "127.0.0.1", () => process.send?.({ url: `http://127.0.0.1:${server.address().port}/v1/traces` }));
process.on("disconnect", () => process.exit(0));
