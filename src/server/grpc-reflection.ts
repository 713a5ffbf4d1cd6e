import { createRegistry, type DescFile, type DescService, type Registry, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { ServerReflection as ReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** One reflection request, as v1 and v1alpha both shape it. */
interface ReflectionRequest {
  host: string;
  messageRequest:
    | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

/** gRPC's NOT_FOUND and INVALID_ARGUMENT, the codes a reflection ErrorResponse carries. */
const notFound = 5;
const invalidArgument = 3;

/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha, the same protocol under two names), so
 * that grpcurl, Postman and friends can list and call our services without our .proto files. It
 * describes every service on the router, read when asked, so services added later are included.
 */
export function serveReflection(router: ConnectRouter): void {
  const services = () => [...new Set(router.handlers.map((h) => h.service))];
  const answer = (request: ReflectionRequest) => ({
    validHost: request.host,
    originalRequest: request,
    messageResponse: reflectionAnswer(services(), request),
  });
  router.service(ReflectionV1, {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) yield answer(request);
    },
  });
  router.service(ReflectionV1alpha, {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) yield answer(request) as never;
    },
  });
}

function reflectionAnswer(services: DescService[], { messageRequest: asked }: ReflectionRequest) {
  const files = withDependencies(services.map((s) => s.file));
  const registry = createRegistry(...files.values());
  const described = (file: DescFile | undefined, what: string) =>
    file
      ? { case: "fileDescriptorResponse" as const, value: { fileDescriptorProto: [...withDependencies([file]).values()].map(encoded) } }
      : error(notFound, `${what} not found`);
  switch (asked.case) {
    case "listServices":
      return { case: "listServicesResponse" as const, value: { service: services.map((s) => ({ name: s.typeName })) } };
    case "fileByFilename":
      return described(files.get(asked.value), `file ${asked.value}`);
    case "fileContainingSymbol":
      return described(fileOfSymbol(registry, asked.value), `symbol ${asked.value}`);
    case "fileContainingExtension": {
      const message = registry.getMessage(asked.value.containingType);
      const extension = message && registry.getExtensionFor(message, asked.value.extensionNumber);
      return described(extension?.file, `extension ${asked.value.extensionNumber} of ${asked.value.containingType}`);
    }
    case "allExtensionNumbersOfType": {
      if (!registry.getMessage(asked.value)) return error(notFound, `type ${asked.value} not found`);
      const numbers = [...registry].flatMap((t) => (t.kind === "extension" && t.extendee.typeName === asked.value ? [t.number] : []));
      return { case: "allExtensionNumbersResponse" as const, value: { baseTypeName: asked.value, extensionNumber: numbers } };
    }
    default:
      return error(invalidArgument, "no request");
  }
}

function error(errorCode: number, errorMessage: string) {
  return { case: "errorResponse" as const, value: { errorCode, errorMessage } };
}

/** A type, service, method (`pkg.Service.Method`), field or enum value by its full name. */
function fileOfSymbol(registry: Registry, symbol: string): DescFile | undefined {
  const found = registry.get(symbol);
  if (found) return found.file;
  const parent = registry.get(symbol.slice(0, Math.max(0, symbol.lastIndexOf("."))));
  const member = symbol.slice(symbol.lastIndexOf(".") + 1);
  if (parent?.kind === "service" && parent.methods.some((m) => m.name === member)) return parent.file;
  if (parent?.kind === "message" && parent.fields.some((f) => f.name === member)) return parent.file;
  return undefined;
}

/** The files and everything they import, by file name, dependencies first. */
function withDependencies(files: DescFile[]): Map<string, DescFile> {
  const all = new Map<string, DescFile>();
  const add = (file: DescFile) => {
    if (all.has(file.proto.name)) return;
    for (const dependency of file.dependencies) add(dependency);
    all.set(file.proto.name, file);
  };
  for (const file of files) add(file);
  return all;
}

function encoded(file: DescFile): Uint8Array {
  return toBinary(FileDescriptorProtoSchema, file.proto);
}
