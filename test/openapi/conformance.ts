import { Ajv2020 } from "ajv/dist/2020.js";
import { expect } from "vitest";

type Doc = { paths: Record<string, Record<string, Operation>>; components: Record<string, unknown> };
interface Operation {
  responses: Record<
    string,
    {
      headers?: Record<string, { required?: boolean; schema: Record<string, unknown> }>;
      content?: Record<string, { schema: Record<string, unknown> }>;
    }
  >;
}

/** Checks real responses against what the OpenAPI document says of them: status, headers, body. */
export function conformanceChecker(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
  const validator = (key: string, schema: Record<string, unknown>) => {
    let validate = compiled.get(key);
    if (!validate) {
      // $refs are "#/components/...": the schema is compiled inside a copy of the components.
      validate = ajv.compile({ ...schema, components: doc.components });
      compiled.set(key, validate);
    }
    return validate;
  };

  return async function expectConforms(method: string, path: string, response: Response): Promise<unknown> {
    const operation = doc.paths[path]?.[method.toLowerCase()];
    expect(operation, `${method} ${path} is documented`).toBeDefined();
    const documented = operation!.responses[String(response.status)];
    expect(documented, `${method} ${path} ${response.status} is documented`).toBeDefined();
    for (const [name, header] of Object.entries(documented!.headers ?? {})) {
      const value = response.headers.get(name);
      if (header.required) expect(value, `${response.status} carries ${name}`).not.toBeNull();
      if (value === null) continue;
      const typed = header.schema.type === "integer" ? Number(value) : value;
      const validate = validator(`${path} ${response.status} header ${name}`, header.schema);
      expect(validate(typed), `${name}: ${value} ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    const contentType = response.headers.get("content-type")?.split(";")[0];
    const media = documented!.content?.[contentType ?? ""];
    expect(media, `${response.status} as ${contentType} is documented`).toBeDefined();
    const body = (await response.json()) as unknown;
    const validate = validator(`${method} ${path} ${response.status}`, media!.schema);
    expect(validate(body), `${method} ${path} ${response.status} body ${JSON.stringify(body)}: ${JSON.stringify(validate.errors)}`).toBe(
      true,
    );
    return body;
  };
}
