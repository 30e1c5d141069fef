// GET /v1/openapi.json: the API document, generated from handlers/routes.ts (lib/http/openapi.ts).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";

export const endpoint = defineEndpoint({
  operationId: "get_openapi",
  summary: "The OpenAPI 3.1 document of this API",
  response: z.record(z.string(), z.unknown()),
  async handle() {
    // Imported lazily: the route table imports this file, and the document is built from the table.
    const { openApiDocument } = await import("../routes.ts");
    return openApiDocument();
  },
});
